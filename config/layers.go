package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Layer source types as they appear on the wire (ConfigLayerSource.type).
const (
	SourceSystem       = "system"
	SourceUser         = "user"
	SourceProject      = "project"
	SourceSessionFlags = "sessionFlags"
)

// SystemConfigPath is the system-wide configuration file, the lowest layer.
const SystemConfigPath = "/etc/codex/config.toml"

// Error is a configuration problem: a malformed file, an invalid -c
// override, or a value of the wrong type. File and Line are set when the
// problem can be located in a file; Key is the dotted key when known.
type Error struct {
	File   string // file path, or a description such as "-c override"
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	// EndLine and EndColumn are the last character of the offending text (the value, or where a
	// syntax error is found); 0 when unknown.
	EndLine, EndColumn int
	Key                string // dotted key, empty when unknown
	Msg                string
	Syntax             bool // the file is not valid TOML (else a value is wrong)
	// Meaning is set when the values type-check but one is refused on its meaning (checkMeaning); such an
	// error has no file or position.
	Meaning bool
	// Spanless is set for a value error the reference reports without a position: its text is the message
	// and "in `key`", without the file.
	Spanless bool
}

// Error renders "file:line:col: msg", or "file: msg (key `k`)" when the position is unknown.
func (e *Error) Error() string {
	if e.Spanless {
		return e.Msg + "\nin `" + e.Key + "`\n"
	}
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Column > 0 {
				fmt.Fprintf(&b, ":%d", e.Column)
			}
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	// A position says where, as the reference's messages do; without one, the key does.
	if e.Line == 0 && e.Key != "" && !strings.Contains(e.Msg, "`"+e.Key+"`") {
		fmt.Fprintf(&b, " (key `%s`)", e.Key)
	}
	return b.String()
}

// position is where a key or table header is defined (1-based line and column) and, for a key-value,
// the first and last character of its value (0 when unknown).
type position struct {
	line, col               int
	valLine, valCol, valEnd int // valEnd: column of the value's last character, on valLine
}

// layer is one configuration source with its raw content.
type layer struct {
	source   string // SourceSystem, SourceUser, ...
	file     string // config file (system/user) or .codex folder (project)
	disabled string // non-empty: reason the layer is not applied
	raw      tree
	// positions maps joinKey(path) of keys and table headers to where
	// they are defined; nil for layers that do not come from a file.
	positions *positionIndex
	// label names the layer in errors when it has no file.
	label string
}

// version is the content hash config/read reports: sha256 of the layer's
// config as compact JSON with sorted keys.
func (l *layer) version() string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	raw := l.raw
	if raw == nil {
		raw = tree{}
	}
	if err := enc.Encode(jsonReady(raw)); err != nil {
		buf.Reset()
		buf.WriteString("{}")
	}
	sum := sha256.Sum256(bytes.TrimRight(buf.Bytes(), "\n"))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// locate returns an Error for path in this layer, located as precisely as
// the layer allows.
func (l *layer) locate(path []string, msg string) *Error {
	e := &Error{Key: joinKey(path), Msg: msg}
	switch {
	case l.source == SourceProject:
		e.File = l.file + "/config.toml"
	case l.file != "":
		e.File = l.file
	default:
		e.File = l.label
	}
	pos := l.positions.get()
	if pos == nil {
		return e
	}
	for n := len(path); n > 0; n-- {
		if p, ok := pos[joinKey(path[:n])]; ok {
			e.Line, e.Column = p.line, p.col
			if n == len(path) && p.valLine > 0 {
				// The value is what is wrong: point at it, as the reference does.
				e.Line, e.Column, e.EndLine, e.EndColumn = p.valLine, p.valCol, p.valLine, p.valEnd
			}
			break
		}
	}
	return e
}

// readFileLayer parses a TOML file into a layer. A missing file yields an
// empty layer; a malformed one an *Error naming file, line and column.
func readFileLayer(source, file string) (*layer, error) {
	l := &layer{source: source, file: file, raw: tree{}}
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	raw, positions, err := parseTOML(file, data)
	if err != nil {
		return nil, err
	}
	l.raw, l.positions = raw, positions
	return l, nil
}

// positionIndex is indexPositions of a document, built the first time an error needs a position: a
// second parse of every file that the start-up (which loads the configuration before it answers
// initialize) does not need otherwise.
type positionIndex struct {
	once sync.Once
	data []byte
	m    map[string]position
}

// get returns the index (nil for a nil *positionIndex).
func (p *positionIndex) get() map[string]position {
	if p == nil {
		return nil
	}
	p.once.Do(func() {
		p.m = indexPositions(p.data)
		p.data = nil
	})
	return p.m
}

