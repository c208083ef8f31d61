// Package idlefree hands the memory the heap no longer uses back to the system once the server has been
// quiet for a while, instead of keeping a busy spell's freed pages until the runtime's next collection
// (every two minutes when nothing allocates).
package idlefree

import (
	"runtime/debug"
	"sync"
	"time"
)

// Delay is how long after the last turn's end the server releases memory: past a burst of turns, before
// a person's next message.
const Delay = 2 * time.Second

// timer is the part of *time.Timer a Releaser uses (a fake in tests).
type timer interface {
	Reset(time.Duration) bool
	Stop() bool
}

// Releaser runs its release once, a delay after the last Touch: touches closer together than the delay
// only postpone it.
type Releaser struct {
	delay   time.Duration
	release func()
	after   func(time.Duration, func()) timer

	mu     sync.Mutex
	t      timer
	closed bool
}

// New returns a Releaser that calls debug.FreeOSMemory (a collection, then the free pages back to the
// system) Delay after the last Touch.
func New() *Releaser {
	return newReleaser(Delay, debug.FreeOSMemory, func(d time.Duration, f func()) timer { return time.AfterFunc(d, f) })
}

func newReleaser(delay time.Duration, release func(), after func(time.Duration, func()) timer) *Releaser {
	return &Releaser{delay: delay, release: release, after: after}
}

// Touch records activity: the release runs a delay from now unless another Touch comes first.
func (r *Releaser) Touch() {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
	case r.t == nil:
		r.t = r.after(r.delay, r.fire)
	default:
		r.t.Reset(r.delay)
	}
}

func (r *Releaser) fire() {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if !closed {
		r.release()
	}
}

// Close cancels a pending release; later touches do nothing.
func (r *Releaser) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.t != nil {
		r.t.Stop()
	}
}
