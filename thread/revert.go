package thread

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

// ErrTurnNotFound is thread/revert's and thread/fork's answer for a turn the thread does not have.
var ErrTurnNotFound = errors.New("turn not found")

// historyMarksKey holds, per turn started in this process, where it started (a historyMark).
type historyMarksKey struct{}

// historyMark is the thread's state when a turn started: the model history's length and the token
// usage total (what thread/revert restores, as the reference's replay of the kept prefix does).
type historyMark struct {
	history int
	total   protocol.TokenUsageBreakdown
}

func (t *Thread) markHistory(turnID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.attached == nil {
		t.attached = map[any]any{}
	}
	marks, _ := t.attached[historyMarksKey{}].(map[string]historyMark)
	if marks == nil {
		marks = map[string]historyMark{}
		t.attached[historyMarksKey{}] = marks
	}
	marks[turnID] = historyMark{history: len(t.history), total: t.total}
}

// Revert drops the turn beforeTurnID and every later one: their turns and what they added to the
// model's history. As the reference, a paginated thread continues in a new rollout file whose history_base
// references the kept part of the file the turn is in (see rollout.CreateSegment; the old files stay as
// they are); a legacy thread's rollout records the cut instead (a `thread_rolled_back` event for the turns
// and the kept history as a `compacted` replacement). Files the turns changed are left as they are.
func (t *Thread) Revert(beforeTurnID string) error {
	t.mu.Lock()
	if t.active != nil {
		t.mu.Unlock()
		return ErrTurnInProgress
	}
	t.materializeTurnsLocked()
	idx := -1
	for i, tu := range t.turns {
		if tu.ID == beforeTurnID {
			idx = i
			break
		}
	}
	if idx < 0 {
		t.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrTurnNotFound, beforeTurnID)
	}
	now := time.Now()
	seg, err := t.newSegmentLocked(beforeTurnID, now)
	if err != nil {
		t.log.Warn("revert: new rollout file failed; recording the cut in the current one", "error", err)
	}
	cut, ok := -1, false
	if marks, _ := t.attached[historyMarksKey{}].(map[string]historyMark); marks != nil {
		var m historyMark
		if m, ok = marks[beforeTurnID]; ok {
			cut, t.total = m.history, m.total
		}
	}
	if !ok {
		cut = userMessageIndex(t.history, t.turns[idx])
	}
	if cut >= 0 && cut <= len(t.history) {
		t.history = t.history[:cut:cut]
		t.rereadToldLocked() // the dropped turns' updates are no longer what the model was told
	}
	dropped := len(t.turns) - idx
	for _, tu := range t.turns[idx:] {
		if marks, _ := t.attached[historyMarksKey{}].(map[string]historyMark); marks != nil {
			delete(marks, tu.ID)
		}
	}
	t.turns = t.turns[:idx:idx]
	kept := append([]json.RawMessage{}, t.history...)
	if seg != nil {
		old := t.recorder
		t.recorder = seg
		t.recorded = "" // the new file records the settings again
		t.meta.Path = ptr(seg.Path())
		t.meta.CreatedAt, t.meta.UpdatedAt = now.Unix(), now.Unix()
		settings := t.settings
		t.mu.Unlock()
		if err := old.Close(); err != nil {
			t.log.Warn("rollout close failed", "error", err)
		}
		t.recordSettings(settings)
		if err := seg.Flush(); err != nil {
			t.log.Warn("rollout append failed", "error", err)
		}
		if st := t.mgr.openStore(); st != nil {
			if _, err := st.Reindex(seg.Path()); err != nil {
				t.log.Warn("rollout index update failed", "error", err)
			}
		}
		return nil
	}
	t.mu.Unlock()
	t.record(func(r *rollout.Recorder) error {
		if err := r.Append(rollout.TypeEventMsg, map[string]any{"type": "thread_rolled_back", "num_turns": dropped}); err != nil {
			return err
		}
		return r.Append(rollout.TypeCompacted, rollout.Compacted{ReplacementHistory: kept})
	})
	return nil
}

// newSegmentLocked starts the thread's next rollout file, cut before the turn beforeTurnID (t.mu held);
// nil without error for a thread that keeps its cut in its file (no rollout, or a legacy one).
func (t *Thread) newSegmentLocked(beforeTurnID string, now time.Time) (*rollout.Recorder, error) {
	rec := t.recorder
	if rec == nil {
		return nil, nil
	}
	if err := rec.Flush(); err != nil {
		return nil, err
	}
	cur := rec.Path()
	meta, err := rollout.ReadSessionMeta(cur)
	if err != nil {
		return nil, err
	}
	if !rollout.Paginated(meta.HistoryMode) {
		return nil, nil
	}
	home := t.mgr.Config().CodexHome
	hb, err := rollout.RevertBase(home, cur, beforeTurnID)
	if err != nil {
		return nil, err
	}
	meta.HistoryBase, meta.ForkedFromOrdinalExclusive = &hb, nil
	return rollout.CreateSegment(home, meta, now)
}

// userMessageIndex finds, for a turn from an earlier session, the last history message holding its
// user text (-1 when none does).
func userMessageIndex(history []json.RawMessage, tu protocol.Turn) int {
	var text string
	for _, it := range tu.Items {
		if um, ok := it.Value.(protocol.ThreadItemUserMessage); ok {
			text = strings.TrimSpace(userText(um.Content))
			break
		}
	}
	if text == "" {
		return -1
	}
	for i := len(history) - 1; i >= 0; i-- {
		var m struct {
			Role    string `json:"role"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(history[i], &m) != nil || m.Role != "user" {
			continue
		}
		for _, c := range m.Content {
			if strings.TrimSpace(c.Text) == text {
				return i
			}
		}
	}
	return -1
}
