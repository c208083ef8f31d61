package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// TestCompressedRolloutsFromReference lists, reads and resumes threads whose rollouts the reference compressed
// (.jsonl.zst): paths are reported under the plain name, as the reference does; resuming writes the plain
// rollout back and removes the compressed one, and the next turn appends to it.
func TestCompressedRolloutsFromReference(t *testing.T) {
	const parent, child = "01a20b96-a3bb-78d1-8772-d736e5b6abcf", "01a20b96-a865-71b3-9936-d33b0bbbd56c"
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("after resume", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	day := filepath.Join(c.Home, "sessions", "2026", "11", "24")
	require.NoError(t, os.MkdirAll(day, 0o755))
	src := filepath.Join("..", "rollout", "testdata", "compressed")
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".jsonl.zst") {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(day, e.Name()), b, 0o644))
		}
	}
	c.Initialize(true)

	type threadOut struct {
		ID    string `json:"id"`
		Path  string `json:"path"`
		Turns []struct {
			Items []map[string]any `json:"items"`
		} `json:"turns"`
	}
	var list struct {
		Data []threadOut `json:"data"`
	}
	c.Result("thread/list", map[string]any{}, &list)
	require.Len(t, list.Data, 2)
	for _, th := range list.Data {
		require.True(t, strings.HasSuffix(th.Path, ".jsonl"), th.Path)
	}
	var read struct {
		Thread threadOut `json:"thread"`
	}
	c.Result("thread/read", map[string]any{"threadId": child, "includeTurns": true}, &read)
	require.Len(t, read.Thread.Turns, 3, "the parent's two turns, then the fork's")
	plain := read.Thread.Path
	require.True(t, strings.HasSuffix(plain, child+".jsonl"), plain)
	require.NoFileExists(t, plain, "reading does not write the plain rollout back")

	c.Result("thread/resume", map[string]any{"threadId": child}, nil)
	require.FileExists(t, plain)
	require.NoFileExists(t, plain+".zst")
	c.StartTurn(child, "one more")
	c.WaitTurnCompleted()
	c.Result("thread/read", map[string]any{"threadId": child, "includeTurns": true}, &read)
	require.Len(t, read.Thread.Turns, 4)
	data, err := os.ReadFile(plain)
	require.NoError(t, err)
	require.Contains(t, string(data), "after resume")

	// A resume by the path the reference reported (the plain name) finds the compressed file.
	var parentPath string
	for _, th := range list.Data {
		if th.ID == parent {
			parentPath = th.Path
		}
	}
	require.NoFileExists(t, parentPath)
	c.Result("thread/resume", map[string]any{"threadId": parent, "path": parentPath}, &read)
	require.Len(t, read.Thread.Turns, 2)
	require.FileExists(t, parentPath)
}
