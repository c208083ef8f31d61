package subagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"appserver/config"
	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// CollabNamespace is the namespace of the reference's multi-agent v2 tools, which address agents by task
// path (`/root/worker`) rather than by id.
const CollabNamespace = "collaboration"

// CollabMaxDepth bounds how deep collaboration agents nest: an agent at this depth cannot spawn.
const CollabMaxDepth = 4

// CollabOffered reports whether a thread's turn is offered the collaboration namespace: features.multi_agent
// on and either a code-mode catalogue model of multi-agent v2 (codeMode: in its additional_tools item) or,
// for a model outside the catalogue, features.multi_agent_v2 (in the plain tools, instead of multi_agent_v1).
func CollabOffered(s thread.Settings, cfg *config.Config, codeMode bool) bool {
	if !feature(cfg, "multi_agent", true) {
		return false
	}
	if codeMode {
		return model.MultiAgentV2(s.Model)
	}
	if _, known := model.LookupModel(s.Model); known {
		return false // the catalogue's other models reach agents through tool search (not offered)
	}
	return feature(cfg, "multi_agent_v2", false)
}

// CollabTools returns the collaboration tool set of a thread's turn (codeMode: for a code-mode set's
// additional_tools item), nil when it is not offered.
func CollabTools(o Options, codeMode bool) func(t *thread.Thread, s thread.Settings) thread.ToolSet {
	return func(t *thread.Thread, s thread.Settings) thread.ToolSet {
		if !CollabOffered(s, s.EffectiveConfig(o.Manager.Config()), codeMode) {
			return nil
		}
		return &collabSet{ctl: For(t, o)}
	}
}

type collabSet struct{ ctl *Control }

func (*collabSet) Specs() []json.RawMessage { return []json.RawMessage{collabSpec()} }

var collabSpec = sync.OnceValue(func() json.RawMessage {
	str := strProp
	secret := func(d string) map[string]any {
		return map[string]any{"type": "string", "description": d, "encrypted": true}
	}
	fn := functionSpec
	b, _ := json.Marshal(map[string]any{
		"type": "namespace", "name": CollabNamespace,
		"description": "Start agents that work alongside you and coordinate with them.",
		"tools": []any{
			fn("followup_task", "Give an agent you can reach (not the root) another task; an idle agent starts working on it at once, a busy one takes it in at its next step.",
				map[string]any{
					"message": secret("The task for the agent."),
					"target":  str("The agent: its task path as spawn_agent returned it, or its id."),
				}, []string{"target", "message"}),
			fn("interrupt_agent", "Stop what an agent is doing right now and return the status it had; the agent stays available for messages and tasks.",
				map[string]any{"target": str("The agent to stop: its task path or id.")}, []string{"target"}),
			fn("list_agents", "List the live agents of this session's agent tree with their status, optionally only those under a task path.",
				map[string]any{"path_prefix": str("Only agents at or under this task path (no trailing slash); leave out for all.")}, nil),
			fn("send_message", "Pass a note to an agent without starting work for it: a busy agent reads it at its next step, an idle one with its next task.",
				map[string]any{
					"message": secret("The note for the agent; keep it readable, it may be shown to people."),
					"target":  str("The agent: a task path relative to yours or from the root."),
				}, []string{"target", "message"}),
			fn("spawn_agent", "Start a new agent on a task. It gets your tools (including these), a task path under yours "+
				"(task `fix_tests` started from `/root` is `/root/fix_tests`, reachable as `fix_tests` or by the full path), "+
				"and by default a copy of this conversation. Its final answer comes back to you as a message. "+
				"Start agents only when the user or the instructions that apply ask for sub-agents, delegation or parallel work.",
				map[string]any{
					"fork_turns":       str("How much of this conversation the agent gets: `all` (default) or `none`."),
					"message":          secret("The agent's task, as plain text."),
					"model":            str("Another model for the agent; leave out to keep yours."),
					"reasoning_effort": str("Another reasoning effort for the agent; leave out to keep yours."),
					"task_name":        str("A short name for the task: lowercase letters, digits and underscores."),
				}, []string{"task_name", "message"}),
			fn("wait_agent", "Wait until one of your agents has news (a finished task or a message), new user input arrives, or the timeout passes. "+
				"It says only whether there is news; the news itself arrives as messages.",
				map[string]any{
					"timeout_ms": map[string]any{"type": "number", "description": "How long to wait, in milliseconds: 30000 by default, at least 10000 and at most 3600000."},
				}, nil),
		},
	})
	return b
})

