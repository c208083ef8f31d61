package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"appserver/mcpconn"
	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/toolsearch"
)

// Texts the reference sends the model (and puts in the item's error) when an MCP call is refused.
const (
	MCPRejectedText    = "user rejected MCP tool call"
	MCPCancelledText   = "user cancelled MCP tool call"
	MCPNeverPolicyText = "MCP tool call requires approval, but approval policy is never"
)

// MCPState is the per-thread state of MCP tool calls that outlives turns and server reloads: the
// tools approved for the session and the progress routes of running calls.
type MCPState struct {
	manager         func() *mcpconn.Manager
	approvalTimeout time.Duration

	mu       sync.Mutex
	approved map[string]bool                 // "server\x00tool" approved for the session
	calls    map[string]func(message string) // callID → progress emitter
	// Always keeps the "always allow" answers; zero: they last the session only.
	Always MCPAlways
}

// MCPAlways reads and saves the tools the user allowed for good (the reference's config.toml
// mcp_servers.<server>.tools.<tool>.approval_mode = "approve").
type MCPAlways struct {
	Approved func(server, tool string) bool
	Save     func(server, tool string) error
}

// NewMCPState builds the state of one thread; manager returns the thread's current MCP manager (nil
// when none) and approvalTimeout bounds each approval question (0: until the turn ends).
func NewMCPState(manager func() *mcpconn.Manager, approvalTimeout time.Duration) *MCPState {
	return &MCPState{manager: manager, approvalTimeout: approvalTimeout,
		approved: map[string]bool{}, calls: map[string]func(string){}}
}

// Progress routes an MCP progress message to the running call callID; unknown ids are ignored.
func (st *MCPState) Progress(callID, message string) {
	st.mu.Lock()
	emit := st.calls[callID]
	st.mu.Unlock()
	if emit != nil {
		emit(message)
	}
}

// ToolSet returns the thread.ToolSet offering the current servers' tools and the resource functions.
func (st *MCPState) ToolSet() thread.ToolSet { return &mcpSet{st: st, m: st.manager()} }

func approvalKey(server, tool string) string { return server + "\x00" + tool }

func (st *MCPState) isApproved(server, tool string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.approved[approvalKey(server, tool)]
}

func (st *MCPState) alwaysApproved(server, tool string) bool {
	return st.Always.Approved != nil && st.Always.Approved(server, tool)
}

func (st *MCPState) approve(server, tool string) {
	st.mu.Lock()
	st.approved[approvalKey(server, tool)] = true
	st.mu.Unlock()
}

func (st *MCPState) track(callID string, emit func(string)) (untrack func()) {
	st.mu.Lock()
	st.calls[callID] = emit
	st.mu.Unlock()
	return func() {
		st.mu.Lock()
		delete(st.calls, callID)
		st.mu.Unlock()
	}
}

// mcpSet is one turn's view of the MCP tools: the specs of the manager current when the turn's request
// was built; calls go to the manager current when they run. The reference spreads the MCP tools over the
// tools array (the resource functions after write_stdin, the servers' namespaces after the sub-agent tools):
// a plain turn offers them as two views; a model that searches for tools finds the servers' tools with
// tool_search instead (the namespaces view deferred).
type mcpSet struct {
	st   *MCPState
	m    *mcpconn.Manager
	view mcpView
}

type mcpView int

const (
	mcpAll        mcpView = iota // the resource functions and the namespaces, answering every call
	mcpResources                 // the resource functions, answering every call
	mcpNamespaces                // the servers' namespaces, answering no call (the resources view does)
	mcpDeferred                  // nothing: tool_search finds the namespaces' tools
)

// split returns the resources and the namespaces views of the set.
func (s *mcpSet) split() (resources, namespaces *mcpSet) {
	return &mcpSet{st: s.st, m: s.m, view: mcpResources}, &mcpSet{st: s.st, m: s.m, view: mcpNamespaces}
}

func (s *mcpSet) Specs() []json.RawMessage {
	if s.m == nil {
		return nil
	}
	switch s.view {
	case mcpResources:
		return s.m.ResourceTools()
	case mcpNamespaces:
		return s.m.NamespaceTools()
	case mcpDeferred:
		return nil
	}
	return s.m.ModelTools()
}

// SearchTools lists the ready servers' tools for tool_search (Deferrable; none from the resources view).
func (s *mcpSet) SearchTools() ([]toolsearch.Tool, []toolsearch.Namespace) {
	if s.m == nil || s.view == mcpResources {
		return nil, nil
	}
	return s.m.SearchTools()
}

// Deferred is the set without the servers' namespaces (Deferrable).
func (s *mcpSet) Deferred() thread.ToolSet {
	view := mcpResources
	if s.view != mcpAll && s.view != mcpResources {
		view = mcpDeferred
	}
	return &mcpSet{st: s.st, m: s.m, view: view}
}

