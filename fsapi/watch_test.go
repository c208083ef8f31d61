package fsapi

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeTimers captures scheduled reports so the test decides when the debounce window ends.
type fakeTimers struct {
	mu  sync.Mutex
	fns []func()
}

func (f *fakeTimers) after(_ time.Duration, fn func()) func() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fns = append(f.fns, fn)
	return func() bool { return true }
}

func (f *fakeTimers) fire() int {
	f.mu.Lock()
	fns := f.fns
	f.fns = nil
	f.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
	return len(fns)
}

func pending(ws *Watches, id string) []string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.byID[id]; w != nil {
		return append([]string(nil), w.pending...)
	}
	return nil
}

func TestWatchDebouncesChangesIntoOneReport(t *testing.T) {
	dir := t.TempDir()
	ft := &fakeTimers{}
	ws := NewWatches(nil)
	ws.timer = ft.after
	defer ws.Close()
	reports := make(chan []string, 16)
	require.NoError(t, ws.Add("w", dir, func(p []string) { reports <- p }))
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	require.NoError(t, os.WriteFile(a, []byte("1"), 0o644))
	require.NoError(t, os.WriteFile(b, []byte("2"), 0o644))
	require.NoError(t, os.WriteFile(a, []byte("3"), 0o644))
	require.Eventually(t, func() bool { return len(pending(ws, "w")) == 2 }, time.Minute, time.Millisecond)
	require.Empty(t, reports, "nothing is reported before the window ends")
	require.Equal(t, 1, ft.fire(), "one window for the whole burst, each path once")
	require.Equal(t, []string{a, b}, <-reports)

	// a change below a subdirectory is not a change of the watched directory's entries
	sub, c := filepath.Join(dir, "sub"), filepath.Join(dir, "c")
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "deep"), nil, 0o644))
	require.NoError(t, os.WriteFile(c, nil, 0o644))
	seen := map[string]bool{}
	require.Eventually(t, func() bool {
		ft.fire()
		for {
			select {
			case ps := <-reports:
				for _, p := range ps {
					seen[p] = true
				}
				continue
			default:
			}
			break
		}
		return seen[sub] && seen[c]
	}, time.Minute, time.Millisecond)
	require.False(t, seen[filepath.Join(sub, "deep")])
}

func TestWatchFileAndMissingPath(t *testing.T) {
	dir := t.TempDir()
	ft := &fakeTimers{}
	ws := NewWatches(nil)
	ws.timer = ft.after
	defer ws.Close()
	reports := make(chan []string, 4)
	file := filepath.Join(dir, "later.txt")
	require.NoError(t, ws.Add("f", file, func(p []string) { reports <- p })) // not there yet: fine
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other"), nil, 0o644))
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	require.Eventually(t, func() bool { return len(pending(ws, "f")) == 1 }, time.Minute, time.Millisecond)
	ft.fire()
	require.Equal(t, []string{file}, <-reports, "only the watched path is reported")
}

func TestWatchIDsAndRelease(t *testing.T) {
	dir := t.TempDir()
	ft := &fakeTimers{}
	ws := NewWatches(nil)
	ws.timer = ft.after
	reports := make(chan []string, 4)
	require.NoError(t, ws.Add("w", dir, func(p []string) { reports <- p }))
	var re *RequestError
	require.ErrorAs(t, ws.Add("w", dir, func([]string) {}), &re)
	require.Equal(t, "watchId already exists: w", re.Message)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x"), nil, 0o644))
	require.Eventually(t, func() bool { return len(pending(ws, "w")) == 1 }, time.Minute, time.Millisecond)
	ws.Remove("w")
	ws.Remove("w") // unknown ids are fine
	ft.fire()
	require.Empty(t, reports, "an unwatched id reports nothing")
	require.Equal(t, 0, ws.Len())
	require.NoError(t, ws.Add("w", dir, func([]string) {}), "the id is free again")
	ws.Close()
	require.Equal(t, 0, ws.Len())
	require.Empty(t, ws.dirRefs, "inotify watches are released")
}
