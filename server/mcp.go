package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"appserver/config"
	"appserver/jsonrpc"
	"appserver/mcpconn"
	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/tools"

	mcpjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// mcpKey stores a thread's *threadMCP among its attached state.
type mcpKey struct{}

// threadMCP is one thread's MCP servers: the current manager (replaced by config/mcpServer/reload),
// the tool-call state that outlives it, and the startup notifications held back until thread/start
// was answered.
type threadMCP struct {
	s     *Server
	t     *thread.Thread
	tools *tools.MCPState

	mu     sync.Mutex
	mgr    *mcpconn.Manager
	closed bool
	// firstWait is set once the thread's first model request waited for the servers (awaitMCP).
	firstWait atomic.Bool

	emitMu   sync.Mutex // orders startup statuses; guards released and queued
	released bool
	queued   []protocol.McpServerStatusUpdatedNotification
}

// mcpOf returns the thread's MCP state, or nil when it has none.
func mcpOf(t *thread.Thread) *threadMCP {
	tm, _ := t.Attached(mcpKey{}).(*threadMCP)
	return tm
}

func (tm *threadMCP) manager() *mcpconn.Manager {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.mgr
}

// mcpConfigs converts the configured servers (sorted by name; only name when not empty) into
// mcpconn's form. Disabled servers are kept: mcpconn skips them.
func (s *Server) mcpConfigs(name string) []mcpconn.ServerConfig {
	return mcpConfigList(s.mcpServers(), name)
}

// threadMCPConfigs are the servers of one thread: the configured ones, with those of its thread/start
// `config` override in place of the same names.
func (s *Server) threadMCPConfigs(t *thread.Thread) []mcpconn.ServerConfig {
	over := t.MCPServerOverrides()
	if len(over) == 0 {
		return s.mcpConfigs("")
	}
	servers := maps.Clone(s.mcpServers())
	if servers == nil {
		servers = map[string]config.MCPServer{}
	}
	maps.Copy(servers, over)
	return mcpConfigList(servers, "")
}

