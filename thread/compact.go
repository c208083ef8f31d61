package thread

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"appserver/compaction"
	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

// Compact runs a compaction turn: one contextCompaction item while the model writes a summary of the
// history, which is then replaced by compaction.Replace (the user's messages, a fresh initial context and the
// summary, as the reference's) and recorded as a `compacted` rollout line (a resumed thread continues from
// the replacement).
func (t *Thread) Compact() error {
	tn, err := t.BeginTask()
	if err != nil {
		return err
	}
	tn.RunTask(t.compactBody)
	return nil
}

func (t *Thread) compactBody(ctx context.Context, tc *ToolContext) []json.RawMessage {
	tn := tc.Turn
	item := protocol.ThreadItemContextCompaction{ID: uuid.Must(uuid.NewV7()).String(), StartedAtMs: ptr(nowMs())}
	tc.ItemStarted(protocol.ThreadItem{Value: item})
	s := tc.Settings
	client, err := t.mgr.modelClient(s.EffectiveConfig(t.mgr.Config()), s.ModelProvider)
	if err != nil {
		t.log.Warn("compaction: no model client", "error", err)
		return nil
	}
	req := tn.buildRequest(s, nil)
	req.Input = compaction.RequestInput(req.Input) // base instructions, history, then the ask; no tools
	req.Refresh = nil
	comp, err := client.Stream(ctx, req, func(model.Event) {})
	if err != nil {
		t.log.Warn("compaction request failed", "error", err)
		return nil
	}
	tn.recordUsage(comp.ResponseID, comp.Usage)
	tn.reportUsage(s, comp.Usage)
	summary := compaction.OutputText(comp.Items)
	initial := t.mgr.initialContext(s, t.role(), t.openingToolsNotice(s))
	t.mu.Lock()
	repl, msg := compaction.Replace(t.history, summary, initial)
	t.history = repl
	t.toldFreshLocked(s)
	t.mu.Unlock()
	t.record(func(r *rollout.Recorder) error {
		return r.Append(rollout.TypeCompacted, rollout.Compacted{Message: msg, ReplacementHistory: repl})
	})
	item.CompletedAtMs = ptr(time.Now().UnixMilli())
	tc.ItemCompleted(protocol.ThreadItem{Value: item})
	return nil
}

// compactMarkKey remembers the token usage that triggered the last automatic compaction, so one
// report triggers at most one.
type compactMarkKey struct{}

// autoCompactLimit is model_auto_compact_token_limit, else 90% of the model's context window
// (model_context_window from config, else the catalogue's).
func (t *Thread) autoCompactLimit(s Settings) int64 {
	cfg := s.EffectiveConfig(t.mgr.Config())
	if v, ok := asInt(cfg.Scalar("model_auto_compact_token_limit")); ok && v > 0 {
		return v
	}
	window := model.ContextWindow(s.Model)
	if v, ok := asInt(cfg.Scalar("model_context_window")); ok && v > 0 {
		window = v
	}
	return window * 9 / 10
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}

// autoCompactDue reports whether the last model response filled the context past the limit and has
// not triggered a compaction yet.
func (t *Thread) autoCompactDue(s Settings) bool {
	u, ok := t.Attached(lastUsageKey{}).(protocol.ThreadTokenUsage)
	if !ok || u.Last.TotalTokens < t.autoCompactLimit(s) {
		return false
	}
	if mark, ok := t.Attached(compactMarkKey{}).(int64); ok && mark == u.Total.TotalTokens {
		return false
	}
	return true
}

// autoCompact compacts inside the running turn before its next model request when due, and reports whether it did.
func (tn *Turn) autoCompact(s Settings) bool {
	t := tn.thread
	if !t.autoCompactDue(s) {
		return false
	}
	t.compactBody(tn.ctx, &ToolContext{Thread: t, Turn: tn, Settings: s, Log: t.log})
	// the summary request's own usage does not trigger another compaction
	if u, ok := t.Attached(lastUsageKey{}).(protocol.ThreadTokenUsage); ok {
		t.Attach(compactMarkKey{}, u.Total.TotalTokens)
	}
	return true
}
