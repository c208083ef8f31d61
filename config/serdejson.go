package config

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// serdeJSONError is where and why serde_json (the reference's JSON parser) refuses data: its message and
// the number of bytes it had read (which gives serde_json's line and column).
type serdeJSONError struct {
	msg string
	n   int
}

// jsonNode is a parsed JSON value with its byte span (end is one past its last byte).
type jsonNode struct {
	kind       byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' boolean, 'z' null
	start, end int
	keys       []string
	keyEnds    []int       // one past each key's closing quote
	vals       []*jsonNode // object values or array items
}

// serdeJSONParse parses data as serde_json does, reporting its syntax errors in its words and positions.
func serdeJSONParse(data []byte) (*jsonNode, *serdeJSONError) {
	p := &jsonScanner{data: data}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i < len(data) {
		return nil, p.peekErr("trailing characters")
	}
	return v, nil
}

type jsonScanner struct {
	data []byte
	i    int
}

func (p *jsonScanner) ws() {
	for p.i < len(p.data) && (p.data[p.i] == ' ' || p.data[p.i] == '\t' || p.data[p.i] == '\n' || p.data[p.i] == '\r') {
		p.i++
	}
}

// peekErr is an error about the byte at p.i, counted as read (serde_json's peek position).
func (p *jsonScanner) peekErr(msg string) *serdeJSONError { return &serdeJSONError{msg, p.i + 1} }

func (p *jsonScanner) eof(what string) *serdeJSONError {
	return &serdeJSONError{"EOF while parsing " + what, len(p.data)}
}

func (p *jsonScanner) value() (*jsonNode, *serdeJSONError) {
	p.ws()
	if p.i >= len(p.data) {
		return nil, p.eof("a value")
	}
	start := p.i
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		if err := p.str(); err != nil {
			return nil, err
		}
		return &jsonNode{kind: 's', start: start, end: p.i}, nil
	case c == 't' || c == 'f' || c == 'n':
		word := map[byte]string{'t': "true", 'f': "false", 'n': "null"}[c]
		for j := 0; j < len(word); j++ {
			if p.i >= len(p.data) {
				return nil, p.eof("a value")
			}
			if p.data[p.i] != word[j] {
				return nil, &serdeJSONError{"expected ident", p.i + 1}
			}
			p.i++
		}
		kind := byte('b')
		if c == 'n' {
			kind = 'z'
		}
		return &jsonNode{kind: kind, start: start, end: p.i}, nil
	case c == '-' || c >= '0' && c <= '9':
		if err := p.number(); err != nil {
			return nil, err
		}
		return &jsonNode{kind: 'n', start: start, end: p.i}, nil
	}
	return nil, p.peekErr("expected value")
}

func (p *jsonScanner) number() *serdeJSONError {
	digits := func() int {
		n := 0
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.data[p.i] == '-' {
		p.i++
	}
	if p.i >= len(p.data) {
		return p.eof("a value")
	}
	if p.data[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return p.peekErr("invalid number")
	}
	if p.i < len(p.data) && p.data[p.i] == '.' {
		p.i++
		if p.i >= len(p.data) {
			return p.eof("a value")
		}
		if digits() == 0 {
			return p.peekErr("invalid number")
		}
	}
	if p.i < len(p.data) && (p.data[p.i] == 'e' || p.data[p.i] == 'E') {
		p.i++
		if p.i < len(p.data) && (p.data[p.i] == '+' || p.data[p.i] == '-') {
			p.i++
		}
		if p.i >= len(p.data) {
			return p.eof("a value")
		}
		if digits() == 0 {
			return p.peekErr("invalid number")
		}
	}
	return nil
}

func (p *jsonScanner) str() *serdeJSONError {
	p.i++ // the opening quote
	for {
		if p.i >= len(p.data) {
			return p.eof("a string")
		}
		c := p.data[p.i]
		p.i++
		switch {
		case c == '"':
			return nil
		case c < 0x20:
			return &serdeJSONError{"control character (\\u0000-\\u001F) found while parsing a string", p.i}
		case c == '\\':
			if p.i >= len(p.data) {
				return p.eof("a string")
			}
			e := p.data[p.i]
			p.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 0; k < 4; k++ {
					if p.i >= len(p.data) {
						return p.eof("a string")
					}
					if _, err := strconv.ParseUint(string(p.data[p.i]), 16, 8); err != nil {
						return &serdeJSONError{"invalid escape", p.i + 1}
					}
					p.i++
				}
			default:
				return &serdeJSONError{"invalid escape", p.i}
			}
		}
	}
}