var taskName = regexp.MustCompile(`^[a-z0-9_]+$`)

// checkModel refuses, in the reference's words, a model for an agent that the catalogue does not know (the
// caller's own model is always accepted). The reference lists the first five models of its picker (probed
// on 0.169.0: every catalogue model, hidden ones included, is accepted).
func checkModel(mdl, own string) error {
	if _, ok := model.LookupModel(mdl); ok || mdl == own || mdl == "" {
		return nil
	}
	var names []string
	for _, m := range model.Catalog() {
		if !m.Hidden && len(names) < 5 {
			names = append(names, m.ID)
		}
	}
	return fmt.Errorf("Unknown model `%s` for spawn_agent. Available models: %s", mdl, strings.Join(names, ", "))
}

// checkEffort refuses, in the reference's words, a reasoning effort the catalogue's model does not support
// (a model outside the catalogue takes any).
func checkEffort(mdl, effort string) error {
	m, ok := model.LookupModel(mdl)
	if !ok {
		return nil
	}
	var names []string
	for _, o := range m.SupportedReasoningEfforts {
		if o.ReasoningEffort == effort {
			return nil
		}
		names = append(names, o.ReasoningEffort)
	}
	return fmt.Errorf("Reasoning effort `%s` is not supported for model `%s`. Supported reasoning efforts: %s", effort, mdl, strings.Join(names, ", "))
}

// checkName refuses, in the reference's words, a task name that cannot name an agent: empty, the root's
// name, or with other characters than lowercase letters, digits and underscores.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("agent_name must not be empty")
	case name == "root":
		return errors.New("agent_name `root` is reserved")
	case !taskName.MatchString(name):
		return errors.New("agent_name must use only lowercase letters, digits, and underscores")
	}
	return nil
}

// decodeStrict reads a call's arguments, refusing unknown fields (the parameters allow none).
func decodeStrict(call thread.ToolCall, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(call.Arguments)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("failed to parse function arguments: %v", err)
	}
	return nil
}

func (cs *collabSet) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Namespace != CollabNamespace || call.Type != "function_call" {
		return nil, false
	}
	var out string
	var err error
	switch call.Name {
	case "spawn_agent":
		out, err = cs.spawn(tc, call)
	case "send_message":
		out, err = cs.message(tc, call)
	case "followup_task":
		out, err = cs.followup(ctx, tc, call)
	case "wait_agent":
		out, err = cs.wait(ctx, tc, call)
	case "interrupt_agent":
		out, err = cs.interrupt(ctx, tc, call)
	case "list_agents":
		out, err = cs.list(call)
	default:
		return nil, false
	}
	if err != nil {
		return thread.FunctionOutput(call.CallID, err.Error()), true
	}
	return thread.FunctionOutput(call.CallID, out), true
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// activity announces a subAgentActivity item of the call (started and at once completed).
func activity(tc *thread.ToolContext, call thread.ToolCall, kind protocol.SubAgentActivityKind, a *Agent, mdl *string, effort *protocol.ReasoningEffort) {
	now := time.Now().UnixMilli()
	it := protocol.ThreadItemSubAgentActivity{ID: call.CallID, Kind: kind, AgentThreadID: a.ID, AgentPath: a.Path,
		Model: mdl, ReasoningEffort: effort, StartedAtMs: &now}
	tc.ItemStarted(protocol.ThreadItem{Value: it})
	it.CompletedAtMs = &now
	tc.ItemCompleted(protocol.ThreadItem{Value: it})
}

