package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
)

var jsonUnmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// seqAsStructError is serde's error for the JSON value val decoded as Go type t where serde reads it
// otherwise than encoding/json: a nested object missing a required member ("missing field `x`", once the
// object is read); an object given for a string enum (mapEnumError); an array given for a struct, read as
// the struct's fields in declaration order (its visit_seq): a short array is
// "invalid length i, expected struct X with N elements" (a field with a serde default may be left out), a
// long one "invalid length n, expected N elements in sequence", an element of the wrong type that
// field's error. It walks val through objects, arrays and pointers in document order and stops at the
// first member that does not decode for another reason (found false: the caller's decoding reports it).
// found is true when an array given for a struct decided the error.
func seqAsStructError(t reflect.Type, val []byte) (msg string, found bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	val = bytes.TrimSpace(val)
	if len(val) == 0 || reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		return "", false
	}
	switch {
	case isProtocolEnum(t) && val[0] == '{':
		return mapEnumError(t, val), true
	case t.Kind() == reflect.Struct && val[0] == '[':
		var items []json.RawMessage
		if json.Unmarshal(val, &items) != nil {
			return "", false
		}
		return seqStruct(t, items), true
	case t.Kind() == reflect.Struct && val[0] == '{':
		dec := json.NewDecoder(bytes.NewReader(val))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return "", false
		}
		var present []string
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return "", false
			}
			var mv json.RawMessage
			if dec.Decode(&mv) != nil {
				return "", false
			}
			key, _ := tok.(string)
			ft, ok := memberType(t, key)
			if !ok {
				present = append(present, key)
				continue
			}
			if msg, found := seqAsStructError(ft, mv); found {
				return msg, true
			}
			if json.Unmarshal(mv, reflect.New(ft).Interface()) != nil {
				return "", false // this member's own error comes first
			}
			present = append(present, key)
		}
		// serde reports a nested object's missing field once it has read the object.
		for _, name := range requiredOf(t.Name()) {
			found := false
			for _, k := range present {
				found = found || k == name
			}
			if !found {
				return "missing field `" + name + "`", true
			}
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && val[0] == '[':
		var items []json.RawMessage
		if json.Unmarshal(val, &items) != nil {
			return "", false
		}
		for _, it := range items {
			if msg, found := seqAsStructError(t.Elem(), it); found {
				return msg, true
			}
			if json.Unmarshal(it, reflect.New(t.Elem()).Interface()) != nil {
				return "", false
			}
		}
	}
	return "", false
}

// declaredFields are struct t's JSON fields in the reference's declaration order (fieldOrder, else the
// generated order).
func declaredFields(t reflect.Type) []reflect.StructField {
	var fields []reflect.StructField
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
			fields = append(fields, f)
		}
	}
	if order, ok := fieldOrder[t.Name()]; ok {
		rank := make(map[string]int, len(order))
		for i, n := range order {
			rank[n] = i
		}
		sort.SliceStable(fields, func(i, j int) bool { return rank[jsonName(fields[i])] < rank[jsonName(fields[j])] })
	}
	return fields
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// seqRewrite rewrites val, decoded as Go type t, with every array given for a struct turned into the
// object serde reads it as (its items named by the struct's fields in declaration order); changed is false
// when there is none.
func seqRewrite(t reflect.Type, val []byte) (out []byte, changed bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	val = bytes.TrimSpace(val)
	if len(val) == 0 || reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		return val, false
	}
	switch {
	case isProtocolEnum(t) && val[0] == '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(val, &m) != nil || len(m) != 1 {
			return val, false
		}
		for k := range m {
			return AppendString(nil, k), true
		}
	case t.Kind() == reflect.Struct && val[0] == '[':
		var items []json.RawMessage
		if json.Unmarshal(val, &items) != nil {
			return val, false
		}
		fields := declaredFields(t)
		b := []byte{'{'}
		for i, it := range items {
			if i >= len(fields) {
				break
			}
			if i > 0 {
				b = append(b, ',')
			}
			sub, _ := seqRewrite(fields[i].Type, it)
			b = append(append(AppendString(b, jsonName(fields[i])), ':'), sub...)
		}
		return append(b, '}'), true
	case t.Kind() == reflect.Struct && val[0] == '{':
		var members []struct {
			key string
			val json.RawMessage
		}
		dec := json.NewDecoder(bytes.NewReader(val))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return val, false
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return val, false
			}
			var mv json.RawMessage
			if dec.Decode(&mv) != nil {
				return val, false
			}
			key, _ := tok.(string)
			if ft, ok := memberType(t, key); ok {
				if sub, ch := seqRewrite(ft, mv); ch {
					mv, changed = sub, true
				}
			}
			members = append(members, struct {
				key string
				val json.RawMessage
			}{key, mv})
		}
		if !changed {
			return val, false
		}
		b := []byte{'{'}
		for i, m := range members {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(AppendString(b, m.key), ':'), m.val...)
		}
		return append(b, '}'), true
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && val[0] == '[':
		var items []json.RawMessage
		if json.Unmarshal(val, &items) != nil {
			return val, false
		}
		for i, it := range items {
			if sub, ch := seqRewrite(t.Elem(), it); ch {
				items[i], changed = sub, true
			}
		}
		if !changed {
			return val, false
		}
		b, _ := json.Marshal(items)
		return b, true
	}
	return val, false
}