func (p *jsonScanner) array() (*jsonNode, *serdeJSONError) {
	n := &jsonNode{kind: 'a', start: p.i}
	p.i++
	p.ws()
	if p.i >= len(p.data) {
		return nil, p.eof("a list")
	}
	if p.data[p.i] == ']' {
		p.i++
		n.end = p.i
		return n, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.vals = append(n.vals, v)
		p.ws()
		if p.i >= len(p.data) {
			return nil, p.eof("a list")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
			p.ws()
			if p.i < len(p.data) && p.data[p.i] == ']' {
				return nil, p.peekErr("trailing comma")
			}
		case ']':
			p.i++
			n.end = p.i
			return n, nil
		default:
			return nil, p.peekErr("expected `,` or `]`")
		}
	}
}

func (p *jsonScanner) object() (*jsonNode, *serdeJSONError) {
	n := &jsonNode{kind: 'o', start: p.i}
	p.i++
	p.ws()
	if p.i >= len(p.data) {
		return nil, p.eof("an object")
	}
	if p.data[p.i] == '}' {
		p.i++
		n.end = p.i
		return n, nil
	}
	for {
		if p.data[p.i] != '"' {
			return nil, p.peekErr("key must be a string")
		}
		ks := p.i
		if err := p.str(); err != nil {
			return nil, err
		}
		var key string
		_ = json.Unmarshal(p.data[ks:p.i], &key)
		ke := p.i
		p.ws()
		if p.i >= len(p.data) {
			return nil, p.eof("an object")
		}
		if p.data[p.i] != ':' {
			return nil, p.peekErr("expected `:`")
		}
		p.i++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.keys, n.vals = append(n.keys, key), append(n.vals, v)
		n.keyEnds = append(n.keyEnds, ke)
		p.ws()
		if p.i >= len(p.data) {
			return nil, p.eof("an object")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
			p.ws()
			if p.i >= len(p.data) {
				return nil, p.eof("a value")
			}
			if p.data[p.i] == '}' {
				return nil, p.peekErr("trailing comma")
			}
		case '}':
			p.i++
			n.end = p.i
			return n, nil
		default:
			return nil, p.peekErr("expected `,` or `}`")
		}
	}
}

// serdeUnexpectedJSON names a JSON value as serde does in "invalid type" errors, with the number of bytes
// serde_json has read when it reports one (all of a plain value; none of an object's or array's).
func serdeUnexpectedJSON(data []byte, v *jsonNode) (string, int) {
	lit := string(data[v.start:v.end])
	switch v.kind {
	case 'o':
		return "map", v.start
	case 'a':
		return "sequence", v.start
	case 's':
		var s string
		_ = json.Unmarshal([]byte(lit), &s)
		return "string " + strconv.Quote(s), v.end
	case 'b':
		return "boolean `" + lit + "`", v.end
	case 'z':
		return "null", v.end
	}
	if _, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return "integer `" + lit + "`", v.end
	}
	if _, err := strconv.ParseUint(lit, 10, 64); err == nil {
		return "integer `" + lit + "`", v.end
	}
	f, _ := strconv.ParseFloat(lit, 64)
	return "floating point `" + strconv.FormatFloat(f, 'f', -1, 64) + "`", v.end
}

