package externalagent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// copyTree copies source into target recursively. With rewriteSkill, SKILL.md files are rewritten
// (rewriteTerms); otherwise existing target files are kept.
func copyTree(source, target string, rewriteSkill bool, rw func(string) string) error {
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(source)
	if err != nil {
		return err
	}
	for _, e := range entries {
		src, dst := filepath.Join(source, e.Name()), filepath.Join(target, e.Name())
		switch {
		case e.IsDir():
			if err := copyTree(src, dst, rewriteSkill, rw); err != nil {
				return err
			}
		case e.Type().IsRegular():
			if rewriteSkill && strings.EqualFold(e.Name(), "SKILL.md") {
				if err := copyRewritten(src, dst, rw); err != nil {
					return err
				}
				continue
			}
			if !rewriteSkill && exists(dst) {
				continue
			}
			if err := copyFile(src, dst); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// subdirNames lists dir's subdirectories, sorted (none when dir is missing).
func subdirNames(dir string) ([]string, error) {
	if !isDir(dir) {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// missingSkills lists the skill folders of source that target does not have.
func missingSkills(source, target string) ([]string, error) {
	names, err := subdirNames(source)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if !isDir(filepath.Join(target, n)) {
			out = append(out, n)
		}
	}
	return out, nil
}

// importSkills copies each skill folder of source that target lacks (SKILL.md rewritten).
func importSkills(source, target string, rw func(string) string) ([]string, error) {
	if !isDir(source) {
		return nil, nil
	}
	names, err := subdirNames(source)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		dst := filepath.Join(target, n)
		if exists(dst) {
			continue
		}
		if err := copyTree(filepath.Join(source, n), dst, true, rw); err != nil {
			return out, err
		}
		out = append(out, n)
	}
	return out, nil
}

const (
	commandSkillPrefix = "source-command"
	maxSkillNameLen    = 64
)

// command is one convertible source command: its file, its name relative to the commands folder
// ("pr-review") and the skill name it becomes.
type command struct {
	file, sourceName, skill string
	doc                     document
}

var numberedArg = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$[0-9]`) })

// unsupportedTemplate reports template features only the source agent expands (arguments, shell
// interpolation, file references, handlebars).
func unsupportedTemplate(body string) bool {
	if strings.Contains(body, "$ARGUMENTS") || numberedArg().MatchString(body) ||
		strings.Contains(body, "{{") && strings.Contains(body, "}}") ||
		strings.Contains(body, "!`") || strings.Contains(body, "! `") {
		return true
	}
	for _, tok := range strings.Fields(body) {
		if len(tok) > 1 && tok[0] == '@' {
			return true
		}
	}
	return false
}

func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range s {
		if c < utf8.RuneSelf && (c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			b.WriteRune(c | 0x20)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		return "migrated"
	}
	return out
}

func commandDescription(doc document, sourceName string) string {
	if d := doc.front["description"]; strings.TrimSpace(d) != "" {
		return d
	}
	return fmt.Sprintf("Migrated source command `%s`", sourceName)
}

// commands lists the convertible commands under dir (recursively, sorted by path); names two files
// would share are left out.
func commands(dir string) ([]command, error) {
	if !isDir(dir) {
		return nil, nil
	}
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && filepath.Ext(p) == ".md" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	byName := map[string][]command{}
	for _, f := range files {
		if strings.TrimSuffix(filepath.Base(f), ".md") == "README" {
			continue
		}
		doc, err := readDocument(f)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dir, f)
		sourceName := strings.Join(strings.Split(strings.TrimSuffix(rel, ".md"), string(filepath.Separator)), "-")
		skill := slugify(commandSkillPrefix + "-" + sourceName)
		if utf8.RuneCountInString(skill) > maxSkillNameLen || unsupportedTemplate(doc.body) {
			continue
		}
		byName[skill] = append(byName[skill], command{file: f, sourceName: sourceName, skill: skill, doc: doc})
	}
	var out []command
	for _, name := range sortedKeys(byName) {
		if len(byName[name]) == 1 {
			out = append(out, byName[name][0])
		}
	}
	return out, nil
}

func missingCommands(dir, targetSkills string) ([]string, error) {
	cmds, err := commands(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range cmds {
		if !exists(filepath.Join(targetSkills, c.skill)) {
			out = append(out, c.skill)
		}
	}
	return out, nil
}

// importCommands writes each missing command as targetSkills/<skill>/SKILL.md.
func importCommands(dir, targetSkills string, rw func(string) string) ([]string, error) {
	cmds, err := commands(dir)
	if err != nil || len(cmds) == 0 {
		return nil, err
	}
	if err := os.MkdirAll(targetSkills, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, c := range cmds {
		target := filepath.Join(targetSkills, c.skill)
		if exists(target) {
			continue
		}
		if err := os.MkdirAll(target, 0o755); err != nil {
			return out, err
		}
		body := rw(strings.TrimSpace(c.doc.body))
		if body == "" {
			body = "No command template body was found."
		}
		text := fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n\n# %s\n\nUse this skill when the user asks to run the migrated source command `%s`.\n\n## Command Template\n\n%s\n",
			yamlString(c.skill), yamlString(rw(commandDescription(c.doc, c.sourceName))), c.skill, c.sourceName, body)
		if err := os.WriteFile(filepath.Join(target, "SKILL.md"), []byte(text), 0o644); err != nil {
			return out, err
		}
		out = append(out, c.skill)
	}
	return out, nil
}

// subagent is one convertible agent definition (a .md file with name, description and a body).
type subagent struct {
	file, name, description, permissionMode, effort, body string
}

func subagents(dir string) ([]subagent, error) {
	if !isDir(dir) {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []subagent
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || filepath.Ext(name) != ".md" || strings.TrimSuffix(name, ".md") == "README" {
			continue
		}
		f := filepath.Join(dir, name)
		doc, err := readDocument(f)
		if err != nil {
			return nil, err
		}
		if doc.frontErr || strings.TrimSpace(doc.body) == "" || doc.front["name"] == "" || doc.front["description"] == "" {
			continue
		}
		out = append(out, subagent{file: f, name: doc.front["name"], description: doc.front["description"],
			permissionMode: doc.front["permissionMode"], effort: doc.front["effort"], body: doc.body})
	}
	return out, nil
}

func subagentTarget(a subagent, targetDir string) string {
	return filepath.Join(targetDir, strings.TrimSuffix(filepath.Base(a.file), ".md")+".toml")
}

func missingSubagents(dir, targetDir string) ([]string, error) {
	list, err := subagents(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range list {
		if !exists(subagentTarget(a, targetDir)) {
			out = append(out, a.name)
		}
	}
	return out, nil
}

// tomlString renders s as a TOML basic string; text with line breaks as a multi-line one.
func tomlString(s string) string {
	multi := strings.Contains(s, "\n")
	var b strings.Builder
	if multi {
		b.WriteString("\"\"\"\n")
	} else {
		b.WriteByte('"')
	}
	for i, c := range s {
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '"' && (!multi || strings.HasPrefix(s[i+1:], `""`) || i == len(s)-1):
			b.WriteString(`\"`)
		case c == '\n' && multi:
			b.WriteByte('\n')
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, c)
		default:
			b.WriteRune(c)
		}
	}
	if multi {
		b.WriteString(`"""`)
	} else {
		b.WriteByte('"')
	}
	return b.String()
}

