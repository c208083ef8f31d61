package stopwatch_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/stopwatch"
	"appserver/stopwatch/stopwatchtest"
)

func TestControllerSetPausedIdempotent(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	c := stopwatch.NewController()
	require.False(t, c.Paused())
	s, release := c.NewStopwatch(100*ms, stopwatch.WithClock(clk))
	defer release()

	require.False(t, c.SetPaused(false), "already running")
	require.True(t, c.SetPaused(true))
	require.False(t, c.SetPaused(true), "second pause is a no-op")
	require.True(t, c.Paused())
	require.True(t, s.Paused())

	require.True(t, c.SetPaused(false))
	require.False(t, s.Paused(), "one controller resume undoes the single controller pause")
	require.False(t, c.SetPaused(false))
	require.False(t, c.Paused())
	clk.Advance(100 * ms)
	require.True(t, s.Expired())
}

func TestControllerPausesAll(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	c := stopwatch.NewController()
	a, releaseA := c.NewStopwatch(100*ms, stopwatch.WithClock(clk))
	defer releaseA()
	b := stopwatch.New(300*ms, stopwatch.WithClock(clk))
	defer c.Register(b)()
	require.Equal(t, 2, c.Len())

	clk.Advance(50 * ms)
	c.SetPaused(true)
	clk.Advance(time.Hour)
	require.False(t, a.Expired())
	require.False(t, b.Expired())
	c.SetPaused(false)
	clk.Advance(50 * ms)
	require.True(t, a.Expired())
	require.False(t, b.Expired())
	require.Equal(t, 200*ms, b.Remaining())
}

func TestControllerRegisterWhilePaused(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	c := stopwatch.NewController()
	c.SetPaused(true)

	s, release := c.NewStopwatch(100*ms, stopwatch.WithClock(clk))
	defer release()
	require.True(t, s.Paused(), "NewStopwatch starts paused")
	require.Equal(t, 0, clk.Pending(), "no timer armed for a stopwatch born paused")

	r := stopwatch.New(100*ms, stopwatch.WithClock(clk))
	defer r.Stop()
	unregister := c.Register(r)
	defer unregister()
	require.True(t, r.Paused(), "Register pauses")

	clk.Advance(time.Hour)
	require.Equal(t, time.Duration(0), s.Elapsed())
	require.Equal(t, time.Duration(0), r.Elapsed())
	c.SetPaused(false)
	clk.Advance(100 * ms)
	require.True(t, s.Expired())
	require.True(t, r.Expired())
}

func TestControllerUnregisterWhilePausedReleases(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	c := stopwatch.NewController()
	s := stopwatch.New(100*ms, stopwatch.WithClock(clk))
	defer s.Stop()
	unregister := c.Register(s)
	c.SetPaused(true)
	require.True(t, s.Paused())

	unregister()
	require.False(t, s.Paused(), "the controller's pause is released")
	require.Equal(t, 0, c.Len())
	unregister() // idempotent: must not resume anyone else's pause
	s.Pause()
	unregister()
	require.True(t, s.Paused())
	s.Resume()

	clk.Advance(100 * ms)
	require.True(t, s.Expired(), "runs again although the controller is still paused")
	require.True(t, c.Paused())
	require.False(t, c.SetPaused(true))

	c.SetPaused(false) // must not resume the unregistered stopwatch
	require.False(t, s.Paused())
}

func TestControllerUnregisterAfterResumeDoesNotResume(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	c := stopwatch.NewController()
	s := stopwatch.New(100*ms, stopwatch.WithClock(clk))
	defer s.Stop()
	unregister := c.Register(s)
	c.SetPaused(true)
	c.SetPaused(false)
	s.Pause() // the stopwatch's own pause
	unregister()
	require.True(t, s.Paused(), "unregister released nothing it did not hold")
}

