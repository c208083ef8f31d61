// Package stopwatch provides pausable time budgets so that time a human spends deciding is never charged
// to a command.
//
// A Stopwatch is a budget that elapses only while it is not paused; pauses are counted, so overlapping
// pauses resume it only when the last one ends. A Controller holds the stopwatches of one thread and
// pauses or resumes all of them at once (the thread's out-of-band elicitation counter going 0→1 / 1→0).
//
// A stopwatch owns no goroutine: a single clock timer is armed only while it runs, re-armed with the
// remaining budget on resume, and stopped on pause, Stop and expiry.
package stopwatch

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"
)

// ErrExpired is the cause of a Stopwatch context cancelled because the budget was used up.
var ErrExpired = errors.New("stopwatch: budget expired")

// errNilFunc is returned by PauseFor when it is given no function to run.
var errNilFunc = errors.New("stopwatch: PauseFor called with a nil func")

// unlimited is what Remaining reports for a stopwatch without a limit.
const unlimited = time.Duration(math.MaxInt64)

// Stopwatch is a time budget that elapses only while not paused. It is safe for concurrent use.
//
// Rules: the budget is used up when running time reaches the limit (elapsed >= limit). Expiry happens at
// most once and is final: pausing or resuming an expired stopwatch only updates the pause count. A pause
// that lands when the budget is already used up, even if the timer has not fired yet, first expires the
// stopwatch and then counts the pause. After expiry or Stop the elapsed time is frozen.
type Stopwatch struct {
	clock Clock
	limit time.Duration // 0 = no limit

	mu           sync.Mutex
	elapsed      time.Duration // running time folded in so far
	runningSince time.Time     // start of the current running span; valid only when running()
	pauses       int
	expired      bool
	stopped      bool
	timer        Timer
	timerGen     uint64 // bumped on every arm/disarm so a stale callback can tell it is stale
	done         chan struct{}
	changed      chan struct{}
	cancels      map[uint64]context.CancelCauseFunc
	nextCancel   uint64
}

// New returns a running stopwatch with the given budget; limit <= 0 means no limit (it never expires).
func New(limit time.Duration, opts ...Option) *Stopwatch {
	return newStopwatch(limit, false, opts)
}

func newStopwatch(limit time.Duration, paused bool, opts []Option) *Stopwatch {
	o := buildOptions(opts)
	if limit < 0 {
		limit = 0
	}
	s := &Stopwatch{
		clock:   o.clock,
		limit:   limit,
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		cancels: make(map[uint64]context.CancelCauseFunc),
	}
	if paused {
		s.pauses = 1
		return s
	}
	s.runningSince = s.clock.Now()
	// The timer's callback takes the lock; holding it here gives the race detector (and readers of the
	// memory model) the happens-before edge between this write of s.timer and the callback's.
	s.mu.Lock()
	s.armLocked()
	s.mu.Unlock()
	return s
}

// running reports whether time is currently being charged. Callers hold s.mu.
func (s *Stopwatch) running() bool { return s.pauses == 0 && !s.expired && !s.stopped }

// elapsedLocked returns the running time as of now. Callers hold s.mu.
func (s *Stopwatch) elapsedLocked(now time.Time) time.Duration {
	if !s.running() {
		return s.elapsed
	}
	span := now.Sub(s.runningSince)
	if span < 0 {
		span = 0
	}
	return s.elapsed + span
}

// armLocked starts the expiry timer for the remaining budget. Callers hold s.mu; s is running and not
// yet used up.
func (s *Stopwatch) armLocked() {
	if s.limit == 0 {
		return
	}
	s.disarmLocked()
	remaining := s.limit - s.elapsedLocked(s.clock.Now())
	gen := s.timerGen
	s.timer = s.clock.AfterFunc(remaining, func() { s.fire(gen) })
}

