package mockmodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type sseEvent struct {
	name string
	data map[string]any
}

// post sends body to {base}/responses and returns the status and the parsed SSE events.
func post(t *testing.T, ctx context.Context, s *Server, body string) (int, []sseEvent, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/responses", strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, nil, b
	}
	var evs []sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m))
			require.Equal(t, name, m["type"])
			evs = append(evs, sseEvent{name, m})
		}
	}
	return resp.StatusCode, evs, nil
}

func types(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.name)
	}
	return out
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestMessageStream(t *testing.T) {
	s := New(t)
	s.Enqueue(Response{Items: []Item{Message("Hello from the mock model!", 4)}, EventDelayMs: Int(0)})
	status, evs, _ := post(t, ctx(t), s, `{"model":"m","input":[]}`)
	require.Equal(t, 200, status)
	require.Equal(t, []string{"response.created", "response.output_item.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_item.done", "response.completed"}, types(evs))
	var text string
	for _, e := range evs[2:6] {
		require.Equal(t, "msg_1_0", e.data["item_id"])
		text += e.data["delta"].(string)
	}
	require.Equal(t, "Hello from the mock model!", text)
	require.Equal(t, "resp-1", evs[0].data["response"].(map[string]any)["id"])
	usage := evs[7].data["response"].(map[string]any)["usage"].(map[string]any)
	require.EqualValues(t, 120, usage["total_tokens"])
	require.EqualValues(t, map[string]any{"cached_tokens": 0.0}, usage["input_tokens_details"])

	r := s.ResponseRequests()
	require.Len(t, r, 1)
	require.Equal(t, "m", r[0].Body["model"])
	require.Equal(t, `{"model":"m","input":[]}`, string(r[0].Raw))
}

func TestItemIDsAndKinds(t *testing.T) {
	s := New(t)
	fc := FunctionCall("echo", "", map[string]any{"a": 1})
	fc.Namespace = "mcp__tiny"
	s.Enqueue(Response{}, Response{ID: "custom", EventDelayMs: Int(0), Usage: map[string]any{"total_tokens": 7}, Items: []Item{
		Reasoning("one", "two"), Sleep(1), fc, CustomToolCall("apply_patch", "call_x", "patch"),
		RawEvent(map[string]any{"type": "response.weird", "x": 1}), {Type: "message", Text: "p", Phase: "final_answer", ID: "msg_fixed"},
	}})
	post(t, ctx(t), s, `{}`)
	_, evs, _ := post(t, ctx(t), s, `{}`)
	require.Equal(t, "custom", evs[0].data["response"].(map[string]any)["id"])
	byType := map[string][]map[string]any{}
	for _, e := range evs {
		if e.name == "response.output_item.done" {
			it := e.data["item"].(map[string]any)
			byType[it["type"].(string)] = append(byType[it["type"].(string)], it)
		}
	}
	require.Equal(t, "rs_2_0", byType["reasoning"][0]["id"])
	require.Len(t, byType["reasoning"][0]["summary"], 2)
	f := byType["function_call"][0]
	require.Equal(t, "fc_2_2", f["id"])
	require.Equal(t, "call_2_2", f["call_id"])
	require.Equal(t, "mcp__tiny", f["namespace"])
	require.Equal(t, `{"a":1}`, f["arguments"])
	require.Equal(t, "ctc_2_3", byType["custom_tool_call"][0]["id"])
	require.Equal(t, "call_x", byType["custom_tool_call"][0]["call_id"])
	require.Equal(t, "msg_fixed", byType["message"][0]["id"])
	require.Equal(t, "final_answer", byType["message"][0]["phase"])
	require.Contains(t, types(evs), "response.weird")
	require.Contains(t, types(evs), "response.reasoning_summary_part.added")
	last := evs[len(evs)-1]
	require.EqualValues(t, 7, last.data["response"].(map[string]any)["usage"].(map[string]any)["total_tokens"])
}

