package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"appserver/stopwatch"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Startup states reported through Hooks.OnStatus and ServerStatus.StartupStatus.
const (
	StatusStarting  = "starting"
	StatusReady     = "ready"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// protocolVersion is what the reference announces in initialize.
const protocolVersion = "2025-06-18"

// Hooks connect a Manager to its owner. Every field may be nil.
type Hooks struct {
	// OnStatus is called with "starting" for every enabled server (synchronously, inside Start),
	// then exactly once more per server with "ready", "failed" (errMsg set) or "cancelled".
	OnStatus func(name, status, errMsg string)
	// Elicit answers a server-originated elicitation/create. Its result goes back to the server
	// verbatim; an error (or a nil hook) answers "decline". ctx ends when the server cancels the
	// request or the Manager closes.
	Elicit func(ctx context.Context, req ElicitationRequest) (ElicitationResult, error)
	// OnProgress reports a notifications/progress message received during CallTool; callID is the
	// "callId" entry of the call's meta ("" when absent).
	OnProgress func(callID, message string)
	// Clock times the tool timeouts (nil: the real clock); tests pass a fake one.
	Clock stopwatch.Clock
}

// ElicitationRequest is a server-originated elicitation/create, forwarded verbatim.
type ElicitationRequest struct {
	ServerName      string
	Message         string
	Mode            string          // "form" or "url" ("form" when the server omitted it)
	RequestedSchema json.RawMessage // form mode; nil when absent
	URL             string          // url mode
	ElicitationID   string          // url mode
	Meta            json.RawMessage // the request's _meta; nil when absent
}

// ElicitationResult is the client's answer, returned to the MCP server verbatim.
type ElicitationResult struct {
	Action  string          // "accept", "decline" or "cancel"
	Content json.RawMessage // a JSON object (accept in form mode); nil otherwise
	Meta    json.RawMessage // optional _meta object
}

// Manager holds the MCP connections of one owner. All methods are safe for concurrent use.
type Manager struct {
	hooks   Hooks
	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	servers []*server // enabled servers, config order
	byName  map[string]*server
	startWG sync.WaitGroup
	closing sync.Once
	tokens  atomic.Int64
}

// server is one configured MCP server and its connection.
type server struct {
	m    *Manager
	cfg  ServerConfig
	done chan struct{} // closed when startup finished (any outcome)

	mu        sync.Mutex
	status    string
	errMsg    string // startup error as reported to OnStatus
	toolsErr  string // toolsError of mcpServerStatus/list
	session   *mcp.ClientSession
	proc      *process
	raw       *rawCapture
	initRes   *mcp.InitializeResult
	tools     []*mcp.Tool // filtered, sorted by model name
	alive     bool
	elicits   int                            // pending Elicit hook calls
	calls     map[int64]*stopwatch.Stopwatch // running tools/call stopwatches
	progress  map[int64]string               // progress token → callID
	closeOnce sync.Once
}

// Start starts every enabled server concurrently and returns at once; "starting" is reported for
// each before Start returns. The Manager stops when Close is called (ctx only seeds values and
// cancellation of the startups).
func Start(ctx context.Context, servers []ServerConfig, hooks Hooks) *Manager {
	mctx, cancel := context.WithCancel(ctx)
	m := &Manager{hooks: hooks, ctx: mctx, cancel: cancel, byName: map[string]*server{}}
	for _, cfg := range servers {
		if !cfg.Enabled {
			continue
		}
		if _, dup := m.byName[cfg.Name]; dup {
			slog.Warn("duplicate MCP server name ignored", "server", cfg.Name)
			continue
		}
		s := &server{m: m, cfg: cfg, done: make(chan struct{}), status: StatusStarting,
			calls: map[int64]*stopwatch.Stopwatch{}, progress: map[int64]string{}}
		m.servers = append(m.servers, s)
		m.byName[cfg.Name] = s
	}
	for _, s := range m.servers {
		m.onStatus(s.cfg.Name, StatusStarting, "")
	}
	for _, s := range m.servers {
		m.startWG.Add(1)
		go func() {
			defer m.startWG.Done()
			s.start()
		}()
	}
	return m
}

func (m *Manager) onStatus(name, status, errMsg string) {
	if m.hooks.OnStatus != nil {
		m.hooks.OnStatus(name, status, errMsg)
	}
}

// WaitReady blocks until every server finished starting (ready, failed or cancelled) or ctx ends.
func (m *Manager) WaitReady(ctx context.Context) error {
	for _, s := range m.servers {
		select {
		case <-s.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// RequiredFailure returns an error naming every `required` server whose startup failed so far
// (call it after WaitReady), or nil.
func (m *Manager) RequiredFailure() error {
	var parts []string
	for _, s := range m.servers {
		s.mu.Lock()
		if s.cfg.Required && s.status == StatusFailed {
			parts = append(parts, s.cfg.Name+": "+s.errMsg)
		}
		s.mu.Unlock()
	}
	if len(parts) == 0 {
		return nil
	}
	return errors.New("required MCP servers failed to initialize: " + strings.Join(parts, "; "))
}

// Close cancels startups still running (they report "cancelled"), answers pending elicitations
// with decline, closes every session and kills every stdio process group. It is bounded in time
// and idempotent.
func (m *Manager) Close() {
	m.closing.Do(func() {
		m.cancel()
		m.startWG.Wait()
		var wg sync.WaitGroup
		for _, s := range m.servers {
			wg.Go(s.close)
		}
		wg.Wait()
	})
}

// start connects, initializes and lists tools, then records and reports the outcome.
func (s *server) start() {
	ctx, cancel := context.WithTimeout(s.m.ctx, s.cfg.startupTimeout())
	defer cancel()
	sess, proc, raw, tools, err := s.connect(ctx)
	status, errMsg, toolsErr := StatusReady, "", ""
	if err != nil {
		switch {
		case s.m.ctx.Err() != nil:
			status = StatusCancelled
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			status = StatusFailed
			secs := strconv.FormatFloat(s.cfg.startupTimeout().Seconds(), 'f', -1, 64)
			errMsg = fmt.Sprintf("MCP client for `%s` timed out after %s seconds. Add or adjust `startup_timeout_sec` in your config.toml:\n[mcp_servers.%s]\nstartup_timeout_sec = XX", s.cfg.Name, secs, s.cfg.Name)
			toolsErr = fmt.Sprintf("MCP startup failed: timed out handshaking with MCP server after %ss", secs)
		default:
			status = StatusFailed
			toolsErr = "MCP startup failed: " + err.Error()
			errMsg = fmt.Sprintf("MCP client for `%s` failed to start: %s", s.cfg.Name, toolsErr)
		}
		if sess != nil {
			go sess.Close() // the process kill below unblocks it
		}
		if proc != nil {
			proc.kill()
		}
		sess, proc = nil, nil
	}
	s.mu.Lock()
	s.status, s.errMsg, s.toolsErr = status, errMsg, toolsErr
	if status == StatusReady {
		s.session, s.proc, s.raw, s.tools, s.alive = sess, proc, raw, tools, true
		s.initRes = sess.InitializeResult()
	}
	s.mu.Unlock()
	if status == StatusReady {
		go func() { // owned by the session: returns when the connection ends (Close ends it)
			_ = sess.Wait()
			s.mu.Lock()
			s.alive = false
			s.mu.Unlock()
		}()
	}
	// The outcome is reported before done closes, so whatever waits for readiness (a turn, WaitReady's
	// callers) comes after the server's status update.
	s.m.onStatus(s.cfg.Name, status, errMsg)
	close(s.done)
}

// connect opens the transport, performs the handshake and lists the (filtered) tools.
func (s *server) connect(ctx context.Context) (*mcp.ClientSession, *process, *rawCapture, []*mcp.Tool, error) {
	client := s.newClient()
	var (
		transport mcp.Transport
		proc      *process
		raw       *rawCapture
	)
	if s.cfg.URL != "" {
		transport = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}
	} else if s.cfg.Command != "" {
		p, err := startProcess(s.cfg)
		if err != nil {
			return nil, nil, nil, nil, spawnError(err)
		}
		proc = p
		raw = newRawCapture()
		transport = &sniffTransport{inner: &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}, raw: raw}
	} else {
		return nil, nil, nil, nil, errors.New("MCP server config has neither `command` nor `url`")
	}
	sess, tools, err := s.handshake(ctx, client, transport, proc != nil)
	if err != nil {
		return sess, proc, nil, nil, err
	}
	return sess, proc, raw, tools, nil
}

// handshake initializes the session and lists the (filtered, sorted) tools; stdio tells whether
// the transport is a server process's stdin/stdout. On a failed listing the session is returned
// for the caller to close.
func (s *server) handshake(ctx context.Context, client *mcp.Client, transport mcp.Transport, stdio bool) (*mcp.ClientSession, []*mcp.Tool, error) {
	sess, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		return nil, nil, handshakeError(err, stdio)
	}
	var tools []*mcp.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return sess, nil, listToolsError(err, stdio)
		}
		if s.cfg.toolAllowed(t.Name) {
			tools = append(tools, t)
		}
	}
	sort.Slice(tools, func(i, j int) bool { return sanitizeName(tools[i].Name) < sanitizeName(tools[j].Name) })
	return sess, tools, nil
}

