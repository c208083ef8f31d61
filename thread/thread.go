package thread

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"appserver/config"
	protocol "appserver/protocol/v2"
	"appserver/rollout"
	"appserver/stopwatch"
)

// Errors with the reference's exact texts.
var (
	ErrNoActiveTurnToInterrupt = errors.New("no active turn to interrupt")
	ErrNoActiveTurnToSteer     = errors.New("no active turn to steer")
	ErrElicitationAtZero       = errors.New("out-of-band elicitation count is already zero")
	ErrEmptySteerInput         = errors.New("input must not be empty")
)

// Settings are a thread's current turn settings; turn/start overrides persist for later turns.
type Settings struct {
	Model             string
	ModelProvider     string
	Cwd               string
	ApprovalPolicy    protocol.AskForApproval
	ApprovalsReviewer protocol.ApprovalsReviewer
	Sandbox           protocol.SandboxPolicy
	// PermissionProfile is the built-in permission profile id (":workspace", ...) Sandbox came from,
	// "" when it came from a sandbox mode or policy instead (the wire's activePermissionProfile).
	PermissionProfile     string
	Effort                *protocol.ReasoningEffort
	Summary               *protocol.ReasoningSummary
	ServiceTier           *string
	Personality           *protocol.Personality
	DisabledPluginIDs     []string
	MultiAgentMode        *protocol.MultiAgentMode
	BaseInstructions      string
	DeveloperInstructions string
	// Mode is the collaboration mode of the current turn ("default" unless turn/start chose "plan").
	Mode protocol.ModeKind
	// ModeSet is true once a turn/start chose a collaboration mode (thread settings then report it).
	ModeSet bool
	// ModeInstructions are the collaboration mode's developer instructions sent by the client ("" = ours).
	ModeInstructions string
	// DynamicTools are the client-implemented tools thread/start declared (called via item/tool/call).
	DynamicTools []protocol.DynamicToolSpec
	// Config is the thread's effective configuration: the server's with thread/start's `config`
	// overrides applied as -c would (features, tools, providers). Nil means the server's.
	Config *config.Config
}

// ActivePermissionProfile is the wire form of the permission profile the sandbox came from (nil for none).
func (s Settings) ActivePermissionProfile() *protocol.ActivePermissionProfile {
	if s.PermissionProfile == "" {
		return nil
	}
	return &protocol.ActivePermissionProfile{ID: s.PermissionProfile}
}

// EffectiveConfig returns the thread's effective configuration (the server's when it has none).
func (s Settings) EffectiveConfig(fallback *config.Config) *config.Config {
	if s.Config != nil {
		return s.Config
	}
	return fallback
}

// Thread is one loaded conversation.
type Thread struct {
	ID  string
	mgr *Manager
	log *slog.Logger

	// emitMu orders every notification of the thread.
	emitMu sync.Mutex

	mu          sync.Mutex
	settings    Settings
	meta        protocol.Thread // the thread object without status/turns; kept current
	history     []json.RawMessage
	queued      []json.RawMessage // context for the history before the next model request (QueueUserContext)
	turns       []protocol.Turn   // completed turns (full items) for thread/read
	active      *Turn
	subscribers map[Subscriber]struct{}
	subWait     chan struct{} // closed and replaced when a subscriber joins
	total       protocol.TokenUsageBreakdown
	interrupted bool   // the previous turn was interrupted: tell the model on the next request
	permissions string // the permissions text last put in the history
	filesystem  string // the <filesystem> part of the environment context last put in the history
	toldModel   string // the model of the last turn the model saw ("" before any): a switch tells it its instructions
	base        string // the base instructions sent first in every request (session_meta's)
	// baseItem is base as the developer message every request starts with (after a tools item), made once
	// so that its id stays the same from request to request, as the reference's (see baseItemLocked).
	baseItem json.RawMessage
	baseFor  string // the base text baseItem was made of
	told     string // the base instructions the model was last given (base, or a later replacement)
	// multiAgentV2 is set in a thread started on a multi-agent v2 model: its context tells the agent's role.
	multiAgentV2 bool
	// collabChild is set in an agent the collaboration tools spawned: its context tells it a child's role.
	collabChild bool
	// deferredSeen are the namespaces of tool_search-deferred tools the model had in its last request or was
	// last told of (nil: unknown, a resumed thread's), so that a turn tells it of those added since.
	deferredSeen map[string]bool
	// namesModel is set in a thread started on a catalogue model with a multi-agent version (a resumed thread:
	// on its recorded model): a switch to a catalogue model names it in <model_instructions>.
	namesModel  bool
	recorded    string // the thread_settings_applied settings last written to the rollout (JSON)
	storedModel string // the model the rollout recorded, for a resumed thread ("" otherwise)
	toolsItemID string // the id of the additional_tools item the rollout recorded ("" none)
	// mcpOverrides are the [mcp_servers] of thread/start's `config` override (nil when it set none).
	mcpOverrides map[string]config.MCPServer
	systemError  bool // the previous turn failed: the thread reports systemError until the next turn
	modeChanged  bool // turn/start switched the collaboration mode: the next run tells the model
	cwdChanged   bool // turn/start moved the thread: the next run sends the new environment context
	windowN      int
	recorder     *rollout.Recorder
	flags        map[protocol.ThreadActiveFlag]int

	// elicitMu serialises the out-of-band elicitation counter and its pause transitions.
	elicitMu    sync.Mutex
	elicitCount int64
	controller  *stopwatch.Controller

	attached map[any]any
	attachMu sync.Mutex // serialises AttachOnce constructors
	closers  []func()

	ctx    context.Context
	cancel context.CancelFunc
}