// importSubagents writes targetDir/<file>.toml for each agent definition that has none.
func importSubagents(dir, targetDir string, rw func(string) string) ([]string, error) {
	if !isDir(dir) {
		return nil, nil
	}
	list, err := subagents(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(targetDir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, a := range list {
		target := subagentTarget(a, targetDir)
		if exists(target) {
			continue
		}
		lines := []string{"name = " + tomlString(a.name), "description = " + tomlString(rw(a.description))}
		effort := a.effort
		if effort == "max" {
			effort = "xhigh"
		}
		switch effort {
		case "none", "minimal", "low", "medium", "high", "xhigh":
			lines = append(lines, "model_reasoning_effort = "+tomlString(effort))
		}
		switch a.permissionMode {
		case "acceptEdits":
			lines = append(lines, `sandbox_mode = "workspace-write"`)
		case "readOnly":
			lines = append(lines, `sandbox_mode = "read-only"`)
		}
		instructions := rw(strings.TrimSpace(a.body))
		if instructions == "" {
			instructions = "No subagent instructions were found."
		}
		lines = append(lines, "developer_instructions = "+tomlString(instructions))
		if err := os.WriteFile(target, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			return out, err
		}
		out = append(out, a.name)
	}
	return out, nil
}

// docSource is the instructions file a scope migrates: the repo's CLAUDE.md or .claude/CLAUDE.md, or the
// home's ~/.claude/CLAUDE.md ("" when none has content).
func docSource(sc scope) (string, error) {
	candidates := []string{filepath.Join(sc.sourceDir, sourceDocName)}
	if sc.repo != "" {
		candidates = []string{filepath.Join(sc.repo, sourceDocName), filepath.Join(sc.sourceDir, sourceDocName)}
	}
	for _, c := range candidates {
		ok, err := isNonEmptyFile(c)
		if err != nil {
			return "", err
		}
		if ok {
			return c, nil
		}
	}
	return "", nil
}
