package configedit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Strategy is how a table value combines with what is there: Replace drops the old value first, Upsert
// merges key by key.
type Strategy string

// Merge strategies (the wire's MergeStrategy values).
const (
	Replace Strategy = "replace"
	Upsert  Strategy = "upsert"
)

// Edit sets Path to Value (nil deletes the key or table).
type Edit struct {
	Path     []string
	Value    any
	Strategy Strategy
}

// ErrNonTableParent is returned when an ancestor of the edited key holds a value that is not a table.
var ErrNonTableParent = errors.New("cannot set value on non-table parent")

// kv is one key-value line group of the document.
type kv struct {
	path             []string // full path (table prefix + dotted key)
	start, end       int      // byte range of its whole lines (end includes the newline)
	valStart, valEnd int      // byte range of the value text
	lastByte         int      // end of the value (before any trailing comment)
}

// table is one [header] or [[header]] section.
type table struct {
	path      []string
	array     bool
	start     int // start of the header line
	bodyStart int // just after the header line
	end       int // start of the next header line (or len)
	lastKVEnd int // end of the last key-value line in the section (bodyStart when none)
}

type document struct {
	data   []byte
	kvs    []kv
	tables []table
	// rootEnd is where the root section ends (the first header line, or len); rootLastKV the end of its last kv line.
	rootEnd, rootLastKV int
}

