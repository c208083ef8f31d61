// Package server is the app-server proper: per-connection state (the initialize gate, capabilities,
// notification opt-outs), the method table that decodes typed params and routes each client request to
// its handler, and the adapters that turn thread events into notifications and approval needs into
// server→client requests. It is the only package that speaks JSON-RPC methods.
package server

import (
	"appserver/externalagent"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"appserver/auth"
	"appserver/config"
	"appserver/environments"
	"appserver/execmgr"
	"appserver/features"
	"appserver/handshake"
	"appserver/internal/idlefree"
	"appserver/jsonrpc"
	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/ratelimits"
	"appserver/skills"
	"appserver/stopwatch"
	"appserver/thread"
	"appserver/tools"
)

// Version is appserver's own version; CompatVersion is the codex-cli version whose protocol it speaks.
const (
	Version       = handshake.Version
	CompatVersion = handshake.CompatVersion
)

// Options configure a Server.
type Options struct {
	Config *config.Config
	Logger *slog.Logger
	// QueueSize bounds each connection's egress queue (jsonrpc default when zero).
	QueueSize int
	// Tools builds the tools offered to the model on each turn (nil: none).
	Tools thread.ToolProvider
	// ReloadConfig re-reads the configuration from disk (config/mcpServer/reload); nil keeps the loaded one.
	ReloadConfig func() (*config.Config, error)
	// ReloadConfigAt is ReloadConfig with the `-c` overrides' relative paths resolved against pathBase
	// (config/read's cwd, else CODEX_HOME); nil uses ReloadConfig.
	ReloadConfigAt func(pathBase string) (*config.Config, error)
	// ConfigError is why the configuration did not load at start, when Config holds the defaults the
	// server runs with instead (config.Defaults): initialize is followed by a configWarning, and
	// config/read and thread/start fail with it until the configuration loads again.
	ConfigError error
	// ProjectWarning is the warning about the untrusted project's .codex folders of the directory the
	// server started in (config.UntrustedProjectWarning), sent as a configWarning after initialize.
	ProjectWarning string
	// UnknownKeys returns the keys of config.toml this version does not know (it may wait for the
	// start-up's check); the client is warned about them after initialize and on each new thread.
	// nil: none.
	UnknownKeys func() []config.UnknownKey
	// SessionSource is recorded as the source of threads started here ("vscode" when empty; `exec`
	// uses "exec").
	SessionSource string
	// Clock times approval waits, MCP tool timeouts, idle thread unloads and command/exec timeouts (nil: the real
	// clock); tests pass a fake one.
	Clock stopwatch.Clock
}

// Server serves any number of connections that share threads, processes and configuration.
type Server struct {
	cfg     *config.Config
	log     *slog.Logger
	opts    Options
	routes  map[string]route
	threads *thread.Manager
	exec    *execmgr.Manager
	install string // installation id, read or created once
	search  *fileSearchState
	watches fsWatchState

	mu       sync.Mutex
	conns    map[*connection]struct{}
	mcpTable map[string]config.MCPServer // [mcp_servers] after a reload; nil = s.cfg's
	// cfgMu guards cfgErr, and serializes the reloads while it is set: not mu, which every broadcast
	// and connection takes, since a reload reads config.toml from disk.
	cfgMu    sync.Mutex
	cfgErr   error         // Options.ConfigError until the configuration loads (configstate.go)
	unknownW func() string // config.UnknownKeysWarning of Options.UnknownKeys, once

	features features.Runtime // experimentalFeature/enablement/set
	skills   *skills.Catalog  // skills/*, built with the routes
	auth     *auth.Store      // $CODEX_HOME/auth.json
	logins   *auth.Logins     // pending ChatGPT browser login

	rateLimits    ratelimits.Tracker     // from the last model response's headers
	state         stateDB                // $CODEX_HOME/appserver_state.sqlite (thread/metadata/update)
	org           orgStores              // projects, attachments and queues in the state database (organization.go)
	importHistory *externalagent.History // externalAgentConfig/import history (created on first use)

	envs    *environments.Registry // environment/*, built with the routes
	samples sampleTable            // in-flight thread/sample requests, for thread/sample/cancel
	idle    *idlefree.Releaser     // gives freed memory back once turns stop ending

	nextConnID atomic.Int64
	ctx        context.Context
	cancel     context.CancelFunc
}

