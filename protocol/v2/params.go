package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
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
		if merr := checkMembers(spec, reflect.TypeOf(p).Elem(), trimmed, true, nil); merr != nil {
			return nil, merr
		}
		// Arrays given for structs that serde reads as their fields: decode the objects they stand for.
		rewritten, changed := seqRewrite(reflect.TypeOf(p).Elem(), trimmed)
		if !changed {
			return nil, paramsErrorf("%s", DescribeDecodeErrorIn(trimmed, err))
		}
		p = spec.NewParams()
		if err := json.Unmarshal(rewritten, p); err != nil {
			return nil, paramsErrorf("%s", DescribeDecodeErrorIn(rewritten, err))
		}
		trimmed = rewritten
	}
	if err := checkMembers(spec, reflect.TypeOf(p).Elem(), trimmed, false, p); err != nil {
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
		want := serdeExpected(typeErr)
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

// pathBufFields are the members ("Type.jsonName") the reference types PathBuf although the schema says only
// string: serde expects a "path string" there.
var pathBufFields = map[string]bool{
	"ThreadResumeParams.path":              true,
	"ThreadForkParams.path":                true,
	"ThreadSettingsUpdateParams.cwd":       true,
	"TurnStartParams.cwd":                  true,
	"CommandExecParams.cwd":                true,
	"SkillsListParams.cwds":                true,
	"HooksListParams.cwds":                 true,
	"ExternalAgentConfigDetectParams.cwds": true,
	"FeedbackSaveParams.extraLogFiles":     true,
	"FeedbackUploadParams.extraLogFiles":   true,
}

// usizeFields are the members ("Type.jsonName") the reference types usize (the schema's uint, u64 here).
var usizeFields = map[string]bool{
	"CommandExecParams.outputBytesCap":  true,
	"ProcessSpawnParams.outputBytesCap": true,
}

// isAbsolutePathField reports whether key ("Type.jsonName") is typed AbsolutePathBuf in the schema.
func isAbsolutePathField(key string) bool {
	i := sort.SearchStrings(absolutePathFields, key)
	return i < len(absolutePathFields) && absolutePathFields[i] == key
}

var protocolPkg = reflect.TypeOf(SortDirection("")).PkgPath()

// serdeExpected names what serde expected where a type error happened: "path string" for path members,
// "string or map" for a string enum (serde's externally tagged enum), else the Rust name of the Go type.
func serdeExpected(e *json.UnmarshalTypeError) string {
	field := e.Field
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	key := e.Struct + "." + field
	switch {
	case e.Struct == "":
	case (pathBufFields[key] || isAbsolutePathField(key)) && e.Type != nil && e.Type.Kind() != reflect.Slice:
		return "path string"
	case usizeFields[key]:
		return "usize"
	}
	if t := e.Type; t != nil && t.Kind() == reflect.String && t.Name() != "string" && t.PkgPath() == protocolPkg {
		return "string or map"
	}
	return rustTypeName(e.Type)
}

// serdeTypeName is what serde expects of the member key ("Type.jsonName") of Go type t, as serdeExpected
// words it ("" for a member kept raw or of an interface type, whose wording is not known).
func serdeTypeName(key string, t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == rawMessageType || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(jsonUnmarshalerType):
		return ""
	case (pathBufFields[key] || isAbsolutePathField(key)) && t.Kind() != reflect.Slice:
		return "path string"
	case usizeFields[key]:
		return "usize"
	case t.Kind() == reflect.String && t.Name() != "string" && t.PkgPath() == protocolPkg:
		return "string or map"
	}
	return rustTypeName(t)
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
		// A required member may not be null either (serde has no default for it).
		for _, name := range requiredOf(t.Name()) {
			if ft, ok := memberType(t, name); ok {
				if want := serdeTypeName(t.Name()+"."+name, ft); want != "" {
					m[name] = want
				}
			}
		}
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

// checkMembers checks obj's members in their order, as serde meets them, and returns the first one's error:
// a relative path where an AbsolutePathBuf is expected (at any depth of plain structs and lists); when
// decode is set (decoding obj failed), the member's own decoding error; a null given for an optional
// member that may not be null ("invalid type: null, expected a boolean").
//
// When decode is not set, decoded is obj's decoded value (a pointer to t): the members are scanned only when
// it shows something the scan can find (a relative path, a zero non-nullable member with a null in obj, an
// untagged raw member of another type), so a request without any costs no second tokenizing.
func checkMembers(spec *MethodSpec, t reflect.Type, obj []byte, decode bool, decoded any) *ParamsError {
	fields := nonNullableOf(t)
	nestedIdx := nestedRequiredFields(t)
	nested := !decode && nestedWorthWalking(t, nestedIdx, decoded)
	if !decode && !nested && !worthScanning(t, fields, obj, decoded) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil //nolint:nilerr // not an object: decoded already
	}
	var one []byte
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
		if union, ok := untaggedRawMembers[t.Name()+"."+key]; ok && !fitsStringOrObject(val) {
			return paramsErrorf("%v", untaggedMismatch(union))
		}
		if f, ok := memberType(t, key); ok && relativePathIn(t.Name()+"."+key, f, val) {
			return paramsErrorf("AbsolutePathBuf deserialized without a base path")
		}
		if nested {
			if i, ok := memberIndex(t, key); ok && slices.Contains(nestedIdx, i) {
				if msg, found := seqAsStructError(t.Field(i).Type, val); found && msg != "" {
					return paramsErrorf("%s", msg)
				}
			}
		}
		if decode {
			// serde reads an array given for a struct as its fields (encoding/json refuses it outright).
			if f, ok := memberType(t, key); ok {
				if msg, found := seqAsStructError(f, val); found && msg != "" {
					return paramsErrorf("%s", msg)
				} else if found {
					if sub, ch := seqRewrite(f, val); ch {
						val = sub // checked as the object it stands for
					}
				}
			}
			one = append(AppendString(append(one[:0], '{'), key), ':')
			one = append(append(one, val...), '}')
			if err := json.Unmarshal(one, spec.NewParams()); err != nil {
				return paramsErrorf("%s", DescribeDecodeErrorIn(one, err))
			}
			// A string enum's unknown value is refused in the same pass, in order, as serde does (a
			// handler checks it when nothing else is wrong).
			if f, ok := memberType(t, key); ok {
				if msg := unknownEnumValue(f, val); msg != "" {
					return paramsErrorf("%s", msg)
				}
			}
		}
	}
	return nil
}

