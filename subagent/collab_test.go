package subagent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/thread"
)

// The refusals before a call does anything are the reference's texts (codex-cli 0.169.0 on the same
// arguments, ~/.cache/v2msgs-probe/probe3.py), positions in the arguments included.
func TestCollaborationRefusalsInTheReferenceWords(t *testing.T) {
	for _, tc := range []struct {
		name, args, want string
	}{
		{"spawn_agent", `{"task_name": "worker"}`, "failed to parse function arguments: missing field `message` at line 1 column 23"},
		{"spawn_agent", `{"task_name": "worker", "message": ""}`, "Empty message can't be sent to an agent"},
		{"spawn_agent", `{"task_name": "worker", "message": "x", "fork_turns": "bogus"}`, "fork_turns must be `none` or `all`"},
		{"spawn_agent", `{"task_name": "", "message": "x"}`, "agent_name must not be empty"},
		{"list_agents", `{"path_prefix": "root"}`, "agent_name `root` is reserved"},
		{"spawn_agent", `{"task_name": "w", "message": "x", "fork_turns": "0"}`, "fork_turns must be `none` or `all`"},
		{"spawn_agent", `{"task_name": "w", "message": "x", "fork_turns": "1.5"}`, "fork_turns must be `none` or `all`"},
		{"spawn_agent", `{"task_name": "Bad-Name", "message": "x"}`, "agent_name must use only lowercase letters, digits, and underscores"},
		{"spawn_agent", `{"task_name": "worker", "message": "x", "bogus": 1}`,
			"failed to parse function arguments: unknown field `bogus`, expected one of `message`, `task_name`, `model`, `reasoning_effort`, `fork_turns` at line 1 column 47"},
		{"send_message", `{"target": "worker"}`, "failed to parse function arguments: missing field `message` at line 1 column 20"},
		{"send_message", `{"target": "", "message": "x"}`, "agent path must not be empty"},
		{"followup_task", `{"target": "w",` + "\n" + ` "message": "x", "x": 2}`, "failed to parse function arguments: unknown field `x`, expected `target` or `message` at line 2 column 20"},
		{"interrupt_agent", `{}`, "failed to parse function arguments: missing field `target` at line 1 column 2"},
		{"wait_agent", `{"timeout_ms": "abc"}`, "failed to parse function arguments: invalid type: string \"abc\", expected i64 at line 1 column 20"},
		{"wait_agent", `{"timeout_ms": 1.5}`, "failed to parse function arguments: invalid type: floating point `1.5`, expected i64 at line 1 column 18"},
		{"send_message", `{"target": 5, "message": "x"}`, "failed to parse function arguments: invalid type: integer `5`, expected a string at line 1 column 12"},
		{"send_message", `{"target": null, "message": "x"}`, "failed to parse function arguments: invalid type: null, expected a string at line 1 column 15"},
		{"list_agents", `{"path_prefix": ["a"]}`, "failed to parse function arguments: invalid type: sequence, expected a string at line 1 column 16"},
		{"wait_agent", `{"timeout": 5}`, "failed to parse function arguments: unknown field `timeout`, expected `timeout_ms` at line 1 column 10"},
	} {
		t.Run(tc.name+" "+tc.args, func(t *testing.T) {
			out, ok := (&collabSet{}).Call(context.Background(), nil, thread.ToolCall{Type: "function_call", CallID: "c1",
				Name: tc.name, Namespace: CollabNamespace, Arguments: tc.args})
			require.True(t, ok)
			var item struct {
				Output string `json:"output"`
			}
			require.NoError(t, json.Unmarshal(out, &item))
			require.Equal(t, tc.want, item.Output)
		})
	}
}

func TestCheckEffortInTheReferenceWords(t *testing.T) {
	require.NoError(t, checkEffort("gpt-6.1-sol", "ultra"))
	require.NoError(t, checkEffort("mock-model", "anything"), "a model outside the catalogue takes any effort")
	require.EqualError(t, checkEffort("gpt-6.1-sol", "bogus"),
		"Reasoning effort `bogus` is not supported for model `gpt-6.1-sol`. Supported reasoning efforts: low, medium, high, xhigh, max, ultra")
}

func TestCheckModelInTheReferenceWords(t *testing.T) {
	require.NoError(t, checkModel("gpt-daybreak-blue-latest", "gpt-6.1-sol"), "hidden catalogue models are accepted")
	require.NoError(t, checkModel("mock-model", "mock-model"), "the caller's own model is")
	require.EqualError(t, checkModel("GPT-6.1-Sol", "gpt-6.1-sol"),
		"Unknown model `GPT-6.1-Sol` for spawn_agent. Available models: gpt-6.1-sol, gpt-6-astra, gpt-6-sol, gpt-6-luna, gpt-5.6-sol")
}
