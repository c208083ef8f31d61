package stopwatch

import (
	"sync"
	"time"
)

// Controller holds the stopwatches of one thread and pauses or resumes all of them at once. It is safe
// for concurrent use; its pause flag and registry change under one mutex, so a stopwatch registered
// concurrently with SetPaused is either paused by it or starts paused, never neither.
type Controller struct {
	mu     sync.Mutex
	paused bool
	nextID uint64
	regs   map[uint64]*registration
}

// registration is one Register call; held records whether the controller holds a pause on sw.
type registration struct {
	sw   *Stopwatch
	held bool
}

// NewController returns an unpaused controller with no stopwatches.
func NewController() *Controller {
	return &Controller{regs: make(map[uint64]*registration)}
}

// SetPaused pauses (true) or resumes (false) every registered stopwatch once and reports whether the
// flag changed; repeating the current state is a no-op.
func (c *Controller) SetPaused(paused bool) (changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused == paused {
		return false
	}
	c.paused = paused
	for _, r := range c.regs {
		switch {
		case paused && !r.held:
			r.sw.Pause()
			r.held = true
		case !paused && r.held:
			r.sw.Resume()
			r.held = false
		}
	}
	return true
}

// Paused reports whether the controller is paused.
func (c *Controller) Paused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// Register adds s, pausing it at once if the controller is paused. The returned unregister removes it
// and releases the controller's pause on it; it is idempotent. A nil s registers nothing.
func (c *Controller) Register(s *Stopwatch) (unregister func()) {
	if s == nil {
		return func() {}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &registration{sw: s}
	if c.paused {
		s.Pause()
		r.held = true
	}
	return c.addLocked(r)
}

// addLocked stores r and returns its unregister func. Callers hold c.mu.
func (c *Controller) addLocked(r *registration) func() {
	id := c.nextID
	c.nextID++
	c.regs[id] = r
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.regs[id]; !ok {
			return
		}
		delete(c.regs, id)
		if r.held {
			r.held = false
			r.sw.Resume()
		}
	}
}

// NewStopwatch returns a registered stopwatch, already paused (charging no time at all) if the controller
// is paused. release unregisters and stops it; it is idempotent.
func (c *Controller) NewStopwatch(limit time.Duration, opts ...Option) (s *Stopwatch, release func()) {
	c.mu.Lock()
	s = newStopwatch(limit, c.paused, opts)
	unregister := c.addLocked(&registration{sw: s, held: c.paused})
	c.mu.Unlock()
	return s, func() {
		s.Stop() // first, so the unregister's resume cannot arm a timer
		unregister()
	}
}

// Len returns the number of registered stopwatches.
func (c *Controller) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.regs)
}