// modelCatalogError is serde_json's refusal of a model catalogue (a ModelsResponse: an object whose
// `models` is a list of objects with a `slug`), "" with position 0 when it reads.
func modelCatalogError(data []byte) (string, int) {
	doc, perr := serdeJSONParse(data)
	if perr != nil {
		return perr.msg, perr.n
	}
	switch doc.kind {
	case 'a': // serde reads a sequence as the struct's fields in order
		if len(doc.vals) == 0 {
			return "invalid length 0, expected struct ModelsResponse with 1 element", doc.end
		}
		if msg, n := modelsListError(data, doc.vals[0]); msg != "" {
			return msg, n
		}
		if len(doc.vals) > 1 {
			return "trailing characters", doc.vals[1].start + 1
		}
		if len(doc.vals[0].vals) == 0 {
			return errNoModels, 0
		}
		return instructionsError(data, doc.vals[0]), doc.end
	case 'o':
	default:
		what, n := serdeUnexpectedJSON(data, doc)
		return "invalid type: " + what + ", expected struct ModelsResponse", n
	}
	var models *jsonNode
	for i, k := range doc.keys {
		if k != "models" {
			continue
		}
		if models != nil {
			return "duplicate field `models`", doc.keyEnds[i]
		}
		models = doc.vals[i]
		if msg, n := modelsListError(data, models); msg != "" {
			return msg, n
		}
	}
	if models == nil {
		return "missing field `models`", doc.end
	}
	if len(models.vals) == 0 {
		return errNoModels, 0
	}
	return instructionsError(data, models), doc.end
}

// instructionsError is the reference's refusal of the first model (of the list models) that has neither
// base_instructions nor model_messages.instructions_template, raised once the catalogue has read ("" when
// there is none).
func instructionsError(data []byte, models *jsonNode) string {
	for _, m := range models.vals {
		var slug string
		has := false
		for i, k := range m.keys {
			switch v := m.vals[i]; k {
			case "slug":
				_ = json.Unmarshal(data[v.start:v.end], &slug)
			case "base_instructions":
				has = has || v.kind == 's'
			case "model_messages":
				for j, mk := range v.keys {
					has = has || mk == "instructions_template" && v.vals[j].kind == 's'
				}
			}
		}
		if !has {
			return "model `" + slug + "` is missing both `base_instructions` and `model_messages.instructions_template`"
		}
	}
	return ""
}

// errNoModels stands for the reference's refusal of a catalogue that reads but lists no model.
const errNoModels = "no models"

func modelsListError(data []byte, models *jsonNode) (string, int) {
	if models.kind != 'a' {
		what, n := serdeUnexpectedJSON(data, models)
		return "invalid type: " + what + ", expected a sequence", n
	}
	for _, m := range models.vals {
		if m.kind != 'o' {
			what, n := serdeUnexpectedJSON(data, m)
			return "invalid type: " + what + ", expected struct ModelInfoWithLegacyBaseInstructions", n
		}
		// The model is read from serde's buffered content (it has a flattened part): every error about
		// it is located at its end.
		if msg := contentObjectError(data, m, modelInfoFields); msg != "" {
			return msg, m.end
		}
	}
	return "", 0
}

// jsonField is a field of a struct read from JSON: its name, its kind (see contentValueError) and whether
// it may be left out.
type jsonField struct {
	name, kind string
	optional   bool
}

// modelInfoFields are a model catalogue entry's fields codex-cli 0.169.0 types, in its declaration order
// (which orders its missing-field errors).
var modelInfoFields = []jsonField{
	{name: "slug", kind: "a string"},
	{name: "display_name", kind: "a string"},
	{name: "supported_reasoning_levels", kind: "seq:struct ReasoningEffortPreset"},
	{name: "shell_type", kind: "enum:default,local,shell_command,unified_exec,disabled"},
	{name: "visibility", kind: "enum:list,hide,none"},
	{name: "supported_in_api", kind: "a boolean"},
	{name: "priority", kind: "i32"},
	{name: "support_verbosity", kind: "a boolean"},
	{name: "truncation_policy", kind: "struct TruncationPolicyConfig"},
	{name: "experimental_supported_tools", kind: "seq:a string"},
	{name: "context_window", kind: "i64", optional: true},
	{name: "base_instructions", kind: "a string", optional: true},
	{name: "input_modalities", kind: "seq:enum:text,image,audio", optional: true},
}

