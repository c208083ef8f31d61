package thread

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/model"
)

func TestSubagentRequest(t *testing.T) {
	req := &model.Request{
		ClientMetadata: map[string]string{"session_id": "parent", "thread_id": "parent", "turn_id": "task"},
		Headers:        map[string]string{"session-id": "parent", "thread-id": "parent", "x-codex-turn-metadata": `{"session_id":"parent","thread_id":"parent","model":"m"}`},
	}
	subagentRequest(req, "parent", "task", "conv", ConverseOptions{Subagent: "review", TurnID: "sub"})
	require.Equal(t, "parent", req.Headers["session-id"], "the session stays the thread's")
	require.Equal(t, "conv", req.Headers["thread-id"])
	require.Equal(t, "conv", req.Headers["x-client-request-id"])
	require.Equal(t, "conv:0", req.Headers["x-codex-window-id"])
	require.Equal(t, "parent", req.Headers["x-codex-parent-thread-id"])
	require.Equal(t, "review", req.Headers["x-openai-subagent"])
	require.Equal(t, map[string]string{
		"session_id": "parent", "thread_id": "conv", "turn_id": "sub", "root_turn_id": "task", "parent_turn_id": "task",
		"x-codex-window-id": "conv:0", "x-codex-parent-thread-id": "parent", "x-openai-subagent": "review",
		"x-codex-turn-metadata": req.Headers["x-codex-turn-metadata"],
	}, req.ClientMetadata)
	var meta map[string]any
	require.NoError(t, json.Unmarshal([]byte(req.Headers["x-codex-turn-metadata"]), &meta))
	require.Equal(t, map[string]any{
		"session_id": "parent", "thread_id": "conv", "turn_id": "sub", "window_id": "conv:0", "model": "m",
		"parent_thread_id": "parent", "parent_turn_id": "task", "root_turn_id": "task",
		"subagent_kind": "review", "thread_source": "subagent",
	}, meta)
}
