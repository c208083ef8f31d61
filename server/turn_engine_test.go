package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/thread"
)

// countingExec is fakeExec that counts how often each call id ran.
type countingExec struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *countingExec) Specs() []json.RawMessage { return fakeExec{}.Specs() }

func (c *countingExec) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	out, ok := fakeExec{}.Call(ctx, tc, call)
	if ok {
		c.mu.Lock()
		c.runs[call.CallID]++
		c.mu.Unlock()
	}
	return out, ok
}

func (c *countingExec) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[id]
}

// delayedExec is fakeExec that takes delay to run (as a real command does), or, when until is set, runs
// until until(thread id) holds (polled; bounded by apptest.WaitLimit against a hang).
type delayedExec struct {
	delay time.Duration
	until func(threadID string) bool
}

func (d delayedExec) Specs() []json.RawMessage { return fakeExec{}.Specs() }

func (d delayedExec) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Name != "exec_command" {
		return nil, false
	}
	if d.until != nil {
		deadline := time.Now().Add(apptest.WaitLimit)
		for !d.until(tc.Thread.ID) && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		return fakeExec{}.Call(ctx, tc, call)
	}
	select {
	case <-time.After(d.delay):
	case <-ctx.Done():
	}
	return fakeExec{}.Call(ctx, tc, call)
}

// gateTools' gate_tool signals its start and blocks until release is closed (or the turn ends).
type gateTools struct {
	started, release chan struct{}
	once             sync.Once
}

func (g *gateTools) Specs() []json.RawMessage {
	return []json.RawMessage{json.RawMessage(`{"type":"function","name":"gate_tool","description":"test","strict":false,"parameters":{"type":"object","properties":{}}}`)}
}

func (g *gateTools) Call(ctx context.Context, _ *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Name != "gate_tool" {
		return nil, false
	}
	g.once.Do(func() { close(g.started) })
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return thread.FunctionOutput(call.CallID, "gate passed"), true
}

// engineEvents lists "method:itemType" for the item notifications of msgs.
func engineEvents(t *testing.T, msgs []apptest.Message) []string {
	var out []string
	for _, m := range msgs {
		if !m.IsNotification() {
			continue
		}
		if m.Method != "item/started" && m.Method != "item/completed" {
			out = append(out, m.Method)
			continue
		}
		var p struct {
			Item struct{ Type string } `json:"item"`
		}
		require.NoError(t, json.Unmarshal(m.Params, &p))
		out = append(out, m.Method+":"+p.Item.Type)
	}
	return out
}

// without returns xs minus every element in drop.
func without(xs []string, drop ...string) []string {
	var out []string
	for _, x := range xs {
		keep := true
		for _, d := range drop {
			keep = keep && x != d
		}
		if keep {
			out = append(out, x)
		}
	}
	return out
}

// inputKinds lists the type (and role, for messages) of each non-developer input item of a request.
func inputKinds(req mockmodel.Request) []string {
	var out []string
	for _, it := range req.Body["input"].([]any) {
		m := it.(map[string]any)
		kind, _ := m["type"].(string)
		if role, ok := m["role"].(string); ok {
			if role == "developer" {
				continue
			}
			kind += ":" + role
		}
		if id, ok := m["call_id"].(string); ok {
			kind += ":" + id
		}
		out = append(out, kind)
	}
	return out
}