// New builds a Server from options.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: opts.Config, log: opts.Logger, opts: opts, conns: map[*connection]struct{}{}, ctx: ctx, cancel: cancel,
		idle: idlefree.New(), cfgErr: opts.ConfigError}
	s.unknownW = sync.OnceValue(func() string {
		if opts.UnknownKeys == nil {
			return ""
		}
		return config.UnknownKeysWarning(opts.UnknownKeys())
	})
	s.auth = auth.NewStore(opts.Config.CodexHome)
	s.exec = execmgr.NewManager(execmgr.ManagerOptions{Logger: opts.Logger, Clock: opts.Clock})
	var onLoad func(*thread.Thread)
	if opts.Tools == nil {
		td := tools.Deps{Config: opts.Config, Exec: s.exec, Logger: opts.Logger, Extra: s.extraTools, MultiAgent: s.multiAgentTools, Collaboration: s.collaborationTools}
		opts.Tools = tools.Provider(td)
		onLoad = tools.ThreadLoaded(td)
	}
	s.threads = thread.NewManager(thread.Deps{
		Config: opts.Config, Logger: opts.Logger, Tools: opts.Tools, AwaitTools: s.awaitMCP, Version: UserAgentVersion, Clock: opts.Clock,
		InstallationID: s.installationID,
		ModelOptions:   model.Options{Getenv: s.auth.Getenv(nil), OnResponseHeaders: s.rateLimits.Observe},
		SkillsPrompt:   s.skillsPrompt,
		Broadcast:      s.broadcast,
		UserAgent:      func(o string) string { return handshake.UserAgent(protocol.ClientInfo{Name: o, Version: Version}) },
		OnLoad:         onLoad,
	})
	s.routes = s.buildRoutes()
	return s
}

// ServeConn serves one client over r/w until EOF; it returns after the connection's work is cleaned up.
func (s *Server) ServeConn(ctx context.Context, r io.Reader, w io.Writer) error {
	return s.serveConn(ctx, r, w, nil)
}

// ServeConnInitialized is ServeConn for a client whose initialize was already answered on w, with
// params p, before the server existed (internal/early): the connection starts initialized and sends
// the notifications that follow that answer first.
func (s *Server) ServeConnInitialized(ctx context.Context, r io.Reader, w io.Writer, p *protocol.InitializeParams) error {
	return s.serveConn(ctx, r, w, p)
}

func (s *Server) serveConn(ctx context.Context, r io.Reader, w io.Writer, initialized *protocol.InitializeParams) error {
	c := &connection{srv: s, id: s.nextConnID.Add(1), log: s.log}
	if initialized != nil {
		c.adoptInitialize(initialized)
	}
	// Run calls before once its writer runs (a queue smaller than the post-initialize notifications would
	// otherwise never drain) and before it reads the first request; the notifications are queued before the
	// connection is registered, so no broadcast precedes them.
	before := func() {
		if initialized != nil {
			s.afterInitialize(c)
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
	}
	c.rpc = jsonrpc.NewConn(r, w, c, jsonrpc.Options{QueueSize: s.opts.QueueSize, Logger: s.log, ReleaseMemory: debug.FreeOSMemory,
		BeforeRead: before})
	err := c.rpc.Run(ctx)
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.leaveThreads(c)
	c.closed()
	return err
}

// Close stops everything the server owns: threads, their turns and every child process.
func (s *Server) Close() {
	if s.envs != nil {
		s.envs.Close()
	}
	if s.logins != nil {
		s.logins.Close()
	}
	s.threads.Close()
	s.idle.Close()
	if err := s.exec.Close(); err != nil {
		s.log.Warn("closing processes", "error", err)
	}
	s.cancel()
}

// currentConfig is the configuration as last loaded or written (config writes swap it).
func (s *Server) currentConfig() *config.Config { return s.threads.Config() }

// Threads exposes the thread manager (for wiring tools and listeners).
func (s *Server) Threads() *thread.Manager { return s.threads }

// connection is the state of one client connection.
type connection struct {
	srv *Server
	id  int64
	rpc *jsonrpc.Conn
	log *slog.Logger

	mu           sync.Mutex
	initialized  bool
	experimental bool
	optOut       map[string]bool
	clientInfo   protocol.ClientInfo
	execs        *execmgr.CommandExecRegistry
	procs        *execmgr.HandleRegistry // process/* (server/process.go)
	// elicits counts, per thread, the out-of-band elicitations this connection raised and has not
	// lowered; they are released when it ends.
	elicits map[*thread.Thread]int64

	closeHooks []func()
}

// holdElicitation records an increment of t's counter by this connection.
func (c *connection) holdElicitation(t *thread.Thread) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.elicits == nil {
		c.elicits = map[*thread.Thread]int64{}
	}
	c.elicits[t]++
}