// Handshake failures of a stdio server that went away, worded as the reference's. Which one a server
// exiting at once gets depends on timing, in the reference as here: the initialize write fails with
// EPIPE when the server had already closed its stdin, otherwise the response read sees EOF. A server
// that answers and then goes away fails the initialized notification's write.
const (
	handshakeClosed = "handshaking with MCP server failed: connection closed: initialize response: connection closed: initialize response"
	sendEPIPE       = "Send message error Transport [codex_rmcp_client::tool_list_changes::ToolListChanges<codex_rmcp_client::ordered_byte_transport::OrderedByteTransport<codex_rmcp_client::stdio_server_launcher::StdioServerTransport>>] error: Broken pipe (os error 32), when send "
	handshakeEPIPE  = "handshaking with MCP server failed: " + sendEPIPE + "initialize request: " + sendEPIPE + "initialize request"
	initializedPIPE = "handshaking with MCP server failed: " + sendEPIPE + "initialized notification: " + sendEPIPE + "initialized notification"
)

// handshakeError words an initialize failure like the reference; stdio tells whether the transport
// was the server's stdin/stdout.
func handshakeError(err error, stdio bool) error {
	if stdio && errors.Is(err, syscall.EPIPE) {
		// The SDK names the call whose request could not be written; the notification's error is bare.
		if strings.HasPrefix(err.Error(), `calling "initialize"`) {
			return errors.New(handshakeEPIPE)
		}
		return errors.New(initializedPIPE)
	}
	if connectionGone(err) {
		return errors.New(handshakeClosed)
	}
	return fmt.Errorf("handshaking with MCP server failed: %w", err)
}

