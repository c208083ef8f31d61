// Package skills discovers SKILL.md skills: the user's ($CODEX_HOME/skills, ~/.agents/skills), the
// system ones installed under $CODEX_HOME/skills/.system, the admin ones (/etc/codex/skills), the
// repository's (the working directory's .codex/skills and every .agents/skills from it up to the
// repository root) and extra roots a client names. It parses each skill's front matter and optional
// agents/openai.yaml, applies the enable/disable rules of `[[skills.config]]`, caches results per working
// directory, and renders the short list of skills offered to the model.
package skills

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// Scopes of a skill, as the wire names them.
const (
	ScopeRepo   = "repo"
	ScopeUser   = "user"
	ScopeSystem = "system"
	ScopeAdmin  = "admin"
)

// FileName is the file that makes a directory a skill.
const FileName = "SKILL.md"

// AdminRoot holds machine-wide skills; a variable so tests can move it.
var AdminRoot = "/etc/codex/skills"

// Skill is one discovered skill.
type Skill struct {
	Name             string
	Description      string
	ShortDescription string // front matter metadata.short-description; "" when absent
	Interface        *Interface
	Path             string // absolute path of SKILL.md
	Scope            string
	Enabled          bool
}

// Interface is the optional presentation metadata of agents/openai.yaml; nil fields are unset.
type Interface struct {
	DisplayName, ShortDescription, IconSmall, IconLarge, BrandColor, DefaultPrompt *string
}

// Problem is a SKILL.md that could not be used.
type Problem struct{ Path, Message string }

// Listing is the skills visible from one working directory.
type Listing struct {
	Cwd    string
	Skills []Skill
	Errors []Problem
}

// Rule is one `[[skills.config]]` entry: it enables or disables the skill at Path or named Name.
type Rule struct {
	Name, Path string
	Enabled    bool
}

// Catalog discovers skills and caches the result per working directory.
type Catalog struct {
	codexHome string
	userHome  string

	mu         sync.Mutex
	extraRoots []string
	cache      map[string]Listing
}

// New returns a catalog for a CODEX_HOME (userHome is $HOME, for ~/.agents/skills; "" skips it).
func New(codexHome, userHome string) *Catalog {
	return &Catalog{codexHome: codexHome, userHome: userHome, cache: map[string]Listing{}}
}

// SetExtraRoots replaces the extra skill roots and drops the cache.
func (c *Catalog) SetExtraRoots(roots []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.extraRoots = append([]string(nil), roots...)
	c.cache = map[string]Listing{}
}

// Invalidate drops every cached listing (after a config change).
func (c *Catalog) Invalidate() {
	c.mu.Lock()
	c.cache = map[string]Listing{}
	c.mu.Unlock()
}

// List returns the skills visible from cwd with rules applied; forceReload rescans the disk.
func (c *Catalog) List(cwd string, forceReload bool, rules []Rule) Listing {
	c.mu.Lock()
	l, ok := c.cache[cwd]
	extra := c.extraRoots
	c.mu.Unlock()
	if !ok || forceReload {
		l = c.scan(cwd, extra)
		c.mu.Lock()
		c.cache[cwd] = l
		c.mu.Unlock()
	}
	out := Listing{Cwd: l.Cwd, Skills: make([]Skill, len(l.Skills)), Errors: l.Errors}
	for i, s := range l.Skills {
		s.Enabled = Enabled(s, rules)
		out.Skills[i] = s
	}
	return out
}

// Enabled applies rules to s: the last rule naming its path or its name wins; default enabled.
func Enabled(s Skill, rules []Rule) bool {
	on := true
	for _, r := range rules {
		if (r.Path != "" && filepath.Clean(r.Path) == s.Path) || (r.Path == "" && r.Name != "" && r.Name == s.Name) {
			on = r.Enabled
		}
	}
	return on
}

type root struct{ dir, scope string }

func (c *Catalog) roots(cwd string, extra []string) []root {
	var rs []root
	if cwd != "" {
		rs = append(rs, root{filepath.Join(cwd, ".codex", "skills"), ScopeRepo})
		top := repoRoot(cwd)
		for dir := cwd; ; dir = filepath.Dir(dir) {
			rs = append(rs, root{filepath.Join(dir, ".agents", "skills"), ScopeRepo})
			if dir == top || dir == filepath.Dir(dir) {
				break
			}
		}
	}
	rs = append(rs, root{filepath.Join(c.codexHome, "skills"), ScopeUser})
	if c.userHome != "" {
		rs = append(rs, root{filepath.Join(c.userHome, ".agents", "skills"), ScopeUser})
	}
	for _, e := range extra {
		rs = append(rs, root{e, ScopeUser})
	}
	rs = append(rs, root{filepath.Join(c.codexHome, "skills", ".system"), ScopeSystem}, root{AdminRoot, ScopeAdmin})
	return rs
}

// repoRoot is the nearest ancestor of dir (itself included) holding .git, or dir when there is none.
func repoRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

var scopeRank = map[string]int{ScopeRepo: 0, ScopeUser: 1, ScopeSystem: 2, ScopeAdmin: 3}

func (c *Catalog) scan(cwd string, extra []string) Listing {
	l := Listing{Cwd: cwd}
	seen := map[string]bool{}
	for _, r := range c.roots(cwd, extra) {
		for _, file := range findSkillFiles(r.dir, r.scope != ScopeSystem) {
			if seen[file] {
				continue
			}
			seen[file] = true
			s, err := Parse(file)
			if err != nil {
				l.Errors = append(l.Errors, Problem{file, err.Error()})
				continue
			}
			s.Scope = r.scope
			l.Skills = append(l.Skills, s)
		}
	}
	sort.SliceStable(l.Skills, func(i, j int) bool {
		a, b := l.Skills[i], l.Skills[j]
		if scopeRank[a.Scope] != scopeRank[b.Scope] {
			return scopeRank[a.Scope] < scopeRank[b.Scope]
		}
		return a.Name < b.Name
	})
	return l
}

