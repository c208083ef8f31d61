package server_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/rollout"
)

type gitInfo struct {
	Sha       *string `json:"sha"`
	Branch    *string `json:"branch"`
	OriginURL *string `json:"originUrl"`
}

type metaThread struct {
	ID                   string   `json:"id"`
	GitInfo              *gitInfo `json:"gitInfo"`
	DaybreakEnabled      *bool    `json:"daybreakEnabled"`
	CanAcceptDirectInput *bool    `json:"canAcceptDirectInput"`
	Turns                []any    `json:"turns"`
}

func TestThreadMetadataUpdate(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	stored := "01f20000-0000-7000-8000-000000000001"
	storedThread(t, home, stored, "mock", rollout.StringSource("vscode"), time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), "stored")
	c := apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	_, err := os.Stat(filepath.Join(home, "appserver_state.sqlite"))
	require.True(t, os.IsNotExist(err), "reads do not create the state database")

	update := func(params map[string]any) metaThread {
		var r struct{ Thread metaThread }
		c.Result("thread/metadata/update", params, &r)
		require.NotNil(t, r.Thread.Turns)
		require.Empty(t, r.Thread.Turns)
		require.Nil(t, r.Thread.CanAcceptDirectInput)
		return r.Thread
	}
	// A thread that is not loaded: the rollout's thread, patched.
	th := update(map[string]any{"threadId": stored, "gitInfo": map[string]any{"branch": "b", "sha": "abc"}})
	require.Equal(t, "b", *th.GitInfo.Branch)
	require.Equal(t, "abc", *th.GitInfo.Sha)
	require.Nil(t, th.GitInfo.OriginURL)
	th = update(map[string]any{"threadId": stored, "gitInfo": map[string]any{"branch": nil}, "daybreakEnabled": true})
	require.Nil(t, th.GitInfo.Branch, "null clears a field")
	require.Equal(t, "abc", *th.GitInfo.Sha, "an absent field is kept")
	require.True(t, *th.DaybreakEnabled)

	// A loaded thread: its thread object changes too.
	id := c.StartThread(nil)
	th = update(map[string]any{"threadId": id, "gitInfo": map[string]any{"originUrl": "https://x/y.git"}})
	require.Equal(t, "https://x/y.git", *th.GitInfo.OriginURL)
	var read struct{ Thread metaThread }
	c.Result("thread/read", map[string]any{"threadId": id}, &read)
	require.Equal(t, "https://x/y.git", *read.Thread.GitInfo.OriginURL)

	for _, tc := range []struct {
		params map[string]any
		msg    string
	}{
		{map[string]any{"threadId": stored}, "thread metadata update must include at least one field"},
		{map[string]any{"threadId": stored, "projectId": "p1"}, "project not found: p1"},
		{map[string]any{"threadId": "00000000-0000-0000-0000-000000000000", "gitInfo": map[string]any{"branch": "b"}}, "no rollout found for thread id 00000000-0000-0000-0000-000000000000"},
		{map[string]any{"threadId": "bogus", "daybreakEnabled": true}, "invalid thread id: "},
	} {
		m := c.Request("thread/metadata/update", tc.params)
		require.NotNil(t, m.Error, "%v", tc.params)
		require.Equal(t, -32600, m.Error.Code)
		require.Contains(t, m.Error.Message, tc.msg)
	}
	c.Close()

	// The metadata is not a cache of the rollouts: it survives a restart and a discarded index.
	require.NoError(t, os.Remove(filepath.Join(home, "appserver_index_v2.sqlite")))
	c = apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	c.Result("thread/read", map[string]any{"threadId": stored}, &read)
	require.Equal(t, "abc", *read.Thread.GitInfo.Sha)
	require.True(t, *read.Thread.DaybreakEnabled)
	var list struct{ Data []metaThread }
	raw := c.Result("thread/list", map[string]any{}, &list)
	require.NotEmpty(t, list.Data, "%s", raw)
	found := false
	for _, th := range list.Data {
		if th.ID == stored {
			found = true
			require.Equal(t, "abc", *th.GitInfo.Sha)
		}
	}
	require.True(t, found, "%s", raw)
}
