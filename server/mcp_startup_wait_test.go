package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// A turn started before the thread's MCP servers finished starting waits for them (as the reference),
// so its first model request offers their tools and the model can call them.
func TestTurnWaitsForMCPServersToStart(t *testing.T) {
	pidDir := t.TempDir()
	gate := filepath.Join(t.TempDir(), "open")
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("slow", "echo", "c1", map[string]any{"text": "hi"})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, Config: gatedServerTOML(t, gate, pidDir)})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "use the slow server")
	c.WaitNotification("turn/started", nil)
	time.Sleep(300 * time.Millisecond) // gives a turn that does not wait the time to ask the model
	require.Empty(t, mm.ResponseRequests(), "the model was asked before the MCP server finished starting")
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	_, completed := mcpItems(t, c, mark)
	require.Equal(t, "completed", completed["c1"].Status, "%+v", completed["c1"].Error)
	require.Equal(t, "echo: hi", completed["c1"].Result.Content[0]["text"])
}

// The wait ends when the turn is interrupted.
func TestTurnWaitingForMCPServersCanBeInterrupted(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Model: mm, Config: gatedServerTOML(t, filepath.Join(t.TempDir(), "never"), pidDir, "startup_timeout_sec = 600")})
	c.Initialize(false)
	tid := c.StartThread(nil)
	turn := c.StartTurn(tid, "wait")
	c.WaitNotification("turn/started", nil)
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": turn}, nil)
	require.Equal(t, "interrupted", c.WaitTurnCompleted()["status"])
	require.Empty(t, mm.ResponseRequests())
	c.Close()
	requireAllGone(t, pidDir)
}
