package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

const absentThread = "00000000-0000-0000-0000-000000000001"

func TestEnvironmentMethods(t *testing.T) {
	c := startSettings(t, "")
	var st struct {
		Status string  `json:"status"`
		Error  *string `json:"error"`
	}
	c.Result("environment/status", map[string]any{"environmentId": "local"}, &st)
	require.Equal(t, "ready", st.Status)
	require.Nil(t, st.Error)

	var info struct {
		Shell struct{ Name, Path string } `json:"shell"`
		Cwd   *string                     `json:"cwd"`
	}
	c.Result("environment/info", map[string]any{"environmentId": "local"}, &info)
	require.NotEmpty(t, info.Shell.Path)
	require.True(t, strings.HasSuffix(info.Shell.Path, info.Shell.Name))
	require.NotNil(t, info.Cwd)
	require.True(t, strings.HasPrefix(*info.Cwd, "file:///"), *info.Cwd)

	c.Result("environment/status", map[string]any{"environmentId": "nope"}, &st)
	require.Equal(t, "unknown", st.Status)
	require.Equal(t, "unknown environment id `nope`", *st.Error)
	requireRPCError(t, c.Request("environment/info", map[string]any{"environmentId": "nope"}), -32600, "unknown environment id `nope`")

	requireRPCError(t, c.Request("environment/add", map[string]any{"environmentId": "", "execServerUrl": "ws://127.0.0.1:1"}),
		-32600, "exec-server protocol error: environment id cannot be empty")
	requireRPCError(t, c.Request("environment/add", map[string]any{"environmentId": "local", "execServerUrl": "ws://127.0.0.1:1"}),
		-32600, "exec-server protocol error: environment id `local` is reserved for EnvironmentManager")

	c.Result("environment/add", map[string]any{"environmentId": "bad", "execServerUrl": "x"}, &struct{}{})
	want := "exec-server connection attempt failed: failed to connect to exec-server websocket `x`: IO error: invalid WebSocket URL"
	require.Eventually(t, func() bool {
		c.Result("environment/status", map[string]any{"environmentId": "bad"}, &st)
		return st.Status != "pending"
	}, apptest.WaitLimit, 10*time.Millisecond)
	require.Equal(t, "disconnected", st.Status)
	require.Equal(t, want, *st.Error)
	requireRPCError(t, c.Request("environment/info", map[string]any{"environmentId": "bad"}), -32603,
		"failed to get info for environment `bad`: "+want)
}

func TestThreadSample(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("first", 1)}},
		mockmodel.Response{ID: "resp-sample", Items: []mockmodel.Item{mockmodel.Message("sampled", 1)},
			Usage: map[string]any{"input_tokens": 12, "output_tokens": 3, "total_tokens": 15}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "true"})}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)

	empty := c.StartThread(nil)
	requireRPCError(t, c.Request("thread/sample", map[string]any{"threadId": empty, "expectedTurnId": "x", "prompt": "p"}),
		-32600, "invalid thread-store request: no rollout found for thread id "+empty)
	requireRPCError(t, c.Request("thread/sample", map[string]any{"threadId": absentThread, "expectedTurnId": "x", "prompt": "p"}),
		-32600, "thread/sample requires a loaded source")
	requireRPCError(t, c.Request("thread/sample", map[string]any{"threadId": "x", "expectedTurnId": "x", "prompt": "p"}),
		-32600, "invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `x` at 1")

	tid := c.StartThread(nil)
	turnID := c.StartTurn(tid, "hello")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	requireRPCError(t, c.Request("thread/sample", map[string]any{"threadId": tid, "expectedTurnId": "other", "prompt": "p"}),
		-32600, "sample source turn must be the latest finished turn")

	var res struct {
		SourceTurnID string  `json:"sourceTurnId"`
		ResponseID   string  `json:"responseId"`
		Text         *string `json:"text"`
		InputTokens  *int64  `json:"inputTokens"`
		OutputTokens *int64  `json:"outputTokens"`
	}
	c.Result("thread/sample", map[string]any{"threadId": tid, "expectedTurnId": turnID, "prompt": "summarize",
		"responsesapiClientMetadata": map[string]string{"origin": "probe"}, "turnTrigger": "manual"}, &res)
	require.Equal(t, turnID, res.SourceTurnID)
	require.Equal(t, "resp-sample", res.ResponseID)
	require.Equal(t, "sampled", *res.Text)
	require.EqualValues(t, 12, *res.InputTokens)
	require.EqualValues(t, 3, *res.OutputTokens)

	reqs := mm.ResponseRequests()
	input := reqs[len(reqs)-1].Body["input"].([]any)
	last := input[len(input)-1].(map[string]any)
	require.Equal(t, "user", last["role"])
	require.Contains(t, string(mustJSON(t, last)), "summarize")
	meta := reqs[len(reqs)-1].Body["client_metadata"].(map[string]any)
	require.Equal(t, "probe", meta["origin"])
	require.Contains(t, meta["x-codex-turn-metadata"], `"thread_source":"thread_sample"`)
	require.Contains(t, meta["x-codex-turn-metadata"], `"turn_trigger":"manual"`)

	// A tool call gives a null text; the thread's history is untouched by either sample.
	c.Result("thread/sample", map[string]any{"threadId": tid, "expectedTurnId": turnID, "prompt": "again"}, &res)
	require.Nil(t, res.Text)
	require.Len(t, readThread(t, c, tid, true).Turns, 1)
}

