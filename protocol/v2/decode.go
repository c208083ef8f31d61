package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// requiredEntry is one row of the generated requiredFields table.
type requiredEntry struct {
	typeName string
	fields   []string
}

// requiredOf returns the required non-null properties of the named generated type, in the reference's
// declaration order (which orders serde's "missing field" errors).
func requiredOf(typeName string) []string {
	i := sort.Search(len(requiredFields), func(i int) bool { return requiredFields[i].typeName >= typeName })
	if i < len(requiredFields) && requiredFields[i].typeName == typeName {
		return declaredOrder(typeName, requiredFields[i].fields)
	}
	return nil
}

// declaredOrderCache holds requiredOf's lists reordered by fieldOrder.
var declaredOrderCache sync.Map // string -> []string

// declaredOrder returns names (fields of typeName) in the reference's declaration order when fieldOrder
// knows it.
func declaredOrder(typeName string, names []string) []string {
	order, ok := fieldOrder[typeName]
	if !ok || len(names) < 2 {
		return names
	}
	if v, ok := declaredOrderCache.Load(typeName); ok {
		return v.([]string)
	}
	rank := make(map[string]int, len(order))
	for i, n := range order {
		rank[n] = i
	}
	out := append([]string(nil), names...)
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i]] < rank[out[j]] })
	declaredOrderCache.Store(typeName, out)
	return out
}

// Decode unmarshals raw into v (a pointer to a generated type) and then checks that raw's top-level object
// has every required non-null property of v's type, reporting the first missing one as "missing field
// `name`" (the reference's wording). Nested objects are not checked for missing properties.
func Decode(raw []byte, v any) error {
	rt := reflect.TypeOf(v)
	if rt == nil || rt.Kind() != reflect.Pointer {
		return fmt.Errorf("protocol: Decode needs a pointer, got %T", v)
	}
	trimmed := bytes.TrimSpace(raw)
	if rt.Elem().Kind() == reflect.Struct && bytes.Equal(trimmed, []byte("null")) {
		return fmt.Errorf("invalid type: null, expected struct %s", rt.Elem().Name())
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	return CheckRequired(rt.Elem().Name(), raw)
}

// CheckRequired reports the first required non-null property of the named generated type that is missing
// from the JSON object raw, as "missing field `name`". Types without required properties, and raw values
// that are not objects, pass.
func CheckRequired(typeName string, raw []byte) error {
	if !HasRequired(typeName) {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil //nolint:nilerr // not an object: the type decoder reports it
	}
	return CheckRequiredIn(typeName, obj)
}

// HasRequired reports whether the named generated type has required non-null properties.
func HasRequired(typeName string) bool { return len(requiredOf(typeName)) > 0 }

// CheckRequiredIn is CheckRequired for an object whose top-level members are already decoded.
func CheckRequiredIn(typeName string, obj map[string]json.RawMessage) error {
	for _, name := range requiredOf(typeName) {
		if _, ok := obj[name]; !ok {
			return fmt.Errorf("missing field `%s`", name)
		}
	}
	return nil
}

// checkEnums refuses, with serde's wording, the first string-enum value in v (a decoded params value,
// walked through structs, pointers, interfaces, slices and maps) that is not one of its type's values.
// An empty string is left to the required-field check.
func checkEnums(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return checkEnums(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if err := checkEnums(v.Field(i)); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil
		}
		for i := range v.Len() {
			if err := checkEnums(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if err := checkEnums(it.Value()); err != nil {
				return err
			}
		}
	case reflect.String:
		if v.String() == "" {
			return nil
		}
		if to, ok := enumAliases[v.Type().Name()][v.String()]; ok && v.CanSet() && v.Type().PkgPath() == protocolPkg {
			v.SetString(to) // a legacy name, read as the value it stands for
			return nil
		}
		b, _ := json.Marshal(v.String())
		if msg := unknownEnumValue(v.Type(), b); msg != "" {
			return &ParamsError{Msg: msg}
		}
	}
	return nil
}