// parseTOML decodes a document into a generic tree; where each key is defined is indexed on demand.
func parseTOML(file string, data []byte) (tree, *positionIndex, error) {
	var raw tree
	if err := toml.Unmarshal(data, &raw); err != nil {
		e := &Error{File: file, Msg: err.Error(), Syntax: true}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			e.Line, e.Column, e.Msg = rustTOMLError(data, line, col, strings.TrimPrefix(de.Error(), "toml: "))
			e.EndLine, e.EndColumn = e.Line, e.Column
			e.Key = strings.Join(de.Key(), ".")
		}
		return nil, nil, e
	}
	if raw == nil {
		raw = tree{}
	}
	return raw, &positionIndex{data: data}, nil
}

// indexPositions maps every key-value and table header of a (valid) TOML
// document to its line and column. Array-table elements are indexed by
// their position in the array.
func indexPositions(data []byte) map[string]position {
	out := map[string]position{}
	var p unstable.Parser
	p.Reset(data)
	var prefix []string
	arrayCounts := map[string]int{}
	lines := strings.Split(string(data), "\n")
	keyOf := func(it unstable.Iterator) []string {
		var parts []string
		for it.Next() {
			parts = append(parts, string(it.Node().Data))
		}
		return parts
	}
	keySpans := func(it unstable.Iterator) []position { return keyPartSpans(&p, it) }
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table:
			prefix = keyOf(n.Key())
			sh := p.Shape(n.Child().Raw)
			record(out, prefix, headerPosition(lines, sh.Start.Line, sh.Start.Column, "]"), keySpans(n.Key()))
		case unstable.ArrayTable:
			k := keyOf(n.Key())
			jk := joinKey(k)
			idx := arrayCounts[jk]
			arrayCounts[jk] = idx + 1
			prefix = append(k, fmt.Sprint(idx))
			sh := p.Shape(n.Child().Raw)
			record(out, prefix, headerPosition(lines, sh.Start.Line, sh.Start.Column, "]]"), keySpans(n.Key()))
		case unstable.KeyValue:
			indexKeyValue(&p, n, prefix, out)
		}
	}
	return out
}

// indexKeyValue records the key-value n under prefix: where its key starts and, when it sits on one
// line, its value's span; the key-values of an inline table value are recorded too.
func indexKeyValue(p *unstable.Parser, n *unstable.Node, prefix []string, out map[string]position) {
	var parts []string
	keyEnd := n.Raw.Offset
	for it := n.Key(); it.Next(); {
		parts = append(parts, string(it.Node().Data))
		keyEnd = it.Node().Raw.Offset + it.Node().Raw.Length
	}
	k := append(append([]string{}, prefix...), parts...)
	sh := p.Shape(n.Raw)
	pos := position{line: sh.Start.Line, col: sh.Start.Column}
	v := n.Value()
	switch {
	case v == nil:
	case v.Kind == unstable.InlineTable || v.Kind == unstable.Array:
		// The parser spans a container by its opening bracket (an inline table) or not at all (an array):
		// the value runs from there to the closing bracket.
		start := int(v.Raw.Offset)
		if v.Raw.Length == 0 {
			start = valueAfter(p.Data(), int(keyEnd))
		}
		if end := closingBracket(p.Data(), start); start > 0 && end > start {
			vs := p.Shape(unstable.Range{Offset: uint32(start), Length: uint32(end - start + 1)})
			if vs.End.Line == vs.Start.Line {
				pos.valLine, pos.valCol, pos.valEnd = vs.Start.Line, vs.Start.Column, vs.End.Column-1
			}
		}
	case v.Raw.Length > 0:
		vs := p.Shape(v.Raw)
		if vs.End.Line == vs.Start.Line && vs.End.Column > vs.Start.Column {
			pos.valLine, pos.valCol, pos.valEnd = vs.Start.Line, vs.Start.Column, vs.End.Column-1
		}
	}
	record(out, k, pos, append(make([]position, len(prefix)), keyPartSpans(p, n.Key())...))
	if v != nil {
		indexValue(p, v, k, out)
	}
}

