package shellsnapshot

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Retention is how long a snapshot outlives its thread's last rollout write before Sweep deletes it.
const Retention = 3 * 24 * time.Hour

var (
	sweptMu sync.Mutex
	swept   = map[string]bool{} // the CODEX_HOMEs swept by this process
)

// sweepOnce runs Sweep for codexHome the first time this process captures a snapshot there.
func sweepOnce(codexHome, keep string, log *slog.Logger) {
	home := filepath.Clean(codexHome)
	sweptMu.Lock()
	done := swept[home]
	swept[home] = true
	sweptMu.Unlock()
	if !done {
		Sweep(codexHome, keep, time.Now(), log)
	}
}

// Sweep deletes the snapshots left behind by earlier servers (a crash skips Close): those whose thread's
// rollout (or, for a thread without one, the snapshot itself) was last written more than Retention before
// now. The snapshot of
// thread keep is never touched.
func Sweep(codexHome, keep string, now time.Time, log *slog.Logger) {
	dir := filepath.Join(codexHome, Dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !os.IsNotExist(err) {
			log.Warn("failed to clean up shell snapshots", "error", err)
		}
		return
	}
	for _, e := range entries {
		id, _, ok := strings.Cut(e.Name(), ".")
		if !ok || id == keep || e.IsDir() {
			continue
		}
		mt, found := rolloutModTime(codexHome, id)
		if !found { // an ephemeral thread, maybe another server's: judged by the snapshot's own age
			if fi, err := e.Info(); err == nil {
				mt = fi.ModTime()
			}
		}
		if now.Sub(mt) < Retention {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
			log.Warn("failed to delete stale shell snapshot", "file", e.Name(), "error", err)
		}
	}
}

// rolloutModTime finds the rollout of thread id (live or archived) and returns its modification time.
func rolloutModTime(codexHome, id string) (time.Time, bool) {
	if strings.ContainsAny(id, `*?[\/`) {
		return time.Time{}, false
	}
	for _, pattern := range []string{
		filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl*"),
		filepath.Join(codexHome, "archived_sessions", "rollout-*-"+id+".jsonl*"),
	} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil {
				return fi.ModTime(), true
			}
		}
	}
	return time.Time{}, false
}
