package execcli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// feed maps notifications (method, params JSON) and returns the JSONL lines and the last outcome.
func feed(t *testing.T, m *mapper, notes ...[2]string) ([]string, outcome) {
	t.Helper()
	var lines []string
	end := running
	for _, n := range notes {
		events, o := m.notification(n[0], json.RawMessage(n[1]))
		for _, ev := range events {
			b, err := json.Marshal(ev)
			require.NoError(t, err)
			lines = append(lines, string(b))
		}
		end = o
	}
	return lines, end
}

func TestMapperTodoFileChangeWebSearch(t *testing.T) {
	m := newMapper()
	lines, end := feed(t, m,
		[2]string{"turn/started", `{"threadId":"t","turn":{"id":"u","items":[],"status":"inProgress"}}`},
		[2]string{"turn/plan/updated", `{"threadId":"t","turnId":"u","explanation":null,"plan":[{"step":"a","status":"inProgress"},{"step":"b","status":"pending"}]}`},
		[2]string{"item/started", `{"threadId":"t","turnId":"u","item":{"type":"fileChange","id":"p1","changes":[{"path":"/w/new.txt","kind":{"type":"add"},"diff":"+x"}],"status":"inProgress"}}`},
		[2]string{"item/fileChange/patchUpdated", `{"threadId":"t","turnId":"u","itemId":"p1","changes":[{"path":"/w/new.txt","kind":{"type":"update","move_path":null},"diff":"x"}]}`},
		[2]string{"item/completed", `{"threadId":"t","turnId":"u","item":{"type":"fileChange","id":"p1","changes":[{"path":"/w/new.txt","kind":{"type":"delete"},"diff":""}],"status":"declined"}}`},
		[2]string{"turn/plan/updated", `{"threadId":"t","turnId":"u","explanation":null,"plan":[{"step":"a","status":"completed"},{"step":"b","status":"inProgress"}]}`},
		[2]string{"item/started", `{"threadId":"t","turnId":"u","item":{"type":"webSearch","id":"ws_1","query":"go","action":null}}`},
		[2]string{"item/completed", `{"threadId":"t","turnId":"u","item":{"type":"reasoning","id":"r1","summary":[" "],"content":[]}}`},
		[2]string{"item/completed", `{"threadId":"t","turnId":"u","item":{"type":"webSearch","id":"ws_1","query":"go","action":{"type":"search","query":"go","queries":["go"]}}}`},
		[2]string{"thread/tokenUsage/updated", `{"threadId":"t","turnId":"u","tokenUsage":{"total":{"totalTokens":15,"inputTokens":10,"cachedInputTokens":2,"outputTokens":5,"reasoningOutputTokens":1},"last":{"totalTokens":15,"inputTokens":10,"cachedInputTokens":2,"outputTokens":5,"reasoningOutputTokens":1},"modelContextWindow":null}}`},
		[2]string{"turn/completed", `{"threadId":"t","turn":{"id":"u","items":[],"status":"completed","error":null}}`},
	)
	require.Equal(t, completed, end)
	require.Equal(t, []string{
		`{"type":"turn.started"}`,
		`{"type":"item.started","item":{"id":"item_0","type":"todo_list","items":[{"text":"a","completed":false},{"text":"b","completed":false}]}}`,
		`{"type":"item.started","item":{"id":"item_1","type":"file_change","changes":[{"path":"/w/new.txt","kind":"add"}],"status":"in_progress"}}`,
		`{"type":"item.updated","item":{"id":"item_1","type":"file_change","changes":[{"path":"/w/new.txt","kind":"update"}],"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"/w/new.txt","kind":"delete"}],"status":"failed"}}`,
		`{"type":"item.updated","item":{"id":"item_0","type":"todo_list","items":[{"text":"a","completed":true},{"text":"b","completed":false}]}}`,
		`{"type":"item.started","item":{"id":"item_2","type":"web_search","id":"ws_1","query":"go","action":{"type":"other"}}}`,
		`{"type":"item.completed","item":{"id":"item_2","type":"web_search","id":"ws_1","query":"go","action":{"type":"search","query":"go","queries":["go"]}}}`,
		`{"type":"item.completed","item":{"id":"item_0","type":"todo_list","items":[{"text":"a","completed":true},{"text":"b","completed":false}]}}`,
		`{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":2,"cache_write_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":1}}`,
	}, lines)
}

func TestMapperFailedAndInterruptedTurns(t *testing.T) {
	m := newMapper()
	lines, end := feed(t, m,
		[2]string{"error", `{"threadId":"t","turnId":"u","willRetry":false,"error":{"message":"bad","additionalDetails":"detail","codexErrorInfo":null}}`},
		[2]string{"item/started", `{"threadId":"t","turnId":"u","item":{"type":"commandExecution","id":"c1","command":"ls","cwd":"/","commandActions":[],"status":"inProgress","aggregatedOutput":null,"exitCode":null}}`},
		[2]string{"turn/completed", `{"threadId":"t","turn":{"id":"u","status":"failed","error":null,"items":[{"type":"commandExecution","id":"c1","command":"ls","cwd":"/","commandActions":[],"status":"failed","aggregatedOutput":"x","exitCode":2}]}}`},
	)
	require.Equal(t, failed, end)
	require.Equal(t, []string{
		`{"type":"error","message":"bad (detail)"}`,
		`{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"ls","aggregated_output":"x","exit_code":2,"status":"failed"}}`,
		`{"type":"turn.failed","error":{"message":"bad (detail)"}}`,
	}, lines)
	require.Nil(t, m.final)

	lines, end = feed(t, newMapper(), [2]string{"turn/completed", `{"threadId":"t","turn":{"id":"u","status":"interrupted","error":null,"items":[]}}`})
	require.Equal(t, interrupted, end)
	require.Empty(t, lines)
}

func TestMapperMCPStatuses(t *testing.T) {
	lines, _ := feed(t, newMapper(),
		[2]string{"mcpServer/startupStatus/updated", `{"threadId":"t","name":"a","status":"starting","error":null}`},
		[2]string{"mcpServer/startupStatus/updated", `{"threadId":"t","name":"a","status":"ready","error":null}`},
		[2]string{"mcpServer/startupStatus/updated", `{"threadId":"t","name":"b","status":"failed","error":"boom"}`},
		[2]string{"mcpServer/startupStatus/updated", `{"threadId":"t","name":"c","status":"cancelled","error":null}`},
		[2]string{"mcpServer/startupStatus/updated", `{"threadId":"t","name":"d","status":"cancelled","error":"stopped"}`},
	)
	require.Equal(t, []string{
		`{"type":"mcp.server.init_started","name":"a"}`,
		`{"type":"mcp.server.ready","name":"a"}`,
		`{"type":"mcp.server.failed","name":"b","error":"boom"}`,
		`{"type":"mcp.server.cancelled","name":"c"}`,
		`{"type":"mcp.server.cancelled","name":"d","error":"stopped"}`,
	}, lines)
}