func (s *mcpSet) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Type != "function_call" || s.view == mcpNamespaces || s.view == mcpDeferred {
		return nil, false
	}
	m := s.st.manager()
	if m == nil {
		return nil, false
	}
	if call.Namespace == "" {
		switch call.Name {
		case mcpconn.ToolListResources, mcpconn.ToolListResourceTemplates, mcpconn.ToolReadResource:
			return resourceCall(ctx, tc, m, call), true
		}
	}
	// A flat `mcp__<server>__<tool>` name does not resolve: the reference answers it "unsupported call".
	server, tool, ok := m.Resolve(call.Namespace, call.Name)
	if !ok {
		return nil, false
	}
	return s.st.run(ctx, tc, m, call, server, tool), true
}

// mcpCall tracks one mcpToolCall item.
type mcpCall struct {
	tc      *thread.ToolContext
	item    protocol.ThreadItemMcpToolCall
	started time.Time
}

// complete finishes the item; dur is the MCP request's own duration (zero when it was not sent).
func (c *mcpCall) complete(status protocol.McpToolCallStatus, result *protocol.McpToolCallResult, errMsg string, dur time.Duration) {
	c.item.Status = status
	c.item.Result = result
	if errMsg != "" {
		c.item.Error = &protocol.McpToolCallError{Message: errMsg}
	}
	c.item.DurationMs = ptr(dur.Milliseconds())
	c.item.CompletedAtMs = ptr(time.Now().UnixMilli())
	c.tc.ItemCompleted(protocol.ThreadItem{Value: c.item})
}

// refuse fails the item without calling the server; the model gets the text in the result layout.
func (c *mcpCall) refuse(callID, text string) json.RawMessage {
	c.complete(protocol.McpToolCallStatusFailed, nil, text, 0)
	return thread.FunctionOutputRaw(callID, mcpconn.FormatForModel(mcpconn.CallResult{Content: textContent(text)}, time.Since(c.started)))
}

func textContent(text string) json.RawMessage {
	b, _ := json.Marshal([]map[string]string{{"type": "text", "text": text}})
	return b
}

// itemArguments renders a call's JSON arguments for the item ({} when empty, the raw text as a JSON
// string when invalid); ok is false for invalid JSON.
func itemArguments(raw string) (json.RawMessage, bool) {
	args := json.RawMessage(bytes.TrimSpace([]byte(raw)))
	switch {
	case len(args) == 0:
		return json.RawMessage(`{}`), true
	case json.Valid(args):
		return args, true
	}
	b, _ := json.Marshal(raw)
	return b, false
}

// resourceCall runs list_mcp_resources, list_mcp_resource_templates or read_mcp_resource as an
// mcpToolCall item of the pseudo-server "codex"; the model gets the plain JSON text.
func resourceCall(ctx context.Context, tc *thread.ToolContext, m *mcpconn.Manager, call thread.ToolCall) json.RawMessage {
	args, _ := itemArguments(call.Arguments)
	c := &mcpCall{tc: tc, started: time.Now(), item: protocol.ThreadItemMcpToolCall{
		ID: call.CallID, Server: "codex", Tool: call.Name, Arguments: args, Status: protocol.McpToolCallStatusInProgress,
		StartedAtMs: ptr(time.Now().UnixMilli()),
	}}
	tc.ItemStarted(protocol.ThreadItem{Value: c.item})
	out, err := m.ResourceToolCall(ctx, call.Name, json.RawMessage(call.Arguments))
	if err != nil {
		c.complete(protocol.McpToolCallStatusFailed, nil, err.Error(), time.Since(c.started))
		thread.SendFailure(ctx, err.Error())
		return thread.FunctionOutput(call.CallID, err.Error())
	}
	c.complete(protocol.McpToolCallStatusCompleted, ResultItem(mcpconn.CallResult{Content: textContent(out)}), "", time.Since(c.started))
	return thread.FunctionOutput(call.CallID, out)
}

// toolDef is the part of an MCP tool definition an approval question shows.
type toolDef struct {
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations json.RawMessage `json:"annotations"`
}

func (d toolDef) readOnly() *bool {
	var a struct {
		ReadOnlyHint *bool `json:"readOnlyHint"`
	}
	if len(d.Annotations) == 0 || json.Unmarshal(d.Annotations, &a) != nil {
		return nil
	}
	return a.ReadOnlyHint
}

