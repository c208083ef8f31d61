package ratelimits

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	h := http.Header{}
	_, ok := Parse(h)
	require.False(t, ok)
	h.Set("x-codex-primary-used-percent", "42.5")
	h.Set("x-codex-primary-window-minutes", "300")
	h.Set("x-codex-primary-reset-at", "1800000000")
	h.Set("x-codex-secondary-used-percent", "bogus")
	h.Set("x-codex-credits-has-credits", "true")
	h.Set("x-codex-credits-balance", "12.50")
	s, ok := Parse(h)
	require.True(t, ok)
	require.Equal(t, int32(42), s.Primary.UsedPercent)
	require.Equal(t, int64(300), *s.Primary.WindowMinutes)
	require.Equal(t, int64(1800000000), *s.Primary.ResetsAt)
	require.Nil(t, s.Secondary, "unparseable windows are dropped")
	require.True(t, s.Credits.HasCredits)
	require.Equal(t, "12.50", *s.Credits.Balance)

	var tr Tracker
	_, ok = tr.Latest()
	require.False(t, ok)
	tr.Observe(http.Header{})
	_, ok = tr.Latest()
	require.False(t, ok, "responses without rate-limit headers leave the state alone")
	tr.Observe(h)
	got, ok := tr.Latest()
	require.True(t, ok)
	require.Equal(t, s, got)
}
