package model_test

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/model"
)

// A completed stream gives its connection back to the pool even when the server ends the body (the chunked
// terminator) only after response.completed was read: the next request reuses it instead of dialling.
func TestCompletedStreamConnectionIsReused(t *testing.T) {
	pending, dials, c := heldBodyServer(t)
	stream := func() {
		comp, err := c.Stream(testCtx(t), simpleRequest(), func(model.Event) {})
		require.NoError(t, err)
		require.Equal(t, "r", comp.ResponseID)
		close(<-pending)
	}
	stream()
	require.Equal(t, int32(1), dials.Load())
	// The background drain returns the connection to the pool soon after; a request sent before that
	// dials, one sent after reuses it. Without the drain every request dials.
	require.Eventually(t, func() bool {
		before := dials.Load()
		stream()
		return dials.Load() == before
	}, time.Minute, 10*time.Millisecond, "no request reused the first connection")
}

// The caller's context ending right after a completed stream (a turn ends at once) does not cut the
// background drain: the connection still goes back to the pool instead of being closed.
func TestCompletedStreamConnectionSurvivesCallerCancel(t *testing.T) {
	pending, dials, c := heldBodyServer(t)
	stream := func() {
		ctx, cancel := context.WithCancel(testCtx(t))
		comp, err := c.Stream(ctx, simpleRequest(), func(model.Event) {})
		require.NoError(t, err)
		require.Equal(t, "r", comp.ResponseID)
		cancel() // before the server ends the body
		close(<-pending)
	}
	stream()
	require.Eventually(t, func() bool {
		before := dials.Load()
		stream()
		return dials.Load() == before
	}, time.Minute, 10*time.Millisecond, "every request dialled: the cancel closed the connection")
}

// heldBodyServer serves one created+completed stream per request and ends each body only when the test
// closes the request's release (sent on pending); dials counts the client's new connections.
func heldBodyServer(t *testing.T) (pending chan chan struct{}, dials *atomic.Int32, c *model.Client) {
	pending = make(chan chan struct{}, 1) // the running request's release
	dials = new(atomic.Int32)
	url := newHTTPServer(t, func(w http.ResponseWriter, r *http.Request) {
		release := make(chan struct{})
		pending <- release
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n" +
			"data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\"}}\n\n"))
		w.(http.Flusher).Flush()
		select { // the body ends only once the client has taken the completed response
		case <-release:
		case <-r.Context().Done():
		}
	})
	d := &net.Dialer{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c = model.NewClient(model.Provider{ID: "x", BaseURL: url + "/v1", RequestMaxRetries: i64(0), StreamMaxRetries: i64(0)},
		model.Options{HTTPClient: &http.Client{Transport: tr}})
	return pending, dials, c
}
