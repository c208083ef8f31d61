package thread

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"appserver/internal/oserr"
	"appserver/internal/stacksize"
	"appserver/jsonrpc/jsonstr"
	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

// errInterrupted is the cause of a turn context cancelled by turn/interrupt; errToolCancelled the cause
// when a tool ended the turn (an approval answered "cancel").
// errAbandoned is the cause of an in-flight model stream given up because turn/start folded new input
// into the running turn.
var (
	errInterrupted   = errors.New("turn interrupted")
	errToolCancelled = errors.New("turn cancelled by a tool")
	errAbandoned     = errors.New("model stream abandoned for new input")
)

// Turn is one running turn of a thread.
type Turn struct {
	ID     string
	thread *Thread
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	task   bool // driven by a TaskBody (user shell, compaction), not by the model
	// taskOpts are a task turn's options (set under mu before its goroutine starts).
	taskOpts TaskOptions
	// holding and held defer a task prelude's item records until the turn's start is recorded (under mu).
	holding bool
	held    []func()
	// taskErr fails a task turn; its status and error were announced when it was set (see
	// ToolContext.Fail). Written and read by the turn's goroutine only.
	taskErr *protocol.TurnError

	mu sync.Mutex
	// startedAt is written by the turn's goroutine under mu; other goroutines read it under mu.
	startedAt time.Time
	items     []protocol.ThreadItem
	lastAgent *protocol.ThreadItem
	// subOpen is set while the items of a task with TaskOptions.AnnounceID belong to that announced
	// sub-agent turn (recorded under its id, kept in subItems as well as items).
	subOpen bool
	// subThread is the sub-agent's own thread id (its rollout, its requests, its items' records).
	subThread string
	subItems  []protocol.ThreadItem
	ownItems  []protocol.ThreadItem // the task's items outside its sub-agent turn
	pending   []pendingInput        // steered (or folded) input waiting for the next model request
	inputCh   chan struct{}         // closed when input joins pending (nil until someone waits for it)
	firstIn   []protocol.UserInput
	// opts are the turn-only parameters of turn/start (output schema, client message id…).
	opts     TurnOptions
	finished bool
	usage    protocol.TokenUsageBreakdown // this turn's accumulated usage (token_usage_record)

	// pendingUsage is the usage of the last completed response until it is reported (after its tools).
	pendingUsage *model.Usage
	// endHold releases the output held from the last token count through turn/completed (finish).
	endHold func()

	// streaming is set while a model response is open (it delivered events and has not ended).
	streaming atomic.Bool

	// abandon cancels the in-flight model request (nil when none) and liveRun is that request's tool run;
	// turn/start uses them to restart the request with its input.
	abandon context.CancelCauseFunc
	liveRun *toolRun
}

// RestartStream abandons the turn's in-flight model stream so that the request restarts at once with
// the input BeginTurn folded in, as the reference does (call it after answering turn/start: the
// abandoned stream's token count follows the answer). Nothing happens when no request is in flight or
// when the response already started tool calls: the input then waits for the next request.
func (tn *Turn) RestartStream() {
	tn.mu.Lock()
	cancel, run := tn.abandon, tn.liveRun
	tn.mu.Unlock()
	if cancel == nil || run == nil || run.count() > 0 {
		return
	}
	cancel(errAbandoned)
}

// takePendingUsage returns the completed response's usage not yet reported, at most once.
func (tn *Turn) takePendingUsage() *model.Usage {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	u := tn.pendingUsage
	tn.pendingUsage = nil
	return u
}

// Done is closed when the turn has completed (turn/completed was sent).
func (tn *Turn) Done() <-chan struct{} { return tn.done }

// Context is cancelled when the turn ends or is interrupted.
func (tn *Turn) Context() context.Context { return tn.ctx }

func (tn *Turn) interrupt() {
	tn.cancel(errInterrupted)
	// The model stream survives a cancel by a tool (see stream), not an interruption.
	tn.mu.Lock()
	abandon := tn.abandon
	tn.mu.Unlock()
	if abandon != nil {
		abandon(errInterrupted)
	}
}

func (tn *Turn) cancelByTool() { tn.cancel(errToolCancelled) }

func (tn *Turn) addItem(item protocol.ThreadItem) { tn.addItemAs(item, nil) }

// addItemAs is addItem recording core (when not nil) as the item's rollout form.
func (tn *Turn) addItemAs(item protocol.ThreadItem, core any) {
	tn.mu.Lock()
	if tn.finished {
		tn.mu.Unlock()
		return
	}
	tn.items = append(tn.items, item)
	turnID, threadID := tn.ID, tn.thread.ID
	if tn.subOpen {
		tn.subItems = append(tn.subItems, item)
		turnID, threadID = tn.taskOpts.AnnounceID, tn.subThread
	} else {
		tn.ownItems = append(tn.ownItems, item)
		if _, ok := item.Value.(protocol.ThreadItemAgentMessage); ok {
			it := item
			tn.lastAgent = &it
		}
	}
	tn.mu.Unlock()
	// Recorded when the item completes, not at turn end, so a crash keeps it.
	tn.recordItemCompleted(threadID, turnID, item, core)
}

// snapshot renders the turn; full selects every item rather than the summary (last agent message).
func (tn *Turn) snapshot(full bool) protocol.Turn {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	items := []protocol.ThreadItem{}
	if full {
		items = append(items, tn.items...)
	}
	return protocol.Turn{
		ID: tn.ID, RootTurnID: ptr(tn.root()), Items: items, ItemsView: ptr(protocol.TurnItemsViewFull),
		Status: protocol.TurnStatusInProgress, StartedAt: ptr(tn.startedAt.Unix()),
	}
}

// started returns when the turn's goroutine started it (zero before).
func (tn *Turn) started() time.Time {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	return tn.startedAt
}

// PendingTurn is the turn object of a turn/start response (before turn/started).
func (tn *Turn) PendingTurn() protocol.Turn {
	return protocol.Turn{
		ID: tn.ID, RootTurnID: ptr(tn.root()), Items: []protocol.ThreadItem{}, ItemsView: ptr(protocol.TurnItemsViewNotLoaded),
		Status: protocol.TurnStatusInProgress,
	}
}

// TurnOptions are turn/start parameters that apply to that turn only.
type TurnOptions struct {
	// OutputSchema, when set, makes the model answer in JSON matching it (strict json_schema text format).
	OutputSchema json.RawMessage
	// ClientUserMessageID is echoed as the userMessage item's clientId.
	ClientUserMessageID *string
	// ServiceTierForTurn is turn/start's serviceTierForTurn: this turn's tier ("default": standard speed), the
	// thread's tier left as it is.
	ServiceTierForTurn *string
	// ParentTurnID is the parent's turn that gave a sub-agent this turn: the turn's root, as the reference
	// attributes it ("": the turn is its own root).
	ParentTurnID string
	// Messages are model-input items that stand in for user input (the collaboration tools' agent_message
	// items): they join the history after the input, with no userMessage item.
	Messages []json.RawMessage
}

