package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
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
