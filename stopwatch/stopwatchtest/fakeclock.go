// Package stopwatchtest provides a deterministic stopwatch.Clock for tests.
package stopwatchtest

import (
	"sync"
	"time"

	"appserver/stopwatch"
)

// FakeClock is a manual stopwatch.Clock: time moves only through Advance, which runs due AfterFunc
// callbacks synchronously, in due-time order (ties in scheduling order). It is safe for concurrent use.
type FakeClock struct {
	advanceMu sync.Mutex // serializes Advance so callbacks never run concurrently

	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers map[*fakeTimer]struct{}
}

type fakeTimer struct {
	c    *FakeClock
	when time.Time
	seq  uint64
	f    func()
}

var _ stopwatch.Clock = (*FakeClock)(nil)

// NewFakeClock returns a fake clock reading start.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, timers: make(map[*fakeTimer]struct{})}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for Now()+d. It never calls f itself, even for d <= 0: the next Advance
// (Advance(0) included) does, so callers may schedule while holding their own locks.
func (c *FakeClock) AfterFunc(d time.Duration, f func()) stopwatch.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{c: c, when: c.now.Add(d), seq: c.seq, f: f}
	c.timers[t] = struct{}{}
	return t
}

// Stop cancels the call and reports whether it was still pending.
func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, pending := t.c.timers[t]
	delete(t.c.timers, t)
	return pending
}

// Advance moves the clock forward by d, running every callback that falls due on the way with Now()
// set to its due time, including callbacks scheduled by those callbacks. A negative d panics.
func (c *FakeClock) Advance(d time.Duration) {
	if d < 0 {
		panic("stopwatchtest: Advance with a negative duration")
	}
	c.advanceMu.Lock()
	defer c.advanceMu.Unlock()
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		next := c.nextDueLocked(target)
		if next == nil {
			c.now = target
			c.mu.Unlock()
			return
		}
		delete(c.timers, next)
		if next.when.After(c.now) {
			c.now = next.when
		}
		c.mu.Unlock()
		next.f()
	}
}

// nextDueLocked returns the earliest pending timer due at or before target, or nil.
func (c *FakeClock) nextDueLocked(target time.Time) *fakeTimer {
	var best *fakeTimer
	for t := range c.timers {
		if t.when.After(target) {
			continue
		}
		if best == nil || t.when.Before(best.when) || (t.when.Equal(best.when) && t.seq < best.seq) {
			best = t
		}
	}
	return best
}

// Pending returns the number of scheduled callbacks that have neither run nor been stopped.
func (c *FakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
