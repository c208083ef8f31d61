package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// ParamsError is why a request's params were refused; its text is serde's wording, what follows
// "Invalid request: " in the reference's error.
type ParamsError struct{ Msg string }

func (e *ParamsError) Error() string { return e.Msg }

func paramsErrorf(format string, args ...any) *ParamsError {
	return &ParamsError{Msg: fmt.Sprintf(format, args...)}
}

// DecodeParams decodes a request's raw params (nil when absent) into spec's params type, or refuses them
// with a *ParamsError as the reference does. It is the one decoding of request params: the server's
// dispatch and the early answer to initialize (handshake) both use it. top, when not nil, returns raw's
// top-level members (ok false when raw is not an object), decoded once by the caller for its own checks.
func DecodeParams(spec *MethodSpec, raw json.RawMessage, top func() (map[string]json.RawMessage, bool)) (any, error) {
	if spec.NewParams == nil {
		return nil, nil
	}
	if raw == nil {
		if spec.ParamsRequired {
			return nil, paramsErrorf("missing field `params`")
		}
		return spec.NewParams(), nil
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, paramsErrorf("invalid type: %s, expected struct %s", describeJSON(trimmed), spec.ParamsType)
	}
	p := spec.NewParams()
	if err := json.Unmarshal(trimmed, p); err != nil {
		return nil, paramsErrorf("%s", DescribeDecodeErrorIn(trimmed, err))
	}
	if err := checkNonNullable(reflect.TypeOf(p).Elem(), trimmed); err != nil {
		return nil, err
	}
	if HasRequired(spec.ParamsType) {
		var obj map[string]json.RawMessage
		ok := false
		if top != nil {
			obj, ok = top()
		} else {
			ok = json.Unmarshal(trimmed, &obj) == nil
		}
		if ok {
			if err := CheckRequiredIn(spec.ParamsType, obj); err != nil {
				return nil, paramsErrorf("%v", err)
			}
		}
	}
	if err := checkEnums(reflect.ValueOf(p)); err != nil {
		return nil, err
	}
	return p, nil
}

// describeJSON renders a JSON value the way serde names it in "invalid type" errors.
func describeJSON(v []byte) string {
	if len(v) == 0 {
		return "unit value"
	}
	switch v[0] {
	case '"':
		return "string " + string(v)
	case '[':
		return "sequence"
	case 't', 'f':
		return "boolean `" + string(v) + "`"
	case 'n':
		return "unit value"
	default:
		return "integer `" + string(v) + "`"
	}
}

// DescribeDecodeError words an encoding/json decoding error as serde does, without the offending value
// (DescribeDecodeErrorIn names it).
func DescribeDecodeError(err error) string { return DescribeDecodeErrorIn(nil, err) }

// DescribeDecodeErrorIn words an error from decoding raw as serde does: "invalid type: integer `5`,
// expected a string", "invalid value: integer `-1`, expected u32" (the member is not named, as in the
// reference).
func DescribeDecodeErrorIn(raw []byte, err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		want := rustTypeName(typeErr.Type)
		got, lit := serdeUnexpected(raw, typeErr)
		if strings.HasPrefix(lit, "-") && strings.HasPrefix(want, "u") && got == "integer `"+lit+"`" {
			return fmt.Sprintf("invalid value: %s, expected %s", got, want)
		}
		return fmt.Sprintf("invalid type: %s, expected %s", got, want)
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return err.Error()
	}
	msg := err.Error()
	return strings.TrimPrefix(msg, "json: ")
}

// serdeUnexpected names the value a type error is about as serde does (integer, string, floating point
// and boolean with their literal; map; sequence), reading the literal that ends at the error's offset in
// raw; it also returns the literal ("" when not known).
func serdeUnexpected(raw []byte, e *json.UnmarshalTypeError) (string, string) {
	kind, _, _ := strings.Cut(e.Value, " ")
	lit := literalBefore(raw, int(e.Offset), kind)
	switch kind {
	case "object":
		return "map", ""
	case "array":
		return "sequence", ""
	case "string":
		var v string
		if lit != "" && json.Unmarshal([]byte(lit), &v) == nil {
			return "string " + strconv.Quote(v), lit
		}
		return "string", ""
	case "bool":
		if lit != "" {
			return "boolean `" + lit + "`", lit
		}
		return "boolean", ""
	case "number":
		if lit == "" {
			_, lit, _ = strings.Cut(e.Value, " ")
		}
		if lit == "" {
			return "number", ""
		}
		if strings.ContainsAny(lit, ".eE") {
			return "floating point `" + lit + "`", lit
		}
		return "integer `" + lit + "`", lit
	}
	return e.Value, ""
}

// literalBefore returns the JSON literal of the given kind (string, number, bool) that ends at end in raw,
// or "" when raw does not hold one there.
func literalBefore(raw []byte, end int, kind string) string {
	if end <= 0 || end > len(raw) {
		return ""
	}
	i := end - 1
	switch kind {
	case "string":
		if raw[i] != '"' {
			return ""
		}
		for j := i - 1; j >= 0; j-- {
			if raw[j] != '"' {
				continue
			}
			bs := 0
			for k := j - 1; k >= 0 && raw[k] == '\\'; k-- {
				bs++
			}
			if bs%2 == 0 {
				return string(raw[j:end])
			}
		}
		return ""
	case "number", "bool":
		j := i
		for j >= 0 && strings.IndexByte("0123456789+-.eEtruefals", raw[j]) >= 0 {
			j--
		}
		return string(raw[j+1 : end])
	}
	return ""
}

func rustTypeName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("u%d", t.Bits())
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		return fmt.Sprintf("i%d", t.Bits())
	case reflect.Float32, reflect.Float64:
		return fmt.Sprintf("f%d", t.Bits())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "a sequence"
	case reflect.Map:
		return "a map"
	case reflect.Struct:
		return "struct " + t.Name()
	case reflect.Pointer:
		return rustTypeName(t.Elem())
	}
	return t.String()
}

// nonNullableFields maps a params struct type to its optional members that may not be null (the generator
// tags them omitzero: a serde default without Option), each with serde's name of the expected type.
var nonNullableFields sync.Map // reflect.Type -> map[string]string

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

func nonNullableOf(t reflect.Type) map[string]string {
	if v, ok := nonNullableFields.Load(t); ok {
		return v.(map[string]string)
	}
	m := map[string]string{}
	if t.Kind() == reflect.Struct {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || !strings.Contains(","+opts+",", ",omitzero,") || f.Type == rawMessageType {
				continue
			}
			ft := f.Type
			switch {
			case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Bool:
				m[name] = "a boolean"
			case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.String && ft.Elem().Name() == "string":
				m[name] = "a string"
			case ft.Kind() == reflect.Slice:
				m[name] = "a sequence"
			}
		}
	}
	nonNullableFields.Store(t, m)
	return m
}

// checkNonNullable refuses a null given for an optional member that may not be null, as serde does
// ("invalid type: null, expected a boolean"); the first such member in the object is reported.
func checkNonNullable(t reflect.Type, obj []byte) error {
	fields := nonNullableOf(t)
	if len(fields) == 0 || !bytes.Contains(obj, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil //nolint:nilerr // not an object: decoded already
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil //nolint:nilerr // malformed: decoded already
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil //nolint:nilerr
		}
		key, _ := tok.(string)
		if want, ok := fields[key]; ok && string(val) == "null" {
			return paramsErrorf("invalid type: null, expected %s", want)
		}
	}
	return nil
}
