package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Schema is the subset of JSON Schema (draft 7) used by the reference's generated schema files.
type Schema struct {
	// Bool is set for the boolean schemas `true` and `false`.
	Bool *bool `json:"-"`

	Ref                  string             `json:"$ref"`
	Type                 typeList           `json:"type"`
	Format               string             `json:"format"`
	Enum                 []any              `json:"enum"`
	Const                any                `json:"const"`
	Properties           map[string]*Schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties *Schema            `json:"additionalProperties"`
	Items                *Schema            `json:"items"`
	OneOf                []*Schema          `json:"oneOf"`
	AnyOf                []*Schema          `json:"anyOf"`
	AllOf                []*Schema          `json:"allOf"`
	Title                string             `json:"title"`
	Default              json.RawMessage    `json:"default"`
	Definitions          map[string]*Schema `json:"definitions"`
}

// UnmarshalJSON accepts boolean schemas as well as objects.
func (s *Schema) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("true")) || bytes.Equal(b, []byte("false")) {
		v := b[0] == 't'
		*s = Schema{Bool: &v}
		return nil
	}
	type plain Schema
	return json.Unmarshal(b, (*plain)(s))
}

// typeList is the "type" keyword: a single name or a list of names.
type typeList []string

func (t *typeList) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = typeList{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	*t = l
	return nil
}

func (t typeList) has(name string) bool {
	for _, x := range t {
		if x == name {
			return true
		}
	}
	return false
}

// nonNull returns the type names other than "null".
func (t typeList) nonNull() []string {
	var out []string
	for _, x := range t {
		if x != "null" {
			out = append(out, x)
		}
	}
	return out
}

// isTrue reports whether s accepts any value (`true`, or an empty schema).
func (s *Schema) isTrue() bool {
	if s == nil {
		return true
	}
	if s.Bool != nil {
		return *s.Bool
	}
	return s.Ref == "" && len(s.Type) == 0 && s.Enum == nil && s.Const == nil && s.Properties == nil &&
		s.Items == nil && s.OneOf == nil && s.AnyOf == nil && s.AllOf == nil && s.AdditionalProperties == nil
}

// isNull reports whether s is exactly {"type":"null"}.
func (s *Schema) isNull() bool {
	return s != nil && len(s.Type) == 1 && s.Type[0] == "null" && s.Ref == "" && s.AnyOf == nil
}

func (s *Schema) isRequired(name string) bool {
	for _, r := range s.Required {
		if r == name {
			return true
		}
	}
	return false
}

// refName returns the definition name a $ref points to ("#/definitions/v2/X" and "#/definitions/X" → "X").
func refName(ref string) string {
	i := strings.LastIndex(ref, "/")
	return ref[i+1:]
}

// stringEnum returns the values of a string enum schema, or nil.
func (s *Schema) stringEnum() []string {
	if s == nil || s.Enum == nil || !(len(s.Type) == 0 || s.Type.has("string")) {
		return nil
	}
	var out []string
	for _, v := range s.Enum {
		str, ok := v.(string)
		if !ok {
			return nil
		}
		out = append(out, str)
	}
	return out
}

// loadBundle reads a schema file and returns its definitions.
func loadBundle(path string) (*Schema, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}
