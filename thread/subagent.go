package thread

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"

	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

// SubAgentOptions describe a sub-agent thread a tool of its parent starts (the reference's thread_spawn
// sub-agents: multi_agent_v1's spawn_agent).
type SubAgentOptions struct {
	// Nickname is the agent's user-facing name, recorded in its session source.
	Nickname string
	// Depth is the agent's distance from the root thread (1 for a child of a user's thread).
	Depth int
	// Model and Effort override the parent's ("" / nil: inherited).
	Model  string
	Effort *protocol.ReasoningEffort
	// ForkHistory starts the child with a copy of the parent's history (its calls still waiting for an
	// output left out) instead of a fresh initial context.
	ForkHistory bool
	// AgentPath is the agent's task path (`/root/worker`) when the collaboration tools address it by
	// path; recorded in its session source ("" = none, as multi_agent_v1's agents). Such an agent is told a
	// child's role, and a forked history keeps the parent's calls still running, answered "aborted", as the
	// reference's multi-agent v2 does.
	AgentPath string
	// ID is the child's thread id, chosen by the caller to announce it before the thread exists ("" = a new one).
	ID string
}

// StartSubAgent creates and loads a child thread of parent with the parent's settings: a rollout of its own
// whose session source names the parent, no thread/started (as the reference), and the parent's subscribers
// as its audience, told at once that it is idle. The child ends with the server or when it is unloaded.
func (m *Manager) StartSubAgent(parent *Thread, o SubAgentOptions) (*Thread, error) {
	s := parent.Settings()
	if o.Model != "" {
		s.Model = o.Model
	}
	if o.Effort != nil {
		s.Effort = o.Effort
	}
	pinfo := parent.Info()
	id := o.ID
	if id == "" {
		id = uuid.Must(uuid.NewV7()).String()
	}
	now := time.Now()
	spawn := &protocol.SubAgentSourceThreadSpawn{ParentThreadID: protocol.ThreadId(parent.ID), Depth: int32(o.Depth),
		AgentNickname: ptrIf(o.Nickname), AgentPath: ptrIf(o.AgentPath)}
	t := m.newThread(id, s)
	t.collabChild = o.AgentPath != ""
	t.meta = protocol.Thread{
		ID: id, SessionID: id, Preview: "", Ephemeral: pinfo.Ephemeral,
		ModelProvider: s.ModelProvider, CreatedAt: now.Unix(), UpdatedAt: now.Unix(), RecencyAt: ptr(now.Unix()),
		Cwd: protocol.AbsolutePathBuf(s.Cwd), CliVersion: m.deps.Version, Originator: pinfo.Originator,
		Source:               protocol.SessionSource{SubAgent: &protocol.SubAgentSource{ThreadSpawn: spawn}},
		HistoryMode:          ptr(protocol.ThreadHistoryModePaginated),
		Model:                ptr(s.Model),
		Environments:         []protocol.ThreadEnvironment{{EnvironmentID: "local", Cwd: protocol.LegacyAppPathString(s.Cwd), RuntimeWorkspaceRoots: []protocol.LegacyAppPathString{protocol.LegacyAppPathString(s.Cwd)}}},
		CanAcceptDirectInput: ptr(true),
		Turns:                []protocol.Turn{},
		ParentThreadID:       ptr(parent.ID),
		AgentNickname:        ptrIf(o.Nickname),
		GitInfo:              pinfo.GitInfo,
	}
	t.meta.ReasoningEffort = s.Effort
	if !pinfo.Ephemeral {
		src, _ := json.Marshal(map[string]any{"subagent": map[string]any{"thread_spawn": spawn}})
		rec, err := m.createRollout(rollout.SessionMeta{
			ID: id, Timestamp: rollout.FormatTimestamp(now), Cwd: s.Cwd, Originator: deref(pinfo.Originator),
			CLIVersion: m.deps.Version, Source: src, ThreadSource: "subagent", AgentNickname: o.Nickname,
			ParentThreadID: parent.ID, ModelProvider: s.ModelProvider, SessionID: parentSession(parent),
		}, s, now)
		if err != nil {
			return nil, err
		}
		t.recorder = rec
		path := rec.Path()
		t.meta.Path = &path
	}
	var initial pendingStart
	if o.ForkHistory {
		parent.mu.Lock()
		hist := append([]json.RawMessage(nil), parent.history...)
		if parent.baseItem != nil && parent.baseFor == t.base {
			// The same base message as the parent's, as the reference's fork inherits it with the history.
			t.baseItem, t.baseFor = parent.baseItem, parent.baseFor
		}
		parent.mu.Unlock()
		if t.collabChild {
			initial.items = abortRunning(hist)
		} else {
			initial.items = answeredOnly(hist)
		}
		if len(initial.items) > 0 && t.collabChild {
			initial.items = append(initial.items, messageItem("developer", spawnedChildText))
			if t.role() == roleChild {
				initial.items = append(initial.items, messageItem("developer", multiAgentRoleText(s, roleChild)),
					messageItem("developer", multiAgentModeText(s)))
			}
		}
	}
	if len(initial.items) == 0 {
		initial = m.freshContext(s, t.role())
	}
	t.permissions, t.filesystem = permissionsText(s), filesystemText(s)
	if err := m.register(t); err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.pendingContext[id] = initial
	m.mu.Unlock()
	m.adoptAudience(parent, t)
	return t, nil
}

