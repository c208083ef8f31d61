package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// marshalUnion marshals the variant held by a tagged-union wrapper; an empty wrapper is an error.
func marshalUnion(union string, v any) ([]byte, error) {
	if v == nil {
		return nil, emptyUnion(union)
	}
	// A variant's own MarshalJSON output is already what json.Marshal would return (compact, HTML-escaped):
	// calling it directly saves json.Marshal re-validating it, once per level of nesting.
	if m, ok := v.(json.Marshaler); ok {
		if rv := reflect.ValueOf(v); rv.Kind() != reflect.Pointer || !rv.IsNil() {
			return m.MarshalJSON()
		}
	}
	return json.Marshal(v)
}

// emptyUnion is the error for marshalling a union value with nothing set.
func emptyUnion(union string) error {
	return fmt.Errorf("protocol: %s has no variant set", union)
}

// marshalTagged marshals v (a struct without custom marshalling) and puts "key":"tag" first.
func marshalTagged(key, tag string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(body)+len(key)+len(tag)+8)
	b = append(b, '{')
	b = AppendString(b, key)
	b = append(b, ':')
	b = AppendString(b, tag)
	if rest := bytes.TrimSpace(body[1:]); len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, body[1:]...), nil
}

// AppendString appends s as a JSON string byte for byte as json.Marshal writes it (HTML characters escaped):
// printable ASCII needing no escape (keys, tags, ids) is copied, anything else goes through encoding/json.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// marshalSingleKey writes {"key": v}.
func marshalSingleKey(key string, v any) ([]byte, error) {
	return json.Marshal(map[string]any{key: v})
}

// readTag returns the string value of the discriminator property key of a JSON object.
func readTag(b []byte, union, key string) (string, error) {
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return "", fmt.Errorf("invalid type: %s, expected internally tagged enum %s", serdeValue(t), serdeEnumName(union))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return "", fmt.Errorf("invalid type: expected %s object: %w", union, err)
	}
	raw, ok := obj[key]
	if !ok {
		return "", fmt.Errorf("missing field `%s`", key)
	}
	var tag string
	if err := json.Unmarshal(raw, &tag); err != nil {
		return "", fmt.Errorf("invalid type for field `%s` of %s: expected a string", key, union)
	}
	return tag, nil
}

// decodeVariant decodes b into a fresh T and stores it (by value) in dst.
func decodeVariant[T any, I any](b []byte, dst *I) error {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	iv, ok := any(v).(I)
	if !ok {
		return fmt.Errorf("protocol: %T does not implement the union interface", v)
	}
	*dst = iv
	return nil
}

// unknownVariant mimics serde's message for an unexpected enum variant.
func unknownVariant(got string, expected ...string) error {
	quoted := make([]string, len(expected))
	for i, e := range expected {
		quoted[i] = "`" + e + "`"
	}
	return fmt.Errorf("unknown variant `%s`, expected one of %s", got, strings.Join(quoted, ", "))
}

// splitExternal splits an externally tagged value: a JSON string yields name, a single-key object yields
// key and the key's raw value.
func splitExternal(b []byte, union string) (name, key string, val json.RawMessage, err error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		err = json.Unmarshal(b, &name)
		return name, "", nil, err
	}
	if len(b) == 0 || b[0] != '{' {
		return "", "", nil, fmt.Errorf("invalid type: %s, expected string or map", serdeValue(b))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return "", "", nil, fmt.Errorf("invalid type: expected %s as a string or an object: %w", union, err)
	}
	if len(obj) != 1 {
		return "", "", nil, fmt.Errorf("invalid %s: expected an object with exactly one key, got %d", union, len(obj))
	}
	for k, v := range obj {
		key, val = k, v
	}
	return "", key, val, nil
}

// marshalWithExtra marshals v (a struct without custom marshalling) and adds the extra members that the
// struct does not already write.
func marshalWithExtra(v any, extra map[string]json.RawMessage) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return body, err
	}
	var known map[string]json.RawMessage
	if err := json.Unmarshal(body, &known); err != nil {
		return nil, err
	}
	for k, x := range extra {
		if _, ok := known[k]; !ok {
			known[k] = x
		}
	}
	return json.Marshal(known)
}

// extraMembers returns the members of the JSON object b whose names are not in known (nil if none).
func extraMembers(b []byte, known ...string) (map[string]json.RawMessage, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for _, k := range known {
		delete(all, k)
	}
	if len(all) == 0 {
		return nil, nil
	}
	return all, nil
}

// isJSONObject reports whether b holds a JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// serdeEnumNames maps a union's schema name to the Rust type serde names in its errors, where they differ.
var serdeEnumNames = map[string]string{"SandboxPolicy": "SandboxPolicyDeserialize"}

// serdeEnumName is the Rust name of the union named union in the schema.
func serdeEnumName(union string) string {
	if n, ok := serdeEnumNames[union]; ok {
		return n
	}
	return union
}

// serdeValue names a JSON value the way serde_json does in "invalid type" errors: string "x", integer `5`,
// floating point `1.5`, boolean `true`, null, sequence, map.
func serdeValue(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "unit value"
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			return "string " + strconv.Quote(s)
		}
		return "string"
	case '[':
		return "sequence"
	case '{':
		return "map"
	case 't', 'f':
		return "boolean `" + string(v) + "`"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(v, ".eE") {
		return "floating point `" + string(v) + "`"
	}
	return "integer `" + string(v) + "`"
}

// untaggedMismatch is serde's error for a value that fits no variant of an untagged enum.
func untaggedMismatch(union string) error {
	return fmt.Errorf("data did not match any variant of untagged enum %s", union)
}
