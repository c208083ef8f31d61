// Package ratelimits keeps the account rate-limit state reported by the model service in response
// headers (x-codex-primary-*, x-codex-secondary-*, x-codex-credits-*): the latest snapshot, for
// account/rateLimits/read.
package ratelimits

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Window is one rate-limit window: how much is used, how long it lasts and when it resets.
type Window struct {
	UsedPercent   int32
	WindowMinutes *int64
	ResetsAt      *int64 // unix seconds
}

// Credits is the credit balance the headers report.
type Credits struct {
	HasCredits, Unlimited bool
	Balance               *string
}

// Snapshot is the state of one response's headers.
type Snapshot struct {
	Primary, Secondary *Window
	Credits            *Credits
}

// Parse reads the rate-limit headers; ok is false when a response carries none.
func Parse(h http.Header) (Snapshot, bool) {
	var s Snapshot
	s.Primary = window(h, "x-codex-primary")
	s.Secondary = window(h, "x-codex-secondary")
	if v := h.Get("x-codex-credits-has-credits"); v != "" {
		c := &Credits{HasCredits: isTrue(v), Unlimited: isTrue(h.Get("x-codex-credits-unlimited"))}
		if b := strings.TrimSpace(h.Get("x-codex-credits-balance")); b != "" {
			c.Balance = &b
		}
		s.Credits = c
	}
	return s, s.Primary != nil || s.Secondary != nil || s.Credits != nil
}

func window(h http.Header, prefix string) *Window {
	used := h.Get(prefix + "-used-percent")
	if used == "" {
		return nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(used), 64)
	if err != nil {
		return nil
	}
	w := &Window{UsedPercent: int32(f)}
	if v, err := strconv.ParseInt(strings.TrimSpace(h.Get(prefix+"-window-minutes")), 10, 64); err == nil {
		w.WindowMinutes = &v
	}
	if v, err := strconv.ParseInt(strings.TrimSpace(h.Get(prefix+"-reset-at")), 10, 64); err == nil {
		w.ResetsAt = &v
	}
	return w
}

func isTrue(v string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && b
}

// Tracker holds the latest snapshot; safe for concurrent use.
type Tracker struct {
	mu   sync.Mutex
	last *Snapshot
}

// Observe records a response's headers when they carry rate limits.
func (t *Tracker) Observe(h http.Header) {
	s, ok := Parse(h)
	if !ok {
		return
	}
	t.mu.Lock()
	t.last = &s
	t.mu.Unlock()
}

// Latest returns the last snapshot seen, or false before any.
func (t *Tracker) Latest() (Snapshot, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		return Snapshot{}, false
	}
	return *t.last, true
}
