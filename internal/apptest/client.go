// Package apptest drives an in-process appserver over real pipes, the way an IDE client would, and
// validates every message the server writes against the protocol schema.
package apptest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/config"
	"appserver/internal/mockmodel"
	"appserver/internal/schematest"
	"appserver/internal/testfs"
	"appserver/server"
	"appserver/stopwatch"
	"appserver/thread"
)

// Options configure a test server.
type Options struct {
	// Config is extra config.toml text appended after the mock-model defaults.
	Config string
	// Model is the mock Responses server (nil: a new one).
	Model *mockmodel.Server
	// ApprovalPolicy and SandboxMode default to "never" and "read-only".
	ApprovalPolicy, SandboxMode string
	// ModelID is the `model` of the default config ("": mock-model, a model outside the catalogue;
	// a catalogue model gets the tools the reference offers by model, apply_patch among them).
	ModelID string
	// Raw skips the default config entirely (Config is the whole file).
	Raw bool
	// Tools overrides the tools offered to the model (nil: the server's defaults).
	Tools thread.ToolProvider
	// ProviderRetries sets request_max_retries and stream_max_retries of the mock provider.
	RequestRetries, StreamRetries int
	// Home reuses an existing CODEX_HOME (e.g. a previous client's Home, to test a restart); its
	// config.toml is rewritten and the working directory is "work" beside it. Empty: a fresh one.
	Home string
	// Clock times approval waits, MCP tool timeouts and idle thread unloads (nil: the real clock).
	Clock stopwatch.Clock
	// InvalidConfig starts the server as cmd/appserver does when config.toml does not load: with the
	// defaults and the load error (without it, a config.toml that does not load fails the test).
	InvalidConfig bool
	// WarnUnknownKeys has the server warn about unknown config.toml keys, as cmd/appserver does.
	WarnUnknownKeys bool
	// Overrides are `-c key=value` overrides of the command line.
	Overrides []string
}