func TestToolCallStartsWhileResponseStreams(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{
			mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "ls -la"}),
			mockmodel.Sleep(1500),
			mockmodel.Message("while running", 2),
		}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}},
	)
	c := apptest.Start(t, apptest.Options{Model: mm, Tools: func(*thread.Thread, thread.Settings) []thread.ToolSet { return []thread.ToolSet{fakeExec{}} }})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "List files")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

	ev := engineEvents(t, c.Since(mark))
	iCmdDone := indexOf(ev, "item/completed:commandExecution")
	iMsgStart := indexOf(ev, "item/started:agentMessage")
	iMsgDone := indexOf(ev, "item/completed:agentMessage")
	iUsage := indexOf(ev, "thread/tokenUsage/updated")
	require.NotEqual(t, -1, iCmdDone, "%v", ev)
	require.Less(t, iCmdDone, iMsgStart, "the call ran while the response still streamed: %v", ev)
	require.Less(t, iMsgDone, iUsage, "the response is accounted once it and its calls are over: %v", ev)

	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.Equal(t, []string{"message:user", "message:user", "function_call:call_1", "message:assistant", "function_call_output:call_1"},
		inputKinds(reqs[1]), "outputs follow the response's items, in call order")

	require.Equal(t, []string{
		"session_meta",
		"event_msg:task_started", "response_item:message:developer", "response_item:message:user", "turn_context", "event_msg:thread_settings_applied",
		"response_item:message:user", "event_msg:item_completed:UserMessage",
		"response_item:function_call", "event_msg:item_completed:CommandExecution",
		"event_msg:item_completed:AgentMessage", "response_item:message:assistant",
		"token_usage_record", "response_item:function_call_output", "event_msg:token_count",
		"event_msg:item_completed:AgentMessage", "response_item:message:assistant",
		"token_usage_record", "event_msg:token_count", "event_msg:task_complete",
	}, recordKinds(t, rolloutFile(t, c.Home, tid)), "the call's item is recorded as it completes, its output after the response, as the reference does")
}

