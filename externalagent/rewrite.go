package externalagent

import (
	"os"
	"strings"
)

// termVariants are the source agent's names that migrated text calls "Codex", longest first.
var termVariants = []string{"claude code", "claude-code", "claude_code", "claudecode", "claude"}

// rewriteTerms replaces the source's doc file name with AGENTS.md and its product names with Codex
// (ASCII case-insensitive, whole words only).
func rewriteTerms(s string) string {
	s = replaceWord(s, strings.ToLower(sourceDocName), "AGENTS.md")
	for _, t := range termVariants {
		s = replaceWord(s, t, "Codex")
	}
	return s
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// replaceWord replaces the ASCII-case-insensitive occurrences of needle bounded by non-word bytes.
func replaceWord(input, needle, repl string) string {
	return replaceBounded(input, needle, repl, isWordByte)
}

// replaceBounded replaces the ASCII-case-insensitive occurrences of needle not preceded or followed by a
// byte word accepts.
func replaceBounded(input, needle, repl string, word func(byte) bool) string {
	lower := asciiLower(input)
	needle = asciiLower(needle)
	var out strings.Builder
	last, from := 0, 0
	for {
		i := strings.Index(lower[from:], needle)
		if i < 0 {
			break
		}
		start := from + i
		end := start + len(needle)
		if (start == 0 || !word(input[start-1])) && (end == len(input) || !word(input[end])) {
			out.WriteString(input[last:start])
			out.WriteString(repl)
			last = end
		}
		from = start + 1
	}
	if last == 0 {
		return input
	}
	out.WriteString(input[last:])
	return out.String()
}

// asciiLower lowers ASCII letters only, so byte offsets match the input's.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

// copyRewritten writes source's text, rewritten by rw, to target.
func copyRewritten(source, target string, rw func(string) string) error {
	b, err := os.ReadFile(source)
	if err != nil {
		return err
	}
	return os.WriteFile(target, []byte(rw(string(b))), 0o644)
}