// ResumeSubAgent loads a closed sub-agent thread of parent again from its rollout, with the parent's
// subscribers as its audience (told it is idle).
func (m *Manager) ResumeSubAgent(ctx context.Context, parent *Thread, id string) (*Thread, error) {
	t, _, err := m.Resume(ctx, id, "", ResumeOverrides{})
	if err != nil {
		return nil, err
	}
	m.adoptAudience(parent, t)
	return t, nil
}

// CloseSubAgent unloads a sub-agent thread (interrupting its turn), telling its audience it is not loaded;
// it reports whether the thread was loaded.
func (m *Manager) CloseSubAgent(id string) bool {
	t, ok := m.Get(id)
	if !ok {
		return false
	}
	t.mu.Lock()
	subs := t.subscribersLocked()
	t.mu.Unlock()
	ok = m.Unload(id)
	for _, s := range subs {
		s.Notify(protocol.NotifyThreadStatusChanged, protocol.ThreadStatusChangedNotification{ThreadID: id, Status: notLoaded()})
	}
	return ok
}

// adoptAudience subscribes the parent's subscribers to the child and tells them the child is idle.
func (m *Manager) adoptAudience(parent, child *Thread) {
	parent.mu.Lock()
	subs := parent.subscribersLocked()
	parent.mu.Unlock()
	for _, s := range subs {
		child.Subscribe(s)
	}
	child.emit(protocol.NotifyThreadStatusChanged, protocol.ThreadStatusChangedNotification{ThreadID: child.ID,
		Status: protocol.ThreadStatus{Value: protocol.ThreadStatusIdle{}}})
}

// parentSession is the session a sub-agent of parent belongs to: its root thread's (the parent's own id for
// a user's thread).
func parentSession(parent *Thread) string {
	if sa := parent.Info().Source.SubAgent; sa != nil && sa.ThreadSpawn != nil {
		if root := parent.mgr.sessionOf(string(sa.ThreadSpawn.ParentThreadID)); root != "" {
			return root
		}
	}
	return parent.ID
}

// sessionOf is the session id a loaded thread's rollout records ("" when it is not loaded).
func (m *Manager) sessionOf(id string) string {
	t, ok := m.Get(id)
	if !ok {
		return ""
	}
	return parentSession(t)
}

