package execmgr

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// loadReferenceTools reads the tools the reference sent to the model in the shared transcript.
func loadReferenceTools(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("/work/shared/conformance/transcripts/exec_tool_with_approval.model.json")
	if err != nil {
		t.Skip("reference transcript not available:", err)
	}
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