// root is the id of the turn this one descends from: the parent's turn for a sub-agent's, else itself.
func (tn *Turn) root() string {
	if tn.opts.ParentTurnID != "" {
		return tn.opts.ParentTurnID
	}
	return tn.ID
}

// TurnOverrides are turn/start's settings overrides; they persist for later turns.
type TurnOverrides struct {
	Cwd            *string
	ApprovalPolicy *protocol.AskForApproval
	Sandbox        *protocol.SandboxPolicy
	// PermissionProfile names the built-in profile Sandbox came from (thread/settings/update's
	// `permissions`); nil with a Sandbox clears the active profile.
	PermissionProfile *string
	Model             *string
	Effort            *protocol.ReasoningEffort
	Summary           *protocol.ReasoningSummary
	// Collaboration is turn/start's collaborationMode: its mode persists, and its settings override the
	// model and effort as the reference applies them.
	Collaboration *protocol.CollaborationMode
	// ApprovalsReviewer, ServiceTier and Personality come from thread/settings/update.
	ApprovalsReviewer *protocol.ApprovalsReviewer
	ServiceTier       *string
	Personality       *protocol.Personality
	DisabledPluginIDs []string // nil leaves them
	MultiAgentMode    *protocol.MultiAgentMode
}

// ApplyOverrides applies turn/start's settings overrides (they persist for later turns) and, when they
// changed the thread's settings, announces the new ones with thread/settings/updated, as the reference
// does before it answers turn/start.
func (t *Thread) ApplyOverrides(o TurnOverrides) {
	if reflect.ValueOf(o).IsZero() {
		return // the common turn/start: nothing to apply, nor to render twice to compare
	}
	t.mu.Lock()
	before := mustJSON(t.threadSettingsLocked())
	s := &t.settings
	if o.Cwd != nil && *o.Cwd != "" && *o.Cwd != s.Cwd {
		// The thread moves: its cwd and environment follow, and the next run tells the model.
		s.Cwd = *o.Cwd
		t.meta.Cwd = protocol.AbsolutePathBuf(s.Cwd)
		t.meta.Environments = []protocol.ThreadEnvironment{{EnvironmentID: "local", Cwd: protocol.LegacyAppPathString(s.Cwd), RuntimeWorkspaceRoots: []protocol.LegacyAppPathString{protocol.LegacyAppPathString(s.Cwd)}}}
		t.cwdChanged = true
	}
	if o.ApprovalPolicy != nil {
		s.ApprovalPolicy = *o.ApprovalPolicy
	}
	if o.Sandbox != nil {
		s.Sandbox = *o.Sandbox
		s.PermissionProfile = deref(o.PermissionProfile)
	}
	if o.ApprovalsReviewer != nil {
		s.ApprovalsReviewer = *o.ApprovalsReviewer
	}
	if o.ServiceTier != nil {
		s.ServiceTier = o.ServiceTier
	}
	if o.Personality != nil {
		s.Personality = o.Personality
	}
	if o.DisabledPluginIDs != nil {
		s.DisabledPluginIDs = o.DisabledPluginIDs
	}
	if o.MultiAgentMode != nil {
		s.MultiAgentMode = o.MultiAgentMode
	}
	if o.Model != nil && *o.Model != "" {
		s.Model = *o.Model
		t.meta.Model = ptr(*o.Model)
	}
	if o.Effort != nil {
		s.Effort = o.Effort
	}
	if o.Summary != nil {
		s.Summary = o.Summary
	}
	if cm := o.Collaboration; cm != nil {
		// Like the reference, the mode's settings replace the model and the effort (a null effort
		// clears it).
		if cm.Mode != s.Mode {
			t.modeChanged = true
		}
		s.Mode = cm.Mode
		s.ModeSet = true
		if cm.Settings.Model != "" {
			s.Model = cm.Settings.Model
			t.meta.Model = ptr(cm.Settings.Model)
		}
		s.Effort = cm.Settings.ReasoningEffort
		s.ModeInstructions = deref(cm.Settings.DeveloperInstructions)
	}
	after := t.threadSettingsLocked()
	changed := string(before) != string(mustJSON(after))
	t.mu.Unlock()
	if changed {
		t.emit(protocol.NotifyThreadSettingsUpdated, protocol.ThreadSettingsUpdatedNotification{ThreadID: t.ID, ThreadSettings: after})
		t.recordSettings(t.Settings())
	}
}

// ThreadSettings renders the thread's current settings in the wire form.
func (t *Thread) ThreadSettings() protocol.ThreadSettings {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.threadSettingsLocked()
}

func (t *Thread) threadSettingsLocked() protocol.ThreadSettings {
	s := t.settings
	var cm protocol.CollaborationMode
	if s.ModeSet {
		instr := s.ModeInstructions
		if instr == "" {
			instr = collaborationModeText(s)
		}
		cm = protocol.CollaborationMode{Mode: s.Mode, Settings: protocol.Settings{Model: s.Model, ReasoningEffort: s.Effort, DeveloperInstructions: &instr}}
	} else {
		cm = protocol.CollaborationMode{Mode: protocol.ModeKindDefault, Settings: protocol.Settings{Model: s.Model, ReasoningEffort: s.Effort}}
	}
	disabled := s.DisabledPluginIDs
	if disabled == nil {
		disabled = []string{}
	}
	mam := s.MultiAgentMode
	if mam == nil {
		mam = &protocol.MultiAgentMode{Name: protocol.MultiAgentModeExplicitRequestOnly}
	}
	return protocol.ThreadSettings{
		DisabledPluginIds: disabled, Cwd: protocol.AbsolutePathBuf(s.Cwd), Environments: t.meta.Environments,
		ApprovalPolicy: s.ApprovalPolicy, ApprovalsReviewer: s.ApprovalsReviewer, SandboxPolicy: s.Sandbox,
		ActivePermissionProfile: s.ActivePermissionProfile(), Model: s.Model, ModelProvider: s.ModelProvider, Effort: s.Effort, Summary: s.Summary, CollaborationMode: cm,
		ServiceTier: s.ServiceTier, Personality: s.Personality,
		MultiAgentMode: mam,
	}
}

