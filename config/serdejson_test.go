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

// TestModelCatalogEntryWording pins codex-cli 0.169.0's refusal of a catalogue entry that does not read as
// its ModelInfo (required fields in declaration order, types, enums; all located at the entry's end), and
// of a model with neither base_instructions nor an instructions template (at the catalogue's end).
func TestModelCatalogEntryWording(t *testing.T) {
	for _, tc := range []struct{ content, want string }{
		{`{"models":[{"slug":"m"}]}`, "missing field `display_name` at line 1 column 23"},
		{`{"models":[{"slug":"m","display_name":"M"}]}`, "missing field `supported_reasoning_levels` at line 1 column 42"},
		{`{"models":[{"slug":"m","display_name":"M","supported_reasoning_levels":[],"shell_type":"default","visibility":"list","supported_in_api":true,"priority":1,"support_verbosity":false,"truncation_policy":{"mode":"bytes","limit":1},"experimental_supported_tools":[]}]}`, "model `m` is missing both `base_instructions` and `model_messages.instructions_template` at line 1 column 263"},
		{`{"models":[{"slug":"m","display_name":"M","supported_reasoning_levels":[],"shell_type":"default","visibility":"list","supported_in_api":true,"priority":1,"support_verbosity":false,"truncation_policy":{"mode":"bytes","limit":1},"experimental_supported_tools":[],"base_instructions":"x"},{"slug":"n","display_name":"M","supported_reasoning_levels":[],"shell_type":"default","visibility":"list","supported_in_api":true,"priority":1,"support_verbosity":false,"truncation_policy":{"mode":"bytes","limit":1},"experimental_supported_tools":[]}]}`, "model `n` is missing both `base_instructions` and `model_messages.instructions_template` at line 1 column 538"},
		{`{"models":[{"slug":1}]}`, "invalid type: integer `1`, expected a string at line 1 column 21"},
		{`{"models":[{"display_name":1.5,"slug":"m"}]}`, "invalid type: map, expected a string at line 1 column 42"},
		{`{"models":[{"priority":3000000000}]}`, "invalid value: integer `3000000000`, expected i32 at line 1 column 34"},
		{`{"models":[{"visibility":"x"}]}`, "unknown variant `x`, expected one of `list`, `hide`, `none` at line 1 column 29"},
		{`{"models":[{"shell_type":1}]}`, "invalid type: integer `1`, expected string or map at line 1 column 27"},
		{`{"models":[{"shell_type":{}}]}`, "invalid value: map, expected map with a single key at line 1 column 28"},
		{`{"models":[{"truncation_policy":{"mode":"bytes"}}]}`, "missing field `limit` at line 1 column 49"},
		{`{"models":[{"supported_reasoning_levels":[{"effort":"low"}]}]}`, "missing field `description` at line 1 column 60"},
		{`{"models":[{"input_modalities":["x"]}]}`, "unknown variant `x`, expected one of `text`, `image`, `audio` at line 1 column 37"},
		{`{"models":[{"experimental_supported_tools":[1]}]}`, "invalid type: integer `1`, expected a string at line 1 column 47"},
		{`[[{"slug":"m","display_name":"M","supported_reasoning_levels":[],"shell_type":"default","visibility":"list","supported_in_api":true,"priority":1,"support_verbosity":false,"truncation_policy":{"mode":"bytes","limit":1},"experimental_supported_tools":[]}]]`, "model `m` is missing both `base_instructions` and `model_messages.instructions_template` at line 1 column 254"},
	} {
		path := filepath.Join(t.TempDir(), "cat.json")
		require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
		require.EqualError(t, checkModelCatalog(path), "failed to parse model_catalog_json path `"+path+"` as JSON: "+tc.want, tc.content)
	}
	for _, good := range []string{
		`{"models":[{"slug":"m","display_name":"M","supported_reasoning_levels":[],"shell_type":"default","visibility":"list","supported_in_api":true,"priority":1,"support_verbosity":false,"truncation_policy":{"mode":"bytes","limit":1},"experimental_supported_tools":[],"base_instructions":"x"}]}`,
		`{"models":[{"slug":"m","display_name":"M","supported_reasoning_levels":[],"shell_type":"default","visibility":"list","supported_in_api":true,"priority":1,"support_verbosity":false,"truncation_policy":{"mode":"bytes","limit":1},"experimental_supported_tools":[],"model_messages":{"instructions_template":"x"}}]}`,
	} {
		path := filepath.Join(t.TempDir(), "cat.json")
		require.NoError(t, os.WriteFile(path, []byte(good), 0o600))
		require.NoError(t, checkModelCatalog(path), good)
	}
}
