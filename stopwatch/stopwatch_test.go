package stopwatch_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/stopwatch"
	"appserver/stopwatch/stopwatchtest"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const ms = time.Millisecond

func newFake(t *testing.T, limit time.Duration) (*stopwatchtest.FakeClock, *stopwatch.Stopwatch) {
	t.Helper()
	clk := stopwatchtest.NewFakeClock(epoch)
	s := stopwatch.New(limit, stopwatch.WithClock(clk))
	t.Cleanup(s.Stop)
	return clk, s
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestExpiresAtLimit(t *testing.T) {
	clk, s := newFake(t, 500*ms)
	require.Equal(t, 500*ms, s.Limit())
	require.Equal(t, 1, clk.Pending(), "one timer while running")

	clk.Advance(499 * ms)
	require.False(t, s.Expired())
	require.False(t, isClosed(s.Done()))
	require.Equal(t, 499*ms, s.Elapsed())
	require.Equal(t, 1*ms, s.Remaining())

	clk.Advance(1 * ms)
	require.True(t, isClosed(s.Done()))
	require.True(t, s.Expired())
	require.Equal(t, time.Duration(0), s.Remaining())
	require.Equal(t, 500*ms, s.Elapsed())
	require.Equal(t, 0, clk.Pending(), "timer released at expiry")

	clk.Advance(time.Hour)
	require.Equal(t, 500*ms, s.Elapsed(), "elapsed frozen after expiry")
}

func TestPauseFreezes(t *testing.T) {
	clk, s := newFake(t, 500*ms)
	clk.Advance(100 * ms)
	changed := s.Changed()
	s.Pause()
	require.True(t, isClosed(changed))
	require.True(t, s.Paused())
	require.Equal(t, 0, clk.Pending(), "no timer while paused")

	clk.Advance(10 * time.Second)
	require.False(t, s.Expired())
	require.False(t, isClosed(s.Done()))
	require.Equal(t, 100*ms, s.Elapsed())
	require.Equal(t, 400*ms, s.Remaining())

	s.Resume()
	require.False(t, s.Paused())
	require.Equal(t, 1, clk.Pending(), "re-armed on resume")
	clk.Advance(399 * ms)
	require.False(t, s.Expired())
	clk.Advance(1 * ms)
	require.True(t, s.Expired())
	require.Equal(t, 500*ms, s.Elapsed())
}

func TestOverlappingPauses(t *testing.T) {
	clk, s := newFake(t, 100*ms)
	s.Pause()
	changed := s.Changed()
	s.Pause() // 1→2 is not a state change
	require.False(t, isClosed(changed))
	clk.Advance(time.Second)
	s.Resume() // 2→1: still paused
	require.True(t, s.Paused())
	require.False(t, isClosed(changed))
	clk.Advance(time.Second)
	require.False(t, s.Expired())
	require.Equal(t, time.Duration(0), s.Elapsed())

	s.Resume() // 1→0
	require.True(t, isClosed(changed))
	require.False(t, s.Paused())
	clk.Advance(100 * ms)
	require.True(t, s.Expired())
}

func TestResumeAtZeroIsNoop(t *testing.T) {
	clk, s := newFake(t, 100*ms)
	changed := s.Changed()
	s.Resume()
	s.Resume()
	require.False(t, isClosed(changed), "no state change")
	require.False(t, s.Paused())
	require.Equal(t, 1, clk.Pending(), "timer not duplicated")

	// A stray Resume must not eat a later Pause.
	s.Pause()
	require.True(t, s.Paused())
	clk.Advance(time.Second)
	require.False(t, s.Expired())
	s.Resume()
	clk.Advance(100 * ms)
	require.True(t, s.Expired())
}

// The stopwatch's own timer and a Pause fall due at the same instant; the Pause runs first (a callback
// scheduled earlier at the same time), i.e. before the timer fired. Rule: the budget is used up, so the
// stopwatch expires, and the pause is still counted.
func TestPauseExactlyAtExpiryBeforeTimer(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	var s *stopwatch.Stopwatch
	var expiredAtPause bool
	clk.AfterFunc(100*ms, func() {
		s.Pause()
		expiredAtPause = isClosed(s.Done())
	})
	s = stopwatch.New(100*ms, stopwatch.WithClock(clk))
	defer s.Stop()
	ctx, cancel := s.Context(context.Background())
	defer cancel()

	clk.Advance(100 * ms)
	require.True(t, expiredAtPause, "Done already closed when Pause returned")
	require.True(t, s.Expired())
	require.True(t, s.Paused())
	require.Equal(t, 100*ms, s.Elapsed())
	require.Equal(t, time.Duration(0), s.Remaining())
	require.ErrorIs(t, context.Cause(ctx), stopwatch.ErrExpired)
	require.Equal(t, 0, clk.Pending())

	s.Resume()
	require.False(t, s.Paused())
	require.True(t, s.Expired(), "expired stays expired")
	require.Equal(t, 0, clk.Pending(), "no re-arm after expiry")
}

func TestPauseAfterExpiry(t *testing.T) {
	clk, s := newFake(t, 100*ms)
	clk.Advance(100 * ms)
	require.True(t, s.Expired())
	changed := s.Changed()
	s.Pause()
	require.True(t, s.Paused())
	require.True(t, isClosed(changed), "pause state still reported")
	s.Resume()
	clk.Advance(time.Second)
	require.True(t, s.Expired())
	require.Equal(t, 100*ms, s.Elapsed())
	require.Equal(t, 0, clk.Pending())
}

func TestPauseJustBeforeExpiry(t *testing.T) {
	clk, s := newFake(t, 100*ms)
	clk.Advance(100*ms - 1)
	s.Pause()
	clk.Advance(time.Hour)
	require.False(t, s.Expired())
	require.Equal(t, time.Duration(1), s.Remaining())
	s.Resume()
	clk.Advance(1)
	require.True(t, s.Expired())
}

func TestContextCancelledWithCause(t *testing.T) {
	clk, s := newFake(t, 200*ms)
	ctx, cancel := s.Context(context.Background())
	defer cancel()
	clk.Advance(199 * ms)
	require.NoError(t, ctx.Err())
	clk.Advance(1 * ms)
	require.Error(t, ctx.Err())
	require.ErrorIs(t, context.Cause(ctx), stopwatch.ErrExpired)

	// A context made after expiry is born cancelled.
	late, cancelLate := s.Context(context.Background())
	defer cancelLate()
	require.ErrorIs(t, context.Cause(late), stopwatch.ErrExpired)
}

func TestContextPausedDoesNotCancel(t *testing.T) {
	clk, s := newFake(t, 200*ms)
	ctx, cancel := s.Context(context.Background())
	defer cancel()
	s.Pause()
	clk.Advance(time.Hour)
	require.NoError(t, ctx.Err())
	s.Resume()
	clk.Advance(200 * ms)
	require.ErrorIs(t, context.Cause(ctx), stopwatch.ErrExpired)
}

func TestContextParentAndCancel(t *testing.T) {
	clk, s := newFake(t, 200*ms)

	parent, cancelParent := context.WithCancelCause(context.Background())
	errParent := errors.New("parent gone")
	ctx, cancel := s.Context(parent)
	defer cancel()
	cancelParent(errParent)
	require.ErrorIs(t, context.Cause(ctx), errParent)

	own, cancelOwn := s.Context(context.Background())
	cancelOwn()
	require.ErrorIs(t, context.Cause(own), context.Canceled)

	clk.Advance(time.Second)
	require.True(t, s.Expired())
	require.ErrorIs(t, context.Cause(ctx), errParent, "expiry does not overwrite an earlier cause")
	require.ErrorIs(t, context.Cause(own), context.Canceled)
}

func TestPauseFor(t *testing.T) {
	clk, s := newFake(t, 100*ms)
	errF := errors.New("declined")
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")

	err := s.PauseFor(ctx, func(got context.Context) error {
		require.Equal(t, "v", got.Value(key{}))
		require.True(t, s.Paused())
		clk.Advance(time.Hour) // a slow human
		return errF
	})
	require.ErrorIs(t, err, errF)
	require.False(t, s.Paused())
	require.False(t, s.Expired())
	require.Equal(t, time.Duration(0), s.Elapsed())

	require.Panics(t, func() {
		_ = s.PauseFor(ctx, func(context.Context) error { panic("boom") })
	})
	require.False(t, s.Paused(), "resumed after a panic")

	require.Error(t, s.PauseFor(ctx, nil))
	require.False(t, s.Paused())

	clk.Advance(100 * ms)
	require.True(t, s.Expired())
}

func TestChangedFires(t *testing.T) {
	clk, s := newFake(t, 100*ms)
	c0 := s.Changed()
	require.Equal(t, c0, s.Changed(), "stable until a change")
	s.Pause()
	require.True(t, isClosed(c0))
	c1 := s.Changed()
	require.NotEqual(t, c0, c1)
	require.False(t, isClosed(c1))
	s.Resume()
	require.True(t, isClosed(c1))
	c2 := s.Changed()
	require.False(t, isClosed(c2))
	clk.Advance(100 * ms)
	require.True(t, isClosed(c2), "expiry also wakes waiters")

	_, s2 := newFake(t, 100*ms)
	c3 := s2.Changed()
	s2.Stop()
	require.True(t, isClosed(c3), "Stop also wakes waiters")
}

func TestStopPreventsExpiry(t *testing.T) {
	clk, s := newFake(t, 100*ms)
	ctx, cancel := s.Context(context.Background())
	defer cancel()
	clk.Advance(40 * ms)
	s.Stop()
	s.Stop() // idempotent
	require.Equal(t, 0, clk.Pending(), "timer released")
	clk.Advance(time.Hour)
	require.False(t, s.Expired())
	require.False(t, isClosed(s.Done()))
	require.NoError(t, ctx.Err())
	require.Equal(t, 40*ms, s.Elapsed())
	require.Equal(t, 60*ms, s.Remaining())

	s.Pause()
	s.Resume()
	require.Equal(t, 0, clk.Pending(), "resume after Stop arms nothing")
	clk.Advance(time.Hour)
	require.False(t, s.Expired())
}

func TestStopWhilePausedThenResume(t *testing.T) {
	clk, s := newFake(t, 100*ms)
	s.Pause()
	s.Stop()
	s.Resume()
	clk.Advance(time.Hour)
	require.False(t, s.Expired())
	require.Equal(t, 0, clk.Pending())
}

func TestNoLimitNeverExpires(t *testing.T) {
	for _, limit := range []time.Duration{0, -1, -time.Hour} {
		clk, s := newFake(t, limit)
		ctx, cancel := s.Context(context.Background())
		require.Equal(t, time.Duration(0), s.Limit())
		require.Equal(t, 0, clk.Pending(), "no timer without a limit")
		clk.Advance(1000 * time.Hour)
		require.False(t, s.Expired())
		require.False(t, isClosed(s.Done()))
		require.NoError(t, ctx.Err())
		require.Equal(t, 1000*time.Hour, s.Elapsed())
		require.Equal(t, time.Duration(math.MaxInt64), s.Remaining())
		s.Pause()
		clk.Advance(time.Hour)
		require.Equal(t, 1000*time.Hour, s.Elapsed())
		s.Resume()
		require.Equal(t, 0, clk.Pending())
		cancel()
	}
}

func TestWithNilClockUsesRealClock(t *testing.T) {
	s := stopwatch.New(time.Hour, stopwatch.WithClock(nil), nil)
	defer s.Stop()
	require.False(t, s.Expired())
	require.Greater(t, s.Remaining(), 59*time.Minute)
}

// Real clock: a 50 ms budget paused for 200 ms is not expired, and expires once resumed. It starts
// paused (made by a paused controller), so a slow machine cannot charge it before the pause.
func TestRealClockPauseAndExpire(t *testing.T) {
	c := stopwatch.NewController()
	c.SetPaused(true)
	s, release := c.NewStopwatch(50 * ms)
	defer release()
	require.True(t, s.Paused())
	time.Sleep(200 * ms)
	require.False(t, s.Expired())
	require.False(t, isClosed(s.Done()))
	require.Equal(t, 50*ms, s.Remaining())
	ctx, cancel := s.Context(context.Background())
	defer cancel()
	c.SetPaused(false)
	select {
	case <-s.Done():
	case <-time.After(time.Minute):
		t.Fatal("stopwatch did not expire")
	}
	<-ctx.Done()
	require.ErrorIs(t, context.Cause(ctx), stopwatch.ErrExpired)
	require.GreaterOrEqual(t, s.Elapsed(), 50*ms)
}

// wrapClock distorts a fake clock the way a real one can misbehave under load.
type wrapClock struct {
	*stopwatchtest.FakeClock
	early    bool // fire callbacks 10 ms before they are due
	leakStop bool // Stop reports false and does not stop: the callback is already on its way
}

type leakyTimer struct{}

func (leakyTimer) Stop() bool { return false }

func (w wrapClock) AfterFunc(d time.Duration, f func()) stopwatch.Timer {
	if w.early && d > 10*ms {
		d -= 10 * ms
	}
	t := w.FakeClock.AfterFunc(d, f)
	if w.leakStop {
		return leakyTimer{}
	}
	return t
}

func TestStaleTimerCallbackIgnored(t *testing.T) {
	fake := stopwatchtest.NewFakeClock(epoch)
	s := stopwatch.New(100*ms, stopwatch.WithClock(wrapClock{FakeClock: fake, leakStop: true}))
	defer s.Stop()
	fake.Advance(60 * ms)
	s.Pause()
	fake.Advance(100 * ms) // the first timer still fires at 100 ms
	require.False(t, s.Expired(), "callback of a disarmed timer is ignored")
	s.Resume() // re-armed for the remaining 40 ms
	fake.Advance(39 * ms)
	require.False(t, s.Expired())
	fake.Advance(1 * ms)
	require.True(t, s.Expired())
	require.Equal(t, 100*ms, s.Elapsed())
}

func TestEarlyTimerRearms(t *testing.T) {
	fake := stopwatchtest.NewFakeClock(epoch)
	s := stopwatch.New(100*ms, stopwatch.WithClock(wrapClock{FakeClock: fake, early: true}))
	defer s.Stop()
	fake.Advance(90 * ms) // fires 10 ms early and re-arms for the 10 ms still left
	require.False(t, isClosed(s.Done()))
	require.Equal(t, 1, fake.Pending())
	fake.Advance(9 * ms)
	require.False(t, isClosed(s.Done()), "re-armed for the remaining budget, not the whole limit")
	fake.Advance(1 * ms)
	require.True(t, isClosed(s.Done()))
	require.Equal(t, 100*ms, s.Elapsed())
}

func TestObservationPastBudgetExpires(t *testing.T) {
	fake := stopwatchtest.NewFakeClock(epoch)
	// A leaky timer of a fake clock that never fires: only observations can expire the stopwatch.
	s := stopwatch.New(100*ms, stopwatch.WithClock(neverFires{fake}))
	defer s.Stop()
	fake.Advance(100 * ms)
	require.False(t, isClosed(s.Done()), "timer never fired")
	require.True(t, s.Expired(), "observing a used-up budget expires it")
	require.True(t, isClosed(s.Done()))
}

// neverFires is a clock whose timers never fire.
type neverFires struct{ *stopwatchtest.FakeClock }

func (neverFires) AfterFunc(time.Duration, func()) stopwatch.Timer { return leakyTimer{} }
