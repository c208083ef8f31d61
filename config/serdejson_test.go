package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModelCatalogSerdeWording pins the reference's (0.169.0, serde_json) refusal of malformed
// model_catalog_json files, each seen on it with the same content.
func TestModelCatalogSerdeWording(t *testing.T) {
	for _, tc := range []struct{ content, want string }{
		{`{"models": [`, "EOF while parsing a list at line 1 column 12"},
		{`{"models": [],}`, "trailing comma at line 1 column 15"},
		{`[]`, "invalid length 0, expected struct ModelsResponse with 1 element at line 1 column 2"},
		{`{"models": 5}`, "invalid type: integer `5`, expected a sequence at line 1 column 12"},
		{`{"models": {}}`, "invalid type: map, expected a sequence at line 1 column 11"},
		{``, "EOF while parsing a value at line 1 column 0"},
		{`{`, "EOF while parsing an object at line 1 column 1"},
		{`x`, "expected value at line 1 column 1"},
		{`{"models": [], "a": }`, "expected value at line 1 column 21"},
		{`{"models": [1]}`, "invalid type: integer `1`, expected struct ModelInfoWithLegacyBaseInstructions at line 1 column 13"},
		{`{"models": "x"}`, "invalid type: string \"x\", expected a sequence at line 1 column 14"},
		{`  {"models": [] } x`, "trailing characters at line 1 column 19"},
		{`{"models": [{}]}`, "missing field `slug` at line 1 column 14"},
		{`{"models": [], "models": []}`, "duplicate field `models` at line 1 column 23"},
		{`{}`, "missing field `models` at line 1 column 2"},
		{`{"models": [] "a": 1}`, "expected `,` or `}` at line 1 column 15"},
		{`{"models": [tru]}`, "expected ident at line 1 column 16"},
		{`{"models": [-]}`, "invalid number at line 1 column 14"},
		{`{"models": [1.]}`, "invalid number at line 1 column 15"},
		{`{"models": ["a\qb"]}`, "invalid escape at line 1 column 16"},
		{`{models: []}`, "key must be a string at line 1 column 2"},
		{`{"models" []}`, "expected `:` at line 1 column 11"},
		{`5`, "invalid type: integer `5`, expected struct ModelsResponse at line 1 column 1"},
		{`"x"`, "invalid type: string \"x\", expected struct ModelsResponse at line 1 column 3"},
		{`{"models": null}`, "invalid type: null, expected a sequence at line 1 column 15"},
	} {
		path := filepath.Join(t.TempDir(), "cat.json")
		require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
		require.EqualError(t, checkModelCatalog(path), "failed to parse model_catalog_json path `"+path+"` as JSON: "+tc.want, tc.content)
	}
	path := filepath.Join(t.TempDir(), "cat.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"models": []}`), 0o600))
	require.EqualError(t, checkModelCatalog(path), "model_catalog_json path `"+path+"` must contain at least one model")
}