func mcpConfigList(servers map[string]config.MCPServer, name string) []mcpconn.ServerConfig {
	var out []mcpconn.ServerConfig
	for key, c := range servers {
		if name != "" && key != name {
			continue
		}
		out = append(out, mcpServerConfig(key, c))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func mcpServerConfig(name string, c config.MCPServer) mcpconn.ServerConfig {
	return mcpconn.ServerConfig{
		Name: name, Command: c.Command, Args: c.Args, Env: c.Env, Cwd: c.Cwd,
		URL: c.URL, BearerTokenEnvVar: c.BearerTokenEnvVar, HTTPHeaders: c.HTTPHeaders, EnvHTTPHeaders: c.EnvHTTPHeaders,
		Enabled: c.Enabled, Required: c.Required, StartupTimeout: c.StartupTimeout, ToolTimeout: c.ToolTimeout,
		EnabledTools: c.EnabledTools, DisabledTools: c.DisabledTools,
	}
}

// startThreadMCP starts the configured MCP servers of a new or resumed thread and, when some are
// `required`, waits for them and fails if one did not start. Startup notifications are held until
// releaseThreadMCP (call it after the thread/start or thread/resume response). The servers stop when
// the thread closes.
func (s *Server) startThreadMCP(ctx context.Context, t *thread.Thread) error {
	cfgs := s.threadMCPConfigs(t)
	if len(cfgs) == 0 || mcpOf(t) != nil {
		return nil
	}
	tm := &threadMCP{s: s, t: t}
	tm.tools = tools.NewMCPState(tm.manager, s.cfg.ApprovalTimeout)
	t.Attach(mcpKey{}, tm)
	t.OnClose(tm.close)
	m := tm.start(cfgs)
	required := false
	for _, c := range cfgs {
		required = required || (c.Enabled && c.Required)
	}
	if !required {
		return nil
	}
	if err := m.WaitReady(ctx); err != nil {
		return err
	}
	return m.RequiredFailure()
}

// releaseThreadMCP sends the startup statuses held so far and lets later ones through at once.
func (s *Server) releaseThreadMCP(t *thread.Thread) {
	tm := mcpOf(t)
	if tm == nil {
		return
	}
	tm.emitMu.Lock()
	defer tm.emitMu.Unlock()
	for _, n := range tm.queued {
		t.Emit(protocol.NotifyMcpServerStartupStatusUpdated, n)
	}
	tm.queued, tm.released = nil, true
}

// start launches a manager for cfgs and makes it the current one.
func (tm *threadMCP) start(cfgs []mcpconn.ServerConfig) *mcpconn.Manager {
	m := mcpconn.Start(tm.t.Context(), cfgs, mcpconn.Hooks{
		OnStatus:   tm.onStatus,
		Elicit:     tm.elicit,
		OnProgress: tm.tools.Progress,
		Clock:      tm.s.opts.Clock,
	})
	tm.mu.Lock()
	if tm.closed {
		tm.mu.Unlock()
		m.Close()
		return m
	}
	tm.mgr = m
	tm.mu.Unlock()
	return m
}

// reload restarts the thread's servers with the current configuration.
func (tm *threadMCP) reload() {
	tm.mu.Lock()
	old, closed := tm.mgr, tm.closed
	tm.mgr = nil
	tm.mu.Unlock()
	if closed {
		return
	}
	if old != nil {
		old.Close()
	}
	tm.start(tm.s.threadMCPConfigs(tm.t))
}

// close stops the thread's servers (the thread is closing).
func (tm *threadMCP) close() {
	tm.mu.Lock()
	m := tm.mgr
	tm.closed, tm.mgr = true, nil
	tm.mu.Unlock()
	if m != nil {
		m.Close()
	}
}

func (tm *threadMCP) onStatus(name, status, errMsg string) {
	n := protocol.McpServerStatusUpdatedNotification{ThreadID: &tm.t.ID, Name: name, Status: protocol.McpServerStartupState(status)}
	if errMsg != "" {
		n.Error = &errMsg
	}
	tm.emitMu.Lock()
	defer tm.emitMu.Unlock()
	if !tm.released {
		tm.queued = append(tm.queued, n)
		return
	}
	tm.t.Emit(protocol.NotifyMcpServerStartupStatusUpdated, n)
}

// serverElicit is a server-originated elicitation forwarded to the client: the common members in the
// reference's order (_meta is null), then the form or url members.
type serverElicit struct {
	ThreadID   string          `json:"threadId"`
	TurnID     *string         `json:"turnId"`
	ServerName string          `json:"serverName"`
	Mode       string          `json:"mode"`
	Meta       json.RawMessage `json:"_meta"`
	Message    string          `json:"message"`
}

type serverElicitForm struct {
	serverElicit
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

type serverElicitURL struct {
	serverElicit
	URL           string `json:"url"`
	ElicitationID string `json:"elicitationId"`
}

var errBadElicitationAnswer = errors.New("undecodable mcpServer/elicitation/request answer")

// elicit forwards an MCP server's elicitation/create to the client, or declines it under approval
// policy never (or granular without mcp_elicitations). While it is pending the thread is
// waitingOnApproval (when a turn runs) and its deadlines are held; the wait is bounded by
// approval_timeout_ms (frozen while the out-of-band counter is above zero), the manager's life and the
// client connection. Errors make mcpconn decline.
func (tm *threadMCP) elicit(ctx context.Context, req mcpconn.ElicitationRequest) (mcpconn.ElicitationResult, error) {
	t := tm.t
	if p := t.Settings().ApprovalPolicy; p.Name == protocol.AskForApprovalNever || p.Granular != nil && !p.Granular.McpElicitations {
		// A client that chose never to be asked is not asked: the reference declines for it.
		return mcpconn.ElicitationResult{Action: "decline"}, nil
	}
	tn := t.ActiveTurn()
	var turnID *string
	if tn != nil {
		id := tn.ID
		turnID = &id
	}
	head := serverElicit{ThreadID: t.ID, TurnID: turnID, ServerName: req.ServerName, Mode: "form",
		Message: req.Message, Meta: json.RawMessage(`null`)}
	var params any
	if req.Mode == "url" {
		head.Mode = "url"
		params = serverElicitURL{serverElicit: head, URL: req.URL, ElicitationID: req.ElicitationID}
	} else {
		schema := req.RequestedSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		params = serverElicitForm{serverElicit: head, RequestedSchema: schema}
	}
	// Bounded by approval_timeout_ms of time charged while the out-of-band counter is zero.
	ctx, cancel := t.ApprovalContext(ctx, tm.s.cfg.ApprovalTimeout)
	defer cancel()
	if tn != nil {
		t.SetWaitingOnApproval(true)
	}
	release := t.HoldPause()
	raw, err := t.Request(ctx, protocol.ServerRequestMcpServerElicitationRequest, params)
	release()
	if tn != nil && t.ActiveTurn() == tn {
		t.SetWaitingOnApproval(false)
	}
	if err != nil {
		return mcpconn.ElicitationResult{}, err
	}
	var ans struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
		Meta    json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(raw, &ans) != nil {
		return mcpconn.ElicitationResult{}, errBadElicitationAnswer
	}
	switch ans.Action {
	case "accept", "decline", "cancel":
	default:
		return mcpconn.ElicitationResult{}, errBadElicitationAnswer
	}
	return mcpconn.ElicitationResult{Action: ans.Action, Content: ans.Content, Meta: ans.Meta}, nil
}

// beforeThreadStart runs after a thread is created and before thread/start is answered; an error fails
// thread/start (the thread is unloaded). MCP servers marked `required` are awaited here.
func (s *Server) beforeThreadStart(ctx context.Context, t *thread.Thread) error {
	return s.startThreadMCP(ctx, t)
}

// afterThreadStart runs after thread/start's response and thread/started (MCP startup statuses).
func (s *Server) afterThreadStart(t *thread.Thread, _ *connection) { s.releaseThreadMCP(t) }

// mcpFirstWait bounds how long the first model request of a loaded thread waits for its MCP servers still
// starting, as the reference's (about a second, measured: ~/.cache/mcpdefer-probe).
const mcpFirstWait = time.Second

// awaitMCP runs before each model request's tools are built: the first request of a loaded thread waits
// until its MCP servers finished starting, at most mcpFirstWait (or until the turn ends); later requests
// never wait, as the reference's.
func (s *Server) awaitMCP(ctx context.Context, t *thread.Thread) {
	tm := mcpOf(t)
	if tm == nil || !tm.firstWait.CompareAndSwap(false, true) {
		return
	}
	m := tm.manager()
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, mcpFirstWait)
	defer cancel()
	_ = m.WaitReady(ctx)
}

// extraTools are tool sets beyond exec and apply_patch offered on each turn (MCP servers): those of the
// ready servers (a request does not wait for servers still starting but the first, see awaitMCP), and a
// later request those of the servers that became ready since, as the reference.
func (s *Server) extraTools(t *thread.Thread, _ thread.Settings) []thread.ToolSet {
	tm := mcpOf(t)
	if tm == nil || tm.manager() == nil {
		return nil
	}
	return []thread.ToolSet{tm.tools.ToolSet()}
}

func (s *Server) addMCPRoutes(r map[string]route) {
	r[protocol.MethodMcpServerStatusList] = handle(s.mcpStatusList)
	r[protocol.MethodConfigMcpServerReload] = handle(s.mcpReload)
	r[protocol.MethodMcpServerToolCall] = handle(s.mcpToolCall)
	r[protocol.MethodMcpServerResourceRead] = handle(s.mcpResourceRead)
	// The out-of-band elicitation counter's transitions go to the servers that advertise the capability.
	s.threads.SetPauseListener(func(ctx context.Context, t *thread.Thread, paused bool) error {
		tm := mcpOf(t)
		if tm == nil {
			return nil
		}
		m := tm.manager()
		if m == nil {
			return nil
		}
		return m.SetPaused(ctx, paused)
	})
}

// mcpStatusListResponse is ListMcpServerStatusResponse with mcpconn's JSON-ready entries.
type mcpStatusListResponse struct {
	Data       []mcpconn.ServerStatus `json:"data"`
	NextCursor *string                `json:"nextCursor"`
}

// mcpStatusList answers mcpServerStatus/list. With a threadId it describes that thread's servers
// (runtimeStatus set); without, it starts the configured servers for this call only (as the reference
// does), waits until each finished starting, and stops them after answering.
func (s *Server) mcpStatusList(ctx context.Context, _ *connection, req *jsonrpc.Request, p *protocol.ListMcpServerStatusParams) (any, error) {
	name := ""
	if p.ServerName != nil {
		name = *p.ServerName
	}
	var (
		statuses []mcpconn.ServerStatus
		temp     *mcpconn.Manager
	)
	if p.ThreadID != nil {
		t, err := s.loadedThread(*p.ThreadID)
		if err != nil {
			return nil, err
		}
		if tm := mcpOf(t); tm != nil {
			if m := tm.manager(); m != nil {
				if err := m.WaitReady(ctx); err != nil {
					return nil, err
				}
				statuses = m.Statuses(ctx)
				for i := range statuses {
					rs := statuses[i].ConnectionStatus
					statuses[i].RuntimeStatus = &rs
				}
			}
		}
	} else if cfgs := s.mcpConfigs(name); len(cfgs) > 0 {
		temp = mcpconn.Start(ctx, cfgs, mcpconn.Hooks{})
		defer temp.Close()
		if err := temp.WaitReady(ctx); err != nil {
			return nil, err
		}
		statuses = temp.Statuses(ctx)
	}
	filtered := []mcpconn.ServerStatus{}
	for _, st := range statuses {
		if name != "" && st.Name != name {
			continue
		}
		if p.Detail != nil && *p.Detail == protocol.McpServerStatusDetailToolsAndAuthOnly {
			st.Resources, st.ResourceTemplates = []json.RawMessage{}, []json.RawMessage{}
		}
		filtered = append(filtered, st)
	}
	page, next, err := paginate(filtered, p.Cursor, p.Limit, "MCP servers")
	req.Reply(mcpStatusListResponse{Data: page, NextCursor: next}, err)
	return nil, nil // temp (if any) stops after the answer
}

// mcpServers returns the [mcp_servers] in force: config.toml as last (re)loaded.
func (s *Server) mcpServers() map[string]config.MCPServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mcpTable != nil {
		return s.mcpTable
	}
	if s.cfg == nil {
		return nil
	}
	return s.cfg.MCPServers
}

// mcpReload answers config/mcpServer/reload: it re-reads [mcp_servers] from config.toml (when the server
// knows how to reload its configuration) and restarts the servers of every loaded thread, starting them
// for threads that had none.
func (s *Server) mcpReload(_ context.Context, _ *connection, req *jsonrpc.Request, _ *struct{}) (any, error) {
	if s.opts.ReloadConfig != nil {
		cfg, err := s.opts.ReloadConfig()
		if err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to reload configuration: %v", err)
		}
		s.mu.Lock()
		s.mcpTable = cfg.MCPServers
		s.mu.Unlock()
	}
	req.Reply(protocol.McpServerRefreshResponse{}, nil)
	var wg sync.WaitGroup
	for _, id := range s.threads.Loaded() {
		t, ok := s.threads.Get(id)
		if !ok {
			continue
		}
		if tm := mcpOf(t); tm != nil {
			wg.Go(tm.reload)
			continue
		}
		wg.Go(func() {
			if err := s.startThreadMCP(s.ctx, t); err != nil {
				s.log.Warn("MCP servers of a reloaded thread failed", "thread", t.ID, "error", err)
			}
			s.releaseThreadMCP(t)
		})
	}
	wg.Wait()
	return nil, nil
}

