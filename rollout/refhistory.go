package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"sync"

	"appserver/refstate"
)

// RefHistory mirrors our paginated threads' turns into the reference's history database
// (thread_history_1.sqlite, package refstate) when CODEX_HOME has one, so the reference's thread/read and
// thread/turns/list show them without resuming the thread. The database is opened on first use; a missing
// file is looked for again at the next turn, an unknown schema is logged once and then left alone.
//
// Projection is incremental: per thread it keeps where the rollout was read to and the reader's state there
// (turns without the items already projected), and at the next turn's end it reads only what was appended.
// It reads the whole rollout again when it has no such state or it does not match (another file at the path,
// a file shorter than the offset or with other bytes before it, a projection state moved back by another
// writer); either way the rows written are those a whole read would write.
type RefHistory struct {
	home string

	mu      sync.Mutex
	h       *refstate.History
	off     bool // unknown schema or closed: never touch it again
	logged  bool
	cursors map[string]*refCursor
	// fullReads counts whole-rollout reads (tests).
	fullReads int
}

// maxRefCursors bounds the threads whose projection state is kept; past it, one is dropped (it reads its
// rollout whole again at its next turn's end).
const maxRefCursors = 256

// refTailLen is how many bytes before a cursor's offset must be unchanged for it to be used.
const refTailLen = 256

// refCursor is a thread's rollout as projected so far: the reader's state after the first off bytes.
type refCursor struct {
	path  string
	info  os.FileInfo // the file read, for os.SameFile
	off   int64       // bytes read, just past a newline
	tail  []byte      // the bytes just before off
	b     *builder
	since int64 // every turn at or past this ordinal still has its items; the rest were projected
	// legacy marks a rollout that is not paginated: it is never projected, b is nil.
	legacy bool
}

// NewRefHistory returns a RefHistory for codexHome; it does no I/O.
func NewRefHistory(codexHome string) *RefHistory {
	return &RefHistory{home: codexHome, cursors: map[string]*refCursor{}}
}

// Close closes the database; later calls to Project do nothing.
func (r *RefHistory) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h != nil {
		_ = r.h.Close()
		r.h = nil
	}
	r.off = true
	r.cursors = nil
}

// Forget drops what is kept of a thread's projection (call it when the thread is unloaded).
func (r *RefHistory) Forget(threadID string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.cursors, threadID)
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
		delete(r.cursors, threadID)
		return
	}
	c := r.cursors[threadID]
	if c != nil && c.legacy && c.path == path && os.SameFile(c.info, info) {
		return // the history mode of a rollout never changes
	}
	from, _, _, err := r.h.State(ctx, threadID)
	if err != nil {
		slog.Warn("rollout: reference history not updated", "thread", threadID, "err", err)
		return
	}
	if c != nil && (c.legacy || !c.resume(path, info, from)) {
		c = nil
	}
	if c == nil {
		delete(r.cursors, threadID)
		if c, err = r.readWhole(path, info); err != nil {
			return
		}
	}
	if c.b.th.Meta.HistoryMode != HistoryModePaginated {
		// Legacy: the reference replays the rollout itself. Only the verdict is kept.
		r.keep(threadID, &refCursor{path: path, info: info, legacy: true})
		return
	}
	since := max(c.since, from)
	err = r.h.ProjectSince(ctx, threadID, c.turns(since), since, c.b.th.NextOrdinal, info.Size())
	if errors.Is(err, refstate.ErrStale) {
		// The projection state moved back meanwhile (another writer): offer every turn.
		if c.since > 0 {
			delete(r.cursors, threadID) // it has read past its recorded offset
			if c, err = r.readWhole(path, info); err != nil {
				return
			}
		}
		err = r.h.ProjectSince(ctx, threadID, c.turns(0), 0, c.b.th.NextOrdinal, info.Size())
	}
	if err != nil {
		slog.Warn("rollout: reference history not updated", "thread", threadID, "err", err)
		r.keep(threadID, c)
		return
	}
	c.projected(c.b.th.NextOrdinal)
	r.keep(threadID, c)
}

// readWhole reads the rollout at path from its start.
func (r *RefHistory) readWhole(path string, info os.FileInfo) (*refCursor, error) {
	r.fullReads++
	b := &builder{th: &Thread{Path: path}, turnIndex: map[string]int{}, refOnly: true}
	if err := b.readFile(path, -1, 0, true); err != nil {
		return nil, err
	}
	return &refCursor{path: path, info: info, b: b}, nil
}

