package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/thread"
)

// Behaviour of the reference (codex-cli 0.169.0) observed with the extra conformance scenarios
// (interrupt, model_error, exec_tool_with_approval_cancel, thread_ephemeral, model_list_config).

// threadStatus returns the status type of a thread/status/changed notification.
func threadStatus(t *testing.T, m apptest.Message) string {
	var p struct{ Status struct{ Type string } }
	require.NoError(t, json.Unmarshal(m.Params, &p))
	return p.Status.Type
}

func readThreadStatus(t *testing.T, c *apptest.Client, tid string) string {
	var res struct {
		Thread struct{ Status struct{ Type string } }
	}
	c.Result("thread/read", map[string]any{"threadId": tid}, &res)
	return res.Thread.Status.Type
}

func TestFailedTurnLeavesThreadInSystemError(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{HTTPStatus: 500})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("recovered", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "fail")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "failed", turn["status"])
	require.Equal(t, "notLoaded", turn["itemsView"], "a failed turn's items are not loaded")
	require.Empty(t, turn["items"])
	// systemError status first, then the error, then turn/completed; no token count (no stream opened)
	require.Equal(t, []string{"warning", "thread/status/changed", "turn/started", "item/started", "item/completed",
		"thread/status/changed", "error", "turn/completed"}, apptest.NotificationMethods(c.Since(mark)))
	var last apptest.Message
	for _, m := range c.Since(mark) {
		if m.Method == "thread/status/changed" {
			last = m
		}
	}
	require.Equal(t, "systemError", threadStatus(t, last))
	require.Equal(t, "systemError", readThreadStatus(t, c, tid), "the status persists until the next turn")

	mark = c.Mark()
	c.StartTurn(tid, "again")
	turn = c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])
	require.Equal(t, "summary", turn["itemsView"])
	require.Equal(t, "idle", readThreadStatus(t, c, tid))
	var statuses []string
	for _, m := range c.Since(mark) {
		if m.Method == "thread/status/changed" {
			statuses = append(statuses, threadStatus(t, m))
		}
	}
	require.Equal(t, []string{"active", "idle"}, statuses)
}

func TestTruncatedStreamKeepsCompletedItemsAndCountsTokens(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("first answer", 1)}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("partial text", 2)}, Completed: mockmodel.Bool(false)})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("third", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "one")
	c.WaitTurnCompleted()
	mark := c.Mark()
	c.StartTurn(tid, "two")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "failed", turn["status"])
	errObj := turn["error"].(map[string]any)
	require.Equal(t, "stream disconnected before completion: stream closed before response.completed", errObj["message"])
	require.Equal(t, "other", errObj["codexErrorInfo"])
	require.Equal(t, []string{"warning", "thread/status/changed", "turn/started", "item/started", "item/completed",
		"item/started", "item/completed", "thread/tokenUsage/updated", "account/rateLimits/updated",
		"thread/status/changed", "error", "turn/completed"},
		apptest.NotificationMethods(c.Since(mark), "item/agentMessage/delta"))
	// the token count repeats the last known usage
	for _, m := range c.Since(mark) {
		if m.Method == "thread/tokenUsage/updated" {
			var u struct {
				TokenUsage struct{ Total, Last struct{ TotalTokens int64 } }
			}
			require.NoError(t, json.Unmarshal(m.Params, &u))
			require.Equal(t, int64(120), u.TokenUsage.Total.TotalTokens)
			require.Equal(t, int64(120), u.TokenUsage.Last.TotalTokens)
		}
	}
	c.StartTurn(tid, "three")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	input := string(mustJSON(t, reqs[2].Body["input"]))
	require.Contains(t, input, `"text":"partial text"`, "the completed message of the failed response stays in the history")
	require.Less(t, strings.Index(input, `"partial text"`), strings.Index(input, `"three"`))
}

func TestFirstFailureAfterOpenStreamSendsOnlyRateLimits(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.RawEvent(map[string]any{"type": "response.failed",
		"response": map[string]any{"id": "resp-f", "status": "failed", "error": map[string]any{"code": "server_error", "message": "the model failed"}}})},
		Completed: mockmodel.Bool(false)})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "x")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "stream disconnected before completion: the model failed", turn["error"].(map[string]any)["message"])
	require.Equal(t, []string{"warning", "thread/status/changed", "turn/started", "item/started", "item/completed",
		"account/rateLimits/updated", "thread/status/changed", "error", "turn/completed"}, apptest.NotificationMethods(c.Since(mark)))
}

