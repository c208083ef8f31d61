package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/thread"
)

// noisy notifications that interleave with the turn order in the reference too.
var usageNoise = []string{"thread/tokenUsage/updated", "account/rateLimits/updated"}

func turnMethods(c *apptest.Client, mark int) []string {
	return apptest.NotificationMethods(c.Since(mark), append(usageNoise, "item/agentMessage/delta")...)
}

func TestSimpleStreamedTurn(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("Hello from the mock model!", 4)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	turnID := c.StartTurn(tid, "Say hello")
	turn := c.WaitTurnCompleted()
	require.Equal(t, []string{
		"warning", "thread/status/changed", "turn/started", "item/started", "item/completed",
		"item/started", "item/completed", "thread/status/changed", "turn/completed",
	}, turnMethods(c, mark))
	all := apptest.NotificationMethods(c.Since(mark))
	// deltas: one per SSE text delta, between the agent message's start and completion
	var deltas []string
	for _, m := range c.Since(mark) {
		if m.Method == "item/agentMessage/delta" {
			var p struct{ Delta string }
			require.NoError(t, json.Unmarshal(m.Params, &p))
			deltas = append(deltas, p.Delta)
		}
	}
	require.Equal(t, "Hello from the mock model!", strings.Join(deltas, ""))
	require.Len(t, deltas, 4)
	// usage then rate limits, after the agent message and before the idle status
	iUsage := indexOf(all, "thread/tokenUsage/updated")
	require.Greater(t, iUsage, lastIndexOf(all, "item/completed"))
	require.Equal(t, "account/rateLimits/updated", all[iUsage+1])
	require.Less(t, iUsage, lastIndexOf(all, "thread/status/changed"))

	require.Equal(t, turnID, turn["id"])
	require.Equal(t, "completed", turn["status"])
	require.Equal(t, "summary", turn["itemsView"])
	items := turn["items"].([]any)
	require.Len(t, items, 1)
	require.Equal(t, "agentMessage", items[0].(map[string]any)["type"])
	require.Equal(t, "Hello from the mock model!", items[0].(map[string]any)["text"])

	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 1)
	body := reqs[0].Body
	require.Equal(t, "mock-model", body["model"])
	require.Equal(t, true, body["stream"])
	require.Equal(t, false, body["store"])
	require.Equal(t, tid, body["prompt_cache_key"])
	input := body["input"].([]any)
	require.Equal(t, "developer", input[0].(map[string]any)["role"], "base instructions come first")
	require.Contains(t, fmt.Sprint(input[1]), "<permissions instructions>")
	require.Contains(t, fmt.Sprint(input[2]), "<environment_context>")
	last := input[len(input)-1].(map[string]any)
	require.Equal(t, "user", last["role"])
	require.Contains(t, string(mustJSON(t, last)), "Say hello")
	require.Equal(t, "apptest", reqs[0].Header.Get("originator"))
	require.Equal(t, tid, reqs[0].Header.Get("session-id"))
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func lastIndexOf(xs []string, x string) int {
	for i := len(xs) - 1; i >= 0; i-- {
		if xs[i] == x {
			return i
		}
	}
	return -1
}

func TestReasoningThenMessageAndCumulativeUsage(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("first", 1)}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Reasoning("Thinking about it.", "Done."), mockmodel.Message("answer", 2)},
		Usage: map[string]any{"input_tokens": 300, "output_tokens": 50, "total_tokens": 350}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "one")
	c.WaitTurnCompleted()
	mark := c.Mark()
	c.StartTurn(tid, "Think first")
	c.WaitTurnCompleted()
	require.Equal(t, []string{
		"warning", "thread/status/changed", "turn/started", "item/started", "item/completed",
		"item/started", "item/reasoning/summaryPartAdded", "item/reasoning/summaryTextDelta",
		"item/reasoning/summaryPartAdded", "item/reasoning/summaryTextDelta", "item/completed",
		"item/started", "item/completed", "thread/status/changed", "turn/completed",
	}, turnMethods(c, mark))
	var usage struct {
		TokenUsage struct {
			Total              struct{ TotalTokens int64 }
			Last               struct{ TotalTokens int64 }
			ModelContextWindow int64
		}
	}
	for _, m := range c.Since(mark) {
		if m.Method == "thread/tokenUsage/updated" {
			require.NoError(t, json.Unmarshal(m.Params, &usage))
		}
		if m.Method == "item/completed" && strings.Contains(string(m.Params), `"reasoning"`) {
			require.Contains(t, string(m.Params), `"summary":["Thinking about it.","Done."]`)
		}
	}
	require.Equal(t, int64(470), usage.TokenUsage.Total.TotalTokens, "total is cumulative (120+350)")
	require.Equal(t, int64(350), usage.TokenUsage.Last.TotalTokens)
	require.Equal(t, int64(258400), usage.TokenUsage.ModelContextWindow)
	// the second request replays the first turn
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.Contains(t, string(mustJSON(t, reqs[1].Body["input"])), `"first"`)
}

