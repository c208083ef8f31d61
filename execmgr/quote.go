package execmgr

import "strings"

// ShellJoin renders argv as a POSIX shell command line for display (`/bin/bash -lc 'echo hello'`), quoting
// each word with ShellQuote and joining with spaces.
func ShellJoin(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = ShellQuote(a)
	}
	return strings.Join(parts, " ")
}

// Quoting styles a chunk of a word may use, in order of preference.
const (
	bareOK   = 1 << iota // no quotes needed
	singleOK             // fits in '...'
	doubleOK             // fits in "..." (with \" and \\ escaped)
)

// ShellQuote quotes one word the way the reference displays commands (the rules of the Rust `shlex` 1.3
// quoter): the word is cut into the longest runs that one style can hold, preferring bare, then single
// quotes, then double quotes; so `echo got:$x` with a quote in it becomes `"…got:"'$x'`.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	var b strings.Builder
	for s != "" {
		n, style := quoteRun(s)
		run := s[:n]
		s = s[n:]
		switch style {
		case bareOK:
			b.WriteString(run)
		case singleOK:
			b.WriteByte('\'')
			b.WriteString(run)
			b.WriteByte('\'')
		default:
			b.WriteByte('"')
			for i := 0; i < len(run); i++ {
				if c := run[i]; c == '"' || c == '\\' || c == '$' || c == '`' {
					b.WriteByte('\\')
				}
				b.WriteByte(run[i])
			}
			b.WriteByte('"')
		}
	}
	return b.String()
}

// quoteRun returns the length of the longest prefix of s (non-empty) that one style can hold, and the
// preferred such style.
func quoteRun(s string) (int, int) {
	ok := bareOK | singleOK | doubleOK
	i := 0
	if s[0] == '^' { // a leading caret is only safe right after an opening single quote
		ok, i = singleOK, 1
	}
	for ; i < len(s); i++ {
		next := ok & charStyles(s[i])
		if next == 0 {
			break
		}
		ok = next
	}
	switch {
	case ok&bareOK != 0:
		return i, bareOK
	case ok&singleOK != 0:
		return i, singleOK
	default:
		return i, doubleOK
	}
}

// charStyles lists the styles that can hold byte c.
func charStyles(c byte) int {
	styles := singleOK | doubleOK
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		styles |= bareOK
	case c < 0x80 && strings.IndexByte("+-./:@]_", c) >= 0:
		styles |= bareOK
	}
	switch c {
	case '\'', '\\':
		styles &^= singleOK
	case '^':
		styles &^= singleOK | doubleOK
	case '`', '$', '!':
		styles &^= doubleOK
	}
	return styles
}