func TestRetriedStreamFinishesTheFailedAttemptsCalls(t *testing.T) {
	failed := mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_r", map[string]any{"cmd": "ls"})}, Completed: mockmodel.Bool(false)}
	for _, tc := range []struct {
		name      string
		responses []mockmodel.Response
		runs      int
		// the conversation items of the last request
		last []string
	}{
		{
			// As the reference (observed): the repeated call runs again and joins the history again.
			name: "retry repeats the call",
			responses: []mockmodel.Response{failed,
				{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_r", map[string]any{"cmd": "ls"})}},
				{Items: []mockmodel.Item{mockmodel.Message("done", 1)}}},
			runs: 2,
			last: []string{"message:user", "message:user", "function_call:call_r", "function_call_output:call_r", "function_call:call_r", "function_call_output:call_r"},
		},
		{
			name: "retry answers without a call",
			responses: []mockmodel.Response{failed,
				{Items: []mockmodel.Item{mockmodel.Message("answer", 1)}}},
			runs: 1,
			last: []string{"message:user", "message:user", "function_call:call_r", "function_call_output:call_r"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(tc.responses...)
			ce := &countingExec{runs: map[string]int{}}
			c := apptest.Start(t, apptest.Options{Model: mm, StreamRetries: 1, Tools: func(*thread.Thread, thread.Settings) []thread.ToolSet { return []thread.ToolSet{ce} }})
			c.Initialize(false)
			tid := c.StartThread(nil)
			mark := c.Mark()
			c.StartTurn(tid, "retry with a call")
			require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
			require.Equal(t, tc.runs, ce.count("call_r"))
			reqs := mm.ResponseRequests()
			require.Len(t, reqs, len(tc.responses))
			require.Equal(t, []string{"message:user", "message:user", "function_call:call_r", "function_call_output:call_r"}, inputKinds(reqs[1]),
				"the retry carries the failed attempt's call and its output")
			require.Equal(t, tc.last, inputKinds(reqs[len(reqs)-1]))
			ev := engineEvents(t, c.Since(mark))
			require.Less(t, indexOf(ev, "item/completed:commandExecution"), indexOf(ev, "error"), "the call finishes before the retry notice: %v", ev)
			require.Equal(t, 1, countOf(ev, "error"))
			// As the reference records a failed attempt: its call, the call's item and output, a token count.
			kinds := recordKinds(t, rolloutFile(t, c.Home, tid))
			i := indexOf(kinds, "response_item:function_call")
			require.GreaterOrEqual(t, i, 0, "%v", kinds)
			require.Equal(t, []string{"response_item:function_call", "event_msg:item_completed:CommandExecution", "response_item:function_call_output", "event_msg:token_count"},
				kinds[i:i+4], "%v", kinds)
		})
	}
}

func TestTurnStartAbandonsInFlightStream(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{
			mockmodel.RawEvent(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{"type": "reasoning", "id": "rs_part", "summary": []any{}}}),
			mockmodel.RawEvent(map[string]any{"type": "response.reasoning_summary_part.added", "item_id": "rs_part", "output_index": 0, "summary_index": 0}),
			mockmodel.RawEvent(map[string]any{"type": "response.reasoning_summary_text.delta", "item_id": "rs_part", "output_index": 0, "summary_index": 0, "delta": "thinking"}),
			mockmodel.Hang(60),
		}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("b", 1)}},
	)
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	first := c.StartTurn(tid, "one")
	c.WaitNotification("item/reasoning/summaryTextDelta", nil)
	mark := c.Mark()
	began := time.Now()
	require.Equal(t, first, c.StartTurn(tid, "two"), "the running turn's id is returned")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])
	require.Less(t, time.Since(began), 40*time.Second, "the hanging stream was not waited for")
	require.Eventually(t, func() bool {
		return mm.HasNoteFor("client_disconnected_during_hang", 0) || mm.HasNoteFor("client_disconnected_mid_stream", 0)
	}, apptest.WaitLimit, 20*time.Millisecond, "the abandoned stream is closed: %v", lazyNotes{mm})
	require.False(t, mm.HasNoteFor("hang_released", 0), "%v", lazyNotes{mm})

	// As the reference: the answer, the abandoned stream's token count (rate limits only: no usage
	// yet), the folded input, then the restarted request; the partial reasoning never completes.
	require.Equal(t, []string{
		"account/rateLimits/updated",
		"item/started:userMessage", "item/completed:userMessage",
		"item/started:agentMessage", "item/completed:agentMessage",
		"thread/tokenUsage/updated", "account/rateLimits/updated",
		"thread/status/changed", "turn/completed",
	}, without(engineEvents(t, c.Since(mark)), "item/agentMessage/delta", "thread/readState/changed"), "after the folding turn/start")
	for _, m := range c.Messages() {
		if m.Method == "item/completed" {
			require.NotContains(t, string(m.Params), "rs_part")
		}
	}
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.Equal(t, []string{"message:user", "message:user", "message:user"}, inputKinds(reqs[1]))
	require.Contains(t, strings.Join(inputTexts(reqs[1]), "\n"), "user:two")
	items := turn["items"].([]any)
	require.Equal(t, "b", items[0].(map[string]any)["text"])
}

func TestTurnStartWhileToolsRunWaitsForNextRequest(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("gate_tool", "call_g", map[string]any{}), mockmodel.Sleep(1000)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("b", 1)}},
	)
	g := &gateTools{started: make(chan struct{}), release: make(chan struct{})}
	c := apptest.Start(t, apptest.Options{Model: mm, Tools: func(*thread.Thread, thread.Settings) []thread.ToolSet { return []thread.ToolSet{g} }})
	c.Initialize(false)
	tid := c.StartThread(nil)
	first := c.StartTurn(tid, "one")
	select {
	case <-g.started:
	case <-time.After(apptest.WaitLimit):
		t.Fatal("the tool never started")
	}
	// The stream is still open (sleeping) but already started a call: it is not abandoned (an abandoned
	// request would be restarted, making three requests).
	require.Equal(t, first, c.StartTurn(tid, "two"))
	close(g.release)
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.Equal(t, []string{"message:user", "message:user", "function_call:call_g", "function_call_output:call_g", "message:user"}, inputKinds(reqs[1]),
		"the folded input joins at the next request, after the call's output")
	require.Equal(t, "gate passed", toolOutputs(t, reqs[1].Body)["call_g"])
	require.Contains(t, strings.Join(inputTexts(reqs[1]), "\n"), "user:two")
}
