package subagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"appserver/thread"
)

// Kinds of argument values, as the reference's parser expects them.
const (
	kindString = "a string" // a string (null only where optional)
	kindInt    = "i64"      // an integer
)

// decodeArgs reads a collaboration call's arguments into v, refusing (in the reference's words, with the
// position in the arguments) a field outside fields, a value of another kind than kinds gives (kindString
// when absent), and a missing required field, as its strict parsing does.
func decodeArgs(call thread.ToolCall, v any, fields, required []string, kinds ...map[string]string) error {
	args := []byte(call.Arguments)
	dec := json.NewDecoder(bytes.NewReader(args))
	fail := func(msg string, off int64) error {
		line, col := position(args, off)
		return fmt.Errorf("failed to parse function arguments: %s at line %d column %d", msg, line, col)
	}
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return decodeStrict(call, v) // not an object: the decoder's own words
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return decodeStrict(call, v)
		}
		key, _ := tok.(string)
		if !contains(fields, key) {
			return fail(fmt.Sprintf("unknown field `%s`, %s", key, expected(fields)), dec.InputOffset())
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return decodeStrict(call, v)
		}
		kind := kindString
		for _, k := range kinds {
			if x, ok := k[key]; ok {
				kind = x
			}
		}
		if msg, atStart := invalidType(raw, kind, !contains(required, key)); msg != "" {
			off := dec.InputOffset()
			if atStart {
				off -= int64(len(raw))
			}
			return fail(msg, off)
		}
	}
	if _, err := dec.Token(); err != nil {
		return decodeStrict(call, v)
	}
	for _, f := range required {
		if !seen[f] {
			return fail(fmt.Sprintf("missing field `%s`", f), dec.InputOffset())
		}
	}
	return decodeStrict(call, v)
}

// invalidType describes, as the reference's parser does, a value that is not of the kind expected ("" when
// it is); atStart: the parser stops at the value's start (a map or a sequence), else after it.
func invalidType(raw json.RawMessage, kind string, optional bool) (msg string, atStart bool) {
	var got string
	switch c := raw[0]; {
	case c == 'n':
		if optional {
			return "", false
		}
		got = "null"
	case c == '"':
		if kind == kindString {
			return "", false
		}
		var str string
		_ = json.Unmarshal(raw, &str)
		got = "string " + strconv.Quote(str) // Rust's Debug quoting, for printable text
	case c == 't' || c == 'f':
		got = "boolean `" + string(raw) + "`"
	case c == '{':
		got, atStart = "map", true
	case c == '[':
		got, atStart = "sequence", true
	default: // a number
		text := string(raw)
		if !strings.ContainsAny(text, ".eE") {
			if kind == kindInt {
				return "", false
			}
			got = "integer `" + text + "`"
			break
		}
		f, _ := strconv.ParseFloat(text, 64)
		num := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(num, ".") {
			num += ".0"
		}
		got = "floating point `" + num + "`"
	}
	return "invalid type: " + got + ", expected " + kind, atStart
}

// expected names the accepted fields as the reference's parser does.
func expected(fields []string) string {
	q := make([]string, len(fields))
	for i, f := range fields {
		q[i] = "`" + f + "`"
	}
	switch len(q) {
	case 0:
		return "there are no fields"
	case 1:
		return "expected " + q[0]
	case 2:
		return "expected " + q[0] + " or " + q[1]
	}
	return "expected one of " + strings.Join(q, ", ")
}

// position is the 1-based line and the column (characters before the offset on its line) of a byte offset.
func position(b []byte, off int64) (line, col int) {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	head := b[:off]
	line = bytes.Count(head, []byte("\n")) + 1
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
		head = head[i+1:]
	}
	return line, len([]rune(string(head)))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// errEmptyMessage is the reference's answer for an empty message or task.
var errEmptyMessage = errors.New("Empty message can't be sent to an agent")
