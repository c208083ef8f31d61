package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/schemaexport"
)

func TestStrip(t *testing.T) {
	out, err := schemaexport.StripDescriptions([]byte(`{"description":"drop me","properties":{"description":{"type":"string",
		"description":"drop me too"}},"oneOf":[{"description":"x","type":"null"}],"required":["description"]}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"properties":{"description":{"type":"string"}},"oneOf":[{"type":"null"}],
		"required":["description"]}`, string(out))
}

// TestSchemaCopyHasNoDescriptions checks the committed copy: every file listed is present and stripped.
func TestSchemaCopyHasNoDescriptions(t *testing.T) {
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "schema", f))
		require.NoError(t, err, f)
		var doc any
		require.NoError(t, json.Unmarshal(raw, &doc), f)
		require.False(t, hasDescription(doc), "%s still has description annotations", f)
	}
}

func hasDescription(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if _, isString := x.(string); k == "description" && isString {
				return true
			}
			if hasDescription(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if hasDescription(x) {
				return true
			}
		}
	}
	return false
}
