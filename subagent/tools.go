package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"appserver/config"
	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/toolsearch"
)

// Namespace is the name of the tool namespace the reference offers its multi-agent v1 tools under.
const Namespace = "multi_agent_v1"

// MaxDepth is how deep agents may nest: a sub-agent (depth 1) is offered no tools to start its own.
const MaxDepth = 1

// Wait bounds of wait_agent's timeout_ms, as the reference's.
const (
	DefaultWait = 30 * time.Second
	MinWait     = 10 * time.Second
	MaxWait     = time.Hour
)

// Offered reports whether a thread's turn is offered the multi_agent_v1 tools: on a model outside the
// catalogue and on the catalogue's models outside code mode (gpt-5.5, which finds them through tool search;
// the code-mode models reach agents through code mode), with features.multi_agent on and multi_agent_v2
// off, in a thread not already at MaxDepth.
func Offered(t *thread.Thread, s thread.Settings, cfg *config.Config) bool {
	if m, known := model.LookupModel(s.Model); known && m.CodeMode {
		return false
	}
	if !feature(cfg, "multi_agent", true) || feature(cfg, "multi_agent_v2", false) {
		return false
	}
	return Depth(t) < MaxDepth
}

func feature(cfg *config.Config, name string, def bool) bool {
	if cfg == nil {
		return def
	}
	if v, ok := cfg.Features[name]; ok {
		return v
	}
	if v, ok := config.DefaultFeatures[name]; ok {
		return v
	}
	return def
}

// Tools returns the multi_agent_v1 tool set of a thread's turn, nil when it is not offered.
func Tools(o Options) func(t *thread.Thread, s thread.Settings) thread.ToolSet {
	return func(t *thread.Thread, s thread.Settings) thread.ToolSet {
		if !Offered(t, s, s.EffectiveConfig(o.Manager.Config())) {
			return nil
		}
		return &toolSet{ctl: For(t, o)}
	}
}

// toolSet is the multi_agent_v1 namespace; deferred (a model that searches for tools), it offers no spec and
// tool_search finds its functions.
type toolSet struct {
	ctl      *Control
	deferred bool
}

func (ts *toolSet) Specs() []json.RawMessage {
	if ts.deferred {
		return nil
	}
	return []json.RawMessage{namespaceSpec()}
}

// SearchTools lists the namespace's functions for tool_search (tools.Deferrable).
func (*toolSet) SearchTools() ([]toolsearch.Tool, []toolsearch.Namespace) {
	var ns struct {
		Name, Description string
		Tools             []struct {
			Name, Description string
			Parameters        json.RawMessage
		}
	}
	_ = json.Unmarshal(namespaceSpec(), &ns)
	found := make([]toolsearch.Tool, 0, len(ns.Tools))
	for _, f := range ns.Tools {
		found = append(found, toolsearch.Tool{Namespace: ns.Name, NamespaceDescription: ns.Description,
			Name: f.Name, Description: f.Description, Parameters: f.Parameters})
	}
	return found, []toolsearch.Namespace{{Name: ns.Name, Description: ns.Description}}
}

// Deferred is the set without its spec, answering its calls all the same (tools.Deferrable).
func (ts *toolSet) Deferred() thread.ToolSet { return &toolSet{ctl: ts.ctl, deferred: true} }

// inputItemSchema is the shape of one structured input item (the reference's fields).
func inputItemSchema() map[string]any {
	s := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
	return map[string]any{
		"type":        "array",
		"description": "Structured input items, instead of a plain message (e.g. to pass images).",
		"items": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"audio_url": s("For type audio: the audio's data URL."),
				"image_url": s("For type image: the image's URL."),
				"name":      s("For type skill or mention: the display name."),
				"path":      s("For type local_image, local_audio or skill: the file path; for type mention: the target (app://… or plugin://…)."),
				"text":      s("For type text: the text."),
				"type":      s("The item's type: text, image, local_image, audio, local_audio, skill or mention."),
			},
			"additionalProperties": false,
		},
	}
}