func (cs *collabSet) spawn(tc *thread.ToolContext, call thread.ToolCall) (string, error) {
	var a struct {
		TaskName        string  `json:"task_name"`
		Message         *string `json:"message"`
		ForkTurns       *string `json:"fork_turns"`
		Model           *string `json:"model"`
		ReasoningEffort *string `json:"reasoning_effort"`
	}
	if err := decodeArgs(call, &a, []string{"message", "task_name", "model", "reasoning_effort", "fork_turns"}, []string{"message", "task_name"}); err != nil {
		return "", err
	}
	if err := checkName(a.TaskName); err != nil {
		return "", err
	}
	if a.Message == nil || *a.Message == "" {
		return "", errEmptyMessage
	}
	fork := true
	if a.ForkTurns != nil {
		switch *a.ForkTurns {
		case "all":
		case "none":
			fork = false
		default:
			// A count of turns is accepted too; the reference (0.169.0) then forks the whole history as
			// for `all` (probed with 1 and 2 of 2 and 4 turns), and so do we.
			if n, err := strconv.ParseUint(*a.ForkTurns, 10, 64); err != nil || n == 0 {
				return "", errors.New("fork_turns must be `none` or `all`")
			}
		}
	}
	if cs.ctl.depth >= CollabMaxDepth {
		return "", fmt.Errorf("agents nest at most %d deep: do this task yourself", CollabMaxDepth)
	}
	path := cs.ctl.Path() + "/" + a.TaskName
	if _, taken := cs.ctl.Resolve(path); taken {
		return "", fmt.Errorf("agent path `%s` already exists", path)
	}
	s := tc.Settings
	req := SpawnRequest{ParentTurnID: tc.TurnID(), Fork: fork, Path: path,
		Messages: []json.RawMessage{AgentMessage("NEW_TASK", path, cs.ctl.Path(), *a.Message)}}
	if a.Model != nil {
		if err := checkModel(*a.Model, s.Model); err != nil {
			return "", err
		}
		req.Model = *a.Model
	}
	effort := s.Effort
	if a.ReasoningEffort != nil && *a.ReasoningEffort != "" {
		if err := checkEffort(firstNonEmpty(req.Model, s.Model), *a.ReasoningEffort); err != nil {
			return "", err
		}
		e := protocol.ReasoningEffort(*a.ReasoningEffort)
		req.Effort, effort = &e, &e
	}
	if effort == nil {
		if m, ok := model.LookupModel(firstNonEmpty(req.Model, s.Model)); ok {
			e := m.DefaultReasoningEffort
			effort = &e
		}
	}
	mdl := firstNonEmpty(req.Model, s.Model)
	// Announced before the child thread exists (before its idle status), as the reference orders them.
	req.ID = uuid.Must(uuid.NewV7()).String()
	now := time.Now().UnixMilli()
	it := protocol.ThreadItemSubAgentActivity{ID: call.CallID, Kind: protocol.SubAgentActivityKindStarted, AgentThreadID: req.ID,
		AgentPath: path, Model: &mdl, ReasoningEffort: effort, StartedAtMs: &now}
	tc.ItemStarted(protocol.ThreadItem{Value: it})
	_, err := cs.ctl.Spawn(req, func(*Agent, Status) {
		it.CompletedAtMs = &now
		tc.ItemCompleted(protocol.ThreadItem{Value: it})
	})
	if err != nil {
		done := time.Now().UnixMilli() // the announced item is not left open
		it.CompletedAtMs = &done
		tc.ItemCompleted(protocol.ThreadItem{Value: it})
		return "", fmt.Errorf("spawn_agent failed: %w", err)
	}
	return jsonText(map[string]string{"task_name": path}), nil
}

type targetArgs struct {
	Target  string  `json:"target"`
	Message *string `json:"message"`
}

// targetFields are the fields of send_message and followup_task, all required.
var targetFields = []string{"target", "message"}

func (cs *collabSet) locate(target string) (Located, error) {
	if target == "" {
		return Located{}, errors.New("agent path must not be empty")
	}
	l, ok := cs.ctl.Resolve(target)
	if !ok {
		path := target
		if !strings.HasPrefix(path, "/") {
			path = cs.ctl.Path() + "/" + target
		}
		return Located{}, errNoLiveAgent(path)
	}
	return l, nil
}

// messageTarget reads send_message's and followup_task's arguments: a non-empty message and a live target.
func (cs *collabSet) messageTarget(call thread.ToolCall) (targetArgs, Located, error) {
	var a targetArgs
	if err := decodeArgs(call, &a, targetFields, targetFields); err != nil {
		return a, Located{}, err
	}
	if a.Message == nil || *a.Message == "" {
		return a, Located{}, errEmptyMessage
	}
	l, err := cs.locate(a.Target)
	return a, l, err
}

func (cs *collabSet) message(tc *thread.ToolContext, call thread.ToolCall) (string, error) {
	a, l, err := cs.messageTarget(call)
	if err != nil {
		return "", err
	}
	if err := l.Message(AgentMessage("MESSAGE", l.Path, cs.ctl.Path(), *a.Message)); err != nil {
		return "", errNoLiveAgent(l.Path)
	}
	target := l.Agent
	if target == nil { // a note for the root is shown as one, as the reference's
		target = &Agent{ID: l.Owner.parent.ID, Path: RootPath}
	}
	activity(tc, call, protocol.SubAgentActivityKindInteracted, target, nil, nil)
	return "", nil
}

