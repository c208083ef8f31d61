package execmgr

import "strings"

// ShellJoin renders argv as a POSIX shell command line for display (`/bin/bash -lc 'echo hello'`):
// words made only of safe characters stay bare, others are single-quoted (or double-quoted when they
// contain a single quote but nothing double quotes would expand).
func ShellJoin(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = ShellQuote(a)
	}
	return strings.Join(parts, " ")
}

// ShellQuote quotes one word for a POSIX shell; see ShellJoin.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, func(r rune) bool { return !isSafeShellRune(r) }) < 0 {
		return s
	}
	if !strings.Contains(s, "'") {
		return "'" + s + "'"
	}
	if !strings.ContainsAny(s, "$`\"\\!") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

func isSafeShellRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("_@%+=:,./-", r)
}
