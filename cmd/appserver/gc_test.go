package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSetGCDefault(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })

	require.Equal(t, defaultGCPercent, setGCDefault(func(string) string { return "" }))
	require.Equal(t, defaultGCPercent, debug.SetGCPercent(100))

	// GOGC in the environment wins: the percent the runtime took from it stays.
	debug.SetGCPercent(80)
	require.Equal(t, 80, setGCDefault(func(k string) string {
		if k == "GOGC" {
			return "80"
		}
		return ""
	}))
	require.Equal(t, 80, debug.SetGCPercent(100))
}