func parseDoc(data []byte) (*document, error) {
	d := &document{data: data, rootEnd: len(data), rootLastKV: -1}
	var p unstable.Parser
	p.Reset(data)
	var prefix []string
	cur := -1 // index of the current table, -1 = root
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			var parts []string
			var keyOff int = -1
			it := n.Key()
			for it.Next() {
				k := it.Node()
				if keyOff < 0 {
					keyOff = int(k.Raw.Offset)
				}
				parts = append(parts, string(k.Data))
			}
			ls := lineStart(data, keyOff)
			if cur >= 0 {
				d.tables[cur].end = ls
			} else {
				d.rootEnd = ls
			}
			be := lineEnd(data, keyOff)
			d.tables = append(d.tables, table{path: parts, array: n.Kind == unstable.ArrayTable, start: ls, bodyStart: be, end: len(data), lastKVEnd: be})
			cur = len(d.tables) - 1
			prefix = parts
		case unstable.KeyValue:
			var parts []string
			it := n.Key()
			for it.Next() {
				parts = append(parts, string(it.Node().Data))
			}
			s := int(n.Raw.Offset)
			e := s + int(n.Raw.Length)
			// The value starts after the '=' that follows the key.
			eq := bytes.IndexByte(data[s:e], '=')
			if eq < 0 {
				return nil, fmt.Errorf("malformed key-value at byte %d", s)
			}
			vs := s + eq + 1
			for vs < e && (data[vs] == ' ' || data[vs] == '\t') {
				vs++
			}
			full := append(append([]string{}, prefix...), parts...)
			k := kv{path: full, start: lineStart(data, s), end: lineEnd(data, e), valStart: vs, valEnd: e, lastByte: e}
			d.kvs = append(d.kvs, k)
			if cur >= 0 {
				d.tables[cur].lastKVEnd = k.end
			} else {
				d.rootLastKV = k.end
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	return d, nil
}

func lineStart(data []byte, off int) int {
	for off > 0 && data[off-1] != '\n' {
		off--
	}
	return off
}

func lineEnd(data []byte, off int) int {
	i := bytes.IndexByte(data[off:], '\n')
	if i < 0 {
		return len(data)
	}
	return off + i + 1
}

func samePath(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func hasPrefix(p, prefix []string) bool {
	return len(p) >= len(prefix) && samePath(p[:len(prefix)], prefix)
}

// Apply applies edits to a TOML document and returns the new text.
func Apply(data []byte, edits []Edit) ([]byte, error) {
	for _, e := range edits {
		if len(e.Path) == 0 {
			return nil, errors.New("keyPath must not be empty")
		}
		var err error
		if e.Value == nil {
			data, err = remove(data, e.Path)
		} else {
			data, err = set(data, e.Path, normalize(e.Value), e.Strategy)
		}
		if err != nil {
			return nil, err
		}
	}
	return data, nil
}

func set(data []byte, path []string, v any, strat Strategy) ([]byte, error) {
	d, err := parseDoc(data)
	if err != nil {
		return nil, err
	}
	// An ancestor that is a plain value: edit inside an inline table, or refuse.
	for _, k := range d.kvs {
		if len(k.path) < len(path) && hasPrefix(path, k.path) {
			return setInline(d, k, path[len(k.path):], v, strat)
		}
	}
	if m, ok := v.(map[string]any); ok {
		existsAsValue := false
		for _, k := range d.kvs {
			if samePath(k.path, path) {
				existsAsValue = true
			}
		}
		if strat != Upsert || existsAsValue {
			if data, err = remove(data, path); err != nil {
				return nil, err
			}
		}
		if len(m) == 0 {
			if d, err = parseDoc(data); err != nil {
				return nil, err
			}
			if d.findTable(path) >= 0 {
				return data, nil
			}
			return insertKV(d, path, "{}")
		}
		for _, key := range sortedKeys(m) {
			if data, err = set(data, append(append([]string{}, path...), key), m[key], Upsert); err != nil {
				return nil, err
			}
		}
		return data, nil
	}
	text, err := render(v)
	if err != nil {
		return nil, err
	}
	for _, k := range d.kvs {
		if samePath(k.path, path) {
			return splice(d.data, k.valStart, k.valEnd, text), nil
		}
	}
	if d.findTable(path) >= 0 {
		if data, err = remove(data, path); err != nil {
			return nil, err
		}
		if d, err = parseDoc(data); err != nil {
			return nil, err
		}
	}
	return insertKV(d, path, text)
}

// setInline edits a key inside the inline-table value of k.
func setInline(d *document, k kv, rest []string, v any, strat Strategy) ([]byte, error) {
	var holder map[string]any
	if err := toml.Unmarshal([]byte("v = "+string(d.data[k.valStart:k.valEnd])), &holder); err != nil {
		return nil, err
	}
	cur, ok := holder["v"].(map[string]any)
	if !ok {
		return nil, ErrNonTableParent
	}
	root := cur
	for _, p := range rest[:len(rest)-1] {
		next, ok := cur[p]
		if !ok {
			n := map[string]any{}
			cur[p] = n
			cur = n
			continue
		}
		nm, ok := next.(map[string]any)
		if !ok {
			return nil, ErrNonTableParent
		}
		cur = nm
	}
	last := rest[len(rest)-1]
	if m, ok := v.(map[string]any); ok && strat == Upsert {
		if old, ok := cur[last].(map[string]any); ok {
			for kk, vv := range m {
				old[kk] = vv
			}
			v = old
		}
	}
	if v == nil {
		delete(cur, last)
	} else {
		cur[last] = v
	}
	text, err := render(root)
	if err != nil {
		return nil, err
	}
	return splice(d.data, k.valStart, k.valEnd, text), nil
}

func (d *document) findTable(path []string) int {
	for i, t := range d.tables {
		if !t.array && samePath(t.path, path) {
			return i
		}
	}
	return -1
}

// insertKV adds `key = text` for path: into the section of its parent table when there is one (the root
// for top-level keys), else as a new section at the end of the document.
func insertKV(d *document, path []string, text string) ([]byte, error) {
	parent, key := path[:len(path)-1], path[len(path)-1]
	line := renderKey([]string{key}) + " = " + text + "\n"
	if len(parent) == 0 {
		at := d.rootLastKV
		if at < 0 {
			at = 0
		}
		return insertAt(d.data, at, line), nil
	}
	if i := d.findTable(parent); i >= 0 {
		return insertAt(d.data, d.tables[i].lastKVEnd, line), nil
	}
	// Keys defined with dotted names (a.b = 1) make an implicit table: add a sibling dotted key after them.
	for i := len(d.kvs) - 1; i >= 0; i-- {
		k := d.kvs[i]
		if hasPrefix(k.path, parent) && len(k.path) > len(parent) {
			sec := d.sectionOf(k)
			rel := path[len(sec):]
			return insertAt(d.data, k.end, renderKey(rel)+" = "+text+"\n"), nil
		}
	}
	out := append([]byte{}, d.data...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	if len(out) > 0 {
		out = append(out, '\n')
	}
	out = append(out, "["+renderKey(parent)+"]\n"+line...)
	return out, nil
}

// sectionOf returns the table path whose section holds k (nil for the root).
func (d *document) sectionOf(k kv) []string {
	for _, t := range d.tables {
		if k.start >= t.bodyStart && k.start < t.end {
			return t.path
		}
	}
	return nil
}

// remove deletes the key, the table section (with its sub-tables) or the inline-table member at path;
// a missing path is not an error.
func remove(data []byte, path []string) ([]byte, error) {
	d, err := parseDoc(data)
	if err != nil {
		return nil, err
	}
	for _, k := range d.kvs {
		if samePath(k.path, path) {
			return splice(d.data, k.start, k.end, ""), nil
		}
		if len(k.path) < len(path) && hasPrefix(path, k.path) {
			if _, ok := parseValue(d.data[k.valStart:k.valEnd]).(map[string]any); ok {
				return setInline(d, k, path[len(k.path):], nil, Replace)
			}
			return data, nil
		}
	}
	// Remove sections at or under path, last first so offsets stay valid; dotted keys under path too.
	type span struct{ s, e int }
	var spans []span
	for _, t := range d.tables {
		if hasPrefix(t.path, path) {
			// The blank lines that separate the section from the one before go with it.
			start := t.start
			for start > 0 {
				prev := lineStart(data, start-1)
				if strings.TrimSpace(string(data[prev:start])) != "" {
					break
				}
				start = prev
			}
			spans = append(spans, span{start, t.lastKVEnd})
		}
	}
	for _, k := range d.kvs {
		if hasPrefix(k.path, path) && len(k.path) > len(path) {
			inRemoved := false
			for _, sp := range spans {
				if k.start >= sp.s && k.start < sp.e {
					inRemoved = true
				}
			}
			if !inRemoved {
				spans = append(spans, span{k.start, k.end})
			}
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].s > spans[j].s })
	out := data
	for _, sp := range spans {
		out = splice(out, sp.s, sp.e, "")
	}
	return out, nil
}

func parseValue(text []byte) any {
	var holder map[string]any
	if toml.Unmarshal(append([]byte("v = "), text...), &holder) != nil {
		return nil
	}
	return holder["v"]
}

func splice(data []byte, s, e int, text string) []byte {
	out := make([]byte, 0, len(data)-(e-s)+len(text))
	out = append(out, data[:s]...)
	out = append(out, text...)
	return append(out, data[e:]...)
}

func insertAt(data []byte, at int, text string) []byte {
	if at > 0 && data[at-1] != '\n' {
		text = "\n" + text
	}
	return splice(data, at, at, text)
}

var bareKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

func renderKey(parts []string) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		if bareKey().MatchString(p) {
			out[i] = p
		} else {
			b, _ := json.Marshal(p)
			out[i] = string(b)
		}
	}
	return strings.Join(out, ".")
}