// connectionGone reports an error of a connection the server closed (not an error it answered).
func connectionGone(err error) bool {
	var answered *jsonrpc.Error
	if errors.As(err, &answered) {
		return false
	}
	return errors.Is(err, mcp.ErrConnectionClosed) || strings.Contains(err.Error(), "EOF") ||
		strings.Contains(err.Error(), "closed")
}

// listToolsError words a failed tools/list of the handshake like the reference when the stdio server
// went away (its request could not be written, or the answer never came).
func listToolsError(err error, stdio bool) error {
	switch {
	case stdio && errors.Is(err, syscall.EPIPE):
		return errors.New("Transport send error: Transport [codex_rmcp_client::tool_list_changes::ToolListChanges<codex_rmcp_client::ordered_byte_transport::OrderedByteTransport<codex_rmcp_client::stdio_server_launcher::StdioServerTransport>>] error: Broken pipe (os error 32)")
	case stdio && connectionGone(err):
		return errors.New("Transport closed")
	}
	return fmt.Errorf("failed to list tools: %w", err)
}

// newClient builds an SDK client announcing codex's identity and elicitation (form and url).
func (s *server) newClient() *mcp.Client {
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		// Never reached (the middleware below answers first); set so the SDK treats elicitation as supported.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		ProgressNotificationHandler: s.onProgress,
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: true},
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "codex-mcp-client", Title: "Codex", Version: Version}, opts)
	// Answer elicitation/create ourselves so requests and answers pass verbatim (the SDK would
	// validate the schema and the content).
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if er, ok := req.(*mcp.ElicitRequest); ok && method == "elicitation/create" {
				return s.elicit(ctx, er.Params), nil
			}
			return next(ctx, method, req)
		}
	})
	if err := mcp.AddSendingCustomMethod[*pausedParams, *emptyResult](c, pauseMethod); err != nil {
		slog.Error("registering MCP custom method", "error", err)
	}
	return c
}

