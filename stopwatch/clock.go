package stopwatch

import "time"

// Clock is the source of time for a Stopwatch; tests substitute a fake one.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f once, on some goroutine, after d has elapsed unless the timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started yet and reports whether it did so.
	Stop() bool
}

// RealClock returns the wall clock backed by package time.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Option configures a Stopwatch made by New or Controller.NewStopwatch.
type Option func(*options)

type options struct {
	clock Clock
}

// WithClock makes the stopwatch read time from c; nil keeps the real clock.
func WithClock(c Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

func buildOptions(opts []Option) options {
	o := options{clock: RealClock()}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