// render writes a value in TOML's inline form: strings as basic (double-quoted) strings like the
// reference, arrays and tables inline; other scalars as go-toml encodes them.
func render(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return basicString(x), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := render(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case map[string]any:
		if len(x) == 0 {
			return "{}", nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			s, err := render(x[k])
			if err != nil {
				return "", err
			}
			parts[i] = renderKey([]string{k}) + " = " + s
		}
		return "{ " + strings.Join(parts, ", ") + " }", nil
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(map[string]any{"v": v}); err != nil {
		return "", err
	}
	return strings.TrimPrefix(strings.TrimSuffix(buf.String(), "\n"), "v = "), nil
}

// basicString quotes s as a TOML basic string.
func basicString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// normalize turns JSON-decoded numbers into int64 when integral.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	// Plain values before tables, so a table's own keys come before its sub-table headers.
	sort.Slice(ks, func(i, j int) bool {
		_, ti := m[ks[i]].(map[string]any)
		_, tj := m[ks[j]].(map[string]any)
		if ti != tj {
			return !ti
		}
		return ks[i] < ks[j]
	})
	return ks
}

// Field is one key of a table written by UpsertArrayTable, in the order given.
type Field struct {
	Key   string
	Value any
}

// UpsertArrayTable sets fields in the first `[[path]]` entry whose matchKey equals matchValue, or appends a
// new `[[path]]` entry with all fields at the end of the document.
func UpsertArrayTable(data []byte, path []string, matchKey string, matchValue any, fields []Field) ([]byte, error) {
	d, err := parseDoc(data)
	if err != nil {
		return nil, err
	}
	for _, t := range d.tables {
		if !t.array || !samePath(t.path, path) {
			continue
		}
		var body map[string]any
		if toml.Unmarshal(d.data[t.bodyStart:t.end], &body) != nil || body[matchKey] != matchValue {
			continue
		}
		// Edit the entry's keys from the last one back, so earlier offsets stay valid.
		out := data
		for i := len(fields) - 1; i >= 0; i-- {
			f := fields[i]
			text, err := render(normalize(f.Value))
			if err != nil {
				return nil, err
			}
			done := false
			for _, k := range d.kvs {
				if k.start >= t.bodyStart && k.start < t.end && samePath(k.path, append(append([]string{}, path...), f.Key)) {
					out = splice(out, k.valStart, k.valEnd, text)
					done = true
					break
				}
			}
			if !done {
				out = insertAt(out, t.lastKVEnd, renderKey([]string{f.Key})+" = "+text+"\n")
			}
			if d, err = parseDoc(out); err != nil {
				return nil, err
			}
			for _, nt := range d.tables {
				if nt.start == t.start {
					t = nt
				}
			}
		}
		return out, nil
	}
	var b strings.Builder
	b.WriteString("[[" + renderKey(path) + "]]\n")
	for _, f := range fields {
		text, err := render(normalize(f.Value))
		if err != nil {
			return nil, err
		}
		b.WriteString(renderKey([]string{f.Key}) + " = " + text + "\n")
	}
	out := append([]byte{}, data...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	if len(out) > 0 {
		out = append(out, '\n')
	}
	return append(out, b.String()...), nil
}