// httpClient adds the configured headers and bearer token to every request.
func (s *server) httpClient() *http.Client {
	h := http.Header{}
	for k, v := range s.cfg.HTTPHeaders {
		h.Set(k, v)
	}
	for k, env := range s.cfg.EnvHTTPHeaders {
		if v := os.Getenv(env); v != "" {
			h.Set(k, v)
		}
	}
	if s.cfg.BearerTokenEnvVar != "" {
		if tok := os.Getenv(s.cfg.BearerTokenEnvVar); tok != "" {
			h.Set("Authorization", "Bearer "+tok)
		}
	}
	return &http.Client{Transport: &headerTransport{base: http.DefaultTransport, headers: h}}
}

type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// elicit forwards a server-originated elicitation to the Elicit hook, pausing the timeouts of
// this server's running tool calls while the user decides.
func (s *server) elicit(ctx context.Context, p *mcp.ElicitParams) *mcp.ElicitResult {
	decline := &mcp.ElicitResult{Action: "decline"}
	if p == nil || s.m.hooks.Elicit == nil {
		return decline
	}
	req := ElicitationRequest{ServerName: s.cfg.Name, Message: p.Message, Mode: p.Mode, URL: p.URL,
		ElicitationID: p.ElicitationID}
	if req.Mode == "" {
		req.Mode = "form"
	}
	if p.RequestedSchema != nil {
		req.RequestedSchema, _ = json.Marshal(p.RequestedSchema)
	}
	if len(p.Meta) > 0 {
		req.Meta, _ = json.Marshal(p.Meta)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.m.ctx, cancel)
	defer stop()

	s.pauseCalls()
	defer s.resumeCalls()
	res, err := s.m.hooks.Elicit(ctx, req)
	if err != nil || res.Action == "" {
		if err != nil {
			slog.Debug("MCP elicitation hook failed; declining", "server", s.cfg.Name, "error", err)
		}
		return decline
	}
	out := &mcp.ElicitResult{Action: res.Action}
	if len(res.Content) > 0 && string(res.Content) != "null" {
		if err := json.Unmarshal(res.Content, &out.Content); err != nil {
			slog.Warn("MCP elicitation content is not a JSON object; dropped", "server", s.cfg.Name, "error", err)
		}
	}
	if len(res.Meta) > 0 && string(res.Meta) != "null" {
		var meta map[string]any
		if err := json.Unmarshal(res.Meta, &meta); err == nil {
			out.Meta = meta
		}
	}
	return out
}

func (s *server) pauseCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.elicits++
	if s.elicits == 1 {
		for _, sw := range s.calls {
			sw.Pause()
		}
	}
}

func (s *server) resumeCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.elicits--
	if s.elicits == 0 {
		for _, sw := range s.calls {
			sw.Resume()
		}
	}
}

func (s *server) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	var token int64
	switch v := req.Params.ProgressToken.(type) {
	case float64:
		token = int64(v)
	case int64:
		token = v
	case int:
		token = int64(v)
	default:
		return
	}
	s.mu.Lock()
	callID, ok := s.progress[token]
	raw := s.raw
	s.mu.Unlock()
	defer raw.progressHandled(token) // after the hook: the call waiting for it returns after the report
	if !ok || s.m.hooks.OnProgress == nil {
		return
	}
	msg := req.Params.Message
	if msg == "" {
		msg = strconv.FormatFloat(req.Params.Progress, 'f', -1, 64)
		if req.Params.Total > 0 {
			msg += "/" + strconv.FormatFloat(req.Params.Total, 'f', -1, 64)
		}
	}
	s.m.hooks.OnProgress(callID, msg)
}

// close ends the session and the process group, bounded in time.
func (s *server) close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		sess, proc := s.session, s.proc
		s.mu.Unlock()
		if sess == nil {
			return
		}
		done := make(chan struct{})
		go func() {
			_ = sess.Close()
			close(done)
		}()
		if proc != nil {
			proc.shutdown()
		}
		t := time.NewTimer(5 * time.Second)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			slog.Warn("MCP session close timed out", "server", s.cfg.Name)
		}
	})
}

// ready returns the session of a ready, connected server.
func (m *Manager) ready(name string) (*server, *mcp.ClientSession, error) {
	s, ok := m.byName[name]
	if !ok {
		return nil, nil, fmt.Errorf("unknown MCP server `%s`", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.status != StatusReady:
		return nil, nil, fmt.Errorf("MCP server `%s` is not ready (%s)", name, s.status)
	case !s.alive:
		return nil, nil, fmt.Errorf("MCP server `%s` is no longer running", name)
	}
	return s, s.session, nil
}