// threadManager returns the MCP manager of a loaded thread.
func (s *Server) threadManager(threadID string) (*thread.Thread, *mcpconn.Manager, error) {
	t, err := s.loadedThread(threadID)
	if err != nil {
		return nil, nil, err
	}
	tm := mcpOf(t)
	if tm == nil || tm.manager() == nil {
		return nil, nil, jsonrpc.InvalidRequest("thread " + threadID + " has no MCP servers")
	}
	return t, tm.manager(), nil
}

// mcpToolCall answers mcpServer/tool/call: a direct call on one of the thread's servers (no approval
// question: the client asked). It answers from its own goroutine, owned by the call, whose duration
// is bounded by the tool timeout and the thread's life.
func (s *Server) mcpToolCall(_ context.Context, _ *connection, req *jsonrpc.Request, p *protocol.McpServerToolCallParams) (any, error) {
	t, m, err := s.threadManager(p.ThreadID)
	if err != nil {
		return nil, err
	}
	meta := map[string]any{}
	if len(p.Meta) > 0 && string(p.Meta) != "null" {
		if err := json.Unmarshal(p.Meta, &meta); err != nil {
			return nil, jsonrpc.InvalidRequest("_meta must be an object")
		}
	}
	req.Go(func() (any, error) {
		res, err := m.CallTool(t.Context(), t.Controller(), p.Server, p.Tool, p.Arguments, meta)
		if err != nil {
			return nil, mcpRequestError(err, p.Server)
		}
		resp := protocol.McpServerToolCallResponse{IsError: &res.IsError, StructuredContent: res.StructuredContent, Meta: res.Meta}
		_ = json.Unmarshal(res.Content, &resp.Content)
		return resp, nil
	})
	return nil, nil
}