// strProp is a string parameter of a tool spec.
func strProp(d string) map[string]any { return map[string]any{"type": "string", "description": d} }

// functionSpec is one function of a namespace tool spec (strict off, no extra properties).
func functionSpec(name, desc string, props map[string]any, required []string) map[string]any {
	params := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if required != nil {
		params["required"] = required
	}
	return map[string]any{"type": "function", "name": name, "description": desc, "strict": false, "parameters": params}
}

var namespaceSpec = sync.OnceValue(func() json.RawMessage {
	str := strProp
	fn := functionSpec
	b, _ := json.Marshal(map[string]any{
		"type": "namespace", "name": Namespace,
		"description": "Start sub-agents, give them work, wait for their results and shut them down.",
		"tools": []any{
			fn("close_agent", "Shut down an agent you started (and its own agents) once you no longer need it; returns the status it had. A finished agent stays open until closed.",
				map[string]any{"target": str("The id of the agent to close, as spawn_agent returned it.")}, []string{"target"}),
			fn("resume_agent", "Open a closed agent again so that send_input and wait_agent reach it.",
				map[string]any{"id": str("The id of the agent to open again.")}, []string{"id"}),
			fn("send_input", "Give an agent you started more work or a message. It is queued behind the agent's current work unless interrupt is true.",
				map[string]any{
					"interrupt": map[string]any{"type": "boolean", "description": "Stop the agent's current work and handle this input at once (default false: queue it)."},
					"items":     inputItemSchema(),
					"message":   str("The text to send; give either message or items."),
					"target":    str("The id of the agent, as spawn_agent returned it."),
				}, []string{"target"}),
			fn("spawn_agent", "Start a sub-agent on a self-contained task; it works in parallel with you and has your tools and workspace. "+
				"Returns the agent's id and nickname. Start agents only when the user or the instructions that apply ask for sub-agents, delegation or parallel work. "+
				"The agent uses your model unless you were asked for another one.",
				map[string]any{
					"fork_context":     map[string]any{"type": "boolean", "description": "Give the agent a copy of this conversation so far (default false: only its task)."},
					"items":            inputItemSchema(),
					"message":          str("The agent's task as text; give either message or items."),
					"model":            str("Another model for the agent; leave out unless one was asked for."),
					"reasoning_effort": str("Another reasoning effort for the agent; leave out to keep yours."),
				}, nil),
			fn("wait_agent", "Wait until one of the given agents has finished (or failed, or was closed), and return the final statuses; a completed status carries the agent's last message. "+
				"On timeout the status map is empty. Wait only when your next step needs the result.",
				map[string]any{
					"targets":    map[string]any{"type": "array", "description": "The ids of the agents to wait for; the wait ends when the first of them finishes.", "items": map[string]any{"type": "string"}},
					"timeout_ms": map[string]any{"type": "number", "description": "How long to wait, in milliseconds: 30000 by default, at least 10000 and at most 3600000. Long waits beat frequent polls."},
				}, []string{"targets"}),
		},
	})
	return b
})

// call arguments.
type inputItem struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	AudioURL string `json:"audio_url"`
	Path     string `json:"path"`
	Name     string `json:"name"`
}

type spawnArgs struct {
	Message         *string     `json:"message"`
	Items           []inputItem `json:"items"`
	Model           *string     `json:"model"`
	ReasoningEffort *string     `json:"reasoning_effort"`
	ForkContext     bool        `json:"fork_context"`
}

type sendArgs struct {
	Target    string      `json:"target"`
	Message   *string     `json:"message"`
	Items     []inputItem `json:"items"`
	Interrupt bool        `json:"interrupt"`
}

type waitArgs struct {
	Targets   []string `json:"targets"`
	TimeoutMs *float64 `json:"timeout_ms"`
}