// spawnFields fills a spawned sub-agent's parentThreadId, agentNickname and agentRole from its session
// source, as the reference shows them.
func spawnFields(th *protocol.Thread) {
	sa := th.Source.SubAgent
	if sa == nil || sa.ThreadSpawn == nil {
		return
	}
	sp := sa.ThreadSpawn
	if th.ParentThreadID == nil && sp.ParentThreadID != "" {
		th.ParentThreadID = ptr(string(sp.ParentThreadID))
	}
	if th.AgentNickname == nil {
		th.AgentNickname = sp.AgentNickname
	}
	if th.AgentRole == nil {
		th.AgentRole = sp.AgentRole
	}
}

// QueueUserContext adds a user message to the history before the thread's next model request: in its
// running turn, or else in its next turn (e.g. a sub-agent's outcome for its parent).
func (t *Thread) QueueUserContext(text string) { t.QueueContext(messageItem("user", text)) }

// QueueContext adds a model-input item (an agent_message of the collaboration tools) to the history before
// the thread's next model request, as QueueUserContext does.
func (t *Thread) QueueContext(item json.RawMessage) {
	t.mu.Lock()
	t.queued = append(t.queued, item)
	t.mu.Unlock()
}

// QueueDeveloperContext adds a developer message to the history before the thread's next model request
// (after the outputs of the running tool calls), as QueueUserContext does a user message.
func (t *Thread) QueueDeveloperContext(text string) {
	t.mu.Lock()
	t.queued = append(t.queued, messageItem("developer", text))
	t.mu.Unlock()
}

// Warn sends a warning notification about the thread to its subscribers, in the thread's order.
func (t *Thread) Warn(message string) {
	t.emit(protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &t.ID, Message: message})
}

// callHead is the part of a history item that tells a tool call from its output.
type callHead struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
}

// calls reads the heads of history's items and the call ids that have an output.
func calls(history []json.RawMessage) (heads []callHead, answered map[string]bool) {
	heads = make([]callHead, len(history))
	answered = map[string]bool{}
	for i, raw := range history {
		_ = json.Unmarshal(raw, &heads[i])
		if strings.HasSuffix(heads[i].Type, "_call_output") {
			answered[heads[i].CallID] = true
		}
	}
	return heads, answered
}

// running reports whether h is a tool call without an output.
func (h callHead) running(answered map[string]bool) bool {
	return strings.HasSuffix(h.Type, "_call") && h.CallID != "" && !answered[h.CallID]
}

// abortRunning returns history with an "aborted" output after it for each tool call that has none (the
// parent's calls still running, the spawn among them), as the reference's multi-agent v2 forks a history.
func abortRunning(history []json.RawMessage) []json.RawMessage {
	heads, answered := calls(history)
	out := append(make([]json.RawMessage, 0, len(history)+1), history...)
	for _, h := range heads {
		if !h.running(answered) {
			continue
		}
		answered[h.CallID] = true
		if h.Type == "custom_tool_call" {
			out = append(out, CustomOutput(h.CallID, "aborted"))
		} else {
			out = append(out, FunctionOutput(h.CallID, "aborted"))
		}
	}
	return out
}

// answeredOnly drops the tool calls that have no output in history (the parent's calls still running, the
// spawn among them), so a forked history is one the model accepts.
func answeredOnly(history []json.RawMessage) []json.RawMessage {
	heads, answered := calls(history)
	out := make([]json.RawMessage, 0, len(history))
	for i, raw := range history {
		if !heads[i].running(answered) {
			out = append(out, raw)
		}
	}
	return out
}

// ReportItem announces an item of the running turn that none of its tool calls made (a collaboration
// agent's finished task, told in its parent's turn): item/started, then the item kept in the turn (and its
// rollout) and item/completed, as the reference keeps it for thread/read.
func (tn *Turn) ReportItem(started, completed protocol.ThreadItem) {
	t := tn.thread
	id := tn.PublicID()
	t.emit(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: started, ThreadID: t.ID, TurnID: id, StartedAtMs: nowMs()})
	tn.addItem(completed)
	t.emit(protocol.NotifyItemCompleted, protocol.ItemCompletedNotification{Item: completed, ThreadID: t.ID, TurnID: id, CompletedAtMs: nowMs()})
}