func TestStreamFailureStillRunsCompletedToolCalls(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("fake_tool", "call_x", map[string]any{"n": 1})}, Completed: mockmodel.Bool(false)})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("after", 1)}})
	ft := &fakeTools{}
	c := apptest.Start(t, apptest.Options{Model: mm, Tools: func(*thread.Thread, thread.Settings) []thread.ToolSet { return []thread.ToolSet{ft} }})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "use the tool")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "failed", turn["status"])
	require.Equal(t, int32(1), ft.peak.Load(), "the call completed before the failure runs")
	c.StartTurn(tid, "next")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	var types []string
	for _, it := range reqs[1].Body["input"].([]any) {
		item := it.(map[string]any)
		if item["call_id"] == "call_x" {
			types = append(types, item["type"].(string))
			if item["type"] == "function_call_output" {
				require.Equal(t, `fake output {"n":1}`, item["output"])
			}
		}
	}
	require.Equal(t, []string{"function_call", "function_call_output"}, types, "the call and its output stay in the history")
}

func TestInterruptMidStreamMatchesReference(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{{Type: "message", Text: "one two three four", Chunks: 4, HangAfterChunks: mockmodel.Int(2)}}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("after", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	turnID := c.StartTurn(tid, "start")
	c.WaitNotification("item/agentMessage/delta", nil)
	c.WaitNotification("item/agentMessage/delta", nil)
	mark := c.Mark()
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": turnID}, nil)
	turn := c.WaitTurnCompleted()
	require.Equal(t, "interrupted", turn["status"])
	require.Equal(t, "notLoaded", turn["itemsView"])
	// the reference sends the rate limits before it answers turn/interrupt
	var order []string
	for _, m := range c.Since(mark) {
		if m.IsNotification() {
			order = append(order, m.Method)
		} else if m.Method == "" {
			order = append(order, "response")
		}
	}
	require.Equal(t, []string{"account/rateLimits/updated", "response", "thread/status/changed", "turn/completed"}, order)
	require.Equal(t, "idle", readThreadStatus(t, c, tid))

	c.StartTurn(tid, "again")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	var texts []string
	for _, it := range reqs[1].Body["input"].([]any) {
		item := it.(map[string]any)
		for _, part := range item["content"].([]any) {
			texts = append(texts, item["role"].(string)+": "+part.(map[string]any)["text"].(string))
		}
	}
	require.Contains(t, texts[len(texts)-2], "user: <turn_aborted>\nThe user interrupted the previous turn on purpose.")
	require.Equal(t, "user: again", texts[len(texts)-1])
	require.NotContains(t, strings.Join(texts, "\n"), "one two", "no partial assistant text")
}

// cancellingTools ends the turn from inside a tool call, as an approval answered "cancel" does.
type cancellingTools struct{}

func (cancellingTools) Specs() []json.RawMessage {
	return []json.RawMessage{json.RawMessage(`{"type":"function","name":"cancel_tool","description":"test","strict":false,"parameters":{"type":"object","properties":{}}}`)}
}

func (cancellingTools) Call(_ context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Name != "cancel_tool" {
		return nil, false
	}
	tc.Interrupt()
	return thread.FunctionOutput(call.CallID, "cancelled"), true
}

func TestToolCancelStillReportsUsage(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("cancel_tool", "call_c", map[string]any{})}})
	c := apptest.Start(t, apptest.Options{Model: mm, Tools: func(*thread.Thread, thread.Settings) []thread.ToolSet { return []thread.ToolSet{cancellingTools{}} }})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "cancel")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "interrupted", turn["status"])
	require.Equal(t, "notLoaded", turn["itemsView"])
	require.Empty(t, turn["items"])
	require.Equal(t, []string{"warning", "thread/status/changed", "turn/started", "item/started", "item/completed",
		"thread/tokenUsage/updated", "account/rateLimits/updated", "thread/status/changed", "turn/completed"},
		apptest.NotificationMethods(c.Since(mark)))
	require.Len(t, mm.ResponseRequests(), 1, "no further model request after a cancel")
}

