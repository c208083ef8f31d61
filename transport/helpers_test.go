package transport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"appserver/config"
	"appserver/internal/mockmodel"
	"appserver/server"
	"appserver/transport"
)

// testServer is a real app-server behind a real WebSocket listener.
type testServer struct {
	Srv   *server.Server
	Addr  string // host:port of the TCP endpoint, or the socket path
	Unix  bool
	Model *mockmodel.Server
	Work  string
	stop  context.CancelFunc
	done  chan error
}

type serverOpts struct {
	Unix           bool
	Auth           transport.Authenticator
	QueueSize      int
	ApprovalPolicy string
	// Configure adjusts the handler before it serves (test hooks).
	Configure func(h *transport.WSHandler)
	Model     *mockmodel.Server
}

// startServer runs server.New behind transport.Serve on a loopback TCP port (or a Unix socket).
func startServer(t *testing.T, o serverOpts) *testServer {
	t.Helper()
	// Commands run as `bash -lc`: a fresh HOME keeps the machine's login profile (pyenv's rehash, which
	// waits up to a minute on its lock) out of them, as the server tests do.
	t.Setenv("HOME", t.TempDir())
	if o.Model == nil {
		o.Model = mockmodel.New(t)
	}
	if o.ApprovalPolicy == "" {
		o.ApprovalPolicy = "never"
	}
	base := t.TempDir()
	home := filepath.Join(base, "home")
	work := filepath.Join(base, "work")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.MkdirAll(work, 0o755))
	text := fmt.Sprintf(`model = "mock-model"
model_provider = "mock"
approval_policy = %q
sandbox_mode = "read-only"

[model_providers.mock]
name = "Mock"
base_url = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, o.ApprovalPolicy, o.Model.URL())
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(text), 0o644))
	cfg, err := config.Load(home, nil)
	require.NoError(t, err)
	srv := server.New(server.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Srv: srv, Unix: o.Unix, Model: o.Model, Work: work, stop: cancel, done: make(chan error, 1)}
	var ln net.Listener
	if o.Unix {
		ul, err := transport.ListenUnix(filepath.Join(base, "ctl", "app.sock"))
		require.NoError(t, err)
		ln, ts.Addr = ul, ul.Path
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ts.Addr = ln.Addr().String()
	}
	h := transport.NewWSHandler(ctx, srv, transport.WSOptions{Auth: o.Auth, Health: !o.Unix, AnnounceMaxMessage: o.Unix, QueueSize: o.QueueSize, Logger: testLogger()})
	if o.Configure != nil {
		o.Configure(h)
	}
	go func() { ts.done <- transport.Serve(ctx, ln, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ts.done:
		case <-time.After(20 * time.Second):
			t.Error("listener did not stop")
		}
		_ = ln.Close()
		srv.Close()
	})
	return ts
}

// httpClient reaches the server over TCP or its Unix socket.
func (ts *testServer) httpClient() *http.Client {
	tr := &http.Transport{}
	if ts.Unix {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", ts.Addr)
		}
	}
	return &http.Client{Transport: tr}
}

func (ts *testServer) url(path string) string {
	if ts.Unix {
		return "http://localhost" + path
	}
	return "http://" + ts.Addr + path
}

// wsClient is a JSON-RPC client over one WebSocket.
type wsClient struct {
	t    *testing.T
	ws   *websocket.Conn
	resp *http.Response

	mu     sync.Mutex
	cond   *sync.Cond
	msgs   []map[string]any
	err    error
	nextID int

	paused chan struct{} // non-nil: readLoop waits for it to close before reading on
}

func newCond(c *wsClient) *sync.Cond { return sync.NewCond(&c.mu) }

// stopReading makes readLoop stop taking frames off the socket (after the one it may be reading).
func (c *wsClient) stopReading() {
	c.mu.Lock()
	c.paused = make(chan struct{})
	c.mu.Unlock()
}

// resumeReading lets readLoop go on.
func (c *wsClient) resumeReading() {
	c.mu.Lock()
	if c.paused != nil {
		close(c.paused)
		c.paused = nil
	}
	c.mu.Unlock()
}

// waitClosed waits until the connection has ended (after resumeReading drained what was buffered).
func (c *wsClient) waitClosed() error {
	deadline := time.AfterFunc(60*time.Second, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer deadline.Stop()
	start := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.err == nil {
		if time.Since(start) >= 60*time.Second {
			return nil
		}
		c.cond.Wait()
	}
	return c.err
}

// dial opens a WebSocket; header adds request headers (e.g. Authorization).
func (ts *testServer) dial(t *testing.T, header http.Header) (*wsClient, *http.Response, error) {
	path := "/"
	if ts.Unix {
		path = "/rpc"
	}
	u := "ws://" + ts.Addr + path
	if ts.Unix {
		u = "ws://localhost" + path
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: ts.httpClient(), HTTPHeader: header})
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(64 << 20)
	c := &wsClient{t: t, ws: ws, resp: resp}
	c.cond = sync.NewCond(&c.mu)
	t.Cleanup(func() { _ = ws.CloseNow() })
	return c, resp, nil
}

func (ts *testServer) mustDial(t *testing.T) *wsClient {
	t.Helper()
	c, _, err := ts.dial(t, nil)
	require.NoError(t, err)
	go c.readLoop()
	return c
}

func (c *wsClient) readLoop() {
	for {
		c.mu.Lock()
		p := c.paused
		c.mu.Unlock()
		if p != nil {
			<-p
		}
		typ, data, err := c.ws.Read(context.Background())
		c.mu.Lock()
		if err != nil {
			c.err = err
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
		var m map[string]any
		if typ != websocket.MessageText || json.Unmarshal(data, &m) != nil {
			c.err = fmt.Errorf("frame is not one JSON text message: %q", data)
		} else {
			c.msgs = append(c.msgs, m)
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

func (c *wsClient) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(c.t, err)
	require.NoError(c.t, c.ws.Write(context.Background(), websocket.MessageText, b))
}

// waitFor returns the first message (from index from on) matching pred, failing the test when the
// connection ends first or nothing matches for a long time.
func (c *wsClient) waitFor(pred func(map[string]any) bool) map[string]any {
	c.t.Helper()
	deadline := time.AfterFunc(60*time.Second, func() {
		c.mu.Lock()
		if c.err == nil {
			c.err = fmt.Errorf("timed out waiting")
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer deadline.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 0; ; i++ {
		for ; i < len(c.msgs); i++ {
			if pred(c.msgs[i]) {
				m := c.msgs[i]
				c.msgs = append(c.msgs[:i:i], c.msgs[i+1:]...)
				return m
			}
		}
		if c.err != nil {
			c.t.Fatalf("connection ended while waiting: %v", c.err)
		}
		c.cond.Wait()
		i--
	}
}

func (c *wsClient) request(method string, params any) map[string]any {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	c.send(map[string]any{"id": id, "method": method, "params": params})
	return c.waitFor(func(m map[string]any) bool { return m["id"] == float64(id) && m["method"] == nil })
}

func (c *wsClient) result(method string, params any) map[string]any {
	c.t.Helper()
	m := c.request(method, params)
	require.Nil(c.t, m["error"], "%s failed: %v", method, m["error"])
	r, _ := m["result"].(map[string]any)
	return r
}

func (c *wsClient) initialize() {
	c.t.Helper()
	c.result("initialize", map[string]any{"clientInfo": map[string]any{"name": "ws-test", "version": "1"}})
	c.send(map[string]any{"method": "initialized"})
}

func (c *wsClient) notification(method string) map[string]any {
	c.t.Helper()
	return c.waitFor(func(m map[string]any) bool { return m["method"] == method && m["id"] == nil })
}

func (c *wsClient) serverRequest(method string) map[string]any {
	c.t.Helper()
	return c.waitFor(func(m map[string]any) bool { return m["method"] == method && m["id"] != nil })
}

// count returns how many received messages match pred.
func (c *wsClient) count(pred func(map[string]any) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.msgs {
		if pred(m) {
			n++
		}
	}
	return n
}

func testLogger() *slog.Logger {
	if os.Getenv("TRANSPORT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// reset forgets every message received so far.
func (c *wsClient) reset() {
	c.mu.Lock()
	c.msgs = nil
	c.mu.Unlock()
}