// run executes one resolved MCP tool call: item, approval, call, result.
func (st *MCPState) run(ctx context.Context, tc *thread.ToolContext, m *mcpconn.Manager, call thread.ToolCall, server, tool string) json.RawMessage {
	args, validArgs := itemArguments(call.Arguments)
	var def toolDef
	if raw, ok := m.Tool(server, tool); ok {
		_ = json.Unmarshal(raw, &def)
	}
	ro := def.readOnly()
	c := &mcpCall{tc: tc, started: time.Now(), item: protocol.ThreadItemMcpToolCall{
		ID: call.CallID, Server: server, Tool: tool, Arguments: args, Status: protocol.McpToolCallStatusInProgress,
		StartedAtMs: ptr(time.Now().UnixMilli()), ReadOnlyHint: ro,
	}}
	tc.ItemStarted(protocol.ThreadItem{Value: c.item})
	if !validArgs {
		return c.refuse(call.CallID, "failed to parse function arguments: invalid JSON")
	}

	if (ro == nil || !*ro) && !st.isApproved(server, tool) && !st.alwaysApproved(server, tool) {
		switch mcpApprovalMode(tc.Settings.ApprovalPolicy) {
		case mcpNeverAsk:
			return c.refuse(call.CallID, MCPNeverPolicyText)
		case mcpAsk:
			d := st.askApproval(ctx, tc, server, tool, def, c.item.Arguments)
			switch d {
			case decisionInterrupted: // the turn ended: nothing more is reported
				return thread.FunctionOutput(call.CallID, MCPRejectedText)
			case decisionCancel:
				return c.refuse(call.CallID, MCPCancelledText)
			case decisionDecline, decisionFailed:
				return c.refuse(call.CallID, MCPRejectedText)
			case decisionAcceptForSession:
				st.approve(server, tool)
			}
		}
	}

	untrack := st.track(call.CallID, func(msg string) {
		tc.Emit(protocol.NotifyItemMcpToolCallProgress, protocol.McpToolCallProgressNotification{
			ThreadID: tc.ThreadID(), TurnID: tc.TurnID(), ItemID: call.CallID, Message: msg})
	})
	res, err := m.CallTool(ctx, tc.Thread.Controller(), server, tool, c.item.Arguments, map[string]any{"callId": call.CallID})
	untrack()
	if err != nil {
		if ctx.Err() != nil { // the turn ended: nothing more is reported
			return thread.FunctionOutput(call.CallID, "aborted")
		}
		c.complete(protocol.McpToolCallStatusFailed, nil, err.Error(), res.Duration)
		thread.SendFailure(ctx, "tool call error: "+err.Error())
		return thread.FunctionOutputRaw(call.CallID, mcpconn.FormatErrorForModel(err, time.Since(c.started)))
	}
	c.complete(protocol.McpToolCallStatusCompleted, ResultItem(res), "", res.Duration)
	thread.SendResult(ctx, callToolResult(res))
	return thread.FunctionOutputRaw(call.CallID, mcpconn.FormatForModel(res, time.Since(c.started)))
}

// callToolResult is res as MCP's CallToolResult (what a code-mode script's call resolves to).
func callToolResult(res mcpconn.CallResult) json.RawMessage {
	b, _ := json.Marshal(struct {
		Content           json.RawMessage `json:"content"`
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		Meta              json.RawMessage `json:"_meta,omitempty"`
	}{orNull(res.Content), res.IsError, res.StructuredContent, res.Meta})
	return b
}

// ResultItem converts a tools/call result into the item's result member.
func ResultItem(res mcpconn.CallResult) *protocol.McpToolCallResult {
	// structuredContent and _meta are explicit nulls when absent, as the reference writes them.
	out := &protocol.McpToolCallResult{Content: []json.RawMessage{}, StructuredContent: orNull(res.StructuredContent), Meta: orNull(res.Meta)}
	_ = json.Unmarshal(res.Content, &out.Content)
	if out.Content == nil {
		out.Content = []json.RawMessage{}
	}
	return out
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(`null`)
	}
	return raw
}

type mcpApproval int

const (
	mcpNoAsk mcpApproval = iota
	mcpAsk
	mcpNeverAsk
)

// mcpApprovalMode maps the approval policy onto non-read-only MCP tools: never fails them, granular
// follows its mcp_elicitations switch, every other policy asks.
func mcpApprovalMode(p protocol.AskForApproval) mcpApproval {
	if p.Granular != nil {
		if p.Granular.McpElicitations {
			return mcpAsk
		}
		return mcpNeverAsk
	}
	if p.Name == protocol.AskForApprovalNever {
		return mcpNeverAsk
	}
	return mcpAsk
}

