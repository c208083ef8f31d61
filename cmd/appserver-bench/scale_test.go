package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/rollout"
)

func TestParseScaleFlags(t *testing.T) {
	var errb bytes.Buffer
	o, err := parseScaleFlags([]string{"--server", "./ours", "--workdir", t.TempDir()}, &errb)
	require.NoError(t, err)
	require.Equal(t, 1000, o.threads)
	require.Equal(t, 10000, o.items)
	require.Equal(t, 20, o.concurrent)
	for _, bad := range [][]string{
		{"--server", "x", "--threads", "5", "--concurrent", "6"},
		{"--server", "x", "--concurrent", "0"},
		{"--server", "x", "--items", "1"},
		{"--threads", "5"},
		{"--server", "x", "extra"},
	} {
		_, err := parseScaleFlags(bad, &errb)
		require.ErrorIs(t, err, errUsage, "%v", bad)
	}
}

func TestWriteBigRollout(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, writeBigRollout(home, 100))
	paths, err := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+scaleThreadID+".jsonl"))
	require.NoError(t, err)
	require.Len(t, paths, 1)
	th, err := rollout.ReadFile(paths[0])
	require.NoError(t, err)
	require.Len(t, th.Turns, 50)
	n := 0
	for _, tr := range th.Turns {
		n += len(tr.Items)
	}
	require.Equal(t, 100, n)
}
