package thread

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"appserver/model"
	protocol "appserver/protocol/v2"
)

// ErrTurnInProgress refuses a task while the thread runs a turn.
var ErrTurnInProgress = errors.New("thread already has an active turn")

// TaskBody drives a turn that is not a model conversation (the user's shell command): it reports its
// items through tc and returns the items it adds to the model's history.
type TaskBody func(ctx context.Context, tc *ToolContext) (history []json.RawMessage)

// BeginTask registers a turn driven by body instead of the model; RunTask starts it. Input that
// turn/start folds into it meanwhile is recorded when the body ends, without a model request, as the
// reference does for a user shell turn.
func (t *Thread) BeginTask() (*Turn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active != nil {
		return nil, ErrTurnInProgress
	}
	ctx, cancel := context.WithCancelCause(t.ctx)
	tn := &Turn{ID: uuid.Must(uuid.NewV7()).String(), thread: t, ctx: ctx, cancel: cancel, done: make(chan struct{}), task: true}
	t.active = tn
	return tn, nil
}

// TaskOptions shape how a task turn is announced and recorded (a review differs from a user shell).
type TaskOptions struct {
	// Prelude runs before the turn is announced active (the reference's review reports enteredReviewMode
	// first).
	Prelude func(tc *ToolContext)
	// AnnounceID, when set, is the turn id turn/started names, with the task's own id as its rootTurnId
	// (the reference announces its reviewer sub-agent's turn there). The items the body reports until
	// ToolContext.EndSubTurn belong to that turn: recorded under its id, and read back as a turn of its
	// own (status interrupted, never completed) before the task's turn; its task_started stands for the
	// task's own start in the rollout.
	AnnounceID string
	// NoteRead updates the thread's read state when the turn completes, as a model turn does.
	NoteRead bool
	// NotSteerable, when set, makes turn/steer refuse the turn as this kind (see NotSteerableError).
	NotSteerable protocol.NonSteerableTurnKind
}

// NotSteerableError refuses turn/steer on a turn that takes no input while it runs (a review).
type NotSteerableError struct {
	Kind protocol.NonSteerableTurnKind
}

func (e *NotSteerableError) Error() string { return "cannot steer a " + string(e.Kind) + " turn" }

// RunTask runs body as the turn on its own goroutine.
func (tn *Turn) RunTask(body TaskBody) { tn.RunTaskWith(TaskOptions{}, body) }

// RunTaskWith is RunTask with options.
func (tn *Turn) RunTaskWith(o TaskOptions, body TaskBody) {
	tn.mu.Lock()
	tn.taskOpts = o
	tn.mu.Unlock()
	go func() {
		t := tn.thread
		defer close(tn.done)
		tn.mu.Lock()
		tn.startedAt = time.Now()
		tn.mu.Unlock()
		s := t.Settings()
		tc := &ToolContext{Thread: t, Turn: tn, Settings: s, Log: t.log}
		if o.Prelude != nil {
			tn.holdRecords() // the prelude's items are recorded after the turn's start
			o.Prelude(tc)
		}
		t.emitStatus()
		started := tn.snapshot(false)
		started.ItemsView = ptr(protocol.TurnItemsViewNotLoaded)
		if o.AnnounceID != "" {
			started.ID, started.RootTurnID = o.AnnounceID, &tn.ID
		}
		t.emit(protocol.NotifyTurnStarted, protocol.TurnStartedNotification{ThreadID: t.ID, Turn: started})
		if o.AnnounceID != "" {
			// the sub-agent's turn starts after the prelude's items; its items follow until EndSubTurn
			tn.releaseRecords()
			tn.recordSubStart(s)
			tn.mu.Lock()
			tn.subOpen, tn.subThread = true, uuid.Must(uuid.NewV7()).String()
			tn.mu.Unlock()
		} else {
			tn.recordStart(s)
			tn.releaseRecords()
		}
		t.markHistory(tn.ID) // where thread/revert cuts the history
		hist := body(tn.ctx, tc)
		t.appendHistory(hist...)
		tn.mu.Lock()
		pending := tn.pending
		tn.pending = nil
		tn.mu.Unlock()
		for _, in := range pending {
			tn.accept(in)
		}
		status := protocol.TurnStatusCompleted
		switch {
		case tn.taskErr != nil:
			status = protocol.TurnStatusFailed
		case tn.ctx.Err() != nil:
			status = protocol.TurnStatusInterrupted
		}
		tn.finish(status, tn.taskErr)
	}()
}

// EndSubTurn ends the announced sub-agent turn (TaskOptions.AnnounceID): later items are the task's own.
func (tc *ToolContext) EndSubTurn() {
	tc.Turn.mu.Lock()
	tc.Turn.subOpen = false
	tc.Turn.mu.Unlock()
}

// ItemRecorded keeps a finished item in the turn and the rollout without announcing it (the reference's
// interrupted review records its exit so).
func (tc *ToolContext) ItemRecorded(item protocol.ThreadItem, core any) {
	tc.Turn.addItemAs(item, core)
}

// Fail makes the task turn end as failed with err (a model error keeps its text and error info), and
// announces that now, as the reference does for a review: the thread's systemError status and the
// error notification come before the task's last items, turn/completed after them.
func (tc *ToolContext) Fail(err error) {
	tn, t := tc.Turn, tc.Thread
	if tn.taskErr != nil {
		return
	}
	var me *model.Error
	if !errors.As(err, &me) {
		me = &model.Error{Message: err.Error(), CodexErrorInfo: model.InfoString(model.InfoOther)}
	}
	_, te := tn.fail(me)
	tn.taskErr = te
	t.emitMu.Lock()
	defer t.emitMu.Unlock()
	t.mu.Lock()
	subs := t.subscribersLocked()
	t.mu.Unlock()
	t.notifyStatus(subs, protocol.ThreadStatus{Value: protocol.ThreadStatusSystemError{}})
	for _, s := range subs {
		s.Notify(protocol.NotifyError, protocol.ErrorNotification{Error: *te, ThreadID: t.ID, TurnID: tn.ID, WillRetry: false})
	}
}