// mcpApprovalParams is the mcpServer/elicitation/request of an MCP tool approval (members in the
// reference's order).
type mcpApprovalParams struct {
	ThreadID        string          `json:"threadId"`
	TurnID          *string         `json:"turnId"`
	ServerName      string          `json:"serverName"`
	Mode            string          `json:"mode"`
	Meta            approvalMeta    `json:"_meta"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

type approvalMeta struct {
	Kind              string          `json:"codex_approval_kind"`
	Persist           []string        `json:"persist"`
	ToolName          string          `json:"tool_name"`
	ToolAnnotations   json.RawMessage `json:"tool_annotations,omitempty"`
	ToolTitle         string          `json:"tool_title,omitempty"`
	ToolDescription   string          `json:"tool_description,omitempty"`
	ToolParams        json.RawMessage `json:"tool_params"`
	ToolParamsDisplay []paramDisplay  `json:"tool_params_display"`
}

type paramDisplay struct {
	Name        string          `json:"name"`
	Value       json.RawMessage `json:"value"`
	DisplayName string          `json:"display_name"`
}

// paramsDisplay lists the call's arguments in their order, titled by the input schema when it can.
func paramsDisplay(args, schema json.RawMessage) []paramDisplay {
	out := []paramDisplay{}
	var props map[string]struct {
		Title string `json:"title"`
	}
	var sch struct {
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &sch) == nil {
		_ = json.Unmarshal(sch.Properties, &props)
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return out
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return out
		}
		display := name
		if p, ok := props[name]; ok && p.Title != "" {
			display = p.Title
		}
		out = append(out, paramDisplay{Name: name, Value: v, DisplayName: display})
	}
	return out
}

// askApproval asks the client whether a non-read-only tool may run, holding the thread's deadlines
// while the user decides. Failures (error answer, undecodable answer, timeout, disconnect) decline.
func (st *MCPState) askApproval(ctx context.Context, tc *thread.ToolContext, server, tool string, def toolDef, args json.RawMessage) decision {
	turnID := tc.TurnID()
	params := mcpApprovalParams{
		ThreadID: tc.ThreadID(), TurnID: &turnID, ServerName: server, Mode: "form",
		Message:         `Allow the ` + server + ` MCP server to run tool "` + tool + `"?`,
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		Meta: approvalMeta{Kind: "mcp_tool_call", Persist: []string{"session", "always"}, ToolName: tool,
			ToolTitle: def.Title, ToolDescription: def.Description, ToolParams: args,
			ToolParamsDisplay: paramsDisplay(args, def.InputSchema), ToolAnnotations: def.Annotations},
	}
	// The wait is bounded by approval_timeout_ms of time charged while the out-of-band counter is zero.
	rctx, cancel := tc.Thread.ApprovalContext(ctx, st.approvalTimeout)
	defer cancel()
	tc.SetWaitingOnApproval(true)
	release := tc.Thread.HoldPause()
	raw, err := tc.Thread.Request(rctx, protocol.ServerRequestMcpServerElicitationRequest, params)
	release()
	if ctx.Err() == nil {
		tc.SetWaitingOnApproval(false)
	}
	if err != nil {
		if ctx.Err() != nil {
			return decisionInterrupted
		}
		tc.Log.Debug("MCP approval request failed; declining", "server", server, "tool", tool, "error", err)
		return decisionDecline
	}
	var ans struct {
		Action string          `json:"action"`
		Meta   json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(raw, &ans) != nil {
		return decisionDecline
	}
	var meta struct {
		Persist string `json:"persist"`
	}
	_ = json.Unmarshal(ans.Meta, &meta)
	switch ans.Action {
	case "accept":
		if meta.Persist == "always" && st.Always.Save != nil {
			if err := st.Always.Save(server, tool); err != nil {
				tc.Log.Warn("could not save the MCP tool approval", "server", server, "tool", tool, "error", err)
			}
		}
		if meta.Persist == "session" || meta.Persist == "always" {
			return decisionAcceptForSession
		}
		return decisionAccept
	case "cancel":
		return decisionCancel
	}
	return decisionDecline
}

// noServerResources are the MCP resource helpers without any MCP server: code mode offers them always
// (as the reference), answering from an empty manager (empty lists; an unknown server for a read).
type noServerResources struct{}

var emptyMCP = sync.OnceValue(func() *mcpconn.Manager {
	return mcpconn.Start(context.Background(), nil, mcpconn.Hooks{})
})

func (noServerResources) Specs() []json.RawMessage { return mcpconn.ResourceToolSpecs() }

func (noServerResources) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Type != "function_call" || call.Namespace != "" {
		return nil, false
	}
	switch call.Name {
	case mcpconn.ToolListResources, mcpconn.ToolListResourceTemplates, mcpconn.ToolReadResource:
		return resourceCall(ctx, tc, emptyMCP(), call), true
	}
	return nil, false
}

// offersResourceTools reports whether one of the sets already offers list_mcp_resources.
func offersResourceTools(sets []thread.ToolSet) bool {
	for _, set := range sets {
		for _, raw := range set.Specs() {
			var spec struct{ Name string }
			if json.Unmarshal(raw, &spec) == nil && spec.Name == mcpconn.ToolListResources {
				return true
			}
		}
	}
	return false
}