// fakeTools answers calls to "fake_tool" after 300 ms, or, when two is set, once two calls run at once,
// counting concurrent calls.
type fakeTools struct {
	running, peak atomic.Int32
	twoOnce       sync.Once
	two           chan struct{}
}

func (f *fakeTools) Specs() []json.RawMessage {
	return []json.RawMessage{json.RawMessage(`{"type":"function","name":"fake_tool","description":"test","strict":false,"parameters":{"type":"object","properties":{"n":{"type":"number"}}}}`)}
}

func (f *fakeTools) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Name != "fake_tool" {
		return nil, false
	}
	n := f.running.Add(1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	hold := 300 * time.Millisecond
	if f.two != nil { // wait for the other call; only serialised calls reach the bound (the peak stays 1)
		hold = 30 * time.Second
		if n >= 2 {
			f.twoOnce.Do(func() { close(f.two) })
		}
	}
	select {
	case <-f.two:
	case <-time.After(hold):
	case <-ctx.Done():
	}
	f.running.Add(-1)
	return thread.FunctionOutput(call.CallID, "fake output "+call.Arguments), true
}

func TestParallelToolCallsAndUnknownTool(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{
		mockmodel.FunctionCall("fake_tool", "call_a", map[string]any{"n": 1}),
		mockmodel.FunctionCall("fake_tool", "call_b", map[string]any{"n": 2}),
		mockmodel.FunctionCall("no_such_tool", "call_c", map[string]any{}),
	}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	ft := &fakeTools{two: make(chan struct{})}
	c := apptest.Start(t, apptest.Options{Model: mm, Tools: func(*thread.Thread, thread.Settings) []thread.ToolSet { return []thread.ToolSet{ft} }})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "use tools")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])
	require.Equal(t, int32(2), ft.peak.Load(), "the two calls run in parallel")
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	input := string(mustJSON(t, reqs[1].Body["input"]))
	// outputs carry their own "fco_" id (between call_id and output once re-marshalled)
	require.Regexp(t, `"call_id":"call_a","id":"fco_[^"]+","output":"fake output \{\\"n\\":1\}"`, input)
	require.Regexp(t, `"call_id":"call_b","id":"fco_[^"]+","output":"fake output \{\\"n\\":2\}"`, input)
	require.Regexp(t, `"call_id":"call_c","id":"fco_[^"]+","output":"unsupported call: no_such_tool"`, input)
	require.Less(t, strings.Index(input, `"output":"fake output {\"n\":1}"`), strings.Index(input, `"output":"fake output {\"n\":2}"`), "outputs in call order")
	tools := string(mustJSON(t, reqs[0].Body["tools"]))
	require.Contains(t, tools, `"name":"fake_tool"`)
}

// TestUnofferedCustomToolCall: a freeform call of a tool not offered (apply_patch to a model outside the
// catalogue, or any other name) is answered as the reference does, with no item for the client.
func TestUnofferedCustomToolCall(t *testing.T) {
	for _, name := range []string{"apply_patch", "no_such_tool"} {
		t.Run(name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.CustomToolCall(name, "call_x", "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n")}})
			mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
			c := apptest.Start(t, apptest.Options{Model: mm})
			c.Initialize(false)
			tid := c.StartThread(nil)
			mark := c.Mark()
			c.StartTurn(tid, "edit")
			turn := c.WaitTurnCompleted()
			require.Equal(t, "completed", turn["status"])
			reqs := mm.ResponseRequests()
			require.Len(t, reqs, 2)
			input := string(mustJSON(t, reqs[1].Body["input"]))
			require.Regexp(t, `\{"call_id":"call_x","id":"ctco_[^"]+","output":"unsupported custom tool call: `+name+`","type":"custom_tool_call_output"\}`, input)
			for _, m := range c.Since(mark) {
				if m.Method == "item/started" || m.Method == "item/completed" {
					require.NotContains(t, string(m.Params), "call_x", "no item for an unoffered call")
				}
			}
			require.NoFileExists(t, filepath.Join(c.Work, "a.txt"))
		})
	}
}