func (ts *toolSet) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Namespace != Namespace || call.Type != "function_call" {
		return nil, false
	}
	switch call.Name {
	case "spawn_agent":
		return ts.spawn(tc, call), true
	case "send_input":
		return ts.send(ctx, tc, call), true
	case "wait_agent":
		return ts.wait(ctx, tc, call), true
	case "close_agent":
		return ts.closeAgent(tc, call), true
	case "resume_agent":
		return ts.resume(ctx, tc, call), true
	}
	return nil, false
}

func decode(call thread.ToolCall, v any) error {
	if err := json.Unmarshal([]byte(call.Arguments), v); err != nil {
		return fmt.Errorf("could not read the arguments of %s: %v", call.Name, err)
	}
	return nil
}

// userInput converts a message or structured items into the agent's input.
func userInput(message *string, items []inputItem) ([]protocol.UserInput, string, error) {
	if message != nil && len(items) > 0 {
		return nil, "", fmt.Errorf("give either `message` or `items`, not both")
	}
	if message != nil {
		if *message == "" {
			return nil, "", fmt.Errorf("the message is empty")
		}
		return []protocol.UserInput{{Value: protocol.UserInputText{Text: *message, TextElements: []protocol.TextElement{}}}}, *message, nil
	}
	if len(items) == 0 {
		return nil, "", fmt.Errorf("give a `message` or `items`")
	}
	var in []protocol.UserInput
	prompt := ""
	for _, it := range items {
		switch it.Type {
		case "text":
			in = append(in, protocol.UserInput{Value: protocol.UserInputText{Text: it.Text, TextElements: []protocol.TextElement{}}})
			if prompt != "" {
				prompt += "\n"
			}
			prompt += it.Text
		case "image":
			url := it.ImageURL
			in = append(in, protocol.UserInput{Value: protocol.UserInputImage{URL: &url}})
		case "local_image":
			in = append(in, protocol.UserInput{Value: protocol.UserInputLocalImage{Path: it.Path}})
		default:
			return nil, "", fmt.Errorf("input items of type %q are not supported", it.Type)
		}
	}
	return in, prompt, nil
}

// parseID checks that an agent id is a thread id.
func parseID(id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return fmt.Errorf("invalid agent id %s: not a thread id", id)
	}
	return nil
}

func notFound(id string) string { return "no agent with id " + id }

// wireState is an agent status in the collabAgentToolCall item's form.
func wireState(s Status) protocol.CollabAgentState {
	k := map[Kind]protocol.CollabAgentStatus{
		PendingInit: protocol.CollabAgentStatusPendingInit, Running: protocol.CollabAgentStatusRunning,
		Interrupted: protocol.CollabAgentStatusInterrupted, Completed: protocol.CollabAgentStatusCompleted,
		Errored: protocol.CollabAgentStatusErrored, Shutdown: protocol.CollabAgentStatusShutdown, NotFound: protocol.CollabAgentStatusNotFound,
	}[s.Kind]
	return protocol.CollabAgentState{Status: k, Message: s.Message}
}

// MarshalJSON writes a status as the model reads it: a bare name, or {"completed"|"errored": message}.
func (s Status) MarshalJSON() ([]byte, error) {
	if s.Kind == Completed || s.Kind == Errored {
		return json.Marshal(map[string]*string{string(s.Kind): s.Message})
	}
	return json.Marshal(string(s.Kind))
}

func output(call thread.ToolCall, v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return thread.FunctionOutput(call.CallID, string(b))
}

func nowMs() *int64 {
	ms := time.Now().UnixMilli()
	return &ms
}

// item is the collabAgentToolCall item of a call, started now.
func item(tc *thread.ToolContext, call thread.ToolCall, tool protocol.CollabAgentTool, receivers []string) protocol.ThreadItemCollabAgentToolCall {
	if receivers == nil {
		receivers = []string{}
	}
	return protocol.ThreadItemCollabAgentToolCall{ID: call.CallID, Tool: tool, Status: protocol.CollabAgentToolCallStatusInProgress,
		SenderThreadID: tc.ThreadID(), ReceiverThreadIds: receivers, AgentsStates: map[string]protocol.CollabAgentState{}, StartedAtMs: nowMs()}
}

