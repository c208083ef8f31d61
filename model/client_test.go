package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/mockmodel"
	"appserver/model"
	"appserver/stopwatch/stopwatchtest"
)

func i64(n int64) *int64 { return &n }

// newClient returns a client for the mock with retries off and short backoffs; mod may adjust
// the provider.
func newClient(t *testing.T, mm *mockmodel.Server, mod func(*model.Provider)) *model.Client {
	t.Helper()
	p := model.Provider{
		ID: "mock", Name: "Mock", BaseURL: mm.URL(), WireAPI: "responses",
		RequestMaxRetries: i64(0), StreamMaxRetries: i64(0),
	}
	if mod != nil {
		mod(&p)
	}
	return model.NewClient(p, model.Options{BaseBackoff: 10 * time.Millisecond, NetworkBackoff: 10 * time.Millisecond})
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func simpleRequest() *model.Request {
	return &model.Request{
		Model:             "mock-model",
		Input:             []json.RawMessage{json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`)},
		ParallelToolCalls: true,
	}
}

// recorder collects events; safe because Stream calls back synchronously.
type recorder struct{ events []model.Event }

func (r *recorder) on(ev model.Event) { r.events = append(r.events, ev) }

func (r *recorder) retries() []model.RetryEvent {
	var out []model.RetryEvent
	for _, ev := range r.events {
		if re, ok := ev.(model.RetryEvent); ok {
			out = append(out, re)
		}
	}
	return out
}

func asModelError(t *testing.T, err error) *model.Error {
	t.Helper()
	var me *model.Error
	require.ErrorAs(t, err, &me)
	return me
}

func TestStreamSimpleMessage(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("Hello from the mock model!", 4)},
		Usage: map[string]any{"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}})
	c := newClient(t, mm, nil)
	var rec recorder
	comp, err := c.Stream(testCtx(t), simpleRequest(), rec.on)
	require.NoError(t, err)

	require.Len(t, rec.events, 7)
	require.Equal(t, model.CreatedEvent{ResponseID: "resp-1"}, rec.events[0])
	added := rec.events[1].(model.ItemAddedEvent)
	require.Equal(t, "message", added.Type)
	require.Equal(t, "msg_1_0", added.ID)
	var text strings.Builder
	for _, ev := range rec.events[2:6] {
		d := ev.(model.TextDeltaEvent)
		require.Equal(t, "msg_1_0", d.ItemID)
		require.Equal(t, 0, d.OutputIndex)
		text.WriteString(d.Delta)
	}
	require.Equal(t, "Hello from the mock model!", text.String())
	done := rec.events[6].(model.ItemDoneEvent)
	require.Equal(t, "msg_1_0", done.ID)
	require.JSONEq(t, `{"type":"message","id":"msg_1_0","role":"assistant","status":"completed",
		"content":[{"type":"output_text","text":"Hello from the mock model!","annotations":[]}]}`, string(done.Item))

	require.Equal(t, "resp-1", comp.ResponseID)
	require.Equal(t, &model.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120}, comp.Usage)
	require.Equal(t, []json.RawMessage{done.Item}, comp.Items)
}

func TestStreamReasoningSummary(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{
		Items: []mockmodel.Item{mockmodel.Reasoning("Thinking about it.", "Still thinking."), mockmodel.Message("Second answer.", 2)},
		Usage: map[string]any{"input_tokens": 300, "input_tokens_details": map[string]any{"cached_tokens": 100},
			"output_tokens": 50, "output_tokens_details": map[string]any{"reasoning_tokens": 30}, "total_tokens": 350},
	})
	c := newClient(t, mm, nil)
	var rec recorder
	comp, err := c.Stream(testCtx(t), simpleRequest(), rec.on)
	require.NoError(t, err)
	want := []model.Event{
		model.ReasoningSummaryPartAddedEvent{ItemID: "rs_1_0", SummaryIndex: 0},
		model.ReasoningSummaryDeltaEvent{ItemID: "rs_1_0", SummaryIndex: 0, Delta: "Thinking about it."},
		model.ReasoningSummaryPartAddedEvent{ItemID: "rs_1_0", SummaryIndex: 1},
		model.ReasoningSummaryDeltaEvent{ItemID: "rs_1_0", SummaryIndex: 1, Delta: "Still thinking."},
	}
	require.Equal(t, "rs_1_0", rec.events[1].(model.ItemAddedEvent).ID)
	require.Equal(t, want, rec.events[2:6])
	done := rec.events[6].(model.ItemDoneEvent)
	require.Equal(t, "reasoning", done.Type)
	require.Equal(t, "msg_1_1", rec.events[7].(model.ItemAddedEvent).ID)
	require.Equal(t, 1, rec.events[7].(model.ItemAddedEvent).OutputIndex)
	require.Equal(t, &model.Usage{InputTokens: 300, CachedInputTokens: 100, OutputTokens: 50, ReasoningOutputTokens: 30, TotalTokens: 350}, comp.Usage)
	require.Len(t, comp.Items, 2)
}

func TestStreamParallelFunctionCalls(t *testing.T) {
	mm := mockmodel.New(t)
	fc2 := mockmodel.FunctionCall("echo", "call_2", `{"text":"x"}`)
	fc2.Namespace = "mcp__tiny"
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{
		mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "echo hi"}), fc2,
		mockmodel.CustomToolCall("apply_patch", "call_3", "*** Begin Patch"),
	}})
	c := newClient(t, mm, nil)
	var rec recorder
	comp, err := c.Stream(testCtx(t), simpleRequest(), rec.on)
	require.NoError(t, err)
	var done []model.ItemDoneEvent
	for _, ev := range rec.events {
		if d, ok := ev.(model.ItemDoneEvent); ok {
			done = append(done, d)
		}
	}
	require.Len(t, done, 3)
	require.Equal(t, "function_call", done[0].Type)
	require.Equal(t, "fc_1_0", done[0].ID)
	require.JSONEq(t, `{"type":"function_call","id":"fc_1_0","call_id":"call_1","name":"exec_command","arguments":"{\"cmd\":\"echo hi\"}","status":"completed"}`, string(done[0].Item))
	require.JSONEq(t, `{"type":"function_call","id":"fc_1_1","call_id":"call_2","name":"echo","namespace":"mcp__tiny","arguments":"{\"text\":\"x\"}","status":"completed"}`, string(done[1].Item))
	require.Equal(t, "custom_tool_call", done[2].Type)
	require.Equal(t, 2, done[2].OutputIndex)
	require.Len(t, comp.Items, 3)
}

func TestHTTP500RetriesExhausted(t *testing.T) {
	mm := mockmodel.New(t)
	for range 3 {
		mm.Enqueue(mockmodel.Response{HTTPStatus: 500})
	}
	c := newClient(t, mm, func(p *model.Provider) { p.RequestMaxRetries = i64(2) })
	var rec recorder
	_, err := c.Stream(testCtx(t), simpleRequest(), rec.on)
	me := asModelError(t, err)
	require.Equal(t, "We\u2019re currently experiencing high demand, which may cause temporary errors.", me.Message)
	require.JSONEq(t, `"internalServerError"`, string(me.CodexErrorInfo))
	require.Equal(t, 500, me.HTTPStatus)
	require.Len(t, mm.ResponseRequests(), 3, "1 try + 2 silent retries")
	require.Empty(t, rec.events, "HTTP-level retries are silent")
}

func TestHTTP500StreamRetryNotice(t *testing.T) {
	mm := mockmodel.New(t)
	for range 4 {
		mm.Enqueue(mockmodel.Response{HTTPStatus: 500})
	}
	c := newClient(t, mm, func(p *model.Provider) { p.RequestMaxRetries = i64(1); p.StreamMaxRetries = i64(1) })
	var rec recorder
	_, err := c.Stream(testCtx(t), simpleRequest(), rec.on)
	me := asModelError(t, err)
	require.JSONEq(t, `"internalServerError"`, string(me.CodexErrorInfo))
	require.Len(t, mm.ResponseRequests(), 4, "(1+1 HTTP tries) × (1+1 stream attempts)")
	re := rec.retries()
	require.Len(t, re, 1)
	require.Equal(t, "Reconnecting... 1/1", re[0].Message())
	require.JSONEq(t, `{"responseStreamDisconnected":{"httpStatusCode":null}}`, string(re[0].CodexErrorInfo()))
	require.Equal(t, me.Message, re[0].Err.Message)
	require.Len(t, rec.events, 1, "no reset: nothing was delivered")
}

func TestHTTP500ThenSuccessIsSilent(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{HTTPStatus: 500}, mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	c := newClient(t, mm, func(p *model.Provider) { p.RequestMaxRetries = i64(1) })
	var rec recorder
	comp, err := c.Stream(testCtx(t), simpleRequest(), rec.on)
	require.NoError(t, err)
	require.Equal(t, "resp-2", comp.ResponseID)
	require.Len(t, mm.ResponseRequests(), 2)
	require.Empty(t, rec.retries())
	require.Equal(t, model.CreatedEvent{ResponseID: "resp-2"}, rec.events[0])
}

func TestTruncatedStreamRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp mockmodel.Response
	}{
		{"abort", mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("partial", 2)}, Truncate: true}},
		{"clean-eof", mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("partial", 2)}, Completed: mockmodel.Bool(false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(tc.resp, mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("full", 1)}})
			c := newClient(t, mm, func(p *model.Provider) { p.StreamMaxRetries = i64(1) })
			var rec recorder
			comp, err := c.Stream(testCtx(t), simpleRequest(), rec.on)
			require.NoError(t, err)
			require.Equal(t, "resp-2", comp.ResponseID)
			require.Len(t, comp.Items, 1, "only the successful attempt's items")
			idx := -1
			for i, ev := range rec.events {
				if _, ok := ev.(model.RetryEvent); ok {
					idx = i
				}
			}
			require.Greater(t, idx, 0)
			re := rec.events[idx].(model.RetryEvent)
			require.Equal(t, 1, re.Attempt)
			require.Equal(t, 1, re.Max)
			require.Equal(t, "Reconnecting... 1/1", re.Message())
			require.Equal(t, "stream disconnected before completion: stream closed before response.completed", re.Err.Message)
			require.JSONEq(t, `{"responseStreamDisconnected":{"httpStatusCode":null}}`, string(re.CodexErrorInfo()))
			require.Positive(t, re.Delay)
			require.Equal(t, model.ResetEvent{Attempt: 1}, rec.events[idx+1])
			require.Equal(t, model.CreatedEvent{ResponseID: "resp-2"}, rec.events[idx+2])
		})
	}
}

func TestTruncatedStreamExhausted(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Completed: mockmodel.Bool(false)})
	c := newClient(t, mm, nil)
	_, err := c.Stream(testCtx(t), simpleRequest(), nil)
	me := asModelError(t, err)
	require.Equal(t, "stream disconnected before completion: stream closed before response.completed", me.Message)
	require.JSONEq(t, `"other"`, string(me.CodexErrorInfo))
}

func TestIdleTimeout(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("abc", 3), mockmodel.Hang(600)}})
	// The idle timeout runs on a fake clock, advanced only once the message was delivered and the mock
	// hangs: however slow the machine, the events before the hang come first and only the hang times out.
	clock := stopwatchtest.NewFakeClock(time.Unix(0, 0))
	p := model.Provider{ID: "mock", Name: "Mock", BaseURL: mm.URL(), WireAPI: "responses",
		RequestMaxRetries: i64(0), StreamMaxRetries: i64(0), StreamIdleTimeoutMs: i64(300)}
	c := model.NewClient(p, model.Options{BaseBackoff: 10 * time.Millisecond, NetworkBackoff: 10 * time.Millisecond, Clock: clock})
	var mu sync.Mutex
	var events []model.Event
	done := make(chan error, 1)
	go func() {
		_, err := c.Stream(testCtx(t), simpleRequest(), func(ev model.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() })
		done <- err
	}()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(events) == 0 {
			return false
		}
		_, ok := events[len(events)-1].(model.ItemDoneEvent)
		return ok
	}, time.Minute, 5*time.Millisecond, "the message before the hang was not delivered")
	require.Eventually(t, func() bool { return mm.HasNote("hang") }, time.Minute, 5*time.Millisecond, "the mock never reached the hang")
	var err error
	for err == nil { // a read after the message (none expected) would re-arm the timer: advance until it ends
		clock.Advance(300 * time.Millisecond)
		select {
		case err = <-done:
			require.Error(t, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	me := asModelError(t, err)
	require.Equal(t, "stream disconnected before completion: idle timeout waiting for SSE", me.Message)
	require.JSONEq(t, `"other"`, string(me.CodexErrorInfo))
	require.Eventually(t, func() bool { return mm.HasNote("client_disconnected_during_hang") }, time.Minute, 20*time.Millisecond)
}

func TestIdleTimeoutBeforeHeaders(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{DelayMs: 5000})
	c := newClient(t, mm, func(p *model.Provider) { p.StreamIdleTimeoutMs = i64(200) })
	_, err := c.Stream(testCtx(t), simpleRequest(), nil)
	require.Equal(t, "stream disconnected before completion: idle timeout waiting for SSE", asModelError(t, err).Message)
}

func TestStatusErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		resp    mockmodel.Response
		message string // "%URL%" is replaced by the responses URL
		info    string
	}{
		{"401", mockmodel.Response{HTTPStatus: 401, ErrorBody: map[string]any{"error": map[string]any{"message": "bad key", "code": "invalid_api_key"}}},
			"unexpected status 401 Unauthorized: bad key, url: %URL%", `{"httpConnectionFailed":{"httpStatusCode":401}}`},
		{"403-plain", mockmodel.Response{HTTPStatus: 403, ErrorBody: "plain"},
			`unexpected status 403 Forbidden: "plain", url: %URL%`, `{"httpConnectionFailed":{"httpStatusCode":403}}`},
		{"400", mockmodel.Response{HTTPStatus: 400, ErrorBody: map[string]any{"error": map[string]any{"message": "bad req"}}},
			`{"error":{"message":"bad req"}}`, `"other"`},
		{"429", mockmodel.Response{HTTPStatus: 429, ErrorBody: map[string]any{"error": map[string]any{"message": "slow down"}}},
			"exceeded retry limit, last status: 429 Too Many Requests", `{"responseTooManyFailedAttempts":{"httpStatusCode":429}}`},
		{"502", mockmodel.Response{HTTPStatus: 502},
			"unexpected status 502 Bad Gateway: mockmodel scripted HTTP 502, url: %URL%", `{"httpConnectionFailed":{"httpStatusCode":502}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(tc.resp)
			c := newClient(t, mm, nil)
			_, err := c.Stream(testCtx(t), simpleRequest(), nil)
			me := asModelError(t, err)
			require.Equal(t, strings.ReplaceAll(tc.message, "%URL%", mm.URL()+"/responses"), me.Message)
			require.JSONEq(t, tc.info, string(me.CodexErrorInfo))
			require.Equal(t, tc.resp.HTTPStatus, me.HTTPStatus)
		})
	}
}

func TestNonRetryableStatusesAreNotRetried(t *testing.T) {
	for _, status := range []int{400, 429} {
		mm := mockmodel.New(t)
		mm.Enqueue(mockmodel.Response{HTTPStatus: status}, mockmodel.Response{HTTPStatus: status})
		c := newClient(t, mm, func(p *model.Provider) { p.RequestMaxRetries = i64(3); p.StreamMaxRetries = i64(3) })
		var rec recorder
		_, err := c.Stream(testCtx(t), simpleRequest(), rec.on)
		require.Equal(t, status, asModelError(t, err).HTTPStatus)
		require.Len(t, mm.ResponseRequests(), 1, "status %d", status)
		require.Empty(t, rec.events)
	}
}

func TestUnexpectedStatusStreamRetried(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{HTTPStatus: 401, ErrorBody: map[string]any{"error": map[string]any{"message": "bad key"}}, Headers: map[string]string{"retry-after": "1"}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	c := newClient(t, mm, func(p *model.Provider) { p.StreamMaxRetries = i64(2) })
	var rec recorder
	_, err := c.Stream(testCtx(t), simpleRequest(), rec.on)
	require.NoError(t, err)
	re := rec.retries()
	require.Len(t, re, 1)
	require.Equal(t, "Reconnecting... 1/2", re[0].Message())
	require.JSONEq(t, `{"responseStreamDisconnected":{"httpStatusCode":401}}`, string(re[0].CodexErrorInfo()))
	require.Equal(t, time.Second, re[0].Delay, "retry-after honoured")
}

func TestRetryAfterHonouredOnSilentRetry(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{HTTPStatus: 503, Headers: map[string]string{"Retry-After": "1"}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	c := newClient(t, mm, func(p *model.Provider) { p.RequestMaxRetries = i64(1) })
	start := time.Now()
	_, err := c.Stream(testCtx(t), simpleRequest(), nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "backoff is 10ms; only retry-after explains the wait")
}

func failed(code, msg string) mockmodel.Response {
	return mockmodel.Response{Completed: mockmodel.Bool(false), Items: []mockmodel.Item{mockmodel.RawEvent(map[string]any{
		"type": "response.failed", "response": map[string]any{"id": "r", "status": "failed", "error": map[string]any{"code": code, "message": msg}}})}}
}

func TestResponseFailedMapping(t *testing.T) {
	incomplete := mockmodel.Response{Completed: mockmodel.Bool(false), Items: []mockmodel.Item{mockmodel.RawEvent(map[string]any{
		"type": "response.incomplete", "response": map[string]any{"id": "r", "status": "incomplete", "incomplete_details": map[string]any{"reason": "max_output_tokens"}}})}}
	for _, tc := range []struct {
		name    string
		resp    mockmodel.Response
		message string
		info    string
	}{
		{"context", failed("context_length_exceeded", "too long"),
			"Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying.", `"contextWindowExceeded"`},
		{"quota", failed("insufficient_quota", "x"), "Quota exceeded. Check your plan and billing details.", `"usageLimitExceeded"`},
		{"usage-not-included", failed("usage_not_included", "x"),
			"To use Codex with your ChatGPT plan, upgrade to Plus: https://chatgpt.com/explore/plus.", `"usageLimitExceeded"`},
		{"overloaded", failed("server_is_overloaded", "x"), "Selected model is at capacity. Please try a different model.", `"serverOverloaded"`},
		{"slow-down", failed("slow_down", "x"), "Selected model is at capacity. Please try a different model.", `"serverOverloaded"`},
		{"generic", failed("boom", "generic failure"), "stream disconnected before completion: generic failure", `"other"`},
		{"rate-limit", failed("rate_limit_exceeded", "Rate limit reached."), "rate limit exceeded: Rate limit reached.", `"other"`},
		{"incomplete", incomplete, "Incomplete response returned, reason: max_output_tokens", `"other"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(tc.resp)
			c := newClient(t, mm, nil)
			_, err := c.Stream(testCtx(t), simpleRequest(), nil)
			me := asModelError(t, err)
			require.Equal(t, tc.message, me.Message)
			require.JSONEq(t, tc.info, string(me.CodexErrorInfo))
			require.Equal(t, tc.name == "context", model.IsContextWindowExceeded(err))
		})
	}
}

func TestFatalResponseFailedNotRetried(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(failed("context_length_exceeded", "x"), mockmodel.Response{})
	c := newClient(t, mm, func(p *model.Provider) { p.StreamMaxRetries = i64(3) })
	_, err := c.Stream(testCtx(t), simpleRequest(), nil)
	require.True(t, model.IsContextWindowExceeded(err))
	require.Len(t, mm.ResponseRequests(), 1)
}

func TestRateLimitHintUsedAsDelay(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(failed("rate_limit_exceeded", "Rate limit reached. Please try again in 0.3s."),
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	c := newClient(t, mm, func(p *model.Provider) { p.StreamMaxRetries = i64(1) })
	var rec recorder
	_, err := c.Stream(testCtx(t), simpleRequest(), rec.on)
	require.NoError(t, err)
	re := rec.retries()
	require.Len(t, re, 1)
	require.Equal(t, 300*time.Millisecond, re[0].Delay)
	require.Equal(t, "rate limit exceeded: Rate limit reached. Please try again in 0.3s.", re[0].Err.Message)
}

func TestCancelMidStreamClosesConnection(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{{Type: "message", Text: "abcd", Chunks: 4, HangAfterChunks: mockmodel.Int(2), MaxS: 30}}})
	c := newClient(t, mm, nil)
	ctx, cancel := context.WithCancel(testCtx(t))
	deltas := 0
	_, err := c.Stream(ctx, simpleRequest(), func(ev model.Event) {
		if _, ok := ev.(model.TextDeltaEvent); ok {
			deltas++
			if deltas == 2 {
				cancel()
			}
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Eventually(t, func() bool {
		return mm.HasNote("client_disconnected_during_hang") || mm.HasNote("client_disconnected_mid_stream")
	}, time.Minute, 20*time.Millisecond)
}

func TestCancelDuringBackoff(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{HTTPStatus: 503, Headers: map[string]string{"retry-after": "60"}})
	c := newClient(t, mm, func(p *model.Provider) { p.StreamMaxRetries = i64(1) })
	ctx, cancel := context.WithCancel(testCtx(t))
	_, err := c.Stream(ctx, simpleRequest(), func(ev model.Event) {
		if _, ok := ev.(model.RetryEvent); ok {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
}

func TestConnectionFailureWaitsForNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := model.NewClient(model.Provider{ID: "x", BaseURL: "http://" + addr + "/v1", RequestMaxRetries: i64(1), StreamMaxRetries: i64(0)},
		model.Options{BaseBackoff: time.Millisecond, NetworkBackoff: time.Millisecond})
	ctx, cancel := context.WithCancel(testCtx(t))
	var rec recorder
	_, err = c.Stream(ctx, simpleRequest(), func(ev model.Event) {
		rec.on(ev)
		if len(rec.retries()) == 3 {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	re := rec.retries()
	require.Len(t, re, 3, "connection failures are retried beyond stream_max_retries")
	require.Equal(t, "Reconnecting... waiting for network", re[2].Message())
	require.Equal(t, 3, re[2].Attempt)
	require.Equal(t, "Connection failed: error sending request", re[0].Err.Message)
	require.NotNil(t, errors.Unwrap(re[0].Err))
}

func TestHeadersAndBody(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	env := map[string]string{"MY_KEY": "sk-test", "ORG_ENV": "org-7"}
	c := model.NewClient(model.Provider{
		ID: "mock", BaseURL: mm.URL() + "/", EnvKey: "MY_KEY",
		QueryParams:    map[string]string{"api-version": "2025-04-01"},
		HTTPHeaders:    map[string]string{"x-static": "s1"},
		EnvHTTPHeaders: map[string]string{"x-org": "ORG_ENV", "x-absent": "NOT_SET"},
	}, model.Options{Getenv: func(k string) string { return env[k] }})
	item := `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA<&>=","future_field":{"a":[1,2]}}`
	req := &model.Request{
		Model:             "gpt-x",
		Input:             []json.RawMessage{json.RawMessage(item)},
		Tools:             []json.RawMessage{json.RawMessage(`{"type":"web_search","external_web_access":false}`)},
		ParallelToolCalls: true,
		Reasoning:         json.RawMessage(`{"summary":"auto"}`),
		Include:           []string{"reasoning.encrypted_content"},
		PromptCacheKey:    "thread-1",
		ClientMetadata:    map[string]string{"thread_id": "thread-1"},
		Headers: map[string]string{"originator": "conformance", "session-id": "thread-1", "thread-id": "thread-1",
			"x-client-request-id": "thread-1", "x-codex-window-id": "thread-1:0", "x-codex-turn-metadata": `{"turn_id":"t"}`,
			"user-agent": "conformance/0.1"},
	}
	_, err := c.Stream(testCtx(t), req, nil)
	require.NoError(t, err)
	rs := mm.ResponseRequests()
	require.Len(t, rs, 1)
	r := rs[0]
	require.Equal(t, "/v1/responses", r.Path)
	require.Equal(t, "api-version=2025-04-01", r.Query)
	for k, v := range map[string]string{
		"authorization": "Bearer sk-test", "accept": "text/event-stream", "content-type": "application/json",
		"originator": "conformance", "user-agent": "conformance/0.1", "session-id": "thread-1", "thread-id": "thread-1",
		"x-client-request-id": "thread-1", "x-codex-window-id": "thread-1:0", "x-codex-turn-metadata": `{"turn_id":"t"}`,
		"x-static": "s1", "x-org": "org-7",
	} {
		require.Equal(t, v, r.Header.Get(k), k)
	}
	_, present := r.Header[http.CanonicalHeaderKey("x-absent")]
	require.False(t, present, "env header with unset var is skipped")

	require.Contains(t, string(r.Raw), item, "input items are replayed byte-for-byte")
	require.NotContains(t, r.Body, "instructions")
	require.Equal(t, "gpt-x", r.Body["model"])
	require.Equal(t, true, r.Body["stream"])
	require.Equal(t, false, r.Body["store"])
	require.Equal(t, "auto", r.Body["tool_choice"])
	require.Equal(t, true, r.Body["parallel_tool_calls"])
	require.Equal(t, map[string]any{"summary": "auto"}, r.Body["reasoning"])
	require.Equal(t, []any{"reasoning.encrypted_content"}, r.Body["include"])
	require.Equal(t, "thread-1", r.Body["prompt_cache_key"])
	require.Equal(t, map[string]any{"thread_id": "thread-1"}, r.Body["client_metadata"])
	require.Len(t, r.Body["tools"], 1)

	// Key order as the reference sends it.
	var order []string
	dec := json.NewDecoder(strings.NewReader(string(r.Raw)))
	_, _ = dec.Token()
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		order = append(order, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	require.Equal(t, []string{"model", "stream", "input", "tools", "tool_choice", "parallel_tool_calls", "reasoning",
		"store", "include", "prompt_cache_key", "client_metadata"}, order)
}

func TestBearerTokenAndNoAuth(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{}, mockmodel.Response{})
	_, err := newClient(t, mm, func(p *model.Provider) { p.ExperimentalBearerToken = "tok"; p.EnvKey = "UNSET_KEY_X" }).
		Stream(testCtx(t), simpleRequest(), nil)
	require.NoError(t, err)
	_, err = newClient(t, mm, nil).Stream(testCtx(t), simpleRequest(), nil)
	require.NoError(t, err)
	rs := mm.ResponseRequests()
	require.Equal(t, "Bearer tok", rs[0].Header.Get("Authorization"))
	require.Empty(t, rs[1].Header.Get("Authorization"))
}

func TestMissingEnvKey(t *testing.T) {
	mm := mockmodel.New(t)
	c := model.NewClient(model.Provider{ID: "x", BaseURL: mm.URL(), EnvKey: "MY_MISSING_KEY", EnvKeyInstructions: "Set it in your shell."},
		model.Options{Getenv: func(string) string { return "" }})
	_, err := c.Stream(testCtx(t), simpleRequest(), nil)
	me := asModelError(t, err)
	require.Equal(t, "Missing environment variable: `MY_MISSING_KEY`. Set it in your shell.", me.Message)
	require.Empty(t, mm.Requests(), "nothing is sent without a key")
}

func TestBadInputItem(t *testing.T) {
	mm := mockmodel.New(t)
	c := newClient(t, mm, nil)
	req := simpleRequest()
	req.Input = append(req.Input, json.RawMessage(`{not json`))
	_, err := c.Stream(testCtx(t), req, nil)
	asModelError(t, err)
	_, err = c.Stream(testCtx(t), nil, nil)
	require.EqualError(t, err, "model request is nil")
	require.Empty(t, mm.Requests())
}

func TestConcurrentStreams(t *testing.T) {
	mm := mockmodel.New(t)
	const n = 8
	for range n {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("hello world", 3)}})
	}
	c := newClient(t, mm, nil)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := c.Stream(testCtx(t), simpleRequest(), nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestListModels(t *testing.T) {
	mm := mockmodel.New(t)
	c := newClient(t, mm, func(p *model.Provider) { p.QueryParams = map[string]string{"v": "1"} })
	ids, err := c.ListModels(testCtx(t))
	require.NoError(t, err)
	require.Empty(t, ids)
	require.Equal(t, "/v1/models", mm.Requests()[0].Path)
	require.Equal(t, "v=1", mm.Requests()[0].Query)

	mm.SetModels(map[string]any{"object": "list", "data": []any{map[string]any{"id": "llama3"}, map[string]any{"id": "qwen"}}})
	ids, err = c.ListModels(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, []string{"llama3", "qwen"}, ids)

	mm.SetModels(map[string]any{"models": []any{map[string]any{"slug": "a"}, "b"}})
	ids, err = c.ListModels(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, ids)

	mm.SetModels([]any{1, 2})
	_, err = c.ListModels(testCtx(t))
	require.Error(t, err, "not an object")
}

func TestListModelsErrors(t *testing.T) {
	slow := make(chan struct{})
	srv := newHTTPServer(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.RawQuery, "slow") {
			select {
			case <-slow:
			case <-r.Context().Done():
			}
			return
		}
		http.Error(w, `{"error":{"message":"nope"}}`, http.StatusNotFound)
	})
	defer close(slow)
	_, err := model.NewClient(model.Provider{BaseURL: srv + "/v1"}, model.Options{}).ListModels(testCtx(t))
	require.ErrorContains(t, err, "404")
	start := time.Now()
	_, err = model.NewClient(model.Provider{BaseURL: srv + "/v1", QueryParams: map[string]string{"slow": "1"}}, model.Options{}).ListModels(testCtx(t))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 20*time.Second)
}

func TestNetworkWaitsAreBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	for _, tc := range []struct {
		name  string
		limit *int64
		want  int
	}{{"default", nil, model.DefaultNetworkWaitMaxRetries}, {"configured", i64(2), 2}, {"zero", i64(0), 0}} {
		t.Run(tc.name, func(t *testing.T) {
			c := model.NewClient(model.Provider{ID: "x", BaseURL: "http://" + addr + "/v1", RequestMaxRetries: i64(0),
				StreamMaxRetries: i64(0), NetworkWaitMaxRetries: tc.limit},
				model.Options{BaseBackoff: time.Microsecond, NetworkBackoff: time.Microsecond})
			var rec recorder
			_, err := c.Stream(testCtx(t), simpleRequest(), rec.on)
			var me *model.Error
			require.ErrorAs(t, err, &me, "the turn fails once the network waits are used up")
			require.Equal(t, "Connection failed: error sending request", me.Message)
			require.Len(t, rec.retries(), tc.want)
		})
	}
}