func (cs *collabSet) followup(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (string, error) {
	a, l, err := cs.messageTarget(call)
	if err != nil {
		return "", err
	}
	if l.Agent == nil {
		return "", errors.New("Follow-up tasks can't target the root agent")
	}
	msgs := append(l.Agent.takeNotes(), AgentMessage("NEW_TASK", l.Path, cs.ctl.Path(), *a.Message))
	_, _, err = l.Owner.send(ctx, l.Agent.ID, nil, msgs, false, tc.TurnID(), func(Status) {
		activity(tc, call, protocol.SubAgentActivityKindInteracted, l.Agent, nil, nil)
	})
	if err != nil {
		return "", errNoLiveAgent(l.Path)
	}
	return "", nil
}

func (cs *collabSet) wait(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (string, error) {
	var a struct {
		TimeoutMs *float64 `json:"timeout_ms"`
	}
	if err := decodeArgs(call, &a, []string{"timeout_ms"}, nil, map[string]string{"timeout_ms": kindInt}); err != nil {
		return "", err
	}
	now := time.Now().UnixMilli()
	it := protocol.ThreadItemCollabAgentToolCall{ID: call.CallID, Tool: protocol.CollabAgentToolWait, Status: protocol.CollabAgentToolCallStatusInProgress,
		SenderThreadID: tc.ThreadID(), ReceiverThreadIds: []string{}, AgentsStates: map[string]protocol.CollabAgentState{}, StartedAtMs: &now}
	steered := tc.InputArrived()
	end, err := cs.ctl.WaitMail(ctx, waitTimeout(a.TimeoutMs), steered, func() { tc.ItemStarted(protocol.ThreadItem{Value: it}) })
	if err != nil {
		// The turn was interrupted: the item stays unfinished, as multi_agent_v1's wait.
		return "", errors.New("wait_agent interrupted")
	}
	done := time.Now().UnixMilli()
	it.Status, it.CompletedAtMs = protocol.CollabAgentToolCallStatusCompleted, &done
	tc.ItemCompleted(protocol.ThreadItem{Value: it})
	type result struct {
		Message  string `json:"message"`
		TimedOut bool   `json:"timed_out"`
	}
	switch end {
	case MailTimedOut:
		return jsonText(result{"Wait timed out.", true}), nil
	}
	return jsonText(result{"Wait completed.", false}), nil // also when steered input ended it, as the reference's
}

// errNoLiveAgent is the reference's answer for a target that names no live agent.
func errNoLiveAgent(path string) error { return fmt.Errorf("live agent path `%s` not found", path) }

func (cs *collabSet) interrupt(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (string, error) {
	var a struct {
		Target string `json:"target"`
	}
	if err := decodeArgs(call, &a, []string{"target"}, []string{"target"}); err != nil {
		return "", err
	}
	l, err := cs.locate(a.Target)
	if err != nil {
		return "", err
	}
	if l.Agent == nil {
		return "", errors.New("root is not a spawned agent")
	}
	activity(tc, call, protocol.SubAgentActivityKindInterrupted, l.Agent, nil, nil)
	before, err := l.Interrupt(ctx)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return "", errNoLiveAgent(l.Path)
		}
		return "", fmt.Errorf("interrupt_agent: %w", err)
	}
	return jsonText(map[string]Status{"previous_status": before}), nil
}

func (cs *collabSet) list(call thread.ToolCall) (string, error) {
	var a struct {
		PathPrefix string `json:"path_prefix"`
	}
	if err := decodeArgs(call, &a, []string{"path_prefix"}, nil); err != nil {
		return "", err
	}
	type row struct {
		Name   string `json:"agent_name"`
		Status Status `json:"agent_status"`
	}
	prefix := a.PathPrefix
	if prefix != "" && !strings.HasPrefix(prefix, "/") {
		// A relative prefix names agents under the caller's path, its first name checked as a task name.
		if err := checkName(strings.SplitN(prefix, "/", 2)[0]); err != nil {
			return "", err
		}
		prefix = cs.ctl.Path() + "/" + prefix
	}
	rows := []row{}
	for _, l := range cs.ctl.List(prefix) {
		rows = append(rows, row{l.Path, l.Status})
	}
	return jsonText(map[string]any{"agents": rows}), nil
}
