package externalagent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"appserver/hooks"
)

// matcherEvents are the hook events whose groups keep a tool-name matcher.
var matcherEvents = map[string]bool{"PreToolUse": true, "PermissionRequest": true, "PostToolUse": true, "PreCompact": true,
	"PostCompact": true, "SessionStart": true, "SessionEnd": true, "SubagentStart": true, "SubagentStop": true}

// readHookSettings reads a JSON settings file holding hooks; ok is false when it is not a regular file, and m
// is nil when its top level is not an object.
func readHookSettings(file string) (m map[string]any, ok bool, err error) {
	if !isFile(file) {
		return nil, false, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, false, err
	}
	v, err := decodeJSON(b)
	if err != nil {
		return nil, false, invalidf("invalid hooks settings: %v", err)
	}
	m, _ = v.(map[string]any)
	return m, true, nil
}

// hookMigration converts the command hooks of sourceDir's settings.json and settings.local.json to
// hooks.json's {event: [groups]} form; scripts referenced under .claude/hooks/ are pointed at targetDir/hooks.
// disableAllHooks (last file wins) turns everything off.
func hookMigration(sourceDir, targetDir string) (object, error) {
	var settings []map[string]any
	disableAll := false
	for _, name := range []string{"settings.json", "settings.local.json"} {
		file := filepath.Join(sourceDir, name)
		m, ok, err := readHookSettings(file)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if d, ok := m["disableAllHooks"].(bool); ok {
			disableAll = d
		}
		settings = append(settings, m)
	}
	var out object
	if disableAll {
		return out, nil
	}
	for _, s := range settings {
		cfg, _ := s["hooks"].(map[string]any)
		for _, ev := range hooks.Events {
			groups, _ := cfg[ev.File].([]any)
			for _, g := range groups {
				group := convertHookGroup(ev.File, g, targetDir)
				if group == nil {
					continue
				}
				i := 0
				for i < len(out) && out[i].Key != ev.File {
					i++
				}
				if i == len(out) {
					out = append(out, field{ev.File, []any{}})
				}
				out[i].Value = append(out[i].Value.([]any), group)
			}
		}
	}
	return out, nil
}

func convertHookGroup(event string, g any, targetDir string) object {
	group, ok := g.(map[string]any)
	if !ok {
		return nil
	}
	for k := range group {
		if k != "matcher" && k != "hooks" {
			return nil
		}
	}
	var cmds []any
	list, _ := group["hooks"].([]any)
	for _, h := range list {
		if c := convertHook(h, targetDir); c != nil {
			cmds = append(cmds, c)
		}
	}
	if len(cmds) == 0 {
		return nil
	}
	var out object
	if m, ok := group["matcher"].(string); ok && matcherEvents[event] {
		out = append(out, field{"matcher", m})
	}
	return append(out, field{"hooks", cmds})
}

func convertHook(h any, targetDir string) object {
	hook, ok := h.(map[string]any)
	if !ok {
		return nil
	}
	typ := "command"
	if t, ok := hook["type"]; ok {
		s, _ := t.(string)
		typ = s
	}
	if typ != "command" {
		return nil
	}
	for k := range hook {
		switch k {
		case "type", "command", "timeout", "timeoutSec", "statusMessage", "async":
		default:
			return nil
		}
	}
	if a, ok := hook["async"].(bool); ok && a {
		return nil
	}
	cmd, _ := hook["command"].(string)
	cmd = strings.TrimSpace(cmd)
	if cmd == "" {
		return nil
	}
	out := object{{"type", "command"}, {"command", rewriteHookCommand(cmd, targetDir)}}
	t, ok := hook["timeout"]
	if !ok {
		t, ok = hook["timeoutSec"]
	}
	if ok {
		if n, ok := jsonUint(t); ok {
			out = append(out, field{"timeout", n})
		}
	}
	if sm, ok := hook["statusMessage"].(string); ok {
		out = append(out, field{"statusMessage", rewriteTerms(sm)})
	}
	return out
}