// worthScanning reports whether checkMembers' scan of obj, decoded into decoded (a pointer to struct type t)
// without error, can find anything: a relative path where an AbsolutePathBuf is expected, a null for one of
// the non-nullable fields (left zero by the decoding), an untagged raw member that is neither a string nor
// an object. It errs towards scanning (a member matched case-insensitively by encoding/json is found here
// but not by the scan, which then finds nothing, as before).
func worthScanning(t reflect.Type, fields map[string]string, obj []byte, decoded any) bool {
	v := reflect.ValueOf(decoded)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Type() != t {
		return true
	}
	v = v.Elem()
	if len(fields) > 0 || hasUntaggedRaw(t) {
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if _, ok := fields[name]; ok && v.Field(i).IsZero() && hasNullLiteral(obj) {
				return true
			}
			if _, ok := untaggedRawMembers[t.Name()+"."+name]; ok {
				if raw, ok := v.Field(i).Interface().(json.RawMessage); ok && raw != nil && !fitsStringOrObject(raw) {
					return true
				}
			}
		}
	}
	return hasPathMembers(t) && relativePathInValue("", v)
}

// hasNullLiteral reports whether obj may hold a null value: a "null" after a ':', ',' or '[' (and blanks),
// which the word inside a string never is unless the string itself holds such JSON.
func hasNullLiteral(obj []byte) bool {
	for i := 0; ; {
		j := bytes.Index(obj[i:], []byte("null"))
		if j < 0 {
			return false
		}
		k := i + j - 1
		for k >= 0 && (obj[k] == ' ' || obj[k] == '\t' || obj[k] == '\n' || obj[k] == '\r') {
			k--
		}
		if k >= 0 && (obj[k] == ':' || obj[k] == ',' || obj[k] == '[') {
			return true
		}
		i += j + 4
	}
}

// relativePathInValue reports whether decoded value v, the member key ("Type.jsonName", "" when not a
// member) holds a relative path where an AbsolutePathBuf is expected, at any depth of plain structs,
// pointers and lists (the places relativePathIn looks).
func relativePathInValue(key string, v reflect.Value) bool {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return false
		}
		v = v.Elem()
	}
	if key != "" && isAbsolutePathField(key) {
		switch v.Kind() {
		case reflect.String:
			return !filepath.IsAbs(v.String())
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				if it := v.Index(i); it.Kind() == reflect.String && !filepath.IsAbs(it.String()) {
					return true
				}
			}
		}
		return false
	}
	if !hasPathMembers(v.Type()) {
		return false
	}
	switch v.Kind() {
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if relativePathInValue("", v.Index(i)) {
				return true
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if relativePathInValue(t.Name()+"."+name, v.Field(i)) {
				return true
			}
		}
	}
	return false
}