// Message is one line the server wrote, decoded.
type Message struct {
	ID     any             `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	EmittedAtMs *int64 `json:"emittedAtMs"`
	Raw         []byte `json:"-"`
}

// IsNotification reports a server notification.
func (m Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsServerRequest reports a server→client request.
func (m Message) IsServerRequest() bool { return m.Method != "" && m.ID != nil }

// Client is a test client connected to an in-process server.
type Client struct {
	T     testing.TB
	Home  string
	Work  string
	Model *mockmodel.Server
	Srv   *server.Server

	in   *io.PipeWriter
	done chan error

	mu       sync.Mutex
	cond     *sync.Cond
	msgs     []Message
	cursor   int // messages before cursor were consumed by waits
	nextID   int64
	methods  map[string]string
	answerer func(m Message) (result any, errCode int, errMsg string, ok bool)
	closed   bool
}

// Start starts a server with a fresh CODEX_HOME and working directory.
func Start(t testing.TB, opts Options) *Client {
	t.Helper()
	base := testfs.OutsideRepo(t)
	home := filepath.Join(base, "codex_home")
	if opts.Home != "" {
		home = opts.Home
		base = filepath.Dir(home)
	}
	work := filepath.Join(base, "work")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.MkdirAll(work, 0o755))
	if opts.Model == nil {
		opts.Model = mockmodel.New(t)
	}
	text := opts.Config
	if !opts.Raw {
		if opts.ApprovalPolicy == "" {
			opts.ApprovalPolicy = "never"
		}
		if opts.SandboxMode == "" {
			opts.SandboxMode = "read-only"
		}
		if opts.ModelID == "" {
			opts.ModelID = "mock-model"
		}
		text = fmt.Sprintf(`model = %q
model_provider = "mock"
approval_policy = %q
sandbox_mode = %q
%s

[model_providers.mock]
name = "Mock Responses API"
base_url = %q
wire_api = "responses"
request_max_retries = %d
stream_max_retries = %d
`, opts.ModelID, opts.ApprovalPolicy, opts.SandboxMode, opts.Config, opts.Model.URL(), opts.RequestRetries, opts.StreamRetries)
	}
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(text), 0o644))
	cfg, cfgErr := config.Load(home, opts.Overrides)
	if opts.InvalidConfig {
		require.Error(t, cfgErr)
		var err error
		cfg, err = config.Defaults(home, opts.Overrides)
		require.NoError(t, err)
	} else {
		require.NoError(t, cfgErr)
	}
	c := &Client{T: t, Home: home, Work: work, Model: opts.Model, methods: map[string]string{}, done: make(chan error, 1)}
	c.cond = sync.NewCond(&c.mu)
	var unknownKeys func() []config.UnknownKey
	if opts.WarnUnknownKeys {
		unknownKeys = func() []config.UnknownKey { // as cmd/appserver
			keys, err := config.UserConfigUnknownKeys(home)
			require.NoError(t, err)
			return keys
		}
	}
	c.Srv = server.New(server.Options{Config: cfg, ConfigError: cfgErr, UnknownKeys: unknownKeys, Tools: opts.Tools, Clock: opts.Clock, ReloadConfig: func() (*config.Config, error) { return config.Load(home, opts.Overrides) }})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c.in = inW
	go func() {
		c.done <- c.Srv.ServeConn(context.Background(), inR, outW)
		_ = outW.Close()
	}()
	go c.readLoop(outR)
	t.Cleanup(c.Close)
	return c
}

// Close ends the connection and the server.
func (c *Client) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	_ = c.in.Close()
	select {
	case <-c.done:
	case <-time.After(WaitLimit):
		logGoroutines(c.T)
		c.T.Errorf("server did not finish after stdin EOF")
	}
	c.Srv.Close()
}

func (c *Client) readLoop(r io.Reader) {
	v, err := schematest.Default()
	if err != nil {
		c.T.Errorf("schema: %v", err)
	}
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = []byte(strings.TrimRight(string(line), "\n"))
			var m Message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				c.T.Errorf("server wrote a line that is not JSON: %q", line)
			} else {
				m.Raw = line
				if v != nil {
					if verr := v.ServerMessage(line, c.methodOf); verr != nil {
						c.T.Errorf("schema violation: %v\n%s", verr, line)
					}
				}
				if m.IsServerRequest() {
					c.answer(m)
				}
				c.mu.Lock()
				c.msgs = append(c.msgs, m)
				c.cond.Broadcast()
				c.mu.Unlock()
			}
		}
		if err != nil {
			c.mu.Lock()
			c.closed = true
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
	}
}

func idKey(id any) string {
	switch v := id.(type) {
	case string:
		return "s:" + v
	case json.Number:
		return "n:" + v.String()
	case float64:
		return fmt.Sprintf("n:%v", v)
	}
	return fmt.Sprint(id)
}

func (c *Client) methodOf(id any) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.methods[idKey(id)]
}

// SetAnswerer installs the automatic answer to server→client requests; ok=false leaves a request
// unanswered (the test answers it with Respond, or never).
func (c *Client) SetAnswerer(f func(m Message) (result any, errCode int, errMsg string, ok bool)) {
	c.mu.Lock()
	c.answerer = f
	c.mu.Unlock()
}

func (c *Client) answer(m Message) {
	c.mu.Lock()
	f := c.answerer
	c.mu.Unlock()
	if f == nil {
		return
	}
	res, code, msg, ok := f(m)
	if !ok {
		return
	}
	if code != 0 {
		c.send(map[string]any{"id": m.ID, "error": map[string]any{"code": code, "message": msg}})
		return
	}
	c.send(map[string]any{"id": m.ID, "result": res})
}

// Respond answers a server request by hand.
func (c *Client) Respond(id any, result any) {
	c.send(map[string]any{"id": id, "result": result})
}

func (c *Client) send(v any) {
	b, err := json.Marshal(v)
	require.NoError(c.T, err)
	c.SendRaw(string(b))
}

// SendRaw writes one raw line (a request in it is remembered for response validation).
func (c *Client) SendRaw(line string) {
	var probe struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	if json.Unmarshal([]byte(line), &probe) == nil && probe.ID != nil && probe.Method != "" {
		c.mu.Lock()
		c.methods[idKey(probe.ID)] = probe.Method
		c.mu.Unlock()
	}
	_, err := io.WriteString(c.in, line+"\n")
	if err != nil {
		c.T.Errorf("write to server: %v", err)
	}
}

// Notify sends a client notification.
func (c *Client) Notify(method string, params any) {
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	c.send(m)
}

// Send writes a request without waiting and returns its id.
func (c *Client) Send(method string, params any) int64 {
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	c.methods[idKey(float64(id))] = method
	c.mu.Unlock()
	m := map[string]any{"id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	c.send(m)
	return id
}

// Request sends a request and waits for its response.
func (c *Client) Request(method string, params any) Message {
	c.T.Helper()
	id := c.Send(method, params)
	return c.WaitResponse(id)
}

// Result sends a request, requires success and decodes the result into out (if non-nil).
func (c *Client) Result(method string, params any, out any) json.RawMessage {
	c.T.Helper()
	m := c.Request(method, params)
	require.Nil(c.T, m.Error, "%s failed: %s", method, m.Raw)
	if out != nil {
		require.NoError(c.T, json.Unmarshal(m.Result, out))
	}
	return m.Result
}

// WaitLimit bounds every wait of a Client: a guard against a hung server, not a timing margin, so it
// is generous enough for a heavily loaded machine running the race detector.
const WaitLimit = 2 * time.Minute

// WaitResponse waits for the response to request id.
func (c *Client) WaitResponse(id int64) Message {
	c.T.Helper()
	m, ok := c.waitFor(func(m Message) bool {
		return m.Method == "" && m.ID != nil && idKey(m.ID) == idKey(float64(id))
	}, WaitLimit, false)
	require.True(c.T, ok, "no response to request %d", id)
	return m
}

// WaitNotification waits for the next notification of a method (optionally matching params), searching
// messages not consumed by earlier waits.
func (c *Client) WaitNotification(method string, match func(params json.RawMessage) bool) Message {
	c.T.Helper()
	m, ok := c.waitFor(func(m Message) bool {
		return m.IsNotification() && m.Method == method && (match == nil || match(m.Params))
	}, WaitLimit, true)
	require.True(c.T, ok, "no %s notification", method)
	return m
}

// WaitServerRequest waits for a server→client request of a method.
func (c *Client) WaitServerRequest(method string) Message {
	c.T.Helper()
	m, ok := c.waitFor(func(m Message) bool { return m.IsServerRequest() && m.Method == method }, WaitLimit, true)
	require.True(c.T, ok, "no %s server request", method)
	return m
}

func (c *Client) waitFor(pred func(Message) bool, timeout time.Duration, consume bool) (Message, bool) {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for i := c.cursor; i < len(c.msgs); i++ {
			if pred(c.msgs[i]) {
				if consume {
					c.cursor = i + 1
				}
				return c.msgs[i], true
			}
		}
		if c.closed {
			return Message{}, false
		}
		if time.Now().After(deadline) {
			logGoroutines(c.T) // a hung server: show where everything waits
			return Message{}, false
		}
		c.cond.Wait()
	}
}

// Messages returns everything received so far.
func (c *Client) Messages() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.msgs...)
}

// Mark returns a position in the message log for Since.
func (c *Client) Mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

// Since returns messages received after a mark.
func (c *Client) Since(mark int) []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.msgs[mark:]...)
}

// Initialize performs the handshake.
func (c *Client) Initialize(experimental bool) {
	c.T.Helper()
	params := map[string]any{"clientInfo": map[string]any{"name": "apptest", "version": "0.0.1"}}
	if experimental {
		params["capabilities"] = map[string]any{"experimentalApi": true}
	}
	c.Result("initialize", params, nil)
	c.Notify("initialized", nil)
	c.WaitNotification("remoteControl/status/changed", nil)
}

// StartThread starts a thread in the work directory and returns its id.
func (c *Client) StartThread(extra map[string]any) string {
	c.T.Helper()
	params := map[string]any{"cwd": c.Work}
	for k, v := range extra {
		params[k] = v
	}
	var res struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	c.Result("thread/start", params, &res)
	c.WaitNotification("thread/started", nil)
	return res.Thread.ID
}

// StartTurn sends turn/start with one text input and returns the turn id.
func (c *Client) StartTurn(threadID, text string) string {
	c.T.Helper()
	var res struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	c.Result("turn/start", map[string]any{"threadId": threadID, "input": []any{map[string]any{"type": "text", "text": text}}}, &res)
	return res.Turn.ID
}

// WaitTurnCompleted waits for turn/completed and returns its turn object.
func (c *Client) WaitTurnCompleted() map[string]any {
	c.T.Helper()
	m := c.WaitNotification("turn/completed", nil)
	var p struct {
		Turn map[string]any `json:"turn"`
	}
	require.NoError(c.T, json.Unmarshal(m.Params, &p))
	return p.Turn
}

// NotificationMethods lists the notification methods in msgs, skipping the given ones.
func NotificationMethods(msgs []Message, skip ...string) []string {
	skipSet := map[string]bool{}
	for _, s := range skip {
		skipSet[s] = true
	}
	var out []string
	for _, m := range msgs {
		if m.IsNotification() && !skipSet[m.Method] {
			out = append(out, m.Method)
		}
	}
	return out
}

// logGoroutines writes every goroutine's stack to the test's log (after a wait ran out).
func logGoroutines(t testing.TB) {
	buf := make([]byte, 8<<20)
	t.Logf("goroutines when the wait ran out:\n%s", buf[:runtime.Stack(buf, true)])
}
