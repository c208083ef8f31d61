package thread

import (
	"encoding/json"
	"time"

	"appserver/model"
	"appserver/rollout"
)

// subRollout records a sub-agent conversation (the reviewer) in a rollout file of its own, as the
// reference does: session_meta naming the parent thread (session_id and parent_thread_id) with source
// {"subagent": kind} and thread_source "subagent", then the sub-agent turn's records. Such a file is
// not listed by thread/list (its source kind is not interactive). A nil subRollout records nothing.
type subRollout struct {
	rec     *rollout.Recorder
	log     func(error)
	turnID  string
	rootID  string
	started time.Time
}

// newSubRollout creates the sub-agent id's rollout for a conversation of tn under settings s with base as
// its instructions; nil when the thread has no rollout (ephemeral) or the file cannot be created.
func newSubRollout(tn *Turn, id, kind, turnID, base string, s Settings) *subRollout {
	t := tn.thread
	t.mu.Lock()
	parentRec := t.recorder
	meta := t.meta
	t.mu.Unlock()
	if parentRec == nil {
		return nil
	}
	now := time.Now()
	src, _ := json.Marshal(map[string]string{"subagent": kind})
	originator := ""
	if meta.Originator != nil {
		originator = *meta.Originator
	}
	rec, err := rollout.Create(t.mgr.Config().CodexHome, rollout.SessionMeta{
		ID: id, SessionID: t.ID, ParentThreadID: t.ID, Timestamp: rollout.FormatTimestamp(now), Cwd: s.Cwd,
		RuntimeWorkspaceRoots: []string{s.Cwd}, Originator: originator, CLIVersion: t.mgr.deps.Version,
		Source: src, ThreadSource: "subagent", ModelProvider: s.ModelProvider,
		BaseInstructions: &rollout.BaseInstructions{Text: base}, HistoryMode: rollout.HistoryModePaginated,
	}, now)
	if err != nil {
		t.log.Warn("sub-agent rollout not created", "error", err)
		return nil
	}
	sr := &subRollout{rec: rec, turnID: turnID, rootID: tn.ID, started: now,
		log: func(err error) { t.log.Warn("sub-agent rollout append failed", "error", err) }}
	sr.do(func(r *rollout.Recorder) error {
		return r.AppendEvent(rollout.TaskStarted{TurnID: turnID, RootTurnID: tn.ID, StartedAt: now.Unix(),
			ModelContextWindow: ptr(model.ContextWindow(s.Model)), CollaborationModeKind: "default",
			TurnAttribution: &rollout.TurnAttribution{TurnID: turnID, ParentTurnID: &tn.ID, RootTurnID: tn.ID}})
	})
	return sr
}

func (sr *subRollout) do(f func(*rollout.Recorder) error) {
	if sr == nil {
		return
	}
	if err := f(sr.rec); err != nil {
		sr.log(err)
	}
}

// items records response items of the conversation.
func (sr *subRollout) items(items ...json.RawMessage) {
	for _, it := range items {
		sr.do(func(r *rollout.Recorder) error { return r.AppendResponseItem(it) })
	}
}

// turnContext records the sub-agent turn's turn_context.
func (sr *subRollout) turnContext(s Settings) {
	if sr == nil {
		return
	}
	tc := rollout.TurnContext{TurnID: sr.turnID, RootTurnID: sr.rootID, Cwd: s.Cwd, ApprovalPolicy: approvalName(s.ApprovalPolicy),
		ApprovalsReviewer: string(s.ApprovalsReviewer), SandboxPolicy: sandboxCore(s.Sandbox), Model: s.Model,
		CollaborationMode: map[string]any{"mode": "default", "settings": map[string]any{
			"model": s.Model, "reasoning_effort": s.Effort, "developer_instructions": nil}},
	}
	sr.do(func(r *rollout.Recorder) error { return r.AppendTurnContext(tc) })
}

// end records how the sub-agent turn ended (its answer, or interrupted) and closes the file.
func (sr *subRollout) end(answer string, interrupted bool) {
	if sr == nil {
		return
	}
	now := time.Now()
	dur := now.Sub(sr.started).Milliseconds()
	if interrupted {
		sr.do(func(r *rollout.Recorder) error {
			return r.AppendEvent(rollout.TurnAborted{TurnID: sr.turnID, RootTurnID: sr.rootID, Reason: "interrupted",
				StartedAt: sr.started.Unix(), CompletedAt: now.Unix(), DurationMs: ptr(dur)})
		})
	} else {
		sr.do(func(r *rollout.Recorder) error {
			return r.AppendEvent(rollout.TaskComplete{TurnID: sr.turnID, RootTurnID: sr.rootID, LastAgentMessage: ptrIf(answer),
				StartedAt: sr.started.Unix(), CompletedAt: now.Unix(), DurationMs: ptr(dur)})
		})
	}
	sr.do(func(r *rollout.Recorder) error { return r.Close() })
}