// Context ends when the thread is unloaded or the server shuts down.
func (t *Thread) Context() context.Context { return t.ctx }

// MCPServerOverrides returns the MCP servers thread/start's `config` override defined (nil when none);
// they replace the configured servers of the same name for this thread.
func (t *Thread) MCPServerOverrides() map[string]config.MCPServer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mcpOverrides
}

// Settings returns a copy of the thread's current settings.
func (t *Thread) Settings() Settings {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.settings
}

// Controller is the stopwatch controller that freezes this thread's command deadlines.
func (t *Thread) Controller() *stopwatch.Controller { return t.controller }

// Info returns the protocol Thread object (turns empty) with the current status.
func (t *Thread) Info() protocol.Thread {
	t.mu.Lock()
	defer t.mu.Unlock()
	info := t.meta
	info.Status = t.statusLocked()
	info.Turns = []protocol.Turn{}
	return info
}

// TurnsSnapshot returns the thread's turns with full items, the active one included.
func (t *Thread) TurnsSnapshot() []protocol.Turn {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.materializeTurnsLocked()
	out := make([]protocol.Turn, 0, len(t.turns)+1)
	out = append(out, t.turns...)
	if t.active != nil {
		out = append(out, t.active.snapshot(true))
	}
	return out
}

func (t *Thread) statusLocked() protocol.ThreadStatus {
	if t.active == nil {
		if t.systemError {
			return protocol.ThreadStatus{Value: protocol.ThreadStatusSystemError{}}
		}
		return protocol.ThreadStatus{Value: protocol.ThreadStatusIdle{}}
	}
	flags := []protocol.ThreadActiveFlag{}
	for _, f := range []protocol.ThreadActiveFlag{protocol.ThreadActiveFlagWaitingOnApproval, protocol.ThreadActiveFlagWaitingOnUserInput} {
		if t.flags[f] > 0 {
			flags = append(flags, f)
		}
	}
	return protocol.ThreadStatus{Value: protocol.ThreadStatusActive{ActiveFlags: flags}}
}

// Subscribe adds a connection to the thread's audience; it returns false when it was subscribed already.
func (t *Thread) Subscribe(s Subscriber) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.subscribers[s]; ok {
		return false
	}
	t.subscribers[s] = struct{}{}
	close(t.subWait)
	t.subWait = make(chan struct{})
	return true
}

// Unsubscribe removes a connection; it reports whether it was subscribed and how many remain.
func (t *Thread) Unsubscribe(s Subscriber) (was bool, remaining int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, was = t.subscribers[s]
	delete(t.subscribers, s)
	return was, len(t.subscribers)
}

// IsSubscribed reports whether s receives this thread's notifications.
func (t *Thread) IsSubscribed(s Subscriber) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.subscribers[s]
	return ok
}

// subscribersLocked returns a snapshot of the thread's subscribers; t.mu must be held.
func (t *Thread) subscribersLocked() []Subscriber {
	return slices.Collect(maps.Keys(t.subscribers))
}

