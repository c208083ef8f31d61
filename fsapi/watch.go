package fsapi

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Debounce is how long a watch gathers changes before reporting them together.
const Debounce = 200 * time.Millisecond

// timerFunc schedules f after d and returns a stop function (replaceable in tests).
type timerFunc func(d time.Duration, f func()) (stop func() bool)

func realTimer(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Watches is one client's set of change watches over a single inotify instance. A watch on a directory
// reports changes to its direct entries, a watch on any other path (existing or not) changes to that
// path; each report lists the changed absolute paths gathered over Debounce.
type Watches struct {
	log   *slog.Logger
	timer timerFunc

	mu      sync.Mutex
	w       *fsnotify.Watcher
	byID    map[string]*watch
	dirRefs map[string]int // directories added to inotify, by number of watches using them
	closed  bool
	done    chan struct{}
}

type watch struct {
	id, path, dir string // dir: what inotify watches (path itself, or its parent)
	isDir         bool
	notify        func(paths []string)

	pending []string
	seen    map[string]bool
	stop    func() bool
}

// ErrWatchExists is returned by Add for an id already in use.
type ErrWatchExists struct{ ID string }

func (e *ErrWatchExists) Error() string { return "watchId already exists: " + e.ID }

// NewWatches makes an empty watch set; Close releases it.
func NewWatches(log *slog.Logger) *Watches {
	if log == nil {
		log = slog.Default()
	}
	return &Watches{log: log, timer: realTimer, byID: map[string]*watch{}, dirRefs: map[string]int{}}
}

// Add starts watching path under id; notify receives each debounced batch of changed paths.
func (ws *Watches) Add(id, path string, notify func(paths []string)) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if _, ok := ws.byID[id]; ok {
		return &RequestError{Message: (&ErrWatchExists{ID: id}).Error()}
	}
	if ws.w == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return err
		}
		ws.w, ws.done = w, make(chan struct{})
		go ws.loop(w, ws.done)
	}
	path = filepath.Clean(path)
	wt := &watch{id: id, path: path, notify: notify, seen: map[string]bool{}}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		wt.isDir, wt.dir = true, path
	} else {
		wt.dir = filepath.Dir(path)
	}
	if ws.dirRefs[wt.dir] == 0 {
		if err := ws.w.Add(wt.dir); err != nil {
			ws.log.Debug("fs/watch: path not watchable yet", "path", wt.dir, "error", err)
		}
	}
	ws.dirRefs[wt.dir]++
	ws.byID[id] = wt
	return nil
}

// Remove ends a watch; an unknown id is not an error.
func (ws *Watches) Remove(id string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	wt, ok := ws.byID[id]
	if !ok {
		return
	}
	ws.drop(wt)
}

func (ws *Watches) drop(wt *watch) {
	delete(ws.byID, wt.id)
	if wt.stop != nil {
		wt.stop()
	}
	wt.pending = nil
	if ws.dirRefs[wt.dir]--; ws.dirRefs[wt.dir] <= 0 {
		delete(ws.dirRefs, wt.dir)
		if ws.w != nil {
			_ = ws.w.Remove(wt.dir)
		}
	}
}

// Close ends every watch and the inotify instance.
func (ws *Watches) Close() {
	ws.mu.Lock()
	for _, wt := range ws.byID {
		ws.drop(wt)
	}
	w, done := ws.w, ws.done
	ws.w, ws.closed = nil, true
	ws.mu.Unlock()
	if w != nil {
		_ = w.Close()
		<-done
	}
}

// Len reports how many watches are active.
func (ws *Watches) Len() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.byID)
}

func (ws *Watches) loop(w *fsnotify.Watcher, done chan struct{}) {
	defer close(done)
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			ws.changed(filepath.Clean(ev.Name))
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			ws.log.Debug("fs/watch", "error", err)
		}
	}
}

// changed records a change of name for every watch it concerns.
func (ws *Watches) changed(name string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	dir := filepath.Dir(name)
	for _, wt := range ws.byID {
		hit := (wt.isDir && (dir == wt.path || name == wt.path)) || (!wt.isDir && name == wt.path)
		if hit {
			ws.queue(wt, name)
		}
	}
}

func (ws *Watches) queue(wt *watch, name string) {
	if !wt.seen[name] {
		wt.seen[name] = true
		wt.pending = append(wt.pending, name)
	}
	if wt.stop != nil {
		return // a report is already scheduled: this change joins it
	}
	wt.stop = ws.timer(Debounce, func() { ws.flush(wt) })
}

func (ws *Watches) flush(wt *watch) {
	ws.mu.Lock()
	if ws.byID[wt.id] != wt || len(wt.pending) == 0 {
		wt.stop = nil
		ws.mu.Unlock()
		return
	}
	paths := wt.pending
	wt.pending, wt.seen, wt.stop = nil, map[string]bool{}, nil
	ws.mu.Unlock()
	wt.notify(paths)
}