func TestFunctionCallOutputsCarryIDs(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("fake_tool", "call_a", map[string]any{"n": 1})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	ft := &fakeTools{}
	c := apptest.Start(t, apptest.Options{Model: mm, Tools: func(*thread.Thread, thread.Settings) []thread.ToolSet { return []thread.ToolSet{ft} }})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "tool")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	var found bool
	for _, it := range reqs[1].Body["input"].([]any) {
		item := it.(map[string]any)
		if item["type"] == "function_call_output" {
			found = true
			require.Regexp(t, `^fco_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$`, item["id"])
			require.Equal(t, "call_a", item["call_id"])
		}
	}
	require.True(t, found)
}

func TestEphemeralThreadRestrictions(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ephemeral hi", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(map[string]any{"ephemeral": true})
	c.StartTurn(tid, "hi")
	c.WaitTurnCompleted()

	var rd map[string]any
	c.Result("thread/read", map[string]any{"threadId": tid}, &rd)
	require.Contains(t, rd, "readState")
	require.Nil(t, rd["readState"], "an ephemeral thread has no read state")
	th := rd["thread"].(map[string]any)
	require.Equal(t, true, th["ephemeral"])
	require.Equal(t, "", th["preview"])
	require.Nil(t, th["path"])

	cases := []struct {
		method string
		params map[string]any
		msg    string
	}{
		{"thread/read", map[string]any{"threadId": tid, "includeTurns": true}, "ephemeral threads do not support includeTurns"},
		{"thread/name/set", map[string]any{"threadId": tid, "name": "eph"}, "ephemeral thread does not support metadata updates: " + tid},
		{"thread/resume", map[string]any{"threadId": tid}, "no rollout found for thread id " + tid},
		{"thread/fork", map[string]any{"threadId": tid}, "no rollout found for thread id " + tid},
	}
	for _, tc := range cases {
		t.Run(tc.method, func(t *testing.T) {
			requireError(t, c.Request(tc.method, tc.params), -32600, tc.msg)
		})
	}
	for _, m := range c.Messages() {
		require.NotEqual(t, "thread/name/updated", m.Method)
	}
}

func TestConfigRequirementsAndModelProviderList(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	require.JSONEq(t, `{"requirements":null,"supportsIndependentSpeedModes":true}`, string(c.Result("configRequirements/read", nil, nil)))

	var res struct {
		CanChangeDefault  bool
		DefaultProviderID string
		Data              []map[string]any
	}
	c.Result("modelProvider/list", map[string]any{}, &res)
	require.True(t, res.CanChangeDefault)
	require.Equal(t, "mock", res.DefaultProviderID)
	require.Len(t, res.Data, 2, "the configured provider and openai; other built-ins are not listed")
	require.Equal(t, "mock", res.Data[0]["id"])
	require.Equal(t, true, res.Data[0]["canEdit"])
	require.Equal(t, c.Model.URL(), res.Data[0]["baseUrl"])
	require.Equal(t, map[string]any{"type": "customGateway", "auth": map[string]any{"mode": "none"}}, res.Data[0]["settings"])
	require.Equal(t, map[string]any{"id": "openai", "name": "OpenAI", "baseUrl": nil, "canEdit": false,
		"settings": map[string]any{"type": "openai"}}, res.Data[1])
}

func TestModelProviderListAuthModes(t *testing.T) {
	cfg := "model = \"m\"\nmodel_provider = \"b\"\n" +
		"[model_providers.b]\nname = \"B\"\nbase_url = \"http://127.0.0.1:1/v1\"\nenv_key = \"B_KEY\"\n" +
		"[model_providers.a]\nname = \"A\"\nbase_url = \"http://127.0.0.1:2/v1\"\nexperimental_bearer_token = \"tok\"\n"
	c := apptest.Start(t, apptest.Options{Raw: true, Config: cfg})
	c.Initialize(false)
	var res struct {
		DefaultProviderID string
		Data              []struct {
			ID       string
			Settings map[string]any
		}
	}
	c.Result("modelProvider/list", map[string]any{}, &res)
	require.Equal(t, "b", res.DefaultProviderID)
	require.Len(t, res.Data, 3)
	require.Equal(t, []string{"a", "b", "openai"}, []string{res.Data[0].ID, res.Data[1].ID, res.Data[2].ID})
	require.Equal(t, map[string]any{"mode": "externallyConfigured", "envKey": nil}, res.Data[0].Settings["auth"])
	require.Equal(t, map[string]any{"mode": "environmentVariable", "envKey": "B_KEY"}, res.Data[1].Settings["auth"])
}