func TestInterruptMidStream(t *testing.T) {
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
	require.JSONEq(t, `{}`, string(c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": turnID}, nil)))
	turn := c.WaitTurnCompleted()
	require.Equal(t, "interrupted", turn["status"])
	require.Empty(t, turn["items"])
	require.Nil(t, turn["error"])
	require.Equal(t, []string{"thread/status/changed", "turn/completed"}, turnMethods(c, mark))
	require.Eventually(t, func() bool {
		return mm.HasNote("client_disconnected_during_hang") || mm.HasNote("client_disconnected_mid_stream")
	}, apptest.WaitLimit, 20*time.Millisecond, "the model stream is closed: %v", lazyNotes{mm})

	// stale interrupt and steer
	requireError(t, c.Request("turn/interrupt", map[string]any{"threadId": tid, "turnId": turnID}), -32600, "no active turn to interrupt")
	requireError(t, c.Request("turn/steer", map[string]any{"threadId": tid, "expectedTurnId": turnID, "input": []any{map[string]any{"type": "text", "text": "x"}}}), -32600, "no active turn to steer")

	// the next request tells the model about the interruption, without the partial text
	c.StartTurn(tid, "again")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	input := string(mustJSON(t, reqs[1].Body["input"]))
	require.Contains(t, input, "turn_aborted")
	require.NotContains(t, input, "one two")
}

func TestSteerInjectsInputAtNextRequest(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Sleep(400), mockmodel.Message("first answer", 1)}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("steered answer", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	turnID := c.StartTurn(tid, "begin")
	require.NoError(t, mm.WaitRequests(context.Background(), 1))
	requireErrorMatch(t, c.Request("turn/steer", map[string]any{"threadId": tid, "expectedTurnId": "nope", "input": []any{map[string]any{"type": "text", "text": "x"}}}),
		-32600, "^expected active turn id `nope` but found `"+turnID+"`$")
	var res struct{ TurnID string }
	c.Result("turn/steer", map[string]any{"threadId": tid, "expectedTurnId": turnID, "input": []any{map[string]any{"type": "text", "text": "also do this"}}}, &res)
	require.Equal(t, turnID, res.TurnID)
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.Contains(t, string(mustJSON(t, reqs[1].Body["input"])), "also do this")
	userMessages := 0
	for _, m := range c.Messages() {
		if m.Method == "item/completed" && strings.Contains(string(m.Params), `"userMessage"`) {
			userMessages++
		}
	}
	require.Equal(t, 2, userMessages, "the steered input surfaces as a userMessage item")
}

func TestHTTP500RetriesExhausted(t *testing.T) {
	mm := mockmodel.New(t)
	for i := 0; i < 3; i++ {
		mm.Enqueue(mockmodel.Response{HTTPStatus: 500})
	}
	c := apptest.Start(t, apptest.Options{Model: mm, RequestRetries: 2})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "fail please")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "failed", turn["status"])
	require.Empty(t, turn["items"])
	errObj := turn["error"].(map[string]any)
	require.Equal(t, "internalServerError", errObj["codexErrorInfo"])
	require.Equal(t, "We’re currently experiencing high demand, which may cause temporary errors.", errObj["message"])
	require.Len(t, mm.ResponseRequests(), 3, "one request and two silent retries")
	methods := turnMethods(c, mark)
	require.Equal(t, []string{"warning", "thread/status/changed", "turn/started", "item/started", "item/completed", "thread/status/changed", "error", "turn/completed"}, methods, "systemError status, then the error")
	for _, m := range c.Since(mark) {
		if m.Method == "error" {
			require.Contains(t, string(m.Params), `"willRetry":false`)
		}
	}
}

func TestTruncatedStreamRetriedOnce(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("partial", 1)}, Completed: mockmodel.Bool(false)})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("complete answer", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, StreamRetries: 1})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "retry me")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])
	var retryNotices []string
	for _, m := range c.Since(mark) {
		if m.Method == "error" {
			retryNotices = append(retryNotices, string(m.Params))
		}
	}
	require.Len(t, retryNotices, 1)
	require.Contains(t, retryNotices[0], `"willRetry":true`)
	require.Contains(t, retryNotices[0], `"message":"Reconnecting... 1/1"`)
	require.Contains(t, retryNotices[0], `"responseStreamDisconnected"`)
	items := turn["items"].([]any)
	require.Equal(t, "complete answer", items[0].(map[string]any)["text"])
}

func TestUnauthorized(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{HTTPStatus: 401, ErrorBody: map[string]any{"error": map[string]any{"message": "bad key"}}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "x")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "failed", turn["status"])
	errObj := turn["error"].(map[string]any)
	require.Equal(t, map[string]any{"httpConnectionFailed": map[string]any{"httpStatusCode": float64(401)}}, errObj["codexErrorInfo"])
	require.Contains(t, errObj["message"], "unexpected status 401 Unauthorized: bad key")
}

