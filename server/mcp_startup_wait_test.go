package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mcptest"
	"appserver/internal/mockmodel"
)

// gatedServerTOML is an MCP server "slow" that starts only once the file gate exists.
func gatedServerTOML(t *testing.T, gate, pidDir string, extra ...string) string {
	t.Helper()
	cfg := fmt.Sprintf("[mcp_servers.slow]\ncommand = %q\nenv = { %s = %q, %s = %q, %s = %q }\n",
		mcptest.Binary(t), mcptest.EnvGate, gate, mcptest.EnvPidDir, pidDir, mcptest.EnvName, "slow-mcp")
	for _, e := range extra {
		cfg += e + "\n"
	}
	return cfg
}

// As the reference, a turn does not wait for the thread's MCP servers still starting (the thread's first
// request waits a second at most): its request offers the tools of the ready ones, and a later turn's
// those of the servers that became ready since.
func TestTurnDoesNotWaitForMCPServersToStart(t *testing.T) {
	pidDir := t.TempDir()
	gate := filepath.Join(t.TempDir(), "open")
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("first"))
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("slow", "echo", "c1", map[string]any{"text": "hi"})}})
	mm.Enqueue(okReply("done"))
	c := apptest.Start(t, apptest.Options{Model: mm, Config: gatedServerTOML(t, gate, pidDir, "startup_timeout_sec = 600")})
	c.Initialize(false)
	mark := c.Mark()
	tid := c.StartThread(nil)
	c.StartTurn(tid, "before the server is up")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	require.NotContains(t, toolNames(mm.ResponseRequests()[0].Body), "mcp__slow")

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	waitStatus(t, c, mark, "slow", "ready")
	mark = c.Mark()
	c.StartTurn(tid, "use the slow server")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	require.Contains(t, toolNames(mm.ResponseRequests()[1].Body), "mcp__slow")
	_, completed := mcpItems(t, c, mark)
	require.Equal(t, "completed", completed["c1"].Status, "%+v", completed["c1"].Error)
	require.Equal(t, "echo: hi", completed["c1"].Result.Content[0]["text"])
}

// A server that never starts holds no turn, and its process ends with the server.
func TestMCPServerNeverStartingHoldsNoTurn(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("answered"))
	c := apptest.Start(t, apptest.Options{Model: mm, Config: gatedServerTOML(t, filepath.Join(t.TempDir(), "never"), pidDir, "startup_timeout_sec = 600")})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "go")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	require.Len(t, mm.ResponseRequests(), 1)
	c.Close()
	requireAllGone(t, pidDir)
}
