package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// mockModelName is the model the mock reports and the turn config selects.
const mockModelName = "mock-model"

// mockResponses is a zero-latency stand-in for the OpenAI Responses API:
// every POST .../responses gets one short assistant message as SSE.
type mockResponses struct {
	srv    *http.Server
	ln     net.Listener
	served atomic.Int64 // POST .../responses received (counted before answering)
	// tools, when > 0, makes a request whose input does not end with a function_call_output answer with that many exec_command
	// calls (`true`) instead of a message; set before the first request.
	tools int
	// noEcho makes a text answer "ok" without reading the prompt out of the request body (which holds the
	// whole history): the turn subcommand checks no answer text, and the decoding is on every measured
	// turn's path for both servers. scale echoes the prompt to check for cross-talk.
	noEcho   bool
	done     chan struct{}
	serveErr error
}

// startMockResponses listens on 127.0.0.1 with an ephemeral port and serves
// until close.
func startMockResponses() (*mockResponses, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mock model: %w", err)
	}
	m := &mockResponses{ln: ln, done: make(chan struct{})}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.handle), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			m.serveErr = err
		}
	}()
	return m, nil
}

// baseURL is the provider base_url to configure, ending in /v1.
func (m *mockResponses) baseURL() string { return "http://" + m.ln.Addr().String() + "/v1" }

// close stops the server and waits for its goroutine.
func (m *mockResponses) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	if err != nil {
		err = m.srv.Close()
	}
	<-m.done
	return errors.Join(err, m.serveErr)
}

var mockUsage = map[string]any{
	"input_tokens":          100,
	"input_tokens_details":  map[string]any{"cached_tokens": 0},
	"output_tokens":         20,
	"output_tokens_details": map[string]any{"reasoning_tokens": 0},
	"total_tokens":          120,
}

// bodyBufs are the request body buffers of the mock's handlers: reading each turn's whole history into a
// fresh buffer grown from 512 bytes was most of the mock's time per turn, on every measured turn's path.
var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (m *mockResponses) handle(w http.ResponseWriter, r *http.Request) {
	buf := bodyBufs.Get().(*bytes.Buffer)
	defer bodyBufs.Put(buf)
	buf.Reset()
	_, _ = buf.ReadFrom(r.Body)
	body := buf.Bytes()
	path := strings.TrimRight(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"models":[]}`)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		seq := m.served.Add(1)
		if m.tools > 0 && !endsWithToolOutput(body) {
			_ = m.streamTools(w, seq)
			return
		}
		text := "ok"
		if m.noEcho {
			_ = m.stream(w, seq, text)
			return
		}
		if u := lastUserText(body); u != "" {
			text += ": " + u
		}
		_ = m.stream(w, seq, text)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"message":"appserver-bench mock: unknown path"}}`)
	}
}

// stream writes the five events of one text-only response and flushes once. The events are written by
// hand (the same JSON as encoding them from maps, which took a tenth of the mock's time per turn).
func (m *mockResponses) stream(w http.ResponseWriter, seq int64, text string) error {
	n := strconv.FormatInt(seq, 10)
	rid, mid := `"resp-`+n+`"`, `"msg_`+n+`_0"`
	t, err := json.Marshal(text)
	if err != nil {
		return err
	}
	usage, err := json.Marshal(mockUsage)
	if err != nil {
		return err
	}
	b := make([]byte, 0, 1024)
	ev := func(typ string, fields ...string) {
		b = append(b, "event: "+typ+"\ndata: {\"type\":\""+typ+"\""...)
		for _, f := range fields {
			b = append(b, ',')
			b = append(b, f...)
		}
		b = append(b, "}\n\n"...)
	}
	ev("response.created", `"response":{"id":`+rid+`,"model":"`+mockModelName+`","object":"response","output":[],"status":"in_progress"}`)
	ev("response.output_item.added", `"item":{"content":[],"id":`+mid+`,"role":"assistant","status":"in_progress","type":"message"}`, `"output_index":0`)
	ev("response.output_text.delta", `"content_index":0`, `"delta":`+string(t), `"item_id":`+mid, `"output_index":0`)
	ev("response.output_item.done", `"item":{"content":[{"annotations":[],"text":`+string(t)+`,"type":"output_text"}],"id":`+mid+
		`,"role":"assistant","status":"completed","type":"message"}`, `"output_index":0`)
	ev("response.completed", `"response":{"id":`+rid+`,"model":"`+mockModelName+`","object":"response","status":"completed","usage":`+string(usage)+`}`)
	return writeSSE(w, b)
}

// streamTools writes one response holding m.tools exec_command calls running `true`.
func (m *mockResponses) streamTools(w http.ResponseWriter, seq int64) error {
	rid := fmt.Sprintf("resp-%d", seq)
	events := []map[string]any{{"type": "response.created", "response": map[string]any{
		"id": rid, "object": "response", "status": "in_progress", "model": mockModelName, "output": []any{}}}}
	for i := 0; i < m.tools; i++ {
		base := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", seq, i),
			"call_id": fmt.Sprintf("call_%d_%d", seq, i), "name": "exec_command"}
		added, done := map[string]any{"arguments": "", "status": "in_progress"}, map[string]any{
			"arguments": `{"cmd":"true","yield_time_ms":10000}`, "status": "completed"}
		for k, v := range base {
			added[k], done[k] = v, v
		}
		events = append(events,
			map[string]any{"type": "response.output_item.added", "output_index": i, "item": added},
			map[string]any{"type": "response.output_item.done", "output_index": i, "item": done})
	}
	events = append(events, map[string]any{"type": "response.completed", "response": map[string]any{
		"id": rid, "object": "response", "status": "completed", "model": mockModelName, "usage": mockUsage}})
	return writeEvents(w, events)
}

// endsWithToolOutput reports whether the last input item of a Responses API request body is a
// function_call_output (the request after the tool calls).
func endsWithToolOutput(body []byte) bool {
	var req struct {
		Input []struct {
			Type string `json:"type"`
		} `json:"input"`
	}
	return json.Unmarshal(body, &req) == nil && len(req.Input) > 0 && req.Input[len(req.Input)-1].Type == "function_call_output"
}

// lastUserText returns the text of the last user input_text in a Responses API request body ("" if none).
func lastUserText(body []byte) string {
	var req struct {
		Input []struct {
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"input"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	text := ""
	for _, it := range req.Input {
		if it.Role != "user" {
			continue
		}
		for _, c := range it.Content {
			if c.Type == "input_text" {
				text = c.Text
			}
		}
	}
	return text
}

// writeEvents writes events as one SSE body and flushes once.
func writeEvents(w http.ResponseWriter, events []map[string]any) error {
	var b strings.Builder
	for _, ev := range events {
		data, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", ev["type"], data)
	}
	return writeSSE(w, []byte(b.String()))
}

// writeSSE writes body as the SSE response and flushes once.
func writeSSE(w http.ResponseWriter, body []byte) error {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(body); err != nil {
		return err
	}
	return http.NewResponseController(w).Flush()
}