func start(tc *thread.ToolContext, it protocol.ThreadItemCollabAgentToolCall) {
	tc.ItemStarted(protocol.ThreadItem{Value: it})
}

// finish completes a call's item; the rollout records it in the reference's core form.
func (ts *toolSet) finish(tc *thread.ToolContext, it protocol.ThreadItemCollabAgentToolCall, status protocol.CollabAgentToolCallStatus) {
	it.Status, it.CompletedAtMs = status, nowMs()
	tc.ItemCompletedAs(protocol.ThreadItem{Value: it}, ts.core(it))
}

// coreItem is a collabAgentToolCall as the reference records it in a rollout's item_completed event.
type coreItem struct {
	Type           string            `json:"type"`
	ID             string            `json:"id"`
	Tool           string            `json:"tool"`
	Status         string            `json:"status"`
	SenderThreadID string            `json:"sender_thread_id"`
	Receivers      []string          `json:"receiver_thread_ids"`
	ReceiverAgents []receiverAgent   `json:"receiver_agents"`
	Prompt         *string           `json:"prompt,omitempty"`
	Model          *string           `json:"model,omitempty"`
	Effort         *string           `json:"reasoning_effort,omitempty"`
	AgentsStates   map[string]Status `json:"agents_states"`
}

type receiverAgent struct {
	ThreadID      string `json:"thread_id"`
	AgentNickname string `json:"agent_nickname,omitempty"`
}

// coreTools are the reference's core names of the tools.
var coreTools = map[protocol.CollabAgentTool]string{
	protocol.CollabAgentToolSpawnAgent: "spawn_agent", protocol.CollabAgentToolSendInput: "send_input",
	protocol.CollabAgentToolWait: "wait", protocol.CollabAgentToolCloseAgent: "close_agent",
	protocol.CollabAgentToolResumeAgent: "resume_agent",
}

func (ts *toolSet) core(it protocol.ThreadItemCollabAgentToolCall) coreItem {
	c := coreItem{Type: "CollabAgentToolCall", ID: it.ID, Tool: coreTools[it.Tool], Status: string(it.Status),
		SenderThreadID: it.SenderThreadID, Receivers: it.ReceiverThreadIds, ReceiverAgents: []receiverAgent{},
		Prompt: it.Prompt, Model: it.Model, AgentsStates: map[string]Status{}}
	if c.Receivers == nil {
		c.Receivers = []string{}
	}
	if it.ReasoningEffort != nil {
		e := string(*it.ReasoningEffort)
		c.Effort = &e
	}
	for _, id := range c.Receivers {
		ra := receiverAgent{ThreadID: id}
		if st, ok := it.AgentsStates[id]; !ok || st.Status != protocol.CollabAgentStatusNotFound {
			ra.AgentNickname = ts.ctl.Nickname(id)
		}
		c.ReceiverAgents = append(c.ReceiverAgents, ra)
	}
	for id, st := range it.AgentsStates {
		c.AgentsStates[id] = modelStatus(st)
	}
	return c
}

// modelStatus is the model's form of an item's agent state.
func modelStatus(st protocol.CollabAgentState) Status {
	k := map[protocol.CollabAgentStatus]Kind{
		protocol.CollabAgentStatusPendingInit: PendingInit, protocol.CollabAgentStatusRunning: Running,
		protocol.CollabAgentStatusInterrupted: Interrupted, protocol.CollabAgentStatusCompleted: Completed,
		protocol.CollabAgentStatusErrored: Errored, protocol.CollabAgentStatusShutdown: Shutdown,
		protocol.CollabAgentStatusNotFound: NotFound,
	}[st.Status]
	return Status{Kind: k, Message: st.Message}
}

