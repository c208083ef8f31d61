package execmgr

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// loadReferenceTools reads the unified-exec tools the reference sent to the model (copied from the
// conformance transcript exec_tool_with_approval.model.json into testdata, so the test runs anywhere).
func loadReferenceTools(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/reference_tools.model.json")
	require.NoError(t, err)
	var reqs []map[string]any
	require.NoError(t, json.Unmarshal(b, &reqs))
	require.NotEmpty(t, reqs)
	body := reqs[0]
	if inner, ok := body["body"].(map[string]any); ok {
		body = inner
	}
	out := map[string]any{}
	for _, tool := range body["tools"].([]any) {
		m := tool.(map[string]any)
		if name, ok := m["name"].(string); ok {
			out[name] = m
		}
	}
	return out
}