// indexValue records where the members of the container v at path k are: an inline table's key-values
// and an array's scalar elements and inline tables (by index).
func indexValue(p *unstable.Parser, v *unstable.Node, k []string, out map[string]position) {
	switch v.Kind {
	case unstable.InlineTable:
		for it := v.Children(); it.Next(); {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				indexKeyValue(p, c, k, out)
			}
		}
	case unstable.Array:
		i := 0
		for it := v.Children(); it.Next(); i++ {
			c := it.Node()
			ek := append(k[:len(k):len(k)], fmt.Sprint(i))
			if c.Kind == unstable.InlineTable {
				// Spanned from its opening brace to its closing one, when on one line.
				start := int(c.Raw.Offset)
				if end := closingBracket(p.Data(), start); c.Raw.Length > 0 && end > start {
					vs := p.Shape(unstable.Range{Offset: uint32(start), Length: uint32(end - start + 1)})
					if vs.End.Line == vs.Start.Line {
						out[joinKey(ek)] = position{line: vs.Start.Line, col: vs.Start.Column,
							valLine: vs.Start.Line, valCol: vs.Start.Column, valEnd: vs.End.Column - 1}
					}
				}
				indexValue(p, c, ek, out)
				continue
			}
			if c.Raw.Length == 0 {
				continue
			}
			vs := p.Shape(c.Raw)
			if vs.End.Line == vs.Start.Line {
				out[joinKey(ek)] = position{line: vs.Start.Line, col: vs.Start.Column,
					valLine: vs.Start.Line, valCol: vs.Start.Column, valEnd: vs.End.Column - 1}
			}
		}
	}
}

// valueAfter returns the offset of the value of the key-value whose key ends at offset keyEnd of data (past
// the "=" and blanks), 0 when there is none.
func valueAfter(data []byte, keyEnd int) int {
	i := keyEnd
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '"' || data[i] == '\'') {
		i++ // a quoted key's closing quote, then blanks
	}
	if i >= len(data) || data[i] != '=' {
		return 0
	}
	for i++; i < len(data) && (data[i] == ' ' || data[i] == '\t'); i++ {
	}
	return i
}

// headerPosition is the position of a table header whose key starts at line:col: the header from its
// opening bracket to its closing one (closing), which is the span the reference gives a table's errors.
func headerPosition(lines []string, line, col int, closing string) position {
	pos := position{line: line, col: col}
	if line < 1 || line > len(lines) {
		return pos
	}
	text := lines[line-1]
	open := strings.IndexByte(text, '[')
	end := strings.Index(text[min(col-1, len(text)):], closing)
	if open < 0 || open >= col || end < 0 {
		return pos
	}
	end += col - 1 + len(closing) // 1-based column of the last bracket
	return position{line: line, col: open + 1, valLine: line, valCol: open + 1, valEnd: end}
}

// record stores pos for path and for any of its prefixes not yet seen, so that lookups of implicitly
// created tables find their first definition: a prefix is spanned by its key's part in spans (as the
// reference spans a table a dotted key creates), else at pos without a value.
func record(out map[string]position, path []string, pos position, spans []position) {
	for n := len(path); n > 0; n-- {
		k := joinKey(path[:n])
		if _, ok := out[k]; ok && n < len(path) {
			return
		}
		if n < len(path) && n-1 < len(spans) && spans[n-1].line > 0 {
			out[k] = spans[n-1]
			continue
		}
		out[k] = pos
		pos = position{line: pos.line, col: pos.col} // a prefix has no value of its own
	}
}

// keyPartSpans are the spans of a key's parts (as positions whose value is the part itself); a part
// without a span in the source is left zero.
func keyPartSpans(p *unstable.Parser, it unstable.Iterator) []position {
	var out []position
	for it.Next() {
		r := it.Node().Raw
		if r.Length == 0 {
			out = append(out, position{})
			continue
		}
		sh := p.Shape(r)
		end := sh.End.Column - 1
		if sh.End.Line != sh.Start.Line || end < sh.Start.Column {
			out = append(out, position{})
			continue
		}
		out = append(out, position{line: sh.Start.Line, col: sh.Start.Column, valLine: sh.Start.Line, valCol: sh.Start.Column, valEnd: end})
	}
	return out
}

// jsonReady converts TOML-specific values into JSON-friendly ones.
func jsonReady(v any) any {
	switch x := v.(type) {
	case tree:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonReady(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonReady(e)
		}
		return out
	case toml.LocalDate, toml.LocalTime, toml.LocalDateTime:
		return fmt.Sprint(x)
	default:
		return v
	}
}

// closingBracket returns the offset in data of the bracket that closes the inline table or array opening
// at offset start, skipping strings; 0 when there is none.
func closingBracket(data []byte, start int) int {
	depth := 0
	for i := start; i < len(data); i++ {
		switch c := data[i]; c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i
			}
		case '"', '\'':
			for i++; i < len(data) && data[i] != c; i++ {
				if c == '"' && data[i] == '\\' {
					i++
				}
			}
		case '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		}
	}
	return 0
}