func TestThreadSampleCancel(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("first", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(60)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(nil)
	turnID := c.StartTurn(tid, "hello")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

	id := c.Send("thread/sample", map[string]any{"threadId": tid, "expectedTurnId": turnID, "prompt": "p"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, mm.WaitRequests(ctx, 2))
	c.Result("thread/sample/cancel", map[string]any{"requestId": id}, &struct{}{})
	requireRPCError(t, c.WaitResponse(id), -32600, "thread/sample was cancelled")
	// An id that names no sample is fine.
	c.Result("thread/sample/cancel", map[string]any{"requestId": "nothing"}, &struct{}{})
}

func TestThreadTimelineList(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("reply", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(nil)
	turnID := c.StartTurn(tid, "hello")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

	type entry struct {
		Type     string `json:"type"`
		Position uint64 `json:"position"`
		TurnID   string `json:"turnId"`
		TurnID2  string `json:"turn_id"`
		Item     struct {
			Type string `json:"type"`
		} `json:"item"`
	}
	var page struct {
		Data       []entry `json:"data"`
		NextCursor *string `json:"nextCursor"`
	}
	c.Result("thread/timeline/list", map[string]any{"threadId": tid}, &page)
	require.Len(t, page.Data, 4)
	require.Equal(t, []string{"turnStarted", "item", "item", "turnCompleted"},
		[]string{page.Data[0].Type, page.Data[1].Type, page.Data[2].Type, page.Data[3].Type})
	require.Equal(t, "userMessage", page.Data[1].Item.Type)
	require.Equal(t, "agentMessage", page.Data[2].Item.Type)
	require.Equal(t, turnID, page.Data[0].TurnID2)
	require.Equal(t, turnID, page.Data[1].TurnID)
	require.Nil(t, page.NextCursor)

	c.Result("thread/timeline/list", map[string]any{"threadId": tid, "limit": 3}, &page)
	require.Len(t, page.Data, 3)
	require.Equal(t, "item", page.Data[0].Type)
	require.NotNil(t, page.NextCursor)
	c.Result("thread/timeline/list", map[string]any{"threadId": tid, "limit": 3, "cursor": *page.NextCursor}, &page)
	require.Len(t, page.Data, 1)
	require.Equal(t, "turnStarted", page.Data[0].Type)
	require.Nil(t, page.NextCursor)

	empty := c.StartThread(nil)
	c.Result("thread/timeline/list", map[string]any{"threadId": empty}, &page)
	require.Empty(t, page.Data)

	requireRPCError(t, c.Request("thread/timeline/list", map[string]any{"threadId": tid, "cursor": "garbage"}), -32601, "thread/timeline/list is not supported yet")
	requireRPCError(t, c.Request("thread/timeline/list", map[string]any{"threadId": absentThread}), -32601, "thread/timeline/list is not supported yet")
}

func TestPrepareApprovedPlan(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("on it", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	requireRPCError(t, c.Request("thread/prepareApprovedPlan", map[string]any{"threadId": absentThread, "markdown": "x"}),
		-32600, "thread not found: "+absentThread)
	tid := c.StartThread(nil)
	var res struct {
		Prompt string `json:"prompt"`
	}
	c.Result("thread/prepareApprovedPlan", map[string]any{"threadId": tid, "markdown": "# Plan\n1. step"}, &res)
	require.Equal(t, "Implement the plan.", res.Prompt)
	c.StartTurn(tid, res.Prompt)
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	input := mm.ResponseRequests()[0].Body["input"].([]any)
	var plan map[string]any
	for _, it := range input {
		if m := it.(map[string]any); m["name"] == "proposed_plan" {
			plan = m
		}
	}
	require.NotNil(t, plan, "the plan is in the model's context")
	require.Equal(t, "function_call_output", plan["type"])
	require.Equal(t, "agent", plan["namespace"])
	require.Equal(t, "# Plan\n1. step", plan["output"])
}

func TestGuardianMethods(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("reply", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(nil)
	requireRPCError(t, c.Request("thread/guardianReview", map[string]any{"threadId": tid}), -32600,
		"expected a final plaintext exec_command, apply_patch, request_permissions, or MCP call")
	c.StartTurn(tid, "hello")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	requireRPCError(t, c.Request("thread/guardianReview", map[string]any{"threadId": tid}), -32600,
		"expected a completed plaintext exec_command, apply_patch, request_permissions, or MCP call with a nonempty call ID")
	requireRPCError(t, c.Request("thread/guardianReview", map[string]any{"threadId": absentThread}), -32600, "thread not found: "+absentThread)

	action := map[string]any{"type": "command", "source": "shell", "command": "ls", "cwd": "/tmp"}
	for _, tc := range []struct {
		event any
		msg   string
	}{
		{nil, "invalid type: null, expected struct GuardianAssessmentEvent"},
		{"s", "invalid type: string \"s\", expected struct GuardianAssessmentEvent"},
		{map[string]any{}, "missing field `id`"},
		{map[string]any{"id": "g1"}, "missing field `status`"},
		{map[string]any{"id": "g1", "status": "bogus"}, "unknown variant `bogus`, expected one of `in_progress`, `approved`, `denied`, `timed_out`, `aborted`"},
		{map[string]any{"id": "g1", "status": "denied"}, "missing field `action`"},
	} {
		requireRPCError(t, c.Request("thread/approveGuardianDeniedAction", map[string]any{"threadId": tid, "event": tc.event}),
			-32600, "invalid Guardian denial event: "+tc.msg)
	}
	ev := map[string]any{"id": "g1", "status": "denied", "action": action}
	c.Result("thread/approveGuardianDeniedAction", map[string]any{"threadId": tid, "event": ev}, &struct{}{})
	requireRPCError(t, c.Request("thread/approveGuardianDeniedAction", map[string]any{"threadId": absentThread, "event": ev}),
		-32600, "thread not found: "+absentThread)
}

func TestCloudOnlyAndStubbedMethods(t *testing.T) {
	c := startSettings(t, "[mcp_servers.local]\ncommand = \"true\"\nenabled = false\n\n[mcp_servers.web]\nurl = \"http://127.0.0.1:1/mcp\"\nenabled = false\n")
	requireRPCError(t, c.Request("thread/prediction/request", map[string]any{"threadId": absentThread, "sourceTurnId": "x"}),
		-32601, "thread/prediction/request is not implemented yet")
	c.Result("rollout/compress", nil, &struct{}{})
	m := c.Request("feedback/upload", map[string]any{"classification": "bug"})
	require.NotNil(t, m.Error)
	require.Equal(t, -32603, m.Error.Code)
	require.True(t, strings.HasPrefix(m.Error.Message, "failed to upload feedback: failed to upload feedback to Sentry: "), m.Error.Message)

	requireRPCError(t, c.Request("mcpServer/oauth/login", map[string]any{"name": "nope"}), -32600, "No MCP server named 'nope' found.")
	requireRPCError(t, c.Request("mcpServer/oauth/login", map[string]any{"name": "local"}), -32600, "OAuth login is only supported for streamable HTTP servers.")
	m = c.Request("mcpServer/oauth/login", map[string]any{"name": "web"})
	require.NotNil(t, m.Error)
	require.Equal(t, -32603, m.Error.Code)
	require.True(t, strings.HasPrefix(m.Error.Message, "failed to login to MCP server 'web': "), m.Error.Message)

	requireRPCError(t, c.Request("mcpServer/event/stream/start", map[string]any{"threadId": absentThread, "server": "web", "name": "n", "subscriptionId": "s", "arguments": map[string]any{}}),
		-32600, "MCP event subscriptions are only supported for hosted apps")
	c.Result("mcpServer/event/stream/stop", map[string]any{"subscriptionId": "s"}, &struct{}{})
}
