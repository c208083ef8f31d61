package stopwatchtest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/stopwatch/stopwatchtest"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestFakeClockFiresInOrderAtDueTime(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	require.Equal(t, epoch, clk.Now())
	var got []string
	var at []time.Time
	record := func(name string) func() {
		return func() { got = append(got, name); at = append(at, clk.Now()) }
	}
	clk.AfterFunc(30*time.Millisecond, record("c"))
	clk.AfterFunc(10*time.Millisecond, record("a"))
	clk.AfterFunc(10*time.Millisecond, record("b")) // same time: scheduling order
	clk.AfterFunc(time.Second, record("late"))
	require.Equal(t, 4, clk.Pending())

	clk.Advance(30 * time.Millisecond)
	require.Equal(t, []string{"a", "b", "c"}, got)
	require.Equal(t, []time.Time{
		epoch.Add(10 * time.Millisecond), epoch.Add(10 * time.Millisecond), epoch.Add(30 * time.Millisecond),
	}, at)
	require.Equal(t, epoch.Add(30*time.Millisecond), clk.Now())
	require.Equal(t, 1, clk.Pending())
}

func TestFakeClockCallbackSchedulesCallback(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	var fired []time.Time
	clk.AfterFunc(10*time.Millisecond, func() {
		fired = append(fired, clk.Now())
		clk.AfterFunc(5*time.Millisecond, func() { fired = append(fired, clk.Now()) })
	})
	clk.Advance(20 * time.Millisecond)
	require.Equal(t, []time.Time{epoch.Add(10 * time.Millisecond), epoch.Add(15 * time.Millisecond)}, fired)
}

func TestFakeClockStop(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	fired := false
	tm := clk.AfterFunc(time.Millisecond, func() { fired = true })
	require.True(t, tm.Stop())
	require.False(t, tm.Stop(), "already stopped")
	clk.Advance(time.Second)
	require.False(t, fired)

	tm = clk.AfterFunc(time.Millisecond, func() { fired = true })
	clk.Advance(time.Millisecond)
	require.True(t, fired)
	require.False(t, tm.Stop(), "already fired")
	require.Equal(t, 0, clk.Pending())
}

func TestFakeClockNonPositiveDelayFiresOnNextAdvance(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	n := 0
	clk.AfterFunc(0, func() { n++ })
	clk.AfterFunc(-time.Second, func() { n++ })
	require.Equal(t, 0, n, "AfterFunc never calls back synchronously")
	clk.Advance(0)
	require.Equal(t, 2, n)
	require.Equal(t, epoch, clk.Now(), "time never goes backwards")
}

func TestFakeClockNegativeAdvancePanics(t *testing.T) {
	clk := stopwatchtest.NewFakeClock(epoch)
	require.Panics(t, func() { clk.Advance(-time.Nanosecond) })
	require.Equal(t, epoch, clk.Now())
}
