package codemode

import (
	"errors"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Scripts share the server's Go heap, so a runaway script (`while (true) a.push(…)`) would take every
// thread down with it. The reference runs its scripts in a separate V8 host process, whose crash costs
// only the scripts; here a watcher caps the heap the scripts add: while any cell runs JavaScript it
// samples the Go runtime's heap figures (no stop-the-world) and, past the cap, stops the cells that ran
// JavaScript since its previous look, the thread then answering as the reference does after its host
// died. Builtins that allocate in one step without returning to the interpreter are checked up front
// (guards.go).

// Heap figures the watcher reads: the live heap marked by the last GC (updated once a cycle) and the
// heap's objects now (live and not yet swept garbage).
const (
	metricLive    = "/gc/heap/live:bytes"
	metricObjects = "/memory/classes/heap/objects:bytes"
	metricCycles  = "/gc/cycles/total:gc-cycles"
)

// errMemory is thrown by a guarded builtin refused by the cap (the cell is stopped anyway).
var errMemory = errors.New("script memory limit exceeded")

// memPoll is how often the watcher samples while a cell runs JavaScript (a few µs a sample).
const memPoll = 10 * time.Millisecond

// objectsFactor: the objects figure (garbage included) past base + objectsFactor × cap makes the watcher
// collect to know the live heap (mostly garbage, or a heap whose GC does not run: GOGC=off).
const objectsFactor = 4

// memWatch is the process's one watcher. The goroutine it starts lives while some cell runs JavaScript.
type memWatch struct {
	// override replaces the cap when not 0 (tests set a small one).
	override atomic.Uint64
	mu       sync.Mutex
	alive    int                // cells whose loop has not ended
	base     uint64             // the live heap when the first of the alive cells started
	busy     map[*cell]int      // cells running JavaScript now (nesting count)
	dirty    map[*cell]struct{} // cells that ran JavaScript since the last look
	polling  bool
	cycles   uint64 // GC cycles at the last look
}

var watcher = &memWatch{busy: map[*cell]int{}, dirty: map[*cell]struct{}{}}

func (w *memWatch) sample() (live, objects, cycles uint64) {
	s := []metrics.Sample{{Name: metricLive}, {Name: metricObjects}, {Name: metricCycles}}
	metrics.Read(s)
	get := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return get(0), get(1), get(2)
}

// started registers a new cell; the first of a batch fixes the baseline.
func (w *memWatch) started() {
	live, _, _ := w.sample()
	w.mu.Lock()
	if w.alive == 0 {
		w.base = live
	}
	w.alive++
	w.mu.Unlock()
}

// ended unregisters a cell whose loop returned.
func (w *memWatch) ended(c *cell) {
	w.mu.Lock()
	w.alive--
	delete(w.busy, c)
	delete(w.dirty, c)
	w.mu.Unlock()
}

// enter marks c as running JavaScript until the returned func is called.
func (w *memWatch) enter(c *cell) func() {
	w.mu.Lock()
	w.busy[c]++
	w.dirty[c] = struct{}{}
	start := !w.polling
	w.polling = true
	w.mu.Unlock()
	if start {
		go w.poll()
	}
	return func() {
		w.mu.Lock()
		if w.busy[c]--; w.busy[c] <= 0 {
			delete(w.busy, c)
		}
		w.mu.Unlock()
	}
}

// poll samples until no cell runs JavaScript.
func (w *memWatch) poll() {
	t := time.NewTicker(memPoll)
	defer t.Stop()
	for range t.C {
		if !w.check() {
			return
		}
	}
}

// check looks once: past the cap it stops the suspects. It reports whether polling goes on.
func (w *memWatch) check() bool {
	live, objects, cycles := w.sample()
	limit := w.limit()
	w.mu.Lock()
	over := w.judge(live, cycles, limit)
	collect := !over && objects > w.base+objectsFactor*limit
	w.mu.Unlock()
	if collect {
		// Mostly garbage, or a heap whose GC does not run: collect to know.
		runtime.GC()
		live, _, cycles = w.sample()
	}
	w.mu.Lock()
	if collect {
		over = w.judge(live, cycles, limit)
	}
	var suspects []*cell
	if over {
		for c := range w.dirty {
			suspects = append(suspects, c)
		}
	}
	for c := range w.dirty {
		if w.busy[c] == 0 {
			delete(w.dirty, c)
		}
	}
	more := len(w.busy) > 0
	if !more {
		w.polling = false
	}
	w.mu.Unlock()
	for _, c := range suspects {
		c.outOfMemory()
	}
	return more
}

// judge reports whether the live heap is past the cap (w.mu held): only a GC cycle since the last look
// updates the figure, and it only lowers the baseline, which a script's freed memory leaves high until
// the first GC after it.
func (w *memWatch) judge(live, cycles, limit uint64) bool {
	fresh := cycles != w.cycles
	w.cycles = cycles
	if fresh && live < w.base {
		w.base = live
	}
	return fresh && live > w.base+limit
}

// admit is the up-front check of a builtin about to allocate about n bytes at once: more than the cap
// stops the cell as a runaway (false), as V8 would die on it.
func (w *memWatch) admit(c *cell, n float64) bool {
	if n <= float64(w.limit()) {
		return true
	}
	c.outOfMemory()
	return false
}

// limit is the cap in bytes.
func (w *memWatch) limit() uint64 {
	if n := w.override.Load(); n != 0 {
		return n
	}
	return defaultCap()
}

// defaultCap is a quarter of the memory the process may use (the machine's, or its cgroup's if lower),
// at most 1 GiB: the reference's V8 heap died near 2 GiB, and the Go heap may reach twice the cap before
// a GC marks it.
var defaultCap = sync.OnceValue(func() uint64 {
	const most = 1 << 30
	if total := systemMemory(); total > 0 && total/4 < most {
		return total / 4
	}
	return most
})