func jsonUint(v any) (uint64, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = x
	default:
		return 0, false
	}
	var n uint64
	if s == "" {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

const sourceHooksPath = sourceDirName + "/hooks/"

// rewriteHookCommand points script paths under .claude/hooks/ at targetDir/hooks (single-quoted); paths
// built at run time (variables, globs) and Windows-style commands stay as they are.
func rewriteHookCommand(cmd, targetDir string) string {
	if strings.Contains(cmd, sourceDirName+`\hooks\`) || strings.Contains(cmd, "%CLAUDE_PROJECT_DIR%") || strings.Contains(cmd, "$env:CLAUDE_PROJECT_DIR") {
		return cmd
	}
	hooksDir := filepath.Join(targetDir, "hooks")
	cmd = rewriteQuoted(cmd, '\'', hooksDir)
	cmd = rewriteQuoted(cmd, '"', hooksDir)
	return rewriteUnquoted(cmd, hooksDir)
}

func rewriteQuoted(cmd string, quote byte, hooksDir string) string {
	from := 0
	for {
		i := strings.IndexByte(cmd[from:], quote)
		if i < 0 {
			return cmd
		}
		start := from + i
		j := strings.IndexByte(cmd[start+1:], quote)
		if j < 0 {
			return cmd
		}
		end := start + 1 + j
		content := cmd[start+1 : end]
		k := strings.Index(content, sourceHooksPath)
		if k < 0 {
			from = end + 1
			continue
		}
		repl, ok := hookPathReplacement(hooksDir, content, k, content[k+len(sourceHooksPath):])
		if !ok {
			from = end + 1
			continue
		}
		cmd = cmd[:start] + repl + cmd[end+1:]
		from = start + len(repl)
	}
}

func isPathBoundary(c rune) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || strings.ContainsRune("=;|&<>()", c)
}

func rewriteUnquoted(cmd, hooksDir string) string {
	from := 0
	for {
		k := findUnquoted(cmd, from)
		if k < 0 {
			return cmd
		}
		start := 0
		for i, c := range cmd[:k] {
			if isPathBoundary(c) {
				start = i + len(string(c))
			}
		}
		end := len(cmd)
		escaped := false
		for i, c := range cmd[k+len(sourceHooksPath):] {
			if escaped {
				escaped = false
				continue
			}
			if c == '\\' {
				escaped = true
				continue
			}
			if isPathBoundary(c) {
				end = k + len(sourceHooksPath) + i
				break
			}
		}
		if start > 0 && cmd[start-1] == '=' {
			from = k + len(sourceHooksPath)
			continue
		}
		path := cmd[start:end]
		repl, ok := hookPathReplacement(hooksDir, path, k-start, cmd[k+len(sourceHooksPath):end])
		if !ok {
			from = k + len(sourceHooksPath)
			continue
		}
		cmd = cmd[:start] + repl + cmd[end:]
		from = start + len(repl)
	}
}

// findUnquoted finds the next .claude/hooks/ outside quotes at or after from.
func findUnquoted(cmd string, from int) int {
	single, double, escaped := false, false, false
	for i := from; i < len(cmd); i++ {
		c := cmd[i]
		if escaped {
			escaped = false
			continue
		}
		if !single && c == '\\' {
			escaped = true
			continue
		}
		switch {
		case c == '\'' && !double:
			single = !single
		case c == '"' && !single:
			double = !double
		case !single && !double && strings.HasPrefix(cmd[i:], sourceHooksPath):
			return i
		}
	}
	return -1
}

// hookPathReplacement is the quoted target path for a path whose .claude/hooks/ starts at k, when the part
// before it is a plain directory prefix and the rest is a static file name.
func hookPathReplacement(hooksDir, path string, k int, suffix string) (string, bool) {
	prefix := path[:k]
	if !(prefix == "" || prefix == "./" || strings.HasSuffix(prefix, "/")) || strings.IndexFunc(prefix, isPathBoundary) >= 0 {
		return "", false
	}
	if suffix == "" || strings.ContainsAny(suffix, "\\$`*?[{}") {
		return "", false
	}
	return "'" + strings.ReplaceAll(filepath.Join(hooksDir, suffix), "'", `'\''`) + "'", true
}

// hookEventNames lists the events a hooks migration carries, in order.
func hookEventNames(m object) []string {
	names := make([]string, 0, len(m))
	for _, f := range m {
		names = append(names, f.Key)
	}
	return names
}

// importHooks writes targetHooks from the migration when it is missing or empty, copying the source's
// hooks/ scripts next to it (existing files are kept). It reports whether it wrote.
func importHooks(sourceDir, targetHooks string) ([]string, error) {
	targetDir := filepath.Dir(targetHooks)
	m, err := hookMigration(sourceDir, targetDir)
	if err != nil || len(m) == 0 {
		return nil, err
	}
	empty, err := isMissingOrEmpty(targetHooks)
	if err != nil || !empty {
		return nil, err
	}
	if err := os.MkdirAll(targetDir, 0o755); err != nil {
		return nil, err
	}
	if src := filepath.Join(sourceDir, "hooks"); isDir(src) {
		if err := copyTree(src, filepath.Join(targetDir, "hooks"), false, rewriteTerms); err != nil {
			return nil, err
		}
	}
	b, err := indentJSON(object{{"hooks", m}})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(targetHooks, b, 0o644); err != nil {
		return nil, err
	}
	return hookEventNames(m), nil
}