// mcpResourceRead answers mcpServer/resource/read from the thread's server, or (without threadId)
// from a server started for this call only.
func (s *Server) mcpResourceRead(ctx context.Context, _ *connection, req *jsonrpc.Request, p *protocol.McpResourceReadParams) (any, error) {
	var m *mcpconn.Manager
	if p.ThreadID != nil {
		_, tm, err := s.threadManager(*p.ThreadID)
		if err != nil {
			return nil, err
		}
		m = tm
	} else {
		cfgs := s.mcpConfigs(p.Server)
		if len(cfgs) == 0 {
			return nil, jsonrpc.InvalidRequest(fmt.Sprintf("unknown MCP server `%s`", p.Server))
		}
		m = mcpconn.Start(ctx, cfgs, mcpconn.Hooks{})
		defer m.Close()
		if err := m.WaitReady(ctx); err != nil {
			return nil, err
		}
	}
	raw, err := m.ReadResource(ctx, p.Server, p.URI)
	if err != nil {
		return nil, mcpRequestError(err, p.Server)
	}
	var body struct {
		Contents []protocol.ResourceContent `json:"contents"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "decode resources/read result: %v", err)
	}
	req.Reply(protocol.McpResourceReadResponse{Contents: body.Contents}, nil)
	return nil, nil
}

// mcpRequestError words a failed direct MCP request like the reference: an MCP server's own JSON-RPC
// error passes through with its code and message; anything else is -32603.
func mcpRequestError(err error, server string) error {
	var wire *mcpjsonrpc.Error
	if errors.As(err, &wire) {
		return &jsonrpc.Error{Code: int(wire.Code), Message: wire.Message}
	}
	msg := err.Error()
	if msg == "unknown MCP server `"+server+"`" {
		msg = "unknown MCP server '" + server + "'"
	}
	return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", msg)
}