// blockingTools runs until the turn is interrupted (or a long timeout).
type blockingTools struct{ started chan struct{} }

func (blockingTools) Specs() []json.RawMessage {
	return []json.RawMessage{json.RawMessage(`{"type":"function","name":"block_tool","description":"test","strict":false,"parameters":{"type":"object","properties":{}}}`)}
}

func (b blockingTools) Call(ctx context.Context, _ *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Name != "block_tool" {
		return nil, false
	}
	close(b.started)
	select {
	case <-ctx.Done():
	case <-time.After(apptest.WaitLimit):
	}
	return thread.FunctionOutput(call.CallID, "finished late"), true
}

// toolOutputs returns the function_call_output texts of a model request by call id.
func toolOutputs(t *testing.T, body map[string]any) map[string]string {
	out := map[string]string{}
	for _, it := range body["input"].([]any) {
		item := it.(map[string]any)
		if item["type"] == "function_call_output" {
			s, ok := item["output"].(string)
			require.True(t, ok, "text output expected: %v", item)
			out[item["call_id"].(string)] = s
		}
	}
	return out
}

func TestInterruptDuringToolAccountsUsageAndAbortsCall(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("block_tool", "call_b", map[string]any{})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("next", 1)}})
	bt := blockingTools{started: make(chan struct{})}
	c := apptest.Start(t, apptest.Options{Model: mm, Tools: func(*thread.Thread, thread.Settings) []thread.ToolSet { return []thread.ToolSet{bt} }})
	c.Initialize(false)
	tid := c.StartThread(nil)
	turnID := c.StartTurn(tid, "block")
	select {
	case <-bt.started:
	case <-time.After(apptest.WaitLimit):
		t.Fatal("the tool never started")
	}
	// The call starts as its item completes; wait for the response to complete (its usage is recorded).
	require.Eventually(t, func() bool {
		m, _ := filepath.Glob(filepath.Join(c.Home, "sessions", "*", "*", "*", "rollout-*-"+tid+".jsonl"))
		if len(m) != 1 {
			return false
		}
		b, err := os.ReadFile(m[0])
		return err == nil && bytes.Contains(b, []byte(`"type":"token_usage_record"`))
	}, apptest.WaitLimit, 10*time.Millisecond, "the response never completed")
	mark := c.Mark()
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": turnID}, nil)
	turn := c.WaitTurnCompleted()
	require.Equal(t, "interrupted", turn["status"])
	var order []string
	for _, m := range c.Since(mark) {
		if m.IsNotification() {
			order = append(order, m.Method)
		} else if m.Method == "" {
			order = append(order, "response")
		}
	}
	// the response whose tool was running is accounted before the interrupt is answered
	require.Equal(t, []string{"thread/tokenUsage/updated", "account/rateLimits/updated", "response", "thread/status/changed", "turn/completed"}, order)

	c.StartTurn(tid, "again")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.Regexp(t, `^Wall time: \d+\.\d{4} seconds\naborted by user$`, toolOutputs(t, reqs[1].Body)["call_b"],
		"the interrupted call gets an output, so the history stays valid")
	var usage struct {
		TokenUsage struct{ Total struct{ TotalTokens int64 } }
	}
	for _, m := range c.Messages() {
		if m.Method == "thread/tokenUsage/updated" {
			require.NoError(t, json.Unmarshal(m.Params, &usage))
		}
	}
	require.Equal(t, int64(240), usage.TokenUsage.Total.TotalTokens, "both responses are counted once")
}