// dropElicitation records a decrement of t's counter by this connection (of its own increments, if any).
func (c *connection) dropElicitation(t *thread.Thread) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.elicits[t] > 0 {
		c.elicits[t]--
	}
	if c.elicits[t] == 0 {
		delete(c.elicits, t)
	}
}

// releaseElicitations lowers every counter by what this connection left raised: nobody is left to
// lower it, and a thread paused forever would hold its commands' results and MCP servers forever.
func (c *connection) releaseElicitations() {
	c.mu.Lock()
	held := c.elicits
	c.elicits = nil
	c.mu.Unlock()
	for t, n := range held {
		left := t.ReleaseElicitations(n)
		c.log.Info("released the out-of-band elicitations of a closed connection", "thread", t.ID, "released", n, "count", left)
	}
}

// onClose registers cleanup to run when the connection ends.
func (c *connection) onClose(f func()) {
	c.mu.Lock()
	c.closeHooks = append(c.closeHooks, f)
	c.mu.Unlock()
}

func (c *connection) closed() {
	c.releaseElicitations()
	c.mu.Lock()
	hooks := c.closeHooks
	c.closeHooks = nil
	c.mu.Unlock()
	for i := len(hooks) - 1; i >= 0; i-- {
		hooks[i]()
	}
}

func (c *connection) isInitialized() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.initialized
}

func (c *connection) experimentalAPI() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.experimental
}

// notify sends a notification unless the client opted out of it.
func (c *connection) notify(method string, params any) {
	c.mu.Lock()
	skip := c.optOut[method] || !c.initialized
	c.mu.Unlock()
	if skip {
		return
	}
	if err := c.rpc.Notify(method, params); err != nil {
		c.log.Debug("notification dropped", "method", method, "error", err)
	}
}

// HandleNotification accepts client notifications; `initialized` is not required by the reference, and
// unknown notifications are ignored.
func (c *connection) HandleNotification(_ context.Context, method string, _ json.RawMessage) {
	if method != protocol.ClientNotifyInitialized {
		c.log.Debug("ignoring client notification", "method", method)
	}
}

// HandleRequest applies the method table, params decoding, the initialize gate and experimental gating,
// in the reference's order: a request is decoded (method and params) before it is refused for coming
// before initialize or for needing the experimental API.
func (c *connection) HandleRequest(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.Method == protocol.MethodInitialize {
		return c.srv.initialize(ctx, c, req)
	}
	spec, ok := protocol.LookupClientRequest(req.Method)
	if !ok {
		return nil, unknownMethodError(req.Method)
	}
	fields := &topFields{raw: req.Params} // the required and experimental checks share one decoding
	params, err := decodeParamsFields(spec, req.Params, fields)
	if err != nil {
		return nil, err
	}
	if !c.isInitialized() {
		return nil, jsonrpc.InvalidRequest("Not initialized")
	}
	if spec.Experimental && !c.experimentalAPI() {
		return nil, jsonrpc.InvalidRequest(req.Method + " requires experimentalApi capability")
	}
	if !c.experimentalAPI() {
		if field := usedExperimentalField(spec, fields); field != "" {
			return nil, jsonrpc.InvalidRequest(req.Method + "." + field + " requires experimentalApi capability")
		}
	}
	r, ok := c.srv.routes[req.Method]
	if !ok {
		return nil, jsonrpc.InvalidRequest(req.Method + " is not supported by appserver")
	}
	return r(ctx, c, req, params)
}

// route is a typed handler adapted to the method table.
type route func(ctx context.Context, c *connection, req *jsonrpc.Request, params any) (any, error)

// handle adapts a handler taking typed params *P to a route.
func handle[P any](h func(ctx context.Context, c *connection, req *jsonrpc.Request, p *P) (any, error)) route {
	return func(ctx context.Context, c *connection, req *jsonrpc.Request, params any) (any, error) {
		p, _ := params.(*P)
		if p == nil {
			p = new(P)
		}
		return h(ctx, c, req, p)
	}
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	return h
}
