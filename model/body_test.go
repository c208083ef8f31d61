package model

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// historyRequest is a request with n user/assistant pairs of history whose texts carry tag.
func historyRequest(n int, tag string) *Request {
	var hist []json.RawMessage
	for i := 0; i < n; i++ {
		hist = append(hist, json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"`+tag+` hello there, this is a message"}]}`),
			json.RawMessage(`{"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":"ok","annotations":[]}]}`))
	}
	return &Request{Model: "gpt", Input: hist, Tools: []json.RawMessage{json.RawMessage(`{"type":"function","name":"f"}`)}}
}

func testClient(url string, retries int64) *Client {
	return NewClient(Provider{ID: "t", BaseURL: url, RequestMaxRetries: &retries, StreamMaxRetries: new(int64)},
		Options{BaseBackoff: time.Millisecond})
}

const completedSSE = "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\"}}\n\n"

// Request bodies come from reused buffers: every request, the silently retried attempt included, sends its own
// whole body, whatever was sent before.
func TestReusedBodyBuffersSendEachBodyWhole(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	fail := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		failNow := fail
		fail = !fail
		mu.Unlock()
		if failNow {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, completedSSE)
	}))
	t.Cleanup(srv.Close)
	c := testClient(srv.URL, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var want []string
	for i, n := range []int{50, 10, 80, 3} {
		r := historyRequest(n, fmt.Sprint("req", i))
		b, err := r.MarshalBody()
		require.NoError(t, err)
		want = append(want, string(b), string(b)) // the failed attempt and its retry
		_, err = c.Stream(ctx, r, nil)
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, want, bodies)
}

// A server that answers before reading the body (here an error for a large one) does not get a buffer reused
// while the client still writes it: the next request's body arrives whole (and -race sees no overlap).
func TestBodyBufferIsNotReusedWhileStillWritten(t *testing.T) {
	var mu sync.Mutex
	var second string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.ContentLength > 1<<20 {
			w.WriteHeader(http.StatusBadRequest) // without reading: the client may still be writing
			_, _ = io.WriteString(w, `{"error":{"message":"too big"}}`)
			return
		}
		b, _ := io.ReadAll(req.Body)
		mu.Lock()
		second = string(b)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, completedSSE)
	}))
	t.Cleanup(srv.Close)
	c := testClient(srv.URL, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	big := historyRequest(20000, strings.Repeat("x", 40))
	_, err := c.Stream(ctx, big, nil)
	require.Error(t, err)
	small := historyRequest(5, "small")
	want, err := small.MarshalBody()
	require.NoError(t, err)
	_, err = c.Stream(ctx, small, nil)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, string(want), second)
}

// BenchmarkStreamLongHistory is one model request of a thread 200 turns long against a local server that
// discards the body: B/op is what the client allocates per request.
func BenchmarkStreamLongHistory(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, completedSSE)
	}))
	b.Cleanup(srv.Close)
	c := testClient(srv.URL, 0)
	r := historyRequest(200, "t")
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := c.Stream(ctx, r, nil); err != nil {
			b.Fatal(err)
		}
	}
}