func TestControllerAndOwnPauseOverlap(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	c := stopwatch.NewController()
	s, release := c.NewStopwatch(100*ms, stopwatch.WithClock(clk))
	defer release()

	// Own pause first, controller second; own ends first.
	s.Pause()
	c.SetPaused(true)
	s.Resume()
	require.True(t, s.Paused(), "controller pause still holds")
	clk.Advance(time.Hour)
	c.SetPaused(false)
	require.False(t, s.Paused())

	// Controller first, own second; controller ends first.
	c.SetPaused(true)
	s.Pause()
	c.SetPaused(false)
	require.True(t, s.Paused(), "own pause still holds")
	clk.Advance(time.Hour)
	require.Equal(t, time.Duration(0), s.Elapsed())
	s.Resume()
	require.False(t, s.Paused())
	clk.Advance(100 * ms)
	require.True(t, s.Expired())
}

func TestControllerReleaseIdempotent(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	c := stopwatch.NewController()
	c.SetPaused(true)
	s, release := c.NewStopwatch(100*ms, stopwatch.WithClock(clk))
	release()
	release()
	require.Equal(t, 0, c.Len())
	require.False(t, s.Paused())
	require.Equal(t, 0, clk.Pending(), "released stopwatch arms no timer")
	clk.Advance(time.Hour)
	require.False(t, s.Expired())
}

func TestControllerRegisterNil(t *testing.T) {
	c := stopwatch.NewController()
	unregister := c.Register(nil)
	require.Equal(t, 0, c.Len())
	require.NotPanics(t, unregister)
	require.NotPanics(t, func() { c.SetPaused(true) })
}

func TestControllerRegisterTwice(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	c := stopwatch.NewController()
	s := stopwatch.New(100*ms, stopwatch.WithClock(clk))
	defer s.Stop()
	u1 := c.Register(s)
	u2 := c.Register(s)
	require.Equal(t, 2, c.Len())
	c.SetPaused(true)
	u1()
	require.True(t, s.Paused(), "the second registration still holds its pause")
	u2()
	require.False(t, s.Paused())
}

// Many goroutines hammer SetPaused, Register/unregister and the stopwatches' own Pause/Resume; the
// final state must be consistent: the controller's flag is applied to exactly the registered set.
func TestControllerConcurrentHammer(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	c := stopwatch.NewController()
	const workers, rounds = 8, 300

	stable := make([]*stopwatch.Stopwatch, 4)
	for i := range stable {
		var release func()
		stable[i], release = c.NewStopwatch(time.Hour, stopwatch.WithClock(clk))
		defer release()
	}

	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			var mine []func()
			for range rounds {
				switch rng.IntN(6) {
				case 0:
					c.SetPaused(rng.IntN(2) == 0)
				case 1:
					_, release := c.NewStopwatch(time.Hour, stopwatch.WithClock(clk))
					mine = append(mine, release)
				case 2:
					s := stopwatch.New(time.Hour, stopwatch.WithClock(clk))
					u := c.Register(s)
					mine = append(mine, func() { u(); s.Stop() })
				case 3:
					if len(mine) > 0 {
						i := rng.IntN(len(mine))
						mine[i]()
						mine = append(mine[:i], mine[i+1:]...)
					}
				case 4:
					s := stable[rng.IntN(len(stable))]
					s.Pause()
					_ = s.Paused()
					s.Resume()
				case 5:
					clk.Advance(time.Millisecond)
				}
			}
			for _, release := range mine {
				release()
			}
		}()
	}
	wg.Wait()

	require.Equal(t, len(stable), c.Len())
	c.SetPaused(true)
	for _, s := range stable {
		require.True(t, s.Paused())
	}
	before := make([]time.Duration, len(stable))
	for i, s := range stable {
		before[i] = s.Elapsed()
	}
	clk.Advance(time.Minute)
	for i, s := range stable {
		require.Equal(t, before[i], s.Elapsed(), "frozen while the controller is paused")
	}
	c.SetPaused(false)
	for _, s := range stable {
		require.False(t, s.Paused(), "no pause leaked")
		require.False(t, s.Expired())
	}
	clk.Advance(time.Minute)
	for i, s := range stable {
		require.Equal(t, before[i]+time.Minute, s.Elapsed())
	}
}