// untaggedRawMembers are the members ("Type.jsonName") kept raw whose schema is an untagged union of a string
// and an object, with the union's name: serde refuses any other value while decoding.
var untaggedRawMembers = map[string]string{"ThreadItemsListParams.cursor": "ThreadItemsListCursor"}

// hasUntaggedRaw reports whether struct type t has a member listed in untaggedRawMembers.
func hasUntaggedRaw(t reflect.Type) bool {
	for k := range untaggedRawMembers {
		if strings.HasPrefix(k, t.Name()+".") {
			return true
		}
	}
	return false
}

// fitsStringOrObject reports whether v is a JSON string, object or null.
func fitsStringOrObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && (v[0] == '"' || v[0] == '{' || v[0] == 'n')
}

// enumValuesOf returns the values of the generated string enum type named name (nil when not one).
func enumValuesOf(name string) []string {
	i := sort.Search(len(enumValues), func(i int) bool { return enumValues[i].typeName >= name })
	if i < len(enumValues) && enumValues[i].typeName == name {
		return enumValues[i].fields
	}
	return nil
}

// unknownEnumValue returns serde's "unknown variant" error for val when t is a string enum (alone, optional
// or in a list) and val holds a value outside it, else "".
func unknownEnumValue(t reflect.Type, val json.RawMessage) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice {
		var items []json.RawMessage
		if json.Unmarshal(val, &items) != nil {
			return ""
		}
		for _, it := range items {
			if msg := unknownEnumValue(t.Elem(), it); msg != "" {
				return msg
			}
		}
		return ""
	}
	if t.Kind() != reflect.String || t.PkgPath() != protocolPkg {
		return ""
	}
	values := enumValuesOf(t.Name())
	var s string
	if len(values) == 0 || json.Unmarshal(val, &s) != nil {
		return ""
	}
	for _, v := range values {
		if v == s {
			return ""
		}
	}
	if _, ok := enumAliases[t.Name()][s]; ok {
		return ""
	}
	if w, ok := enumWording[t.Name()]; ok {
		values = w
	}
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = "`" + v + "`"
	}
	switch len(values) {
	case 1:
		return fmt.Sprintf("unknown variant `%s`, expected %s", s, quoted[0])
	case 2:
		return fmt.Sprintf("unknown variant `%s`, expected %s or %s", s, quoted[0], quoted[1])
	}
	return fmt.Sprintf("unknown variant `%s`, expected one of %s", s, strings.Join(quoted, ", "))
}

// memberType returns the Go type of the member of struct type t with JSON name key.
// memberIndex is the index of struct t's field whose JSON name is key.
func memberIndex(t reflect.Type, key string) (int, bool) {
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == key {
			return i, true
		}
	}
	return 0, false
}

func memberType(t reflect.Type, key string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == key {
			return f.Type, true
		}
	}
	return nil, false
}

// pathMembers caches, per Go type, whether an AbsolutePathBuf member can be reached through plain structs,
// pointers and lists.
var pathMembers sync.Map // reflect.Type -> bool

func hasPathMembers(t reflect.Type) bool {
	if v, ok := pathMembers.Load(t); ok {
		return v.(bool)
	}
	orig := t
	pathMembers.Store(orig, false) // cycles
	has := false
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct {
		for i := 0; i < t.NumField() && !has; i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			has = name != "" && name != "-" && (isAbsolutePathField(t.Name()+"."+name) || hasPathMembers(f.Type))
		}
	}
	pathMembers.Store(orig, has)
	return has
}

// relativePathIn reports whether val, the member key ("Type.jsonName") of Go type t, holds a relative path
// where an AbsolutePathBuf is expected (the reference refuses those while decoding, "~" included).
func relativePathIn(key string, t reflect.Type, val json.RawMessage) bool {
	if isAbsolutePathField(key) {
		// Items are met in order: a relative path before an item of another type is the error.
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		var items []json.RawMessage
		if t.Kind() != reflect.Slice {
			items = []json.RawMessage{val}
		} else if json.Unmarshal(val, &items) != nil {
			return false // not a list: a type error
		}
		for _, it := range items {
			var p string
			if json.Unmarshal(it, &p) != nil {
				return false
			}
			if !filepath.IsAbs(p) {
				return true
			}
		}
		return false
	}
	if !hasPathMembers(t) {
		return false
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(val, &items) != nil {
			return false
		}
		for _, it := range items {
			if relativePathIn("", t.Elem(), it) {
				return true
			}
		}
	case reflect.Struct:
		dec := json.NewDecoder(bytes.NewReader(val))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return false
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return false
			}
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return false
			}
			name, _ := tok.(string)
			if f, ok := memberType(t, name); ok && relativePathIn(t.Name()+"."+name, f, v) {
				return true
			}
		}
	}
	return false
}