// resetServer accepts connections, reads the request and resets the connection before any response.
func resetServer(t *testing.T) (url string, accepted func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			buf := make([]byte, 64<<10)
			_, _ = c.Read(buf)
			_ = c.(*net.TCPConn).SetLinger(0)
			_ = c.Close()
		}
	}()
	return "http://" + ln.Addr().String() + "/v1", func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestResetBeforeHeadersFailsWithinRetries: a connection reset after the request was sent is a stream
// disconnect, retried (request_max_retries+1)·(stream_max_retries+1) times in all, then the turn fails — as
// the reference (it used to wait for the network forever).
func TestResetBeforeHeadersFailsWithinRetries(t *testing.T) {
	for _, tc := range []struct{ req, stream int64 }{{0, 0}, {2, 1}} {
		t.Run(fmt.Sprintf("request=%d,stream=%d", tc.req, tc.stream), func(t *testing.T) {
			url, accepted := resetServer(t)
			c := model.NewClient(model.Provider{ID: "x", BaseURL: url, RequestMaxRetries: i64(tc.req), StreamMaxRetries: i64(tc.stream)},
				model.Options{BaseBackoff: time.Microsecond, NetworkBackoff: time.Microsecond})
			var rec recorder
			_, err := c.Stream(testCtx(t), simpleRequest(), rec.on)
			var me *model.Error
			require.ErrorAs(t, err, &me)
			require.Equal(t, "stream disconnected before completion: error sending request", me.Message)
			require.Equal(t, model.InfoString(model.InfoOther), me.CodexErrorInfo)
			re := rec.retries()
			require.Len(t, re, int(tc.stream))
			for i, r := range re {
				require.Equal(t, fmt.Sprintf("Reconnecting... %d/%d", i+1, tc.stream), r.Message())
			}
			require.Equal(t, int((tc.req+1)*(tc.stream+1)), accepted())
		})
	}
}