func states(m map[string]Status) map[string]protocol.CollabAgentState {
	out := make(map[string]protocol.CollabAgentState, len(m))
	for id, st := range m {
		out[id] = wireState(st)
	}
	return out
}

func (ts *toolSet) spawn(tc *thread.ToolContext, call thread.ToolCall) json.RawMessage {
	var a spawnArgs
	if err := decode(call, &a); err != nil {
		return thread.FunctionOutput(call.CallID, err.Error())
	}
	in, prompt, err := userInput(a.Message, a.Items)
	if err != nil {
		return thread.FunctionOutput(call.CallID, "spawn_agent: "+err.Error())
	}
	req := SpawnRequest{Input: in, ParentTurnID: tc.TurnID(), Fork: a.ForkContext}
	if a.Model != nil {
		req.Model = *a.Model
	}
	s := tc.Settings
	effort := protocol.ReasoningEffort("medium")
	if s.Effort != nil {
		effort = *s.Effort
	}
	if a.ReasoningEffort != nil && *a.ReasoningEffort != "" {
		effort = protocol.ReasoningEffort(*a.ReasoningEffort)
		req.Effort = &effort
	}
	it := item(tc, call, protocol.CollabAgentToolSpawnAgent, nil)
	it.Prompt, it.Model, it.ReasoningEffort = &prompt, &req.Model, &effort
	start(tc, it)
	agent, err := ts.ctl.Spawn(req, func(a *Agent, before Status) {
		mdl := firstNonEmpty(req.Model, s.Model)
		it.Model = &mdl
		it.ReceiverThreadIds = []string{a.ID}
		it.AgentsStates = map[string]protocol.CollabAgentState{a.ID: wireState(before)}
		ts.finish(tc, it, protocol.CollabAgentToolCallStatusCompleted)
	})
	if err != nil {
		ts.finish(tc, it, protocol.CollabAgentToolCallStatusFailed)
		return thread.FunctionOutput(call.CallID, "spawn_agent failed: "+err.Error())
	}
	return output(call, struct {
		AgentID  string `json:"agent_id"`
		Nickname string `json:"nickname"`
	}{agent.ID, agent.Nickname})
}

func (ts *toolSet) send(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) json.RawMessage {
	var a sendArgs
	if err := decode(call, &a); err != nil {
		return thread.FunctionOutput(call.CallID, err.Error())
	}
	if err := parseID(a.Target); err != nil {
		return thread.FunctionOutput(call.CallID, err.Error())
	}
	in, prompt, err := userInput(a.Message, a.Items)
	if err != nil {
		return thread.FunctionOutput(call.CallID, "send_input: "+err.Error())
	}
	it := item(tc, call, protocol.CollabAgentToolSendInput, []string{a.Target})
	it.Prompt = &prompt
	start(tc, it)
	turnID, _, err := ts.ctl.Send(ctx, a.Target, in, a.Interrupt, tc.TurnID(), func(before Status) {
		it.AgentsStates = map[string]protocol.CollabAgentState{a.Target: wireState(before)}
		ts.finish(tc, it, protocol.CollabAgentToolCallStatusCompleted)
	})
	if err != nil {
		if ctx.Err() != nil {
			return thread.FunctionOutput(call.CallID, "send_input interrupted")
		}
		it.AgentsStates = map[string]protocol.CollabAgentState{a.Target: wireState(Status{Kind: NotFound})}
		ts.finish(tc, it, protocol.CollabAgentToolCallStatusFailed)
		return thread.FunctionOutput(call.CallID, notFound(a.Target))
	}
	return output(call, struct {
		SubmissionID string `json:"submission_id"`
	}{turnID})
}

// waitTimeout is wait_agent's timeout_ms within the reference's bounds.
func waitTimeout(ms *float64) time.Duration {
	if ms == nil {
		return DefaultWait
	}
	d := time.Duration(*ms * float64(time.Millisecond))
	return min(max(d, MinWait), MaxWait)
}

