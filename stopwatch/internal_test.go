package stopwatch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func pendingContexts(s *Stopwatch) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cancels)
}

func TestContextRegistrationForgotten(t *testing.T) {
	s := New(time.Hour)
	defer s.Stop()
	_, cancel := s.Context(context.Background())
	require.Equal(t, 1, pendingContexts(s))
	cancel()
	require.Eventually(t, func() bool { return pendingContexts(s) == 0 }, time.Minute, time.Millisecond)

	parent, cancelParent := context.WithCancel(context.Background())
	_, cancel2 := s.Context(parent)
	defer cancel2()
	cancelParent()
	require.Eventually(t, func() bool { return pendingContexts(s) == 0 }, time.Minute, time.Millisecond)
}

// settableClock can be moved backwards, which a broken Clock might do; it never fires timers.
type settableClock struct {
	mu  sync.Mutex
	now time.Time
}

type nopTimer struct{}

func (nopTimer) Stop() bool { return false }

func (c *settableClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *settableClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (*settableClock) AfterFunc(time.Duration, func()) Timer { return nopTimer{} }

func TestClockGoingBackwardsChargesNothing(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &settableClock{now: start}
	s := New(time.Second, WithClock(clk))
	defer s.Stop()
	clk.set(start.Add(-time.Hour))
	require.Equal(t, time.Duration(0), s.Elapsed())
	s.Pause()
	require.Equal(t, time.Duration(0), s.Elapsed())
	require.Equal(t, time.Second, s.Remaining())
}