// jsonStructs are the fields of the structs modelInfoFields name.
var jsonStructs = map[string][]jsonField{
	"ReasoningEffortPreset":  {{name: "effort", kind: "a string"}, {name: "description", kind: "a string"}},
	"TruncationPolicyConfig": {{name: "mode", kind: "enum:bytes,tokens"}, {name: "limit", kind: "i64"}},
}

// contentObjectError is serde's error for the object o read from buffered content as a struct of fields:
// the first field of the wrong type in the object's order, then the first one missing in declaration
// order ("" when it reads).
func contentObjectError(data []byte, o *jsonNode, fields []jsonField) string {
	for i, k := range o.keys {
		for _, f := range fields {
			if f.name == k {
				if msg := contentValueError(data, o.vals[i], f.kind); msg != "" {
					return msg
				}
			}
		}
	}
	for _, f := range fields {
		if f.optional {
			continue
		}
		found := false
		for _, k := range o.keys {
			found = found || k == f.name
		}
		if !found {
			return "missing field `" + f.name + "`"
		}
	}
	return ""
}

// contentValueError is serde's error for v read from buffered content as kind: a type ("a string", "a
// boolean", "i32", "i64"), "struct X" (of jsonStructs), "seq:<item kind>" or "enum:v1,v2" (unit variants).
func contentValueError(data []byte, v *jsonNode, kind string) string {
	bad := func(want string) string { return "invalid type: " + contentDescribe(data, v) + ", expected " + want }
	switch {
	case kind == "a string":
		if v.kind != 's' {
			return bad(kind)
		}
	case kind == "a boolean":
		if v.kind != 'b' {
			return bad(kind)
		}
	case kind == "i32" || kind == "i64":
		n, err := strconv.ParseInt(string(data[v.start:v.end]), 10, 64)
		if v.kind != 'n' || err != nil && strings.ContainsAny(string(data[v.start:v.end]), ".eE") {
			return bad(kind)
		}
		if lo, hi, _ := intRange(kind); err != nil || float64(n) < lo || float64(n) > hi {
			return "invalid value: " + contentDescribe(data, v) + ", expected " + kind
		}
	case strings.HasPrefix(kind, "struct "):
		if v.kind != 'o' {
			return bad(kind)
		}
		return contentObjectError(data, v, jsonStructs[strings.TrimPrefix(kind, "struct ")])
	case strings.HasPrefix(kind, "seq:"):
		if v.kind != 'a' {
			return bad("a sequence")
		}
		for _, it := range v.vals {
			if msg := contentValueError(data, it, kind[len("seq:"):]); msg != "" {
				return msg
			}
		}
	case strings.HasPrefix(kind, "enum:"):
		variants := strings.Split(kind[len("enum:"):], ",")
		name := ""
		switch {
		case v.kind == 's':
			_ = json.Unmarshal(data[v.start:v.end], &name)
		case v.kind == 'o' && len(v.keys) == 1:
			name = v.keys[0]
		case v.kind == 'o':
			return "invalid value: map, expected map with a single key"
		default:
			return bad("string or map")
		}
		for _, e := range variants {
			if e == name {
				return ""
			}
		}
		return "unknown variant `" + name + "`, expected " + variantList(variants)
	}
	return ""
}

// contentDescribe names v as serde does from buffered content: as serdeUnexpectedJSON, except that a
// number that is not an integer is a map (serde_json's arbitrary-precision numbers are buffered so).
func contentDescribe(data []byte, v *jsonNode) string {
	what, _ := serdeUnexpectedJSON(data, v)
	if strings.HasPrefix(what, "floating point") {
		return "map"
	}
	return what
}

// serdePosition renders "at line L column C" for n bytes read of data.
func serdePosition(data []byte, n int) string {
	line, col := lineCol(data, n)
	return fmt.Sprintf("at line %d column %d", line, col)
}