// keep remembers c for the thread's next turn if it can be resumed.
func (r *RefHistory) keep(threadID string, c *refCursor) {
	if r.cursors == nil {
		return
	}
	if !c.legacy {
		if c.b.torn || IsCompressed(c.path) {
			delete(r.cursors, threadID)
			return
		}
		c.off = c.b.consumed
		if err := c.readTail(); err != nil {
			delete(r.cursors, threadID)
			return
		}
	}
	if _, ok := r.cursors[threadID]; !ok && len(r.cursors) >= maxRefCursors {
		for id := range r.cursors {
			delete(r.cursors, id)
			break
		}
	}
	r.cursors[threadID] = c
}

// readTail sets c.tail to the bytes of the file before c.off.
func (c *refCursor) readTail() error {
	f, err := os.Open(c.path)
	if err != nil {
		return err
	}
	defer f.Close()
	tail, err := readAt(f, c.off)
	if err != nil {
		return err
	}
	c.tail = tail
	return nil
}

// readAt returns the (up to refTailLen) bytes of f before off.
func readAt(f *os.File, off int64) ([]byte, error) {
	n := min(off, refTailLen)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off-n); err != nil {
		return nil, err
	}
	return buf, nil
}

// resume reads what was appended to the rollout since c was read, if c still describes its start, and
// reports whether it did; c must not be used when it did not. from is the thread's projection state.
func (c *refCursor) resume(path string, info os.FileInfo, from int64) bool {
	if c.path != path || !os.SameFile(c.info, info) || info.Size() < c.off || from < c.since {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if tail, err := readAt(f, c.off); err != nil || !bytes.Equal(tail, c.tail) {
		return false
	}
	if _, err := f.Seek(c.off, io.SeekStart); err != nil {
		return false
	}
	lr := newLineReader(f)
	defer lr.release()
	c.b.consumed = 0
	if err := c.b.readLines(lr, path, 0, true, false); err != nil {
		return false
	}
	c.b.consumed += c.off
	c.info = info
	return true
}

// projected drops the items of the turns before nextOrdinal, which are in the database now: a later
// projection never writes them.
func (c *refCursor) projected(nextOrdinal int64) {
	turns := c.b.th.Turns
	for i := range turns {
		if turns[i].Ordinal < nextOrdinal {
			turns[i].Items, turns[i].ItemOrdinals = nil, nil
		}
	}
	c.since = nextOrdinal
}

// turns returns the thread's own turns at or past ordinal since, in the reference's stored form, with the
// statuses a whole read gives them (a turn still open reads as interrupted, or completed for one opened by
// an item without a turn id); the reader's state is left as it is, to be resumed.
func (c *refCursor) turns(since int64) []refstate.Turn {
	b := c.b
	status := func(i int) string {
		if b.curOpen && i == b.cur {
			if b.implicit {
				return TurnCompleted
			}
			return TurnInterrupted
		}
		if s := b.th.Turns[i].Status; s != TurnInProgress {
			return s
		}
		return TurnInterrupted
	}
	return referenceTurns(b.th.Turns, b.th.NextOrdinal, since, status)
}

// ReferenceTurns converts a thread's own turns (not those a fork inherits) to the reference's stored form.
func ReferenceTurns(th *Thread) []refstate.Turn {
	return referenceTurns(th.Turns, th.NextOrdinal, math.MinInt64, func(i int) string { return th.Turns[i].Status })
}

// referenceTurns converts the own turns at or past ordinal since; status gives each turn's status.
func referenceTurns(turns []Turn, nextOrdinal, since int64, status func(i int) string) []refstate.Turn {
	var out []refstate.Turn
	for i := range turns {
		t := &turns[i]
		if t.Inherited || t.Ordinal < since {
			continue
		}
		rt := refstate.Turn{ID: t.ID, Ordinal: t.Ordinal, Status: status(i), StartedAt: t.StartedAt,
			CompletedAt: t.CompletedAt, DurationMs: t.DurationMs, EndOrdinal: nextOrdinal - 1}
		if i+1 < len(turns) && turns[i+1].Ordinal > t.Ordinal {
			rt.EndOrdinal = turns[i+1].Ordinal - 1
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
