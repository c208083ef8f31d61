package skills

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

func TestParse(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, text, err string
		want            Skill
	}{
		{"full", "---\nname: a\ndescription: does a\nmetadata:\n  short-description: short\n---\nbody", "", Skill{Name: "a", Description: "does a", ShortDescription: "short"}},
		{"crlf and bom", "\ufeff---\r\nname: b\r\ndescription: \"b: colon\"\r\n---\r\n", "", Skill{Name: "b", Description: "b: colon"}},
		{"no front matter", "# title\n", "missing YAML frontmatter delimited by ---", Skill{}},
		{"unterminated", "---\nname: c\n", "missing YAML frontmatter delimited by ---", Skill{}},
		{"no name", "---\ndescription: d\n---\n", "missing field `name`", Skill{}},
		{"no description", "---\nname: e\n---\n", "missing field `description`", Skill{}},
		{"bad yaml", "---\nname: [\n---\n", "invalid YAML frontmatter", Skill{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, tc.name, FileName)
			write(t, f, tc.text)
			s, err := Parse(f)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want.Name, s.Name)
			require.Equal(t, tc.want.Description, s.Description)
			require.Equal(t, tc.want.ShortDescription, s.ShortDescription)
			require.Equal(t, f, s.Path)
			require.Nil(t, s.Interface)
		})
	}
}

func TestInterface(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "s", FileName), "---\nname: s\ndescription: d\n---\n")
	write(t, filepath.Join(dir, "s", "assets", "i.svg"), "<svg/>")
	write(t, filepath.Join(dir, "s", "agents", "openai.yaml"), "interface:\n  display_name: S\n  icon_small: ./assets/i.svg\n  icon_large: ../../etc/passwd\n  brand_color: \"#fff\"\n")
	s, err := Parse(filepath.Join(dir, "s", FileName))
	require.NoError(t, err)
	require.NotNil(t, s.Interface)
	require.Equal(t, "S", *s.Interface.DisplayName)
	require.Equal(t, filepath.Join(dir, "s", "assets", "i.svg"), *s.Interface.IconSmall)
	require.Nil(t, s.Interface.IconLarge, "icons outside the skill are dropped")
	require.Nil(t, s.Interface.BrandColor, "only #RRGGBB colours")
}

func TestDiscoveryRootsAndRules(t *testing.T) {
	base := t.TempDir()
	home, user := filepath.Join(base, "codex"), filepath.Join(base, "home")
	repo := filepath.Join(base, "repo")
	cwd := filepath.Join(repo, "a", "b")
	AdminRoot = filepath.Join(base, "admin")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	skill := func(dir, name string) {
		write(t, filepath.Join(dir, name, FileName), "---\nname: "+name+"\ndescription: d\n---\n")
	}
	skill(filepath.Join(cwd, ".codex", "skills"), "cwdcodex")
	skill(filepath.Join(repo, ".codex", "skills"), "rootcodex") // only the cwd's .codex/skills counts
	skill(filepath.Join(repo, "a", ".agents", "skills"), "mid")
	skill(filepath.Join(repo, ".agents", "skills"), "root")
	skill(filepath.Join(base, ".agents", "skills"), "outside") // above the repository root
	skill(filepath.Join(home, "skills"), "mine")
	skill(filepath.Join(home, "skills", ".system"), "sys")
	skill(filepath.Join(user, ".agents", "skills"), "agentsuser")
	skill(AdminRoot, "adm")

	c := New(home, user)
	l := c.List(cwd, false, nil)
	var got []string
	for _, s := range l.Skills {
		got = append(got, s.Scope+":"+s.Name)
	}
	require.Equal(t, []string{"repo:cwdcodex", "repo:mid", "repo:root", "user:agentsuser", "user:mine", "system:sys", "admin:adm"}, got)
	require.Empty(t, l.Errors)

	rules := []Rule{{Name: "mid", Enabled: false}, {Path: filepath.Join(home, "skills", "mine", FileName), Enabled: false}, {Name: "mid", Enabled: true}, {Name: "root", Enabled: false}}
	l = c.List(cwd, false, rules)
	off := map[string]bool{}
	for _, s := range l.Skills {
		off[s.Name] = !s.Enabled
	}
	require.Equal(t, map[string]bool{"cwdcodex": false, "mid": false, "root": true, "agentsuser": false, "mine": true, "sys": false, "adm": false}, off)

	require.Contains(t, Instructions(l.Skills), "- mid: d (file: ")
	require.NotContains(t, Instructions(l.Skills), "- root:")
	require.Empty(t, Instructions(nil))
}

func TestRulesFromConfig(t *testing.T) {
	raw := map[string]any{"skills": map[string]any{"config": []any{
		map[string]any{"name": "a", "enabled": false},
		map[string]any{"path": "/p/SKILL.md"},
	}}}
	require.Equal(t, []Rule{{Name: "a", Enabled: false}, {Path: "/p/SKILL.md", Enabled: true}}, RulesFromConfig(raw))
	require.Nil(t, RulesFromConfig(map[string]any{}))
}