func TestToolCancelLeavesAbortedOutputAndNotice(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("cancel_tool", "call_c", map[string]any{})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("next", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, Tools: func(*thread.Thread, thread.Settings) []thread.ToolSet { return []thread.ToolSet{cancellingTools{}} }})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "cancel")
	require.Equal(t, "interrupted", c.WaitTurnCompleted()["status"])
	c.StartTurn(tid, "again")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.Regexp(t, `^Wall time: \d+\.\d{4} seconds\naborted by user$`, toolOutputs(t, reqs[1].Body)["call_c"])
	require.Contains(t, string(mustJSON(t, reqs[1].Body["input"])), "The user interrupted the previous turn on purpose.")
}

func TestRetriedStreamKeepsFailedAttemptItemsAndCountsTokens(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("partial", 2)}, Completed: mockmodel.Bool(false)})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("complete answer", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, StreamRetries: 1})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "retry me")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	require.Equal(t, []string{"warning", "thread/status/changed", "turn/started", "item/started", "item/completed",
		"item/started", "item/completed", "account/rateLimits/updated", "error",
		"item/started", "item/completed", "thread/tokenUsage/updated", "account/rateLimits/updated",
		"thread/status/changed", "turn/completed"},
		apptest.NotificationMethods(c.Since(mark), "item/agentMessage/delta"), "the failed attempt's token count precedes the retry notice")
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	input := reqs[1].Body["input"].([]any)
	last := input[len(input)-1].(map[string]any)
	require.Equal(t, "assistant", last["role"], "the retry resends the message completed by the failed attempt")
	require.Equal(t, "partial", last["content"].([]any)[0].(map[string]any)["text"])
	require.Len(t, reqs[0].Body["input"].([]any), len(input)-1)
}

func TestInterruptAfterStreamedCallLeavesNoDanglingCall(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("fake_tool", "call_h", map[string]any{"n": 1}), mockmodel.Hang(60)}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("next", 1)}})
	ft := &fakeTools{}
	c := apptest.Start(t, apptest.Options{Model: mm, Tools: func(*thread.Thread, thread.Settings) []thread.ToolSet { return []thread.ToolSet{ft} }})
	c.Initialize(false)
	tid := c.StartThread(nil)
	turnID := c.StartTurn(tid, "call then hang")
	require.Eventually(t, func() bool { return mm.HasNote("hang") }, apptest.WaitLimit, 20*time.Millisecond, "the mock reached the hang: %v", lazyNotes{mm})
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": turnID}, nil)
	require.Equal(t, "interrupted", c.WaitTurnCompleted()["status"])
	c.StartTurn(tid, "again")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.Regexp(t, `^Wall time: \d+\.\d{4} seconds\naborted by user$`, toolOutputs(t, reqs[1].Body)["call_h"])
}

func TestInterruptAndSteerValidation(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{{Type: "message", Text: "one two three four", Chunks: 4, HangAfterChunks: mockmodel.Int(2)}}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	text := []any{map[string]any{"type": "text", "text": "x"}}
	// without an active turn the "no active turn" errors come first, whatever else is wrong
	requireError(t, c.Request("turn/steer", map[string]any{"threadId": tid, "expectedTurnId": "x", "input": []any{}}), -32600, "no active turn to steer")
	requireError(t, c.Request("turn/interrupt", map[string]any{"threadId": tid, "turnId": "wrong-turn"}), -32600, "no active turn to interrupt")

	turnID := c.StartTurn(tid, "start")
	c.WaitNotification("item/agentMessage/delta", nil)
	cases := []struct {
		name, method string
		params       map[string]any
		msg          string
	}{
		{"interrupt wrong turn", "turn/interrupt", map[string]any{"threadId": tid, "turnId": "wrong-turn"},
			"expected active turn id wrong-turn but found " + turnID},
		{"steer wrong turn", "turn/steer", map[string]any{"threadId": tid, "expectedTurnId": "wrong-turn", "input": text},
			"expected active turn id `wrong-turn` but found `" + turnID + "`"},
		{"steer empty input", "turn/steer", map[string]any{"threadId": tid, "expectedTurnId": turnID, "input": []any{}},
			"input must not be empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireError(t, c.Request(tc.method, tc.params), -32600, tc.msg)
		})
	}
	// the turn is still running after the rejected interrupt
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": turnID}, nil)
	require.Equal(t, "interrupted", c.WaitTurnCompleted()["status"])
}
