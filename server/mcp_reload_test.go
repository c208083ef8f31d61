package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mcptest"
)

// TestMCPReloadReadsConfigFromDisk: a server added to config.toml after start-up is started on the
// loaded thread by config/mcpServer/reload.
func TestMCPReloadReadsConfigFromDisk(t *testing.T) {
	pidDir := t.TempDir()
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	tid := c.StartThread(nil)
	path := filepath.Join(c.Home, "config.toml")
	old, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(old, []byte("\n"+mcpServerTOML(t, "late", "", pidDir))...), 0o644))
	mark := c.Mark()
	c.Result("config/mcpServer/reload", nil, nil)
	st := waitStatus(t, c, mark, "late", "ready")
	require.Equal(t, tid, *st.ThreadID)
	c.Close()
	requireAllGone(t, pidDir)
}

// TestMCPServersFromThreadStartConfigOverride: mcp_servers given in thread/start's `config` start for that
// thread only.
func TestMCPServersFromThreadStartConfigOverride(t *testing.T) {
	pidDir := t.TempDir()
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	mark := c.Mark()
	var res struct {
		Thread struct{ ID string } `json:"thread"`
	}
	c.Result("thread/start", map[string]any{"cwd": c.Work, "config": map[string]any{
		"mcp_servers": map[string]any{"inline": map[string]any{
			"command": mcptest.Binary(t),
			"env":     map[string]any{mcptest.EnvPidDir: pidDir, mcptest.EnvName: "inline-mcp"},
		}},
	}}, &res)
	st := waitStatus(t, c, mark, "inline", "ready")
	require.Equal(t, res.Thread.ID, *st.ThreadID)
	other := c.StartThread(map[string]any{"ephemeral": true})
	var list struct {
		Data []struct{ Name string }
	}
	c.Result("mcpServerStatus/list", map[string]any{"threadId": other}, &list)
	require.Empty(t, list.Data, "another thread does not get the override's servers")
	c.Close()
	requireAllGone(t, pidDir)
}
