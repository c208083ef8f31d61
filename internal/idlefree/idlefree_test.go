package idlefree

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeTimer records arming; the test fires it by hand.
type fakeTimer struct {
	mu      sync.Mutex
	f       func()
	armed   bool
	arms    int
	lastDur time.Duration
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.armed
	t.armed, t.lastDur = true, d
	t.arms++
	return was
}

func (t *fakeTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.armed
	t.armed = false
	return was
}

// fire runs the timer's function if it is armed, as the runtime would once the delay passed.
func (t *fakeTimer) fire() {
	t.mu.Lock()
	armed := t.armed
	t.armed = false
	t.mu.Unlock()
	if armed {
		t.f()
	}
}

func newFake() (*Releaser, *fakeTimer, *int) {
	ft := &fakeTimer{}
	n := new(int)
	r := newReleaser(time.Second, func() { *n++ }, func(d time.Duration, f func()) timer {
		ft.f = f
		ft.Reset(d)
		return ft
	})
	return r, ft, n
}

func TestReleaseOnceAfterTheLastTouch(t *testing.T) {
	r, ft, released := newFake()
	ft.fire() // nothing armed before the first touch
	require.Zero(t, *released)

	r.Touch()
	r.Touch()
	r.Touch()
	require.Equal(t, 3, ft.arms, "every touch re-arms the one timer")
	require.Equal(t, time.Second, ft.lastDur)
	require.Zero(t, *released, "nothing is released before the delay passed")

	ft.fire()
	require.Equal(t, 1, *released)
	ft.fire()
	require.Equal(t, 1, *released, "one release per quiet spell")

	r.Touch()
	ft.fire()
	require.Equal(t, 2, *released, "a later touch arms a new release")
}

func TestCloseCancels(t *testing.T) {
	r, ft, released := newFake()
	r.Touch()
	r.Close()
	require.False(t, ft.armed, "close stops the pending release")
	r.Touch()
	require.False(t, ft.armed, "touches after close do nothing")

	// A timer that already fired and waits for the lock does not release after Close either.
	r2, ft2, released2 := newFake()
	r2.Touch()
	f := ft2.f
	r2.Close()
	f()
	require.Zero(t, *released)
	require.Zero(t, *released2)
}

// The real timer runs the release; the wait only fails on a hang.
func TestNewReleasesWithARealTimer(t *testing.T) {
	done := make(chan struct{})
	r := newReleaser(time.Millisecond, func() { close(done) }, func(d time.Duration, f func()) timer { return time.AfterFunc(d, f) })
	defer r.Close()
	r.Touch()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("release never ran")
	}
}
