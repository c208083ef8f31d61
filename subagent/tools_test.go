package subagent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWaitTimeoutBounds(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		ms   *float64
		want time.Duration
	}{
		{nil, 30 * time.Second},
		{f(5), 10 * time.Second},
		{f(45000), 45 * time.Second},
		{f(1e9), time.Hour},
	} {
		require.Equal(t, tc.want, waitTimeout(tc.ms))
	}
}

func TestStatusAsTheModelReadsIt(t *testing.T) {
	msg := "done"
	for _, tc := range []struct {
		st   Status
		want string
	}{
		{Status{Kind: PendingInit}, `"pending_init"`},
		{Status{Kind: NotFound}, `"not_found"`},
		{Status{Kind: Completed, Message: &msg}, `{"completed":"done"}`},
		{Status{Kind: Completed}, `{"completed":null}`},
		{Status{Kind: Errored, Message: &msg}, `{"errored":"done"}`},
	} {
		b, err := json.Marshal(tc.st)
		require.NoError(t, err)
		require.JSONEq(t, tc.want, string(b))
	}
}

func TestSpecsKeepTheReferenceShapes(t *testing.T) {
	var ns struct {
		Type, Name string
		Tools      []struct {
			Name       string
			Strict     bool
			Parameters struct {
				Properties           map[string]any
				Required             []string
				AdditionalProperties bool
			}
		}
	}
	require.NoError(t, json.Unmarshal(namespaceSpec(), &ns))
	require.Equal(t, "namespace", ns.Type)
	require.Equal(t, "multi_agent_v1", ns.Name)
	got := map[string][]string{}
	for _, tool := range ns.Tools {
		var props []string
		for p := range tool.Parameters.Properties {
			props = append(props, p)
		}
		require.ElementsMatch(t, props, map[string][]string{
			"close_agent": {"target"}, "resume_agent": {"id"}, "send_input": {"interrupt", "items", "message", "target"},
			"spawn_agent": {"fork_context", "items", "message", "model", "reasoning_effort"}, "wait_agent": {"targets", "timeout_ms"},
		}[tool.Name], tool.Name)
		got[tool.Name] = tool.Parameters.Required
	}
	require.Equal(t, map[string][]string{"close_agent": {"target"}, "resume_agent": {"id"}, "send_input": {"target"},
		"spawn_agent": nil, "wait_agent": {"targets"}}, got)
}
