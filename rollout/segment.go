package rollout

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
)

// A reverted thread continues in a new rollout file, as the reference writes it:
// rollout-<time>-<thread id>_<segment id>.jsonl, whose session_meta.history_base references the part kept of
// the file before it by that file's segment id (the thread id for the thread's first file). The thread's
// current file is its newest segment; the older ones stay as they were.

// splitFileID splits the id part of a rollout file name into the thread id and the segment id ("" for the
// thread's first file).
func splitFileID(fileID string) (threadID, segID string) {
	if i := strings.LastIndexByte(fileID, '_'); i > 0 {
		if _, err := uuid.Parse(fileID[i+1:]); err == nil {
			if _, err := uuid.Parse(fileID[:i]); err == nil {
				return fileID[:i], fileID[i+1:]
			}
		}
	}
	return fileID, ""
}

// SegmentID returns the id by which a history_base names the rollout file at path: its segment id, or the
// thread id for the thread's first file.
func SegmentID(path string) string {
	name := strings.TrimSuffix(filepath.Base(path), CompressedSuffix)
	const prefixLen = len("rollout-2006-01-02T15-04-05-")
	if !strings.HasPrefix(name, "rollout-") || !strings.HasSuffix(name, ".jsonl") || len(name) <= prefixLen+len(".jsonl") {
		return ""
	}
	tid, seg := splitFileID(name[prefixLen : len(name)-len(".jsonl")])
	if seg != "" {
		return seg
	}
	return tid
}

// laterSegment reports whether the file at a holds a later segment of its thread than the file at b.
func laterSegment(a, b string) bool {
	sa, sb := segmentRank(a), segmentRank(b)
	return sa > sb
}

func segmentRank(path string) string {
	name := strings.TrimSuffix(filepath.Base(path), CompressedSuffix)
	const prefixLen = len("rollout-2006-01-02T15-04-05-")
	if len(name) <= prefixLen+len(".jsonl") {
		return ""
	}
	_, seg := splitFileID(name[prefixLen : len(name)-len(".jsonl")])
	return seg // UUIDv7: later segments sort later; the first file ("") before all
}

// newestSegment returns the thread's newest segment file if one exists beside (or after) path's.
func newestSegment(home, threadID, path string) string {
	best := path
	for _, pat := range []string{
		filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+threadID+"_*.jsonl"),
		filepath.Join(home, "archived_sessions", "rollout-*-"+threadID+"_*.jsonl"),
	} {
		m, _ := filepath.Glob(pat)
		for _, p := range m {
			if laterSegment(p, best) {
				best = p
			}
		}
	}
	return best
}

// findSegment finds the rollout file a history_base names by id: the thread's first file, else the segment
// file of that id (created at the time its UUIDv7 carries).
func findSegment(home, id string) (string, error) {
	if !validThreadID(id) {
		return "", fmt.Errorf("rollout: invalid thread id %q", id)
	}
	if p := findFirstFile(home, id); p != "" {
		return p, nil
	}
	if u, err := uuid.Parse(id); err == nil && u.Version() == 7 {
		sec, nsec := u.Time().UnixTime()
		created := time.Unix(sec, nsec).Local()
		for _, day := range []time.Time{created, created.AddDate(0, 0, -1), created.AddDate(0, 0, 1)} {
			dir := filepath.Join(home, "sessions", day.Format("2006"), day.Format("01"), day.Format("02"))
			if m, _ := filepath.Glob(filepath.Join(dir, "rollout-*_"+id+".jsonl")); len(m) > 0 {
				return m[0], nil
			}
		}
	}
	for _, pat := range []string{
		filepath.Join(home, "sessions", "*", "*", "*", "rollout-*_"+id+".jsonl"),
		filepath.Join(home, "archived_sessions", "rollout-*_"+id+".jsonl"),
	} {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			return m[0], nil
		}
	}
	return "", fmt.Errorf("%w: %s", ErrNotFound, id)
}

