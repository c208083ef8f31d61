// Package execpolicy reads and writes the command prefix rules of $CODEX_HOME/rules/*.rules, the file the
// reference saves a "don't ask again for commands that start with …" approval to. Only the allow rules'
// literal prefixes are read: prefix_rule(pattern=[…], decision="allow"), where a pattern element is a
// string or a list of alternative strings; any other rule or statement is skipped.
package execpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DefaultFile is the rules file, under $CODEX_HOME, that approved prefixes are appended to.
const DefaultFile = "rules/default.rules"

// maxExpansions bounds the prefixes one rule's alternatives expand to.
const maxExpansions = 256

// Rule renders an allow rule for prefix in the reference's form (one line, no newline).
func Rule(prefix []string) string {
	return `prefix_rule(pattern=` + List(prefix) + `, decision="allow")`
}

// List renders prefix as the reference writes it in rules and in its messages: ["a", "b"], JSON strings.
func List(prefix []string) string {
	q := make([]string, len(prefix))
	for i, p := range prefix {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(p) // a string always encodes
		q[i] = strings.TrimSuffix(b.String(), "\n")
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Append saves an allow rule for prefix to codexHome's default rules file, creating it as needed.
func Append(codexHome string, prefix []string) error {
	if len(prefix) == 0 {
		return errors.New("execpolicy: empty prefix")
	}
	path := filepath.Join(codexHome, DefaultFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	line := Rule(prefix) + "\n"
	if st, err := f.Stat(); err == nil && st.Size() > 0 && !endsWithNewline(path, st.Size()) {
		line = "\n" + line
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func endsWithNewline(path string, size int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, size-1); err != nil {
		return true
	}
	return b[0] == '\n'
}

// AllowedPrefixes returns the literal prefixes the allow rules of codexHome's rules/*.rules files grant, in
// file name order; a missing directory has none.
func AllowedPrefixes(codexHome string) ([][]string, error) {
	names, err := filepath.Glob(filepath.Join(codexHome, "rules", "*.rules"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out [][]string
	for _, n := range names {
		b, err := os.ReadFile(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, Parse(string(b))...)
	}
	return out, nil
}

// Parse returns the prefixes the allow rules of one rules file grant.
func Parse(src string) [][]string {
	var out [][]string
	for rest := stripComments(src); ; {
		i := strings.Index(rest, "prefix_rule(")
		if i < 0 {
			return out
		}
		if i > 0 && isIdent(rest[i-1]) {
			rest = rest[i+len("prefix_rule("):]
			continue
		}
		p := &parser{s: rest[i+len("prefix_rule("):]}
		args, ok := p.call()
		rest = p.s
		if !ok {
			continue
		}
		if d, set := args["decision"]; set && d.str != "allow" {
			continue
		}
		pat, ok := args["pattern"]
		if !ok || pat.list == nil {
			continue
		}
		out = append(out, expand(pat.list)...)
	}
}

// stripComments blanks the `#` comments of src (outside string literals), so a commented-out rule is none.
func stripComments(src string) string {
	b := []byte(src)
	var quote byte
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote || c == '\n' {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		}
	}
	return string(b)
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// value is a parsed argument: a string, or a list of values.
type value struct {
	str    string
	isStr  bool
	list   []value
	isList bool
}

// expand turns a pattern (strings and lists of alternative strings) into its literal prefixes.
func expand(pattern []value) [][]string {
	out := [][]string{{}}
	for _, el := range pattern {
		var alts []string
		switch {
		case el.isStr:
			alts = []string{el.str}
		case el.isList:
			for _, a := range el.list {
				if !a.isStr {
					return nil
				}
				alts = append(alts, a.str)
			}
		}
		if len(alts) == 0 || len(out)*len(alts) > maxExpansions {
			return nil
		}
		next := make([][]string, 0, len(out)*len(alts))
		for _, o := range out {
			for _, a := range alts {
				next = append(next, append(append([]string(nil), o...), a))
			}
		}
		out = next
	}
	if len(out) == 1 && len(out[0]) == 0 {
		return nil
	}
	return out
}

// parser reads the keyword arguments of one call, up to its closing parenthesis.
type parser struct{ s string }

func (p *parser) skip() {
	for len(p.s) > 0 {
		switch c := p.s[0]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.s = p.s[1:]
		case c == '#':
			if i := strings.IndexByte(p.s, '\n'); i >= 0 {
				p.s = p.s[i+1:]
			} else {
				p.s = ""
			}
		default:
			return
		}
	}
}

func (p *parser) call() (map[string]value, bool) {
	args := map[string]value{}
	for {
		p.skip()
		if strings.HasPrefix(p.s, ")") {
			p.s = p.s[1:]
			return args, true
		}
		i := 0
		for i < len(p.s) && isIdent(p.s[i]) {
			i++
		}
		if i == 0 {
			return nil, false
		}
		key := p.s[:i]
		p.s = p.s[i:]
		p.skip()
		if !strings.HasPrefix(p.s, "=") {
			return nil, false
		}
		p.s = p.s[1:]
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		args[key] = v
		p.skip()
		if strings.HasPrefix(p.s, ",") {
			p.s = p.s[1:]
		}
	}
}

func (p *parser) value() (value, bool) {
	p.skip()
	if p.s == "" {
		return value{}, false
	}
	switch p.s[0] {
	case '"', '\'':
		s, ok := p.str()
		return value{str: s, isStr: true}, ok
	case '[':
		p.s = p.s[1:]
		list := []value{}
		for {
			p.skip()
			if strings.HasPrefix(p.s, "]") {
				p.s = p.s[1:]
				return value{list: list, isList: true}, true
			}
			v, ok := p.value()
			if !ok {
				return value{}, false
			}
			list = append(list, v)
			p.skip()
			if strings.HasPrefix(p.s, ",") {
				p.s = p.s[1:]
			}
		}
	}
	// Anything else (a number, a name, a call) is read up to the next separator and kept as no value.
	i := strings.IndexAny(p.s, ",)]")
	if i <= 0 {
		return value{}, false // no separator, or no value before it
	}
	p.s = p.s[i:]
	return value{}, true
}

// str reads a quoted string literal with Go/Starlark-style escapes.
func (p *parser) str() (string, bool) {
	q := p.s[0]
	for i := 1; i < len(p.s); i++ {
		switch p.s[i] {
		case '\\':
			i++
		case q:
			lit := p.s[:i+1]
			p.s = p.s[i+1:]
			if q == '\'' {
				lit = `"` + strings.ReplaceAll(strings.ReplaceAll(lit[1:len(lit)-1], `"`, `\"`), `\'`, `'`) + `"`
			}
			s, err := strconv.Unquote(lit)
			return s, err == nil
		case '\n':
			return "", false
		}
	}
	return "", false
}
