package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/mockmodel"
)

// chunkWriter records each write the server makes to its output (one per flush) and passes it on.
type chunkWriter struct {
	w      io.Writer
	mu     sync.Mutex
	chunks []string
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.chunks = append(c.chunks, string(p))
	c.mu.Unlock()
	return c.w.Write(p)
}

var methodRE = regexp.MustCompile(`^\{"method":"([^"]+)"`)

// A one-message turn's notifications keep their order, and the bursts the turn produces in a row go out
// in one write each: the opening status and turn/started, the user message's item/started and
// item/completed, and everything from the token count to turn/completed.
func TestTurnNotificationBurstsGoOutTogether(t *testing.T) {
	mm := mockmodel.New(t)
	noDelay := 0
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}, EventDelayMs: &noDelay})
	methods, chunkOf, chunks := turnWrites(t, mm.URL())
	require.Equal(t, []string{"warning", "reply", "thread/status/changed", "turn/started", "item/started", "item/completed",
		"item/started", "item/agentMessage/delta", "item/completed", "thread/tokenUsage/updated",
		"account/rateLimits/updated", "thread/status/changed", "turn/completed"}, methods)
	together := func(from, to int) {
		require.Equal(t, chunkOf[from], chunkOf[to], "%v split over writes %v", methods[from:to+1], chunkOf[from:to+1])
	}
	together(2, 3)  // thread/status/changed, turn/started
	together(4, 5)  // the user message's item/started, item/completed
	together(9, 12) // the token count through turn/completed
	require.Less(t, len(chunks), len(methods))
}

// An answer whose events arrive in one read of the response has its notifications (item/started, the
// delta, item/completed) written in one write.
func TestAnswerArrivingTogetherGoesOutTogether(t *testing.T) {
	sse := func(typ, rest string) string {
		return "event: " + typ + "\ndata: {\"type\":\"" + typ + "\"," + rest + "}\n\n"
	}
	body := sse("response.created", `"response":{"id":"r1","object":"response","status":"in_progress","model":"mock-model","output":[]}`) +
		sse("response.output_item.added", `"output_index":0,"item":{"type":"message","id":"m1","role":"assistant","status":"in_progress","content":[]}`) +
		sse("response.output_text.delta", `"item_id":"m1","output_index":0,"content_index":0,"delta":"ok"`) +
		sse("response.output_item.done", `"output_index":0,"item":{"type":"message","id":"m1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}`) +
		sse("response.completed", `"response":{"id":"r1","object":"response","status":"completed","model":"mock-model","usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body) // one write, one flush
	}))
	t.Cleanup(model.Close)
	methods, chunkOf, _ := turnWrites(t, model.URL+"/v1")
	require.Equal(t, []string{"item/started", "item/agentMessage/delta", "item/completed"}, methods[6:9])
	require.Equal(t, chunkOf[6], chunkOf[8], "%v split over writes %v", methods[6:9], chunkOf[6:9])
}

// turnWrites runs one turn against the model at baseURL and returns the names of the lines written from
// turn/start on ("reply" for the answer), the write each came in, and the writes.
func turnWrites(t *testing.T, baseURL string) (methods []string, chunkOf []int, chunks []string) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "codex_home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(`model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.mock]
name = "Mock Responses API"
base_url = "`+baseURL+`"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`), 0o644))
	var cw *chunkWriter
	c := serveWire(t, home, "t", func(w io.Writer) io.Writer { cw = &chunkWriter{w: w}; return cw })
	defer c.close()
	var started struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	require.NoError(t, json.Unmarshal(c.call("thread/start", map[string]any{}), &started))
	c.waitMethod("thread/started")

	cw.mu.Lock()
	from := len(cw.chunks)
	cw.mu.Unlock()
	c.call("turn/start", map[string]any{"threadId": started.Thread.ID, "input": []any{map[string]any{"type": "text", "text": "hi"}}})
	c.waitMethod("turn/completed")

	cw.mu.Lock()
	chunks = append([]string(nil), cw.chunks[from:]...)
	cw.mu.Unlock()
	for k, ch := range chunks {
		for _, line := range strings.Split(strings.TrimSuffix(ch, "\n"), "\n") {
			name := "reply"
			if m := methodRE.FindStringSubmatch(line); m != nil {
				name = m[1]
			}
			methods = append(methods, name)
			chunkOf = append(chunkOf, k)
		}
	}
	return methods, chunkOf, chunks
}