func TestErrorStatusAndHeaders(t *testing.T) {
	s := New(t)
	s.Enqueue(Response{HTTPStatus: 503, Headers: map[string]string{"Retry-After": "2"}},
		Response{HTTPStatus: 400, ErrorBody: map[string]any{"error": map[string]any{"message": "bad"}}})
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/responses", strings.NewReader("{}"))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 503, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("Retry-After"))
	require.JSONEq(t, `{"error":{"type":"server_error","message":"mockmodel scripted HTTP 503"}}`, string(b))
	status, _, body := post(t, ctx(t), s, `{}`)
	require.Equal(t, 400, status)
	require.JSONEq(t, `{"error":{"message":"bad"}}`, string(body))
}

func TestFallbackAndModels(t *testing.T) {
	s := New(t)
	_, evs, _ := post(t, ctx(t), s, `{}`)
	require.Equal(t, "mock: no scripted response", evs[len(evs)-2].data["item"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"])
	require.Equal(t, 1, s.Exhausted())
	require.True(t, s.HasNote("exhausted"))

	resp, err := http.Get(s.URL() + "/models")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.JSONEq(t, `{"models":[]}`, string(b))
	s.SetModels(map[string]any{"data": []any{}})
	resp, err = http.Get(s.URL() + "/models")
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.JSONEq(t, `{"data":[]}`, string(b))

	resp, err = http.Get(s.URL() + "/nope")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode)
	require.Len(t, s.Requests(), 4)
	require.Len(t, s.ResponseRequests(), 1)
}

func TestCaptures(t *testing.T) {
	s := New(t)
	s.Enqueue(Response{EventDelayMs: Int(0), Items: []Item{
		FunctionCall("write_stdin", "c2", map[string]any{"session_id": "{{capture_int:session ID (\\d+)}}", "chars": "id={{capture:session ID (\\d+)}}!"}),
	}})
	body := `{"input":[{"type":"function_call_output","call_id":"c1","output":"Process running with session ID 41"},
		{"type":"message","content":"session ID 99"},
		{"type":"custom_tool_call_output","output":{"x":"session ID 42"}}]}`
	_, evs, _ := post(t, ctx(t), s, body)
	var args string
	for _, e := range evs {
		if e.name == "response.output_item.done" {
			args = e.data["item"].(map[string]any)["arguments"].(string)
		}
	}
	require.JSONEq(t, `{"session_id":42,"chars":"id=42!"}`, args, "last match, only *_call_output items")
}

func TestCaptureFailureNoted(t *testing.T) {
	s := New(t)
	s.Enqueue(Response{EventDelayMs: Int(0), Items: []Item{Message("{{capture:nothing (\\d+)}}", 1)}})
	_, evs, _ := post(t, ctx(t), s, `{"input":[]}`)
	require.Equal(t, "{{capture:nothing (\\d+)}}", evs[2].data["delta"], "served unsubstituted")
	notes := s.Notes()
	require.Len(t, notes, 1)
	require.Contains(t, notes[0].What, "capture_failed")
}

func TestHangReleaseAndDisconnect(t *testing.T) {
	s := New(t)
	s.Enqueue(Response{EventDelayMs: Int(0), Items: []Item{Hang(30), Message("after", 1)}},
		Response{EventDelayMs: Int(0), Items: []Item{{Type: "message", Text: "ab", Chunks: 2, HangAfterChunks: Int(1), MaxS: 30}}})
	var wg sync.WaitGroup
	var evs []sseEvent
	wg.Go(func() { _, evs, _ = post(t, ctx(t), s, `{}`) })
	require.Eventually(t, func() bool { return s.HasNote("hang") }, time.Minute, 10*time.Millisecond)
	s.Release()
	wg.Wait()
	require.Equal(t, "response.completed", evs[len(evs)-1].name)
	require.True(t, s.HasNote("hang_released"))

	// After Release, hangs return at once.
	_, evs, _ = post(t, ctx(t), s, `{}`)
	require.Equal(t, "response.completed", evs[len(evs)-1].name)
}

func TestClientDisconnectDuringHang(t *testing.T) {
	s := New(t)
	s.Enqueue(Response{EventDelayMs: Int(0), Items: []Item{Message("x", 1), Hang(30)}})
	c, cancel := context.WithCancel(ctx(t))
	req, _ := http.NewRequestWithContext(c, http.MethodPost, s.URL()+"/responses", strings.NewReader("{}"))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.HasNote("hang") }, time.Minute, 10*time.Millisecond)
	cancel()
	resp.Body.Close()
	require.Eventually(t, func() bool { return s.HasNoteFor("client_disconnected_during_hang", 0) }, time.Minute, 10*time.Millisecond)
}