// emit sends one notification to every subscriber, in the thread's single order.
func (t *Thread) emit(method string, params any) {
	t.emitMu.Lock()
	defer t.emitMu.Unlock()
	if ServerWide(method) && t.mgr != nil && t.mgr.deps.Broadcast != nil {
		t.mgr.deps.Broadcast(method, params)
		return
	}
	t.mu.Lock()
	subs := t.subscribersLocked()
	t.mu.Unlock()
	for _, s := range subs {
		s.Notify(method, params)
	}
}

// serverWide are the thread notifications the reference sends to every connection, whether or not it is
// subscribed to the thread (observed with two connections on codex-cli 0.169.0).
var serverWide = map[string]bool{
	protocol.NotifyThreadStarted:       true,
	protocol.NotifyThreadStatusChanged: true,
	protocol.NotifyThreadNameUpdated:   true,
	protocol.NotifyThreadGoalUpdated:   true,
	protocol.NotifyThreadGoalCleared:   true,
}

// ServerWide reports whether a thread notification goes to every connection rather than to subscribers.
func ServerWide(method string) bool { return serverWide[method] }

// EmitTo sends a notification to one subscriber, ordered with the thread's other notifications.
func (t *Thread) EmitTo(s Subscriber, method string, params any) {
	t.emitMu.Lock()
	defer t.emitMu.Unlock()
	s.Notify(method, params)
}

// holdOutput holds back the output of the thread's subscribers (Holder) until release, so the
// notifications emitted in between go out in one write per connection. Nothing between may wait for
// a client or another goroutine (every line of those connections waits meanwhile).
//
// The rollout's lines recorded meanwhile are held too (rollout.Recorder.Hold) and written, in one write,
// before the notifications go out: a client never sees a notification whose records are not written.
func (t *Thread) holdOutput() (release func()) {
	t.mu.Lock()
	subs := t.subscribersLocked()
	rec := t.recorder
	t.mu.Unlock()
	var releaseRecords func() error
	if rec != nil {
		releaseRecords = rec.Hold()
	}
	var rel []func()
	for _, s := range subs {
		if h, ok := s.(Holder); ok {
			rel = append(rel, h.Hold())
		}
	}
	return func() {
		if releaseRecords != nil {
			if err := releaseRecords(); err != nil {
				t.log.Warn("rollout append failed", "error", err)
			}
		}
		for _, r := range rel {
			r()
		}
	}
}

// emitStatus sends thread/status/changed with the current status.
func (t *Thread) emitStatus() {
	t.mu.Lock()
	st := t.statusLocked()
	t.mu.Unlock()
	t.emit(protocol.NotifyThreadStatusChanged, protocol.ThreadStatusChangedNotification{ThreadID: t.ID, Status: st})
}

// setFlag raises or lowers an active flag and announces the new status.
func (t *Thread) setFlag(f protocol.ThreadActiveFlag, on bool) {
	t.mu.Lock()
	before := t.flags[f] > 0
	if on {
		t.flags[f]++
	} else if t.flags[f] > 0 {
		t.flags[f]--
	}
	changed := before != (t.flags[f] > 0)
	t.mu.Unlock()
	if changed { // overlapping approvals announce the flag once, as the reference does
		t.emitStatus()
	}
}

// request sends a server→client request to the thread's subscribers (waiting for one to subscribe if none
// is), then emits serverRequest/resolved whatever the outcome once an id was assigned.
func (t *Thread) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return t.requestThen(ctx, method, params, true, nil)
}

// requestThen is request with a hook that runs after the answer (or failure) and before
// serverRequest/resolved is emitted (when announce is set). The rules are in subscriber.go (askSubscribers).
func (t *Thread) requestThen(ctx context.Context, method string, params any, announce bool, beforeResolved func(err error)) (json.RawMessage, error) {
	return t.askSubscribers(ctx, method, params, announce, beforeResolved)
}

func requestID(id any) protocol.RequestId {
	switch v := id.(type) {
	case int64:
		return protocol.IntRequestID(v)
	case string:
		return protocol.StringRequestID(v)
	}
	return protocol.StringRequestID(fmt.Sprint(id))
}

// IncrementElicitation raises the out-of-band elicitation counter; 0→1 pauses the thread's deadlines at
// once (MCP servers are told in the background). paused is the thread's state afterwards.
func (t *Thread) IncrementElicitation() (count int64, paused bool) {
	t.elicitMu.Lock()
	t.elicitCount++
	if t.elicitCount == 1 {
		t.setOutOfBandPaused(true)
	}
	count = t.elicitCount
	t.elicitMu.Unlock()
	return count, t.Paused()
}