func (ts *toolSet) wait(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) json.RawMessage {
	var a waitArgs
	if err := decode(call, &a); err != nil {
		return thread.FunctionOutput(call.CallID, err.Error())
	}
	if len(a.Targets) == 0 {
		return thread.FunctionOutput(call.CallID, "wait_agent: give at least one agent id in `targets`")
	}
	for _, id := range a.Targets {
		if err := parseID(id); err != nil {
			return thread.FunctionOutput(call.CallID, err.Error())
		}
	}
	it := item(tc, call, protocol.CollabAgentToolWait, a.Targets)
	sts, timedOut, err := ts.ctl.Wait(ctx, a.Targets, waitTimeout(a.TimeoutMs), func() { start(tc, it) })
	if err != nil {
		// The parent's turn was interrupted: like the reference, the item is left unfinished.
		return thread.FunctionOutput(call.CallID, "wait_agent interrupted")
	}
	status := protocol.CollabAgentToolCallStatusCompleted
	receivers := []string{}
	for _, id := range a.Targets {
		if st, ok := sts[id]; ok {
			receivers = append(receivers, id)
			if st.Kind == NotFound {
				status = protocol.CollabAgentToolCallStatusFailed
			}
		}
	}
	it.ReceiverThreadIds, it.AgentsStates = receivers, states(sts)
	ts.finish(tc, it, status)
	return output(call, struct {
		Status   map[string]Status `json:"status"`
		TimedOut bool              `json:"timed_out"`
	}{sts, timedOut})
}

func (ts *toolSet) closeAgent(tc *thread.ToolContext, call thread.ToolCall) json.RawMessage {
	var a struct {
		Target string `json:"target"`
	}
	if err := decode(call, &a); err != nil {
		return thread.FunctionOutput(call.CallID, err.Error())
	}
	if err := parseID(a.Target); err != nil {
		return thread.FunctionOutput(call.CallID, err.Error())
	}
	it := item(tc, call, protocol.CollabAgentToolCloseAgent, []string{a.Target})
	start(tc, it)
	before, err := ts.ctl.Close(a.Target)
	if err != nil {
		it.AgentsStates = map[string]protocol.CollabAgentState{a.Target: wireState(Status{Kind: NotFound})}
		ts.finish(tc, it, protocol.CollabAgentToolCallStatusFailed)
		return thread.FunctionOutput(call.CallID, notFound(a.Target))
	}
	it.AgentsStates = map[string]protocol.CollabAgentState{a.Target: wireState(before)}
	ts.finish(tc, it, protocol.CollabAgentToolCallStatusCompleted)
	return output(call, struct {
		PreviousStatus Status `json:"previous_status"`
	}{before})
}

func (ts *toolSet) resume(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) json.RawMessage {
	var a struct {
		ID string `json:"id"`
	}
	if err := decode(call, &a); err != nil {
		return thread.FunctionOutput(call.CallID, err.Error())
	}
	if err := parseID(a.ID); err != nil {
		return thread.FunctionOutput(call.CallID, err.Error())
	}
	it := item(tc, call, protocol.CollabAgentToolResumeAgent, []string{a.ID})
	start(tc, it)
	st, err := ts.ctl.Resume(ctx, a.ID)
	if err != nil {
		it.AgentsStates = map[string]protocol.CollabAgentState{a.ID: wireState(Status{Kind: NotFound})}
		ts.finish(tc, it, protocol.CollabAgentToolCallStatusFailed)
		if errors.Is(err, ErrNotFound) {
			return thread.FunctionOutput(call.CallID, notFound(a.ID))
		}
		return thread.FunctionOutput(call.CallID, err.Error())
	}
	it.AgentsStates = map[string]protocol.CollabAgentState{a.ID: wireState(st)}
	ts.finish(tc, it, protocol.CollabAgentToolCallStatusCompleted)
	return output(call, struct {
		Status Status `json:"status"`
	}{st})
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
