package execmgr

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ApproxTokens estimates the token count of n bytes of text as ceil(n/4).
func ApproxTokens(n int) int { return (n + 3) / 4 }

// CountLines counts lines like Rust's str::lines: a final newline does not start another line.
func CountLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// TruncateMiddle shortens s to a budget of maxTokens*4 bytes, keeping the first and last halves (on UTF-8
// boundaries) joined by `…K tokens truncated…`. It reports whether anything was cut.
func TruncateMiddle(s string, maxTokens int) (string, bool) {
	maxTokens = max(maxTokens, 0)
	budget := maxTokens * 4
	if len(s) <= budget {
		return s, false
	}
	removed := ApproxTokens(len(s) - budget)
	left := budget / 2
	right := budget - left
	headEnd := left
	for headEnd > 0 && !utf8.RuneStart(s[headEnd]) {
		headEnd--
	}
	tailStart := len(s) - right
	for tailStart < len(s) && !utf8.RuneStart(s[tailStart]) {
		tailStart++
	}
	return fmt.Sprintf("%s…%d tokens truncated…%s", s[:headEnd], removed, s[tailStart:]), true
}

// FormatModelOutput is the unified-exec output text for the model: s itself when it fits in maxTokens,
// else `Warning: truncated output (original token count: N)\nTotal output lines: L\n\n` + TruncateMiddle.
func FormatModelOutput(s string, maxTokens int) string {
	cut, truncated := TruncateMiddle(s, maxTokens)
	if !truncated {
		return s
	}
	return fmt.Sprintf("Warning: truncated output (original token count: %d)\nTotal output lines: %d\n\n%s",
		ApproxTokens(len(s)), CountLines(s), cut)
}