func TestTurnStartWhileActiveFoldsInput(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Sleep(400), mockmodel.Message("a", 1)}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("b", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	first := c.StartTurn(tid, "one")
	require.NoError(t, mm.WaitRequests(context.Background(), 1))
	second := c.StartTurn(tid, "two")
	require.Equal(t, first, second, "the running turn's id is returned")
	c.WaitTurnCompleted()
	require.Contains(t, string(mustJSON(t, mm.ResponseRequests()[1].Body["input"])), `"two"`)
}

type lazyNotes struct{ mm *mockmodel.Server }

func (l lazyNotes) String() string { return fmt.Sprint(l.mm.Notes()) }

func TestModelListAsksNoConfiguredProvider(t *testing.T) {
	mm := mockmodel.New(t)
	mm.SetModels(map[string]any{"data": []any{map[string]any{"id": "local-llama"}}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	var res struct {
		Data []struct {
			ID        string
			IsDefault bool
		}
		NextCursor *string
	}
	c.Result("model/list", map[string]any{}, &res)
	var ids []string
	defaults := 0
	for _, m := range res.Data {
		ids = append(ids, m.ID)
		if m.IsDefault {
			defaults++
		}
	}
	require.Contains(t, ids, "gpt-6.1-sol")
	require.NotContains(t, ids, "local-llama")
	require.Equal(t, 1, defaults)
	require.Empty(t, mm.Requests(), "like the reference, no GET /models (clients call model/list at startup)")
	c.Result("model/list", map[string]any{"limit": 1}, &res)
	require.Len(t, res.Data, 1)
	require.Equal(t, "1", *res.NextCursor)
}

func countOf(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

func TestModelListMarksConfiguredModelDefault(t *testing.T) {
	c := apptest.Start(t, apptest.Options{Raw: true, Config: "model = \"gpt-5.5\"\n"})
	c.Initialize(false)
	var res struct {
		Data []struct {
			ID        string
			IsDefault bool
		}
	}
	c.Result("model/list", map[string]any{"includeHidden": true}, &res)
	for _, m := range res.Data {
		require.Equal(t, m.ID == "gpt-5.5", m.IsDefault, m.ID)
	}
}

func TestPermissionsMessageFollowsPolicyChanges(t *testing.T) {
	mm := mockmodel.New(t)
	for i := 0; i < 3; i++ {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "one")
	c.WaitTurnCompleted()
	c.StartTurn(tid, "two")
	c.WaitTurnCompleted()
	c.Result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "three"}},
		"sandboxPolicy": map[string]any{"type": "dangerFullAccess"}}, nil)
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	count := func(i int) int { return strings.Count(fmt.Sprint(reqs[i].Body["input"]), "<permissions instructions>") }
	require.Equal(t, 1, count(0))
	require.Contains(t, string(mustJSON(t, reqs[0].Body["input"])), "Sandbox: read-only")
	require.Equal(t, 1, count(1), "unchanged permissions are not repeated")
	require.Equal(t, 2, count(2), "a changed sandbox is announced")
	require.Contains(t, string(mustJSON(t, reqs[2].Body["input"])), "Sandbox: none")
}

// TestOfferedToolCalledInTheOtherForm: a freeform call of a function tool, or a function call of the
// freeform apply_patch, is answered "aborted" in the call's own kind, as the reference does, and runs nothing.
func TestOfferedToolCalledInTheOtherForm(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		call        mockmodel.Item
		outputType  string
	}{
		{"custom view_image", "", mockmodel.CustomToolCall("view_image", "call_x", `{"path":"x.png"}`), "custom_tool_call_output"},
		{"function apply_patch", "gpt-5.5", mockmodel.FunctionCall("apply_patch", "call_x",
			map[string]any{"input": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"}), "function_call_output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{tc.call}})
			mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
			c := apptest.Start(t, apptest.Options{Model: mm, ModelID: tc.model, SandboxMode: "workspace-write"})
			c.Initialize(false)
			tid := c.StartThread(nil)
			mark := c.Mark()
			c.StartTurn(tid, "call")
			require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
			reqs := mm.ResponseRequests()
			require.Len(t, reqs, 2)
			input := string(mustJSON(t, reqs[1].Body["input"]))
			require.Regexp(t, `\{"call_id":"call_x","id":"[a-z]+_[^"]+","output":"aborted","type":"`+tc.outputType+`"\}`, input)
			for _, m := range c.Since(mark) {
				if m.Method == "item/started" || m.Method == "item/completed" {
					require.NotContains(t, string(m.Params), "call_x", "no item for the call")
				}
			}
			require.NoFileExists(t, filepath.Join(c.Work, "a.txt"))
		})
	}
}