// BeginTurn registers a new turn (or folds the input into the running one, as the reference does) and
// returns it; the caller answers turn/start and then calls Run on a new turn, or RestartStream on a
// folded one. Settings overrides are applied before, with ApplyOverrides.
func (t *Thread) BeginTurn(input []protocol.UserInput, opts TurnOptions) (tn *Turn, folded bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active != nil {
		t.active.mu.Lock()
		t.active.pending = append(t.active.pending, pendingInput{input: input, clientID: opts.ClientUserMessageID, items: opts.Messages})
		t.active.signalInputLocked()
		t.active.mu.Unlock()
		return t.active, true
	}
	ctx, cancel := context.WithCancelCause(t.ctx)
	tn = &Turn{ID: uuid.Must(uuid.NewV7()).String(), thread: t, ctx: ctx, cancel: cancel, done: make(chan struct{}), firstIn: input, opts: opts}
	t.active = tn
	return tn, false
}

// BeginIdleTurn creates a turn like BeginTurn when the thread has none running; with one running it
// returns nil and changes nothing.
func (t *Thread) BeginIdleTurn(input []protocol.UserInput, opts TurnOptions) *Turn {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active != nil {
		return nil
	}
	ctx, cancel := context.WithCancelCause(t.ctx)
	tn := &Turn{ID: uuid.Must(uuid.NewV7()).String(), thread: t, ctx: ctx, cancel: cancel, done: make(chan struct{}), firstIn: input, opts: opts}
	t.active = tn
	return tn
}

// pendingInput is input waiting for the running turn's next model request.
type pendingInput struct {
	input    []protocol.UserInput
	clientID *string
	// items go to the history as they are: TurnOptions.Messages of folded input, or a script's notify()
	// output (QueueItems, with no user input).
	items []json.RawMessage
}

// QueueItems adds response items (a script's notify() output) to the history before the running turn's
// next model request, which the turn then makes even after a final answer, as the reference injects
// them; the request in flight goes on. With no turn running they wait for the next turn's first request.
func (t *Thread) QueueItems(items ...json.RawMessage) {
	if len(items) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active == nil {
		t.queued = append(t.queued, items...)
		return
	}
	t.active.mu.Lock()
	t.active.pending = append(t.active.pending, pendingInput{items: items})
	t.active.mu.Unlock()
}

// Steer injects input into the running turn; the caller answers turn/steer and then calls
// RestartStream, so that (as in the reference) the in-flight model request is abandoned and sent again
// with the input at once. The turn is returned for that.
func (t *Thread) Steer(input []protocol.UserInput, expectedTurnID string, clientID *string) (*Turn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active == nil {
		return nil, ErrNoActiveTurnToSteer
	}
	if expectedTurnID != t.active.ID {
		return nil, fmt.Errorf("expected active turn id `%s` but found `%s`", expectedTurnID, t.active.ID)
	}
	t.active.mu.Lock()
	kind := t.active.taskOpts.NotSteerable
	t.active.mu.Unlock()
	if kind != "" {
		return nil, &NotSteerableError{Kind: kind}
	}
	if len(input) == 0 {
		return nil, ErrEmptySteerInput
	}
	t.active.mu.Lock()
	t.active.pending = append(t.active.pending, pendingInput{input: input, clientID: clientID})
	t.active.signalInputLocked()
	t.active.mu.Unlock()
	return t.active, nil
}

// Interrupt stops the running turn; it returns once turn/completed was sent.
// PublicID is the turn id clients see while the turn runs: a task announced under another id (a
// review, see TaskOptions.AnnounceID) is addressed by that id.
func (tn *Turn) PublicID() string {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	if tn.taskOpts.AnnounceID != "" {
		return tn.taskOpts.AnnounceID
	}
	return tn.ID
}

// NotSteerable is the kind of turn that refuses more input while it runs ("" for a turn that takes it).
func (tn *Turn) NotSteerable() protocol.NonSteerableTurnKind {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	return tn.taskOpts.NotSteerable
}

func (t *Thread) Interrupt(turnID string) error {
	t.mu.Lock()
	tn := t.active
	t.mu.Unlock()
	if tn == nil || (turnID != "" && tn.ID != turnID) {
		return ErrNoActiveTurnToInterrupt
	}
	tn.interrupt()
	return nil
}

// AnnounceInterrupt sends what the reference sends before it answers turn/interrupt: a token count.
// In the middle of a model response that is the last known usage (if any) and the rate limits; while
// the tools of a completed response run, it is that response's usage, accounted now.
func (t *Thread) AnnounceInterrupt(turnID string) {
	t.mu.Lock()
	tn := t.active
	t.mu.Unlock()
	if tn == nil || (turnID != "" && tn.ID != turnID) {
		return
	}
	if tn.streaming.Load() {
		tn.emitTokenCount()
		return
	}
	tn.reportUsage(t.Settings(), tn.takePendingUsage())
}

// emitTokenCount re-announces the thread's last token usage (if any) followed by the rate limits, and
// records the token count (with a null info when there is no usage yet), as the reference does.
func (tn *Turn) emitTokenCount() {
	t := tn.thread
	var info *rollout.TokenUsageInfo
	if u, ok := t.Attached(lastUsageKey{}).(protocol.ThreadTokenUsage); ok {
		t.emit(protocol.NotifyThreadTokenUsageUpdated, protocol.ThreadTokenUsageUpdatedNotification{ThreadID: t.ID, TurnID: tn.ID, TokenUsage: u})
		info = &rollout.TokenUsageInfo{TotalTokenUsage: tokenUsage(u.Total), LastTokenUsage: tokenUsage(u.Last), ModelContextWindow: u.ModelContextWindow}
	}
	t.emit(protocol.NotifyAccountRateLimitsUpdated, emptyRateLimits())
	t.record(func(r *rollout.Recorder) error { return r.AppendEvent(rollout.TokenCount{Info: info}) })
}

// ActiveTurn returns the running turn, if any.
func (t *Thread) ActiveTurn() *Turn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.active
}

// Run drives the turn on its own goroutine.
func (tn *Turn) Run() { go tn.run() }

func (tn *Turn) run() {
	stacksize.Grow()
	t := tn.thread
	defer close(tn.done)
	tn.mu.Lock()
	tn.startedAt = time.Now()
	tn.mu.Unlock()
	t.mu.Lock()
	wasInterrupted := t.interrupted
	t.interrupted = false
	t.mu.Unlock()
	// The turn's opening notifications go out together (nothing below waits until autoCompact).
	release := t.holdOutput()
	t.emitStatus()
	started := tn.snapshot(false)
	started.ItemsView = ptr(protocol.TurnItemsViewNotLoaded)
	t.emit(protocol.NotifyTurnStarted, protocol.TurnStartedNotification{ThreadID: t.ID, Turn: started})
	s := t.Settings()
	tn.recordTaskStarted(s)
	t.markHistory(tn.ID) // where thread/revert cuts the history
	if wasInterrupted {
		t.appendHistory(messageItem("user", interruptedNotice))
	}
	// A context filled past the limit is compacted before anything of this turn joins the history, as the
	// reference does: its fresh initial context tells the model this turn's settings, so nothing is told twice.
	if t.autoCompactDue(s) {
		release()
		tn.autoCompact(s)
		release = t.holdOutput()
	}
	t.tellChanges(s)
	t.tellDeferredAdded(s)
	tn.recordTurnContext(s) // after what changed, as the reference records it
	release()
	tn.accept(pendingInput{input: tn.firstIn, clientID: tn.opts.ClientUserMessageID, items: tn.opts.Messages})

	status, turnErr := tn.loop()
	tn.finish(status, turnErr)
}