// CreateSegment starts a thread's next rollout file (see the package comment on segments): meta (whose
// HistoryBase references the kept part of the current file) is written to a temporary file first, synced,
// then renamed into place, so a crash leaves either no new file or a whole one. The recorder continues the
// ordinals after HistoryBase.EndOrdinalExclusive.
func CreateSegment(codexHome string, meta SessionMeta, now time.Time) (*Recorder, error) {
	if meta.ID == "" || meta.HistoryBase == nil {
		return nil, fmt.Errorf("rollout: segment needs an id and a history base")
	}
	meta.Timestamp = FormatTimestamp(now)
	if meta.SessionID == "" {
		meta.SessionID = meta.ID
	}
	seg := uuid.Must(uuid.NewV7()).String()
	local := now.Local()
	dir := filepath.Join(codexHome, "sessions", local.Format("2006"), local.Format("01"), local.Format("02"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("rollout: create sessions dir: %w", err)
	}
	final := filepath.Join(dir, RolloutFileName(meta.ID+"_"+seg, now))
	tmp := filepath.Join(dir, "."+filepath.Base(final)+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("rollout: create %s: %w", tmp, err)
	}
	r := &Recorder{f: f, path: tmp, now: time.Now, next: meta.HistoryBase.EndOrdinalExclusive}
	fail := func(err error) (*Recorder, error) {
		_ = f.Close()
		_ = os.Remove(tmp)
		return nil, err
	}
	if err := r.writeAt(TypeSessionMeta, meta, now); err != nil {
		return fail(err)
	}
	if err := r.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("rollout: sync %s: %w", tmp, err))
	}
	if err := os.Rename(tmp, final); err != nil {
		return fail(fmt.Errorf("rollout: rename %s: %w", tmp, err))
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	r.path = final
	return r, nil
}

// ReadSessionMeta returns the session_meta of the rollout file at path (its first record).
func ReadSessionMeta(path string) (SessionMeta, error) {
	m, err := readMeta(path, -1, 16, nil) // depth 16: the parents are not read
	if err != nil {
		return SessionMeta{}, err
	}
	return m.Session, nil
}

// RevertBase computes the history_base of a reverted thread's next file: the kept part of the file in
// the thread's chain (path, then the files its history_base references) holding turn beforeTurnID's start.
func RevertBase(home, path, beforeTurnID string) (HistoryBase, error) {
	p := path
	for depth := 0; depth < 16; depth++ {
		hb, err := ForkBase(p, SegmentID(p), beforeTurnID)
		if err == nil {
			return hb, nil
		}
		m, merr := ReadSessionMeta(p)
		if merr != nil || m.HistoryBase == nil || m.HistoryBase.ThreadID == "" {
			return HistoryBase{}, err
		}
		if p, merr = findSegment(home, m.HistoryBase.ThreadID); merr != nil {
			return HistoryBase{}, merr
		}
	}
	return HistoryBase{}, fmt.Errorf("rollout: revert: history chain too deep")
}

// olderSegments returns a reverted thread's files other than its current one at path (none when path is
// the thread's first file: the thread was never reverted).
func olderSegments(home, threadID, path string) []string {
	if segmentRank(path) == "" {
		return nil
	}
	var out []string
	for _, dir := range []string{filepath.Join(home, "sessions", "*", "*", "*"), filepath.Join(home, "archived_sessions")} {
		for _, pat := range []string{"rollout-*-" + threadID + ".jsonl", "rollout-*-" + threadID + ".jsonl" + CompressedSuffix, "rollout-*-" + threadID + "_*.jsonl"} {
			m, _ := filepath.Glob(filepath.Join(dir, pat))
			for _, p := range m {
				if p != path {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// moveOlderSegments moves a reverted thread's older files along with its current one: into
// archived_sessions, or back to sessions/YYYY/MM/DD (the date in each name), so that none of them is listed
// in place of the thread. Failures are logged: the current file decides the thread's state.
func moveOlderSegments(home, threadID, current string, archive bool) {
	for _, p := range olderSegments(home, threadID, current) {
		inArchive := filepath.Base(filepath.Dir(p)) == "archived_sessions"
		if inArchive == archive {
			continue
		}
		base := filepath.Base(p)
		dir := filepath.Join(home, "archived_sessions")
		if !archive {
			t, err := time.Parse("2006-01-02", strings.TrimPrefix(base, "rollout-")[:min(10, len(base)-len("rollout-"))])
			if err != nil {
				continue
			}
			dir = filepath.Join(home, "sessions", t.Format("2006"), t.Format("01"), t.Format("02"))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			slog.Warn("rollout: moving an older segment failed", "path", p, "err", err)
			continue
		}
		if err := os.Rename(p, filepath.Join(dir, base)); err != nil {
			slog.Warn("rollout: moving an older segment failed", "path", p, "err", err)
		}
	}
}

// FindSegment returns the rollout file a history_base names by id (see findSegment).
func FindSegment(home, id string) (string, error) { return findSegment(home, id) }