// seqDefaulted are the structs whose fields all have serde defaults though the schema does not say so
// (double options: absent, null or a value), so that an array given for one may be short.
var seqDefaulted = map[string]bool{"ThreadMetadataGitInfoUpdateParams": true}

// isProtocolEnum reports whether t is one of the schema's string enums (serde's unit-variant enums).
func isProtocolEnum(t reflect.Type) bool {
	return t.Kind() == reflect.String && t.Name() != "string" && t.PkgPath() == protocolPkg
}

// mapEnumError is serde's error for the object val given for the string enum t: an externally tagged
// variant, so one member named by a variant, whose value (a unit's) must be null or an empty object
// ("" when it reads).
func mapEnumError(t reflect.Type, val []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(val, &m) != nil {
		return ""
	}
	if len(m) != 1 {
		return "invalid value: map, expected map with a single key"
	}
	for k, v := range m {
		if msg := unknownEnumValue(t, AppendString(nil, k)); msg != "" {
			return msg
		}
		v = bytes.TrimSpace(v)
		if string(v) == "null" || len(v) > 0 && v[0] == '{' && bytes.Equal(bytes.Join(bytes.Fields(v), nil), []byte("{}")) {
			return ""
		}
		return "invalid type: " + serdeValue(v) + ", expected unit"
	}
	return ""
}

// seqStruct is serde's error for items read as the fields of struct t ("" when they read).
func seqStruct(t reflect.Type, items []json.RawMessage) string {
	fields := declaredFields(t)
	for i, f := range fields {
		if i >= len(items) {
			_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if strings.Contains(","+opts+",", ",omitzero,") || seqDefaulted[t.Name()] {
				continue // a serde default
			}
			return fmt.Sprintf("invalid length %d, expected struct %s with %d element%s", i, t.Name(), len(fields), plural(len(fields)))
		}
		it := bytes.TrimSpace(items[i])
		if msg, found := seqAsStructError(f.Type, it); found {
			if msg != "" {
				return msg
			}
			continue
		}
		if string(it) == "null" {
			switch f.Type.Kind() {
			case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
			default:
				return "invalid type: null, expected " + rustTypeName(f.Type)
			}
			continue
		}
		if err := json.Unmarshal(it, reflect.New(f.Type).Interface()); err != nil {
			return DescribeDecodeErrorIn(it, err)
		}
		if msg := unknownEnumValue(f.Type, it); msg != "" {
			return msg
		}
	}
	if len(items) > len(fields) {
		return fmt.Sprintf("invalid length %d, expected %d element%s in sequence", len(items), len(fields), plural(len(fields)))
	}
	return ""
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// nestedRequired caches, per struct type, the indexes of its fields through which a struct with required
// members can be reached (plain structs, pointers, lists and maps; not types decoding themselves).
var nestedRequired sync.Map // reflect.Type -> []int

// nestedRequiredFields returns the indexes of struct t's fields through which seqAsStructError's walk can
// find a nested object's missing member.
func nestedRequiredFields(t reflect.Type) []int {
	if v, ok := nestedRequired.Load(t); ok {
		return v.([]int)
	}
	var reach func(ft reflect.Type, seen map[reflect.Type]bool) bool
	reach = func(ft reflect.Type, seen map[reflect.Type]bool) bool {
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Struct || seen[ft] || reflect.PointerTo(ft).Implements(jsonUnmarshalerType) {
			return false
		}
		seen[ft] = true
		if HasRequired(ft.Name()) {
			return true
		}
		for i := 0; i < ft.NumField(); i++ {
			if f := ft.Field(i); f.IsExported() && reach(f.Type, seen) {
				return true
			}
		}
		return false
	}
	var idx []int
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() && reach(f.Type, map[reflect.Type]bool{t: true}) {
			idx = append(idx, i)
		}
	}
	nestedRequired.Store(t, idx)
	return idx
}

// nestedWorthWalking reports whether decoded (a pointer to struct type t, decoded without error) sets one
// of the fields of idx, so that a nested object may miss a required member.
func nestedWorthWalking(t reflect.Type, idx []int, decoded any) bool {
	v := reflect.ValueOf(decoded)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Type() != t {
		return len(idx) > 0
	}
	for _, i := range idx {
		if !v.Elem().Field(i).IsZero() {
			return true
		}
	}
	return false
}