// accept takes input into the turn: the user input as a userMessage item and a history message, then the
// items that stand in for input (TurnOptions.Messages) into the history.
func (tn *Turn) accept(in pendingInput) {
	tn.acceptInput(in.input, in.clientID)
	if len(in.items) > 0 {
		tn.thread.appendHistory(in.items...)
	}
}

// acceptInput turns user input into a userMessage item and a history message.
func (tn *Turn) acceptInput(input []protocol.UserInput, clientID *string) {
	if len(input) == 0 {
		return
	}
	t := tn.thread
	defer t.holdOutput()() // item/started and item/completed go out together
	now := nowMs()
	content := make([]protocol.UserInput, 0, len(input))
	for _, in := range input {
		if txt, ok := in.Value.(protocol.UserInputText); ok && txt.TextElements == nil {
			txt.TextElements = []protocol.TextElement{}
			in = protocol.UserInput{Value: txt}
		}
		content = append(content, in)
	}
	item := protocol.ThreadItemUserMessage{ID: uuid.Must(uuid.NewV7()).String(), Content: content, StartedAtMs: ptr(now), ClientID: clientID}
	t.emit(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: protocol.ThreadItem{Value: item}, ThreadID: t.ID, TurnID: tn.ID, StartedAtMs: now})
	item.CompletedAtMs = ptr(nowMs())
	t.notePreview(userText(input))
	// The reference records the model's user message before the UI item.
	t.appendHistory(userInputItem(input, t.Settings().Model))
	tn.addItem(protocol.ThreadItem{Value: item})
	t.emit(protocol.NotifyItemCompleted, protocol.ItemCompletedNotification{Item: protocol.ThreadItem{Value: item}, ThreadID: t.ID, TurnID: tn.ID, CompletedAtMs: *item.CompletedAtMs})
}

func (t *Thread) appendHistory(items ...json.RawMessage) {
	t.mu.Lock()
	t.history = append(t.history, items...)
	t.mu.Unlock()
	for _, it := range items {
		t.record(func(r *rollout.Recorder) error { return r.AppendResponseItem(it) })
	}
}

// notePreview makes text the thread's preview unless it has one.
func (t *Thread) notePreview(text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.meta.Preview == "" {
		t.meta.Preview = text
	}
}

