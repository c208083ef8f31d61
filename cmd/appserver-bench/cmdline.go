package main

import (
	"errors"
	"fmt"
	"strings"
)

// splitCommandLine splits s into words with POSIX-shell-like quoting:
// whitespace separates words, '...' is literal, "..." allows \" \\ \$ \`
// escapes, and a backslash outside quotes escapes the next character. No
// expansion of variables, globs or operators is done.
func splitCommandLine(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated double quote")
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// command is a parsed --server value.
type command struct {
	text string   // as given, for reporting
	env  []string // leading NAME=value assignments
	argv []string
}

// parseCommand splits a command line and peels off leading NAME=value words.
func parseCommand(s string) (command, error) {
	words, err := splitCommandLine(s)
	if err != nil {
		return command{}, fmt.Errorf("server %q: %w", s, err)
	}
	c := command{text: s}
	for len(words) > 0 && isAssignment(words[0]) {
		c.env = append(c.env, words[0])
		words = words[1:]
	}
	if len(words) == 0 {
		return command{}, fmt.Errorf("server %q: no command", s)
	}
	c.argv = words
	return c, nil
}

func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
