package schemaexport

import (
	"bytes"
	"encoding/json"
)

// StripDescriptions re-encodes a JSON Schema document without its "description" annotations, with keys
// sorted and a two-space indent (the form of the repo's schema/ copy and of the embedded archive).
func StripDescriptions(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(strip(doc)); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// strip removes string-valued "description" annotations; a property named "description" is an object
// and stays.
func strip(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			if _, isString := x.(string); k == "description" && isString {
				continue
			}
			m[k] = strip(x)
		}
		return m
	case []any:
		for i := range t {
			t[i] = strip(t[i])
		}
	}
	return v
}