func TestTruncate(t *testing.T) {
	s := New(t)
	s.Enqueue(Response{EventDelayMs: Int(0), Truncate: true, Items: []Item{Message("x", 1)}},
		Response{EventDelayMs: Int(0), Completed: Bool(false), Items: []Item{Message("x", 1)}})
	resp, err := http.Post(s.URL()+"/responses", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "aborted without the final chunk")
	require.Contains(t, string(b), "response.output_item.done")
	require.NotContains(t, string(b), "response.completed")

	resp, err = http.Post(s.URL()+"/responses", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	b, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err, "completed:false ends cleanly")
	require.NotContains(t, string(b), "response.completed")
}

func TestWaitRequests(t *testing.T) {
	s := New(t)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s.WaitRequests(short, 1), context.DeadlineExceeded)
	go func() {
		resp, err := http.Post(s.URL()+"/responses", "application/json", strings.NewReader("{}"))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	require.NoError(t, s.WaitRequests(ctx(t), 1))
}

func TestSpecJSONMatchesHarness(t *testing.T) {
	// A response spec as written in the harness's scenario files.
	raw := `[{"items":[{"type":"message","text":"Hi","chunks":2,"hang_after_chunks":null},
	  {"type":"function_call","name":"exec_command","namespace":null,"call_id":"call_1","arguments":{"cmd":"echo hi"}},
	  {"type":"reasoning","summary":["a"]},{"type":"hang","max_s":120},{"type":"sleep","ms":500},
	  {"type":"raw_event","event":{"type":"response.failed"}}],
	  "usage":{"input_tokens":1},"completed":false,"event_delay_ms":0,"http_status":200,"delay_ms":0}]`
	var specs []Response
	require.NoError(t, json.Unmarshal([]byte(raw), &specs))
	require.Len(t, specs[0].Items, 6)
	require.Equal(t, "call_1", specs[0].Items[1].CallID)
	require.False(t, *specs[0].Completed)
	require.Equal(t, 0, *specs[0].EventDelayMs)
	require.InDelta(t, 120, specs[0].Items[3].MaxS, 0)
}

func TestSplit(t *testing.T) {
	require.Equal(t, []string{"Hello", " from", " the ", "mock ", "model", "!"}, split("Hello from the mock model!", 6))
	require.Equal(t, []string{""}, split("", 3))
	require.Equal(t, []string{"a", "b"}, split("ab", 9))
	require.Equal(t, []string{"é", "è"}, split("éè", 2), "rune-safe")
	require.Equal(t, []string{"abc"}, split("abc", 0))
}

type fakeTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func TestBadSpecReported(t *testing.T) {
	ftb := &fakeTB{TB: t}
	s := New(ftb)
	s.Enqueue(Response{EventDelayMs: Int(0), Items: []Item{{Type: "bogus"}}}, Response{Items: []Item{RawEvent(map[string]any{"x": 1})}})
	post(t, ctx(t), s, `{}`)
	post(t, ctx(t), s, `{}`)
	ftb.mu.Lock()
	defer ftb.mu.Unlock()
	require.Len(t, ftb.errs, 2)
	require.Contains(t, ftb.errs[0], `unknown item type "bogus"`)
	require.Contains(t, ftb.errs[1], "no type")
	require.True(t, bytes.Contains([]byte(strings.Join(ftb.errs, "")), []byte("mockmodel")))
}