// DecrementElicitation lowers the counter; 1→0 resumes the thread's deadlines unless a pending
// elicitation still holds them. paused is the thread's real state afterwards.
func (t *Thread) DecrementElicitation() (count int64, paused bool, err error) {
	t.elicitMu.Lock()
	if t.elicitCount == 0 {
		t.elicitMu.Unlock()
		return 0, t.Paused(), ErrElicitationAtZero
	}
	t.elicitCount--
	if t.elicitCount == 0 {
		t.setOutOfBandPaused(false)
	}
	count = t.elicitCount
	t.elicitMu.Unlock()
	return count, t.Paused(), nil
}

// ReleaseElicitations lowers the counter by up to n (a client that raised it went away) and returns the
// count afterwards.
func (t *Thread) ReleaseElicitations(n int64) int64 {
	t.elicitMu.Lock()
	defer t.elicitMu.Unlock()
	if n <= 0 || t.elicitCount == 0 {
		return t.elicitCount
	}
	t.elicitCount = max(t.elicitCount-n, 0)
	if t.elicitCount == 0 {
		t.setOutOfBandPaused(false)
	}
	return t.elicitCount
}

// SetName changes the thread's name and announces it.
func (t *Thread) SetName(name string) {
	t.mu.Lock()
	t.meta.Name = &name
	rec := t.recorder
	t.mu.Unlock()
	if rec != nil {
		if err := rec.AppendEvent(rollout.ThreadNameUpdated{ThreadID: t.ID, ThreadName: name}); err != nil {
			t.log.Warn("rollout append failed", "error", err)
		}
	}
	t.emit(protocol.NotifyThreadNameUpdated, protocol.ThreadNameUpdatedNotification{ThreadID: t.ID, ThreadName: &name})
}

// close ends the thread: its turn is interrupted and its processes and connections released.
func (t *Thread) close() {
	t.cancel()
	t.mu.Lock()
	active := t.active
	rec := t.recorder
	t.mu.Unlock()
	if active != nil {
		active.interrupt()
		<-active.done
	}
	t.settlePause()
	t.runClosers()
	if rec != nil {
		_ = rec.Close()
	}
}

func nowMs() int64 { return time.Now().UnixMilli() }

// Request sends a server→client request for this thread outside a tool call (e.g. an MCP server's own
// elicitation): it waits for a subscriber, emits serverRequest/resolved after the answer, and is bounded
// by ctx.
func (t *Thread) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return t.request(ctx, method, params)
}

// SetWaitingOnApproval raises or lowers the waitingOnApproval flag of the running turn and announces it.
func (t *Thread) SetWaitingOnApproval(on bool) {
	t.setFlag(protocol.ThreadActiveFlagWaitingOnApproval, on)
}

// SetWaitingOnUserInput raises or lowers the waitingOnUserInput flag and announces it.
func (t *Thread) SetWaitingOnUserInput(on bool) {
	t.setFlag(protocol.ThreadActiveFlagWaitingOnUserInput, on)
}

// notifyStatus announces st with emitMu already held: to every connection when the manager broadcasts,
// else to subs.
func (t *Thread) notifyStatus(subs []Subscriber, st protocol.ThreadStatus) {
	n := protocol.ThreadStatusChangedNotification{ThreadID: t.ID, Status: st}
	if t.mgr != nil && t.mgr.deps.Broadcast != nil {
		t.mgr.deps.Broadcast(protocol.NotifyThreadStatusChanged, n)
		return
	}
	for _, s := range subs {
		s.Notify(protocol.NotifyThreadStatusChanged, n)
	}
}

// RecordedToolsItemID is the id of the additional_tools item a resumed or forked thread's rollout
// recorded ("" when none): a code-mode thread keeps it for the item its requests lead with.
func (t *Thread) RecordedToolsItemID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.toolsItemID
}

// toolsItemID reports whether a history item is an additional_tools item, and its id.
func toolsItemID(raw json.RawMessage) (string, bool) {
	if !bytes.Contains(raw, []byte(`"additional_tools"`)) {
		return "", false
	}
	var it struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	if json.Unmarshal(raw, &it) != nil || it.Type != "additional_tools" {
		return "", false
	}
	return it.ID, true
}
