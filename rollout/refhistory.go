package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"sync"

	"appserver/refstate"
)

// RefHistory mirrors our paginated threads' turns into the reference's history database
// (thread_history_1.sqlite, package refstate) when CODEX_HOME has one, so the reference's thread/read and
// thread/turns/list show them without resuming the thread. The database is opened on first use; a missing
// file is looked for again at the next turn, an unknown schema is logged once and then left alone.
type RefHistory struct {
	home string

	mu     sync.Mutex
	h      *refstate.History
	off    bool // unknown schema or closed: never touch it again
	logged bool
}

// NewRefHistory returns a RefHistory for codexHome; it does no I/O.
func NewRefHistory(codexHome string) *RefHistory { return &RefHistory{home: codexHome} }

// Close closes the database; later calls to Project do nothing.
func (r *RefHistory) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h != nil {
		_ = r.h.Close()
		r.h = nil
	}
	r.off = true
}

// Project writes the turns of the rollout at path not yet in the reference's history database. Legacy
// threads (the reference replays their rollouts itself) are skipped; a fork gets its own turns only, as the
// reference writes them (the parent's stay under the parent). Failures are logged, never
// returned: the rollout stays the source of truth. Call it when a turn ends.
func (r *RefHistory) Project(ctx context.Context, threadID, path string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.off {
		return
	}
	if r.h == nil {
		h, err := refstate.OpenHistory(ctx, r.home)
		switch {
		case errors.Is(err, refstate.ErrAbsent):
			return
		case errors.Is(err, refstate.ErrUnknownSchema):
			slog.Warn("rollout: leaving the reference's history database alone", "err", err)
			r.off = true
			return
		case err != nil:
			if !r.logged {
				slog.Warn("rollout: reference history database unavailable", "err", err)
				r.logged = true
			}
			return
		}
		r.h = h
	}
	info, err := os.Stat(path)
	if err != nil {
		return
	}
	th, err := ReadFile(path)
	if err != nil || th.Meta.HistoryMode != HistoryModePaginated {
		return
	}
	if err := r.h.Project(ctx, threadID, ReferenceTurns(th), th.NextOrdinal, info.Size()); err != nil {
		slog.Warn("rollout: reference history not updated", "thread", threadID, "err", err)
	}
}

// ReferenceTurns converts a thread's own turns (not those a fork inherits) to the reference's stored form.
func ReferenceTurns(th *Thread) []refstate.Turn {
	out := make([]refstate.Turn, 0, len(th.Turns))
	for i, t := range th.Turns {
		if t.Inherited {
			continue
		}
		rt := refstate.Turn{ID: t.ID, Ordinal: t.Ordinal, Status: t.Status, StartedAt: t.StartedAt,
			CompletedAt: t.CompletedAt, DurationMs: t.DurationMs, EndOrdinal: th.NextOrdinal - 1}
		if i+1 < len(th.Turns) && th.Turns[i+1].Ordinal > t.Ordinal {
			rt.EndOrdinal = th.Turns[i+1].Ordinal - 1
		}
		if t.RootTurnID != nil {
			rt.RootTurnID = *t.RootTurnID
		}
		if t.Error != nil {
			rt.ErrorJSON, _ = json.Marshal(t.Error)
		}
		var fallback int64
		if t.StartedAt != nil {
			fallback = *t.StartedAt * 1000
		}
		for j, m := range t.Items {
			ord := t.Ordinal
			if j < len(t.ItemOrdinals) {
				ord = t.ItemOrdinals[j]
			}
			it, err := refstate.ItemFromMap(m, ord, fallback)
			if err != nil || it.ID == "" || it.Type == "" {
				continue
			}
			rt.Items = append(rt.Items, it)
		}
		out = append(out, rt)
	}
	return out
}