// disarmLocked stops the expiry timer, if any, and invalidates a callback already on its way.
func (s *Stopwatch) disarmLocked() {
	s.timerGen++
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// fire is the timer callback of generation gen.
func (s *Stopwatch) fire(gen uint64) {
	s.mu.Lock()
	if gen != s.timerGen || !s.running() {
		s.mu.Unlock()
		return
	}
	s.timer = nil
	if s.elapsedLocked(s.clock.Now()) < s.limit {
		s.armLocked() // the clock fired early; wait for the rest
		s.mu.Unlock()
		return
	}
	cancels := s.expireLocked(s.clock.Now())
	s.mu.Unlock()
	runCancels(cancels)
}

// checkLocked expires s if its budget is used up as of now, even before the timer fires, so that every
// observation agrees with Done. Callers hold s.mu and run the returned cancels after unlocking.
func (s *Stopwatch) checkLocked(now time.Time) []context.CancelCauseFunc {
	if !s.running() || s.limit == 0 || s.elapsedLocked(now) < s.limit {
		return nil
	}
	return s.expireLocked(now)
}

// expireLocked marks s expired exactly once and returns the context cancels to run outside the lock.
func (s *Stopwatch) expireLocked(now time.Time) []context.CancelCauseFunc {
	s.elapsed = s.elapsedLocked(now)
	s.expired = true
	s.disarmLocked()
	close(s.done)
	s.notifyLocked()
	cancels := make([]context.CancelCauseFunc, 0, len(s.cancels))
	for id, c := range s.cancels {
		cancels = append(cancels, c)
		delete(s.cancels, id)
	}
	return cancels
}

func runCancels(cancels []context.CancelCauseFunc) {
	for _, c := range cancels {
		c(ErrExpired)
	}
}

// notifyLocked wakes everyone waiting on Changed.
func (s *Stopwatch) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Pause adds one pause; the first one (0→1) freezes the elapsed time.
func (s *Stopwatch) Pause() {
	s.mu.Lock()
	now := s.clock.Now()
	cancels := s.checkLocked(now)
	s.pauses++
	if s.pauses == 1 {
		if !s.expired && !s.stopped {
			s.elapsed += max(now.Sub(s.runningSince), 0)
			s.disarmLocked()
		}
		s.notifyLocked()
	}
	s.mu.Unlock()
	runCancels(cancels)
}

// Resume ends one pause; it is a no-op when there is none, and the last one (1→0) restarts the clock.
func (s *Stopwatch) Resume() {
	s.mu.Lock()
	if s.pauses == 0 {
		s.mu.Unlock()
		return
	}
	s.pauses--
	if s.pauses == 0 {
		if !s.expired && !s.stopped {
			s.runningSince = s.clock.Now()
			s.armLocked()
		}
		s.notifyLocked()
	}
	s.mu.Unlock()
}

// Paused reports whether at least one pause is active.
func (s *Stopwatch) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pauses > 0
}

// Elapsed returns the running time charged so far, excluding paused spans.
func (s *Stopwatch) Elapsed() time.Duration {
	s.mu.Lock()
	now := s.clock.Now()
	cancels := s.checkLocked(now)
	e := s.elapsedLocked(now)
	s.mu.Unlock()
	runCancels(cancels)
	return e
}

// Remaining returns the budget left: zero once expired, and math.MaxInt64 nanoseconds without a limit.
func (s *Stopwatch) Remaining() time.Duration {
	s.mu.Lock()
	now := s.clock.Now()
	cancels := s.checkLocked(now)
	var r time.Duration
	switch {
	case s.limit == 0:
		r = unlimited
	case s.expired:
		r = 0
	default:
		r = max(s.limit-s.elapsedLocked(now), 0)
	}
	s.mu.Unlock()
	runCancels(cancels)
	return r
}

// Limit returns the budget; zero means no limit.
func (s *Stopwatch) Limit() time.Duration { return s.limit }

// Done returns a channel closed when the budget is used up; it never closes after Stop or without a limit.
func (s *Stopwatch) Done() <-chan struct{} { return s.done }

// Expired reports whether the budget has been used up.
func (s *Stopwatch) Expired() bool {
	s.mu.Lock()
	cancels := s.checkLocked(s.clock.Now())
	e := s.expired
	s.mu.Unlock()
	runCancels(cancels)
	return e
}

// Context returns a child of parent that is cancelled with cause ErrExpired (see context.Cause) when the
// budget is used up, or when parent ends or the returned CancelFunc is called.
func (s *Stopwatch) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	s.mu.Lock()
	cancels := s.checkLocked(s.clock.Now())
	if s.expired {
		s.mu.Unlock()
		runCancels(cancels)
		cancel(ErrExpired)
		return ctx, func() { cancel(nil) }
	}
	if s.stopped || s.limit == 0 {
		s.mu.Unlock()
		return ctx, func() { cancel(nil) }
	}
	id := s.nextCancel
	s.nextCancel++
	s.cancels[id] = cancel
	s.mu.Unlock()
	// Forget the registration once ctx ends for any reason; context.AfterFunc owns no idle goroutine.
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		delete(s.cancels, id)
		s.mu.Unlock()
	})
	return ctx, func() { cancel(nil) }
}

// PauseFor pauses s while f runs with ctx and resumes it afterwards, even if f panics; it returns f's error.
func (s *Stopwatch) PauseFor(ctx context.Context, f func(context.Context) error) error {
	if f == nil {
		return errNilFunc
	}
	s.Pause()
	defer s.Resume()
	return f(ctx)
}

// Changed returns a channel that is closed at the next pause-state change (0→1 or 1→0 pauses), expiry
// or Stop; call it again after each wake-up to get the next one.
func (s *Stopwatch) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Stop releases the timer and freezes the elapsed time; Done never closes afterwards (unless the budget was
// already used up, which expires it first). Pending Contexts are no longer cancelled by expiry. Idempotent.
func (s *Stopwatch) Stop() {
	s.mu.Lock()
	cancels := s.checkLocked(s.clock.Now()) // a budget already used up counts as expired, not stopped
	if s.stopped || s.expired {
		s.stopped = true
		s.mu.Unlock()
		runCancels(cancels)
		return
	}
	s.elapsed = s.elapsedLocked(s.clock.Now())
	s.stopped = true
	s.disarmLocked()
	s.notifyLocked()
	clear(s.cancels)
	s.mu.Unlock()
}
