package rollout

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCollabItemFromCoreForm reads back a multi-agent tool call recorded as the reference records it.
func TestCollabItemFromCoreForm(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      map[string]any
	}{
		{"spawn", `{"type":"CollabAgentToolCall","id":"c1","tool":"spawn_agent","status":"completed","sender_thread_id":"p",
			"receiver_thread_ids":["k"],"receiver_agents":[{"thread_id":"k","agent_nickname":"Euler"}],"prompt":"go",
			"model":"m","reasoning_effort":"medium","agents_states":{"k":"pending_init"}}`,
			map[string]any{"type": "collabAgentToolCall", "id": "c1", "tool": "spawnAgent", "status": "completed",
				"senderThreadId": "p", "receiverThreadIds": []any{"k"}, "prompt": "go", "model": "m", "reasoningEffort": "medium",
				"agentsStates": map[string]any{"k": map[string]any{"status": "pendingInit", "message": nil}}}},
		{"wait timed out", `{"type":"CollabAgentToolCall","id":"c2","tool":"wait","status":"completed","sender_thread_id":"p",
			"receiver_thread_ids":[],"receiver_agents":[],"agents_states":{}}`,
			map[string]any{"type": "collabAgentToolCall", "id": "c2", "tool": "wait", "status": "completed",
				"senderThreadId": "p", "receiverThreadIds": []any{}, "prompt": nil, "model": nil, "reasoningEffort": nil,
				"agentsStates": map[string]any{}}},
		{"wait completed", `{"type":"CollabAgentToolCall","id":"c3","tool":"wait","status":"completed","sender_thread_id":"p",
			"receiver_thread_ids":["k"],"agents_states":{"k":{"completed":"done"}}}`,
			map[string]any{"type": "collabAgentToolCall", "id": "c3", "tool": "wait", "status": "completed",
				"senderThreadId": "p", "receiverThreadIds": []any{"k"}, "prompt": nil, "model": nil, "reasoningEffort": nil,
				"agentsStates": map[string]any{"k": map[string]any{"status": "completed", "message": "done"}}}},
		{"close not found", `{"type":"CollabAgentToolCall","id":"c4","tool":"close_agent","status":"failed","sender_thread_id":"p",
			"receiver_thread_ids":["k"],"receiver_agents":[{"thread_id":"k"}],"agents_states":{"k":"not_found"}}`,
			map[string]any{"type": "collabAgentToolCall", "id": "c4", "tool": "closeAgent", "status": "failed",
				"senderThreadId": "p", "receiverThreadIds": []any{"k"}, "prompt": nil, "model": nil, "reasoningEffort": nil,
				"agentsStates": map[string]any{"k": map[string]any{"status": "notFound", "message": nil}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, convertCoreItem([]byte(tc.raw)))
		})
	}
}
