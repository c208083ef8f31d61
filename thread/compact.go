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
// history, which is then replaced by compaction.Replace and recorded as a `compacted` rollout line
// (a resumed thread continues from the replacement).
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
	client, err := t.mgr.modelClient(t.mgr.deps.Config, s.ModelProvider)
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
	t.mu.Lock()
	repl, msg := compaction.Replace(t.history, summary)
	t.history = repl
	t.mu.Unlock()
	t.record(func(r *rollout.Recorder) error {
		return r.Append(rollout.TypeCompacted, rollout.Compacted{Message: msg, ReplacementHistory: repl})
	})
	item.CompletedAtMs = ptr(time.Now().UnixMilli())
	tc.ItemCompleted(protocol.ThreadItem{Value: item})
	return nil
}
