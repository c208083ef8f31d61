package thread

import "sync"

// pauseKey stores a thread's pause sources (see HoldPause) among its attached state.
type pauseKey struct{}

// pauseSources combines the out-of-band elicitation counter with the holds of pending elicitations:
// the thread's stopwatch controller is paused while the counter is above zero or any hold is active.
type pauseSources struct {
	mu    sync.Mutex
	oob   bool
	holds int
}

func (t *Thread) pauseSources() *pauseSources {
	return t.AttachOnce(pauseKey{}, func() any { return &pauseSources{} }).(*pauseSources)
}

// setOutOfBandPaused records the out-of-band counter's state (0 vs >0) and applies the combination.
func (t *Thread) setOutOfBandPaused(on bool) {
	ps := t.pauseSources()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.oob = on
	t.controller.SetPaused(ps.oob || ps.holds > 0)
}

// HoldPause pauses the thread's stopwatch controller until the returned release is called (an
// elicitation is pending: the user's think time is charged to no deadline). Holds combine with each
// other and with the out-of-band counter; release is idempotent.
func (t *Thread) HoldPause() (release func()) {
	ps := t.pauseSources()
	ps.mu.Lock()
	ps.holds++
	t.controller.SetPaused(true)
	ps.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			ps.mu.Lock()
			defer ps.mu.Unlock()
			ps.holds--
			t.controller.SetPaused(ps.oob || ps.holds > 0)
		})
	}
}