// findSkillFiles returns the SKILL.md files directly below dir's subdirectories (dir/<skill>/SKILL.md),
// skipping hidden directories when skipHidden (the .system folder belongs to another scope).
func findSkillFiles(dir string, skipHidden bool) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if skipHidden && strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			continue
		}
		f := filepath.Join(p, FileName)
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

type frontMatter struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Metadata    struct {
		ShortDescription string `yaml:"short-description"`
	} `yaml:"metadata"`
}

// Parse reads one SKILL.md: its YAML front matter (name, description, metadata.short-description) and
// the optional agents/openai.yaml beside it.
func Parse(file string) (Skill, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Skill{}, err
	}
	fm, err := splitFrontMatter(data)
	if err != nil {
		return Skill{}, err
	}
	var m frontMatter
	if err := yaml.Unmarshal(fm, &m); err != nil {
		return Skill{}, fmt.Errorf("invalid YAML frontmatter: %w", err)
	}
	m.Name, m.Description = strings.TrimSpace(m.Name), strings.TrimSpace(m.Description)
	if m.Name == "" {
		return Skill{}, errors.New("missing field `name`")
	}
	if m.Description == "" {
		return Skill{}, errors.New("missing field `description`")
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return Skill{}, err
	}
	s := Skill{Name: m.Name, Description: m.Description, ShortDescription: strings.TrimSpace(m.Metadata.ShortDescription), Path: abs, Enabled: true}
	s.Interface = readInterface(filepath.Dir(abs))
	return s, nil
}

func splitFrontMatter(data []byte) ([]byte, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) == 0 || strings.TrimRight(string(lines[0]), "\r\n") != "---" {
		return nil, errors.New("missing YAML frontmatter delimited by ---")
	}
	var buf bytes.Buffer
	for _, ln := range lines[1:] {
		if strings.TrimRight(string(ln), "\r\n") == "---" {
			return buf.Bytes(), nil
		}
		buf.Write(ln)
	}
	return nil, errors.New("missing YAML frontmatter delimited by ---")
}

var hexColor = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^#[0-9A-Fa-f]{6}$`) })

// readInterface reads <skillDir>/agents/openai.yaml; nil when absent or unreadable.
func readInterface(skillDir string) *Interface {
	data, err := os.ReadFile(filepath.Join(skillDir, "agents", "openai.yaml"))
	if err != nil {
		return nil
	}
	var doc struct {
		Interface struct {
			DisplayName      string `yaml:"display_name"`
			ShortDescription string `yaml:"short_description"`
			IconSmall        string `yaml:"icon_small"`
			IconLarge        string `yaml:"icon_large"`
			BrandColor       string `yaml:"brand_color"`
			DefaultPrompt    string `yaml:"default_prompt"`
		} `yaml:"interface"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil
	}
	in := doc.Interface
	opt := func(s string) *string {
		if s = strings.TrimSpace(s); s == "" {
			return nil
		}
		return &s
	}
	icon := func(rel string) *string {
		if rel == "" {
			return nil
		}
		p := filepath.Clean(filepath.Join(skillDir, rel))
		if !strings.HasPrefix(p, skillDir+string(filepath.Separator)) {
			return nil
		}
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			return nil
		}
		return &p
	}
	out := &Interface{DisplayName: opt(in.DisplayName), ShortDescription: opt(in.ShortDescription), DefaultPrompt: opt(in.DefaultPrompt),
		IconSmall: icon(in.IconSmall), IconLarge: icon(in.IconLarge)}
	if hexColor().MatchString(in.BrandColor) {
		out.BrandColor = opt(in.BrandColor)
	}
	return out
}

// RulesFromConfig reads the `[[skills.config]]` entries of a raw configuration (snake_case map).
func RulesFromConfig(raw map[string]any) []Rule {
	sk, _ := raw["skills"].(map[string]any)
	if sk == nil {
		return nil
	}
	var out []Rule
	switch entries := sk["config"].(type) {
	case []any:
		for _, e := range entries {
			m, _ := e.(map[string]any)
			if m == nil {
				continue
			}
			r := Rule{Enabled: true}
			r.Name, _ = m["name"].(string)
			r.Path, _ = m["path"].(string)
			if v, ok := m["enabled"].(bool); ok {
				r.Enabled = v
			}
			out = append(out, r)
		}
	case []map[string]any:
		for _, m := range entries {
			r := Rule{Enabled: true}
			r.Name, _ = m["name"].(string)
			r.Path, _ = m["path"].(string)
			if v, ok := m["enabled"].(bool); ok {
				r.Enabled = v
			}
			out = append(out, r)
		}
	}
	return out
}

// Instructions renders the enabled skills as a short block for the model (our own wording), or "" when
// there are none.
func Instructions(skills []Skill) string {
	var b strings.Builder
	n := 0
	for _, s := range skills {
		if !s.Enabled {
			continue
		}
		if n == 0 {
			b.WriteString("## Skills\nThese skills are available. Each is a folder with a SKILL.md that explains how to use it; when a task matches a skill's description, or the user names it (as $name), open its SKILL.md first and follow it. Read only what the task needs.\n")
		}
		n++
		fmt.Fprintf(&b, "- %s: %s (file: %s)\n", s.Name, s.Description, s.Path)
	}
	return b.String()
}
