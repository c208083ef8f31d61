package main

import (
	"strings"
	"unicode"
)

// initialisms are the words written in upper case in Go identifiers. "Mcp" deliberately stays "Mcp".
var initialisms = map[string]string{
	"id": "ID", "url": "URL", "json": "JSON", "http": "HTTP", "uri": "URI", "api": "API",
}

// words splits a JSON name or method name into words: on any non-alphanumeric rune and before an upper-case
// rune that follows a lower-case rune or digit ("apiKey" → api, Key; "otlp-http" → otlp, http).
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// pascal converts a JSON name to an exported Go identifier following the package's naming rule.
func pascal(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		if up, ok := initialisms[strings.ToLower(w)]; ok {
			b.WriteString(up)
			continue
		}
		rs := []rune(w)
		b.WriteRune(unicode.ToUpper(rs[0]))
		b.WriteString(string(rs[1:]))
	}
	out := b.String()
	if out == "" || unicode.IsDigit([]rune(out)[0]) {
		out = "V" + out
	}
	return out
}