func userText(input []protocol.UserInput) string {
	var parts []string
	for _, in := range input {
		if txt, ok := in.Value.(protocol.UserInputText); ok {
			parts = append(parts, txt.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// userInputItem converts user input into a Responses user message for the thread's model. Images carry the
// detail the reference records for that model (model.RecordedImageDetail); a local image is read and sent as
// a data URL between `<image name=[Image #n] path="…">` and `</image>` (n counts the message's images).
// It writes what marshal makes of the message as maps (members sorted by name) without reflection.
func userInputItem(input []protocol.UserInput, modelID string) json.RawMessage {
	b := make([]byte, 0, 160)
	b = append(b, `{"content":[`...)
	first := true
	part := func(key string, value *string, typ string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, `{"`...)
		b = append(b, key...)
		b = append(b, `":`...)
		if value == nil {
			b = append(b, "null"...)
		} else {
			b = jsonstr.Append(b, *value)
		}
		b = append(b, `,"type":"`...)
		b = append(b, typ...)
		b = append(b, `"}`...)
	}
	image := func(url *string, requested *protocol.ImageDetail) {
		detail, omit := model.RecordedImageDetail(modelID, string(deref(requested)))
		if omit {
			part("text", ptr(model.ImageDetailLowNote), "input_text")
			return
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, `{"detail":`...)
		b = jsonstr.Append(b, detail)
		b = append(b, `,"image_url":`...)
		if url == nil {
			b = append(b, "null"...)
		} else {
			b = jsonstr.Append(b, *url)
		}
		b = append(b, `,"type":"input_image"}`...)
	}
	images := 0
	for _, in := range input {
		switch v := in.Value.(type) {
		case protocol.UserInputText:
			part("text", &v.Text, "input_text")
		case protocol.UserInputImage:
			images++
			image(v.URL, v.Detail)
		case protocol.UserInputLocalImage:
			images++
			url, err := localImageURL(string(v.Path))
			if err != nil {
				part("text", ptr("Codex could not read the local image at `"+string(v.Path)+"`: "+oserr.Text(err)), "input_text")
				continue
			}
			part("text", ptr("<image name=[Image #"+strconv.Itoa(images)+"] path=\""+string(v.Path)+"\">"), "input_text")
			if url == "" {
				part("text", ptr("image content omitted because it could not be processed"), "input_text")
			} else {
				image(&url, v.Detail)
			}
			part("text", ptr("</image>"), "input_text")
		case protocol.UserInputSkill:
			part("text", ptr("<skill name=\""+v.Name+"\" path=\""+string(v.Path)+"\"/>"), "input_text")
		case protocol.UserInputMention:
			part("text", ptr("<mention name=\""+v.Name+"\" path=\""+v.Path+"\"/>"), "input_text")
		}
	}
	b = append(b, `],"id":"msg_`...)
	b = appendUUIDv7(b)
	return append(b, `","role":"user","type":"message"}`...)
}

// localImageURL reads a local image as a data URL; "" (no error) for a file that is not an image.
func localImageURL(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	mt := http.DetectContentType(data)
	if !strings.HasPrefix(mt, "image/") {
		return "", nil
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(data), nil
}

// loop runs model requests and tool calls until the model answers without a tool call.
func (tn *Turn) loop() (protocol.TurnStatus, *protocol.TurnError) {
	t := tn.thread
	for {
		if err := tn.ctx.Err(); err != nil {
			return protocol.TurnStatusInterrupted, nil
		}
		tn.mu.Lock()
		pending := tn.pending
		tn.pending = nil
		tn.mu.Unlock()
		if s := t.Settings(); tn.autoCompact(s) { // a context filled past the limit is compacted before the request
			t.tellChanges(s) // what its fresh initial context does not tell (another model's instructions)
		}
		for _, in := range pending {
			tn.accept(in)
		}
		t.mu.Lock()
		queued := t.queued
		t.queued = nil
		t.mu.Unlock()
		if len(queued) > 0 {
			t.appendHistory(queued...)
		}

		s := t.Settings()
		client, err := t.mgr.modelClient(s.EffectiveConfig(t.mgr.Config()), s.ModelProvider)
		if err != nil {
			return tn.fail(&model.Error{Message: err.Error(), CodexErrorInfo: model.InfoString(model.InfoOther)})
		}
		if t.mgr.deps.AwaitTools != nil {
			t.mgr.deps.AwaitTools(tn.ctx, t)
		}
		sets := t.toolSets(s)
		t.noteDeferred(sets)
		req := tn.buildRequest(s, sets)
		// The notifications of events that arrive together (a short answer's item/started, delta and
		// item/completed) go out in one write.
		req.Hold = t.holdOutput
		sr := &streamState{turn: tn, items: map[string]*liveItem{}, recorded: map[string]bool{}, run: tn.newToolRun(s, sets)}
		comp, err := tn.stream(client, req, sr)
		if err == nil {
			tn.mu.Lock()
			tn.pendingUsage = comp.Usage
			tn.mu.Unlock()
		}
		tn.streaming.Store(false)
		if err != nil {
			if tn.ctx.Err() != nil {
				// Calls started before the interruption get "aborted" outputs, so the history never
				// holds a call without its output.
				t.appendHistory(sr.run.abortAll()...)
				return protocol.TurnStatusInterrupted, nil
			}
			if errors.Is(err, errAbandoned) {
				// turn/start folded new input in: what completed stays (as for a failed attempt), the
				// partial items are dropped (they never complete), an opened stream is followed by a
				// token count, and the request restarts with the input.
				if !tn.keepPartial(sr) {
					return protocol.TurnStatusInterrupted, nil
				}
				continue
			}
			var me *model.Error
			if !errors.As(err, &me) {
				me = &model.Error{Message: err.Error(), CodexErrorInfo: model.InfoString(model.InfoOther)}
			}
			if !tn.keepPartial(sr) {
				return protocol.TurnStatusInterrupted, nil
			}
			return tn.fail(me)
		}
		calls := sr.run.count()
		// The token count and, when the turn ends here, the turn's end (finish) go out together; with no
		// tool call to wait for, the response's records join them.
		var release func()
		if calls == 0 {
			release = t.holdOutput()
		}
		// The output items joined the history as they completed (see streamState).
		for _, it := range comp.Items {
			if !sr.recorded[string(it)] {
				t.record(func(r *rollout.Recorder) error { return r.AppendResponseItem(it) })
			}
		}
		tn.recordUsage(comp.ResponseID, comp.Usage)
		if calls > 0 {
			outputs, ok := sr.run.wait()
			t.appendHistory(outputs...)
			if !ok {
				// The response is still accounted (unless turn/interrupt already did, see AnnounceInterrupt).
				tn.reportUsage(s, tn.takePendingUsage())
				return protocol.TurnStatusInterrupted, nil
			}
			release = t.holdOutput()
		}
		tn.reportUsage(s, tn.takePendingUsage())
		sr.run.roundEnded()
		tn.mu.Lock()
		more := len(tn.pending) > 0
		if calls == 0 && !more {
			tn.endHold = release
		}
		tn.mu.Unlock()
		if calls == 0 && !more {
			return protocol.TurnStatusCompleted, nil
		}
		release()
	}
}

// stream runs one model request (with its retries) under a context that turn/start may cancel to
// abandon it; an abandoned request returns an error matching errAbandoned. The stream ends with the
// turn, except when a tool call ended it (an approval answered "cancel") while the response still
// streams: the response then completes and is accounted, as in the reference, before the turn ends.
func (tn *Turn) stream(client *model.Client, req *model.Request, sr *streamState) (*model.Completed, error) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(tn.ctx))
	defer cancel(context.Canceled)
	stop := context.AfterFunc(tn.ctx, func() {
		if cause := context.Cause(tn.ctx); !errors.Is(cause, errToolCancelled) {
			cancel(cause)
		}
	})
	defer stop()
	tn.mu.Lock()
	tn.abandon, tn.liveRun = cancel, sr.run
	tn.mu.Unlock()
	comp, err := client.Stream(ctx, req, sr.on)
	tn.mu.Lock()
	tn.abandon, tn.liveRun = nil, nil
	tn.mu.Unlock()
	if err != nil && tn.ctx.Err() == nil && errors.Is(context.Cause(ctx), errAbandoned) {
		return nil, errAbandoned
	}
	return comp, err
}

// fail converts a model error into the turn's error; finish announces it (systemError status, error,
// turn/completed), in the reference's order.
func (tn *Turn) fail(me *model.Error) (protocol.TurnStatus, *protocol.TurnError) {
	te := &protocol.TurnError{Message: me.Message, CodexErrorInfo: errorInfo(me.CodexErrorInfo)}
	return protocol.TurnStatusFailed, te
}

// finishCalls waits for the tool calls a response that did not complete had started and adds their
// outputs to the history; it returns false when the turn was interrupted meanwhile.
func (tn *Turn) finishCalls(sr *streamState) bool {
	if sr.run.count() == 0 {
		return true
	}
	outputs, ok := sr.run.wait()
	tn.thread.appendHistory(outputs...)
	return ok
}

// keepPartial handles what a failed response delivered before it broke, as the reference does: the
// output items that completed stay in the history (streamState put them there), their tool calls (which
// started as their items completed) finish and add their outputs, and an opened stream is followed by a
// token count (the last usage, if any, and the rate limits). It returns false when the turn was
// interrupted meanwhile.
func (tn *Turn) keepPartial(sr *streamState) bool {
	if !tn.finishCalls(sr) {
		return false
	}
	if sr.opened {
		tn.emitTokenCount()
	}
	return true
}

// abortedOutput is the reference's output for a tool call cut short by an interruption.
func abortedOutput(call ToolCall, wall time.Duration) json.RawMessage {
	if call.Type == "custom_tool_call" && call.Name == "exec" {
		// A code-mode script's words (see codemode).
		return CustomOutput(call.CallID, fmt.Sprintf("aborted by user after %.1fs", wall.Seconds()))
	}
	return errorOutput(call, fmt.Sprintf("Wall time: %.4f seconds\naborted by user", wall.Seconds()))
}

// emptyRateLimits is the all-null account/rateLimits/updated the reference sends with every token count
// (encoded once: every turn sends it).
func emptyRateLimits() preEncoded { return emptyRateLimitsJSON() }

var emptyRateLimitsJSON = sync.OnceValue(func() preEncoded {
	return preEncoded(marshal(map[string]any{"rateLimits": map[string]any{
		"limitId": "codex", "limitName": nil, "normalModelSlug": nil, "primary": nil, "secondary": nil, "credits": nil,
		"individualLimit": nil, "spendControlReached": nil, "planType": nil, "rateLimitReachedType": nil,
	}}))
})

// preEncoded is notification params encoded already (compact, as marshal writes them): a connection appends
// them to its line as they are (jsonrpc.Appender), anything else gets them from MarshalJSON.
type preEncoded []byte

// AppendJSON appends the encoded params.
func (p preEncoded) AppendJSON(b []byte) []byte { return append(b, p...) }

// MarshalJSON returns the encoded params.
func (p preEncoded) MarshalJSON() ([]byte, error) { return p, nil }

// buildRequest assembles the model request: base instructions, history, tools.
func (tn *Turn) buildRequest(s Settings, sets []ToolSet) *model.Request {
	t := tn.thread
	// A code-mode tool set's additional_tools item leads the input; such a request has no `tools` key.
	lead := leadItems(sets)
	// A retried attempt is sent with the history as it is then (items of the failed attempt included).
	inputNow := func() []json.RawMessage {
		t.mu.Lock()
		defer t.mu.Unlock()
		input := make([]json.RawMessage, 0, len(t.history)+1+len(lead))
		input = append(input, lead...)
		input = append(input, t.baseItemLocked())
		// Images go out with the detail this model takes (none on a Responses-lite model).
		return model.RequestImageDetails(s.Model, append(input, t.history...))
	}
	input := inputNow()
	t.mu.Lock()
	window := fmt.Sprintf("%s:%d", t.ID, t.windowN)
	t.mu.Unlock()
	tools := []json.RawMessage{}
	for _, set := range sets {
		tools = append(tools, set.Specs()...)
	}
	reasoning, text := requestControls(s, tn.opts.OutputSchema)
	meta := map[string]any{
		"installation_id": t.mgr.deps.InstallationID(), "session_id": t.ID, "thread_id": t.ID, "turn_id": tn.ID,
		"window_id": window, "request_kind": "turn", "root_turn_id": tn.root(), "model": s.Model,
		"turn_started_at_unix_ms": tn.startedAt.UnixMilli(), "sandbox_mode": sandboxModeName(s.Sandbox),
	}
	session, parent := t.ID, ""
	if sa := t.meta.Source.SubAgent; sa != nil && sa.ThreadSpawn != nil {
		// A spawned sub-agent's requests name its parent and belong to its root's session, as the reference's.
		parent = string(sa.ThreadSpawn.ParentThreadID)
		session = firstNonEmpty(t.mgr.sessionOf(parent), parent)
		meta["session_id"], meta["parent_thread_id"], meta["subagent_kind"], meta["thread_source"] = session, parent, "thread_spawn", "subagent"
		if tn.opts.ParentTurnID != "" {
			meta["parent_turn_id"] = tn.opts.ParentTurnID
		}
	}
	metaJSON, _ := json.Marshal(meta)
	originator := deref(t.meta.Originator)
	req := &model.Request{
		Refresh: inputNow, ServiceTier: requestServiceTier(s.Model, s.ServiceTier, tn.opts.ServiceTierForTurn),
		Model: s.Model, Input: input, Tools: tools, NoTools: len(lead) > 0, ToolChoice: "auto", ParallelToolCalls: len(lead) == 0,
		Reasoning: reasoning, Text: text, Include: []string{"reasoning.encrypted_content"}, PromptCacheKey: t.ID,
		ClientMetadata: map[string]string{
			"x-codex-window-id": window, "turn_id": tn.ID, "root_turn_id": tn.root(), "session_id": t.ID, "thread_id": t.ID,
			"x-codex-turn-metadata": string(metaJSON), "x-codex-installation-id": t.mgr.deps.InstallationID(),
		},
		Headers: map[string]string{
			"originator": originator, "session-id": t.ID, "thread-id": t.ID, "x-client-request-id": t.ID,
			"x-codex-window-id": window, "x-codex-turn-metadata": string(metaJSON), "user-agent": t.mgr.deps.UserAgent(originator),
		},
	}
	if parent != "" {
		req.PromptCacheKey = session
		req.ClientMetadata["session_id"], req.ClientMetadata["parent_thread_id"] = session, parent
		req.Headers["session-id"], req.Headers["x-codex-parent-thread-id"], req.Headers["x-openai-subagent"] = session, parent, "collab_spawn"
	}
	return req
}

// leadItems are the input items the sets put before everything else (InputTools).
func leadItems(sets []ToolSet) []json.RawMessage {
	var lead []json.RawMessage
	for _, set := range sets {
		if it, ok := set.(InputTools); ok {
			if item := it.ToolsItem(); item != nil {
				lead = append(lead, item)
			}
		}
	}
	return lead
}

// reasoningParam and textParam are the request's `reasoning` and `text` objects, fields in the
// reference's order.
type reasoningParam struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
	Context string `json:"context,omitempty"`
}

type textParam struct {
	Verbosity string      `json:"verbosity,omitempty"`
	Format    *textFormat `json:"format,omitempty"`
}

// textFormat is the strict JSON-schema output format a turn's outputSchema asks for.
type textFormat struct {
	Type   string          `json:"type"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema"`
	Name   string          `json:"name"`
}

// outputSchemaName is the format name the reference gives a turn's outputSchema.
const outputSchemaName = "codex_output_schema"

// requestControls renders `reasoning` and `text` for a request: a model of the catalogue gets its
// defaults (effort, reasoning context, verbosity) and no summary unless one was asked for; any other
// model gets summary "auto". An output schema adds the strict json_schema format (nil text when neither).
func requestControls(s Settings, outputSchema json.RawMessage) (reasoning, text json.RawMessage) {
	var r reasoningParam
	var tx textParam
	if m, known := model.LookupModel(s.Model); known {
		r.Effort, r.Context, tx.Verbosity = m.DefaultReasoningEffort, m.ReasoningContext, m.Verbosity
	} else {
		r.Summary = "auto"
	}
	if s.Summary != nil {
		r.Summary = string(*s.Summary)
	}
	if s.Effort != nil {
		r.Effort = string(*s.Effort)
	}
	if v := s.EffectiveConfig(nil); v != nil && v.ModelVerbosity != "" {
		tx.Verbosity = v.ModelVerbosity
	}
	if len(outputSchema) > 0 && string(outputSchema) != "null" {
		tx.Format = &textFormat{Type: "json_schema", Strict: true, Schema: outputSchema, Name: outputSchemaName}
	}
	reasoning = mustJSON(r)
	if tx.Verbosity != "" || tx.Format != nil {
		text = mustJSON(tx)
	}
	return reasoning, text
}

// reportUsage accumulates token usage and announces it (followed by the all-null rate limits, as the
// reference does).
func (tn *Turn) reportUsage(s Settings, u *model.Usage) {
	if u == nil {
		return
	}
	t := tn.thread
	last := protocol.TokenUsageBreakdown{
		TotalTokens: u.TotalTokens, InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens,
		CacheWriteInputTokens: ptr(int64(0)), OutputTokens: u.OutputTokens, ReasoningOutputTokens: u.ReasoningOutputTokens,
	}
	t.mu.Lock()
	t.total.TotalTokens += last.TotalTokens
	t.total.InputTokens += last.InputTokens
	t.total.CachedInputTokens += last.CachedInputTokens
	t.total.OutputTokens += last.OutputTokens
	t.total.ReasoningOutputTokens += last.ReasoningOutputTokens
	t.total.CacheWriteInputTokens = ptr(int64(0))
	total := t.total
	t.mu.Unlock()
	window := model.ContextWindow(s.Model)
	t.Attach(lastUsageKey{}, protocol.ThreadTokenUsage{Total: total, Last: last, ModelContextWindow: ptr(window)})
	t.emit(protocol.NotifyThreadTokenUsageUpdated, protocol.ThreadTokenUsageUpdatedNotification{
		ThreadID: t.ID, TurnID: tn.ID,
		TokenUsage: protocol.ThreadTokenUsage{Total: total, Last: last, ModelContextWindow: ptr(window)},
	})
	t.emit(protocol.NotifyAccountRateLimitsUpdated, emptyRateLimits())
	t.record(func(r *rollout.Recorder) error {
		return r.AppendEvent(rollout.TokenCount{Info: &rollout.TokenUsageInfo{
			TotalTokenUsage: tokenUsage(total), LastTokenUsage: tokenUsage(last), ModelContextWindow: ptr(window),
		}})
	})
}

func tokenUsage(b protocol.TokenUsageBreakdown) rollout.TokenUsage {
	return rollout.TokenUsage{InputTokens: b.InputTokens, CachedInputTokens: b.CachedInputTokens, OutputTokens: b.OutputTokens, ReasoningOutputTokens: b.ReasoningOutputTokens, TotalTokens: b.TotalTokens}
}

func dispatchTool(ctx context.Context, tc *ToolContext, sets []ToolSet, call ToolCall) (out json.RawMessage) {
	defer func() {
		if p := recover(); p != nil {
			tc.Log.Error("tool panicked", "tool", call.Name, "panic", p)
			out = errorOutput(call, fmt.Sprintf("tool %s failed: internal error", call.Name))
		}
	}()
	if mismatchedKind(sets, call) {
		// The reference's answer to an offered tool called in the other form (a freeform call of a
		// function tool, or the reverse): the call fails and its output is "aborted".
		return errorOutput(call, "aborted")
	}
	for _, set := range sets {
		if o, ok := set.Call(ctx, tc, call); ok {
			return o
		}
	}
	if call.Type == "custom_tool_call" {
		// The reference's words for a freeform call of a tool it did not offer (apply_patch included).
		return CustomOutput(call.CallID, "unsupported custom tool call: "+call.Name)
	}
	// The reference names a namespaced call by its namespace and name run together (namespace "foo", name "echo": "fooecho").
	return FunctionOutput(call.CallID, "unsupported call: "+call.Namespace+call.Name)
}

// mismatchedKind reports whether a top-level call names a tool offered as the other kind (function vs
// custom) and none of its own kind.
func mismatchedKind(sets []ToolSet, call ToolCall) bool {
	if call.Namespace != "" {
		return false
	}
	own := "function"
	if call.Type == "custom_tool_call" {
		own = "custom"
	}
	other := false
	for _, set := range sets {
		for _, raw := range set.Specs() {
			var spec struct{ Type, Name string }
			if json.Unmarshal(raw, &spec) != nil || spec.Name != call.Name {
				continue
			}
			if spec.Type == own {
				return false
			}
			if spec.Type == "function" || spec.Type == "custom" {
				other = true
			}
		}
	}
	return other
}

func errorOutput(call ToolCall, text string) json.RawMessage {
	if call.Type == "custom_tool_call" {
		return CustomOutput(call.CallID, text)
	}
	return FunctionOutput(call.CallID, text)
}

func toolCalls(items []json.RawMessage) []ToolCall {
	var calls []ToolCall
	for _, raw := range items {
		var it struct {
			Type      string          `json:"type"`
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Namespace string          `json:"namespace"`
			Arguments json.RawMessage `json:"arguments"`
			Input     string          `json:"input"`
		}
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch it.Type {
		case "function_call", "custom_tool_call":
			var args string
			if len(it.Arguments) > 0 && json.Unmarshal(it.Arguments, &args) != nil {
				continue
			}
			calls = append(calls, ToolCall{Type: it.Type, CallID: it.CallID, Name: it.Name, Namespace: it.Namespace, Arguments: args, Input: it.Input, Item: raw})
		case "tool_search_call":
			// Its arguments are a JSON object (query, limit), handed over as their JSON text.
			calls = append(calls, ToolCall{Type: it.Type, CallID: it.CallID, Name: "tool_search", Arguments: string(it.Arguments), Item: raw})
		}
	}
	return calls
}

// finish ends the turn: idle status, then turn/completed, in one uninterrupted stretch of the thread's
// notification order.
func (tn *Turn) finish(status protocol.TurnStatus, turnErr *protocol.TurnError) {
	t := tn.thread
	completedAt := time.Now()
	tn.mu.Lock()
	tn.finished = true
	endHold := tn.endHold
	tn.endHold = nil
	full := append([]protocol.ThreadItem{}, tn.items...)
	sub, own := tn.splitSub()
	summary := []protocol.ThreadItem{}
	if status == protocol.TurnStatusCompleted && tn.lastAgent != nil {
		summary = append(summary, *tn.lastAgent)
	}
	lastText := ""
	if tn.lastAgent != nil {
		if am, ok := tn.lastAgent.Value.(protocol.ThreadItemAgentMessage); ok {
			lastText = am.Text
		}
	}
	tn.mu.Unlock()
	dur := completedAt.Sub(tn.startedAt).Milliseconds()
	// The reference summarises a completed turn with its last agent message; an interrupted or failed
	// one carries no items and says they are not loaded.
	view := protocol.TurnItemsViewSummary
	if status != protocol.TurnStatusCompleted || len(summary) == 0 { // e.g. a user shell or compaction turn
		view = protocol.TurnItemsViewNotLoaded
	}
	turn := protocol.Turn{
		ID: tn.ID, RootTurnID: ptr(tn.root()), Items: summary, ItemsView: ptr(view),
		Status: status, Error: turnErr, StartedAt: ptr(tn.startedAt.Unix()), CompletedAt: ptr(completedAt.Unix()), DurationMs: ptr(dur),
	}
	tn.recordEnd(status, turnErr, lastText, completedAt, dur)
	if t.mgr != nil {
		defer t.mgr.notifyTurnEnd(t, status) // runs last, after turn/completed and the emit lock's release
	}
	t.emitMu.Lock()
	defer t.emitMu.Unlock()
	t.mu.Lock()
	stored := turn
	stored.Items = full
	stored.ItemsView = ptr(protocol.TurnItemsViewFull)
	if sub != nil {
		// The announced sub-agent turn reads as a turn of its own before the task's, never completed
		// in the thread (as the reference reads it back).
		t.turns = append(t.turns, *sub)
		stored.Items = own
	}
	t.turns = append(t.turns, stored)
	tn.mu.Lock()
	for _, in := range tn.pending {
		// Items injected after the turn's last request wait for the next turn.
		t.queued = append(t.queued, in.items...)
	}
	tn.mu.Unlock()
	t.active = nil
	t.flags = map[protocol.ThreadActiveFlag]int{}
	if status == protocol.TurnStatusInterrupted {
		t.interrupted = true
	}
	t.systemError = status == protocol.TurnStatusFailed
	t.meta.UpdatedAt = completedAt.Unix()
	t.meta.RecencyAt = ptr(completedAt.Unix())
	subs := t.subscribersLocked()
	t.mu.Unlock()
	t.mgr.touchLater(t)
	// A failed turn leaves the thread in systemError (until the next turn), announced before the error.
	st := protocol.ThreadStatus{Value: protocol.ThreadStatusIdle{}}
	if status == protocol.TurnStatusFailed {
		st = protocol.ThreadStatus{Value: protocol.ThreadStatusSystemError{}}
	}
	if tn.taskErr == nil {
		t.notifyStatus(subs, st)
	}
	if status == protocol.TurnStatusFailed && turnErr != nil && tn.taskErr == nil {
		for _, s := range subs {
			s.Notify(protocol.NotifyError, protocol.ErrorNotification{Error: *turnErr, ThreadID: t.ID, TurnID: tn.ID, WillRetry: false})
		}
	}
	for _, s := range subs {
		s.Notify(protocol.NotifyTurnCompleted, protocol.TurnCompletedNotification{ThreadID: t.ID, Turn: turn})
	}
	if endHold != nil {
		endHold()
	}
	tn.cancel(context.Canceled)
}

// splitSub returns the announced sub-agent turn of a task (nil if it has none) and the items that are the
// task's own (tn.mu held).
func (tn *Turn) splitSub() (*protocol.Turn, []protocol.ThreadItem) {
	id := tn.taskOpts.AnnounceID
	if id == "" {
		return nil, nil
	}
	own := append([]protocol.ThreadItem{}, tn.ownItems...)
	return &protocol.Turn{
		ID: id, RootTurnID: ptr(tn.ID), Items: append([]protocol.ThreadItem{}, tn.subItems...),
		ItemsView: ptr(protocol.TurnItemsViewFull), Status: protocol.TurnStatusInterrupted, StartedAt: ptr(tn.startedAt.Unix()),
	}, own
}

func ptrIf(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func approvalName(a protocol.AskForApproval) string {
	if a.Granular != nil {
		return "granular"
	}
	return a.Name
}

func sandboxModeName(p protocol.SandboxPolicy) string {
	switch p.Value.(type) {
	case protocol.SandboxPolicyDangerFullAccess:
		return "danger-full-access"
	case protocol.SandboxPolicyWorkspaceWrite:
		return "workspace-write"
	case protocol.SandboxPolicyExternalSandbox:
		return "external-sandbox"
	}
	return "read-only"
}

// errorInfo decodes a json-ready codexErrorInfo into the protocol union (nil when absent).
func errorInfo(raw json.RawMessage) *protocol.CodexErrorInfo {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var info protocol.CodexErrorInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return &protocol.CodexErrorInfo{Name: protocol.CodexErrorInfoOther}
	}
	return &info
}

// tellChanges appends to the history what the model must be told of the settings s before the next input, in
// the reference's order: the new model's instructions (or new base instructions), the permissions, the
// collaboration mode, the environment context. Each is told once: a second call adds nothing unless the
// history lost them (a compaction).
func (t *Thread) tellChanges(s Settings) {
	// A turn on another model than the last one gives it the base instructions, as the reference does; a
	// turn after a change of the base instructions alone (a personality change) gives the model the new ones.
	t.mu.Lock()
	prevModel, role := t.toldModel, t.role()
	t.mu.Unlock()
	if msg := t.swapModel(s); msg != nil {
		t.appendHistory(msg)
	} else if msg := t.swapInstructions(s); msg != nil {
		t.appendHistory(msg)
	}
	// A model change also tells the collaboration mode and the agent's role as the new model has them.
	var modeText string
	var agent []string
	if prevModel != "" && prevModel != s.Model {
		modeText, agent = modelChangeContext(prevModel, s, role)
	}
	// A turn that changed the sandbox or approval policy tells the model what now applies; one that switched
	// the collaboration mode (threads start in Default) which mode now applies: one developer message, as the
	// reference's.
	var parts []string
	if p := permissionsText(s); t.swapPermissions(p) {
		parts = append(parts, p)
	}
	t.mu.Lock()
	switched, moved := t.modeChanged, t.cwdChanged
	t.modeChanged, t.cwdChanged = false, false
	t.mu.Unlock()
	if switched {
		modeText = collaborationModeText(s)
	}
	if modeText != "" {
		parts = append(parts, modeText)
	}
	if len(parts) > 0 {
		t.appendHistory(developerMessage(parts...))
	}
	for _, text := range agent {
		t.appendHistory(messageItem("developer", text))
	}
	// The environment context follows a move (whole) or a change of what the sandbox lets commands touch
	// (date, timezone and filesystem only), as the reference's.
	fsChanged := t.swapFilesystem(filesystemText(s))
	switch {
	case moved:
		t.appendHistory(messageItem("user", environmentContext(s, time.Now())))
	case fsChanged:
		t.appendHistory(messageItem("user", environmentUpdate(s, time.Now())))
	}
}

// signalInputLocked wakes those waiting for new input (tn.mu held).
func (tn *Turn) signalInputLocked() {
	if tn.inputCh != nil {
		close(tn.inputCh)
		tn.inputCh = nil
	}
}

// inputArrived is closed when new input (turn/steer, a folded turn/start) next reaches the turn.
func (tn *Turn) inputArrived() <-chan struct{} {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	if tn.inputCh == nil {
		tn.inputCh = make(chan struct{})
	}
	return tn.inputCh
}
