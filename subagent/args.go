package subagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"appserver/thread"
)

// decodeArgs reads a collaboration call's arguments into v, refusing (in the reference's words, with the
// position in the arguments) a field outside fields and a missing required one, as its strict parsing does.
func decodeArgs(call thread.ToolCall, v any, fields, required []string) error {
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
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return decodeStrict(call, v)
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
