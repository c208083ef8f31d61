package thread

import (
	"context"
	"sync"
	"time"

	"appserver/stopwatch"
)

// Bounds of one propagation to the listener, and of the paused:false sent when a paused thread closes.
const (
	pauseTellTimeout     = 10 * time.Second
	pauseFarewellTimeout = 2 * time.Second
)

// pauseKey stores a thread's pause sources (see HoldPause) among its attached state.
type pauseKey struct{}

// pauseSources combines the out-of-band elicitation counter with the holds of pending elicitations:
// the thread's stopwatch controller is paused while the counter is above zero or any hold is active.
// Approval waits follow the counter alone (their own pending request is what holds the thread).
//
// Every change of the combined state is also told to the thread's pause listener (MCP servers) from a
// background goroutine, one call at a time and in order, coalescing states superseded meanwhile; the
// local pause never waits for it.
type pauseSources struct {
	mu        sync.Mutex
	oob       bool
	holds     int
	approvals *stopwatch.Controller

	closing bool          // the thread is closing: the last propagation is bounded by pauseFarewellTimeout
	want    bool          // the combined state the listener should know
	told    bool          // the last state handed to the listener
	syncing chan struct{} // non-nil while the propagating goroutine runs; closed when it ends
	// abandon cancels the propagation under way (close does not wait a full pauseTellTimeout for it).
	abandon context.CancelFunc
}

func (t *Thread) pauseSources() *pauseSources {
	return t.AttachOnce(pauseKey{}, func() any { return &pauseSources{approvals: stopwatch.NewController()} }).(*pauseSources)
}

// applyLocked sets the controllers from the sources and schedules the listener. Callers hold ps.mu.
func (t *Thread) applyLocked(ps *pauseSources) {
	paused := ps.oob || ps.holds > 0
	t.controller.SetPaused(paused)
	ps.approvals.SetPaused(ps.oob)
	ps.want = paused
	t.propagateLocked(ps)
}

// propagateLocked starts the propagating goroutine unless it runs or the listener knows the state.
func (t *Thread) propagateLocked(ps *pauseSources) {
	if ps.syncing != nil || ps.want == ps.told || ps.closing && ps.want {
		return
	}
	done := make(chan struct{})
	ps.syncing = done
	go t.propagate(ps, done)
}

// propagate tells the listener each new state until it has the latest; failures are logged and the
// local state stands. It is owned by the thread: close waits for it.
func (t *Thread) propagate(ps *pauseSources, done chan struct{}) {
	defer close(done)
	for {
		ps.mu.Lock()
		if ps.want == ps.told || ps.closing && ps.want {
			ps.syncing = nil
			ps.mu.Unlock()
			return
		}
		paused := ps.want
		ps.told = paused
		bound := pauseTellTimeout
		if ps.closing {
			bound = pauseFarewellTimeout
		}
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		ps.abandon = cancel
		ps.mu.Unlock()
		if err := t.mgr.notifyPause(ctx, t, paused); err != nil {
			t.log.Warn("could not tell MCP servers the thread's pause state; the local state stands",
				"thread", t.ID, "paused", paused, "error", err)
		}
		cancel()
		ps.mu.Lock()
		ps.abandon = nil
		ps.mu.Unlock()
	}
}

// setOutOfBandPaused records the out-of-band counter's state (0 vs >0) and applies the combination.
func (t *Thread) setOutOfBandPaused(on bool) {
	ps := t.pauseSources()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.oob = on
	t.applyLocked(ps)
}

// Paused reports whether the thread's deadlines are frozen (counter above zero or an elicitation pending).
func (t *Thread) Paused() bool {
	ps := t.pauseSources()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.oob || ps.holds > 0
}

// HoldPause pauses the thread's stopwatch controller until the returned release is called (an
// elicitation is pending: the user's think time is charged to no deadline). Holds combine with each
// other and with the out-of-band counter; release is idempotent.
func (t *Thread) HoldPause() (release func()) {
	ps := t.pauseSources()
	ps.mu.Lock()
	ps.holds++
	t.applyLocked(ps)
	ps.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			ps.mu.Lock()
			defer ps.mu.Unlock()
			ps.holds--
			t.applyLocked(ps)
		})
	}
}

// ApprovalContext bounds ctx by d of time charged while the out-of-band counter is at zero: the wait
// for an answer to an approval or elicitation (approval_timeout_ms). d <= 0 means no bound.
func (t *Thread) ApprovalContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	sw, release := t.pauseSources().approvals.NewStopwatch(d, stopwatch.WithClock(t.mgr.deps.Clock))
	sctx, cancel := sw.Context(ctx)
	return sctx, func() {
		cancel()
		release()
	}
}

// settlePause runs when the thread closes: the listener is told paused:false if it was last told
// paused (MCP servers that outlive the thread must not stay frozen), after any propagation under way.
func (t *Thread) settlePause() {
	ps := t.pauseSources()
	ps.mu.Lock()
	ps.closing, ps.want = true, false
	if ps.abandon != nil && ps.told {
		ps.abandon() // a paused:true still under way is superseded by the paused:false that follows
	}
	t.propagateLocked(ps)
	done := ps.syncing
	ps.mu.Unlock()
	if done != nil {
		<-done
	}
}
