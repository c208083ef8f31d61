package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// TestMCPServersStartOnResume restarts the server and resumes a thread: its MCP servers start again,
// with startup statuses after the resume response, and stop when the server closes.
func TestMCPServersStartOnResume(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("one", 1)}})
	cfg := mcpServerTOML(t, "good", "", pidDir)
	c1 := apptest.Start(t, apptest.Options{Model: mm, Config: cfg})
	c1.Initialize(false)
	tid := startReadyThread(t, c1, "good")
	c1.StartTurn(tid, "hello")
	c1.WaitTurnCompleted()
	home := c1.Home
	c1.Close()
	requireAllGone(t, pidDir)

	c2 := apptest.Start(t, apptest.Options{Model: mm, Config: cfg, Home: home})
	c2.Initialize(false)
	mark := c2.Mark()
	resp := c2.Request("thread/resume", map[string]any{"threadId": tid})
	require.Nil(t, resp.Error, string(resp.Raw))
	st := waitStatus(t, c2, mark, "good", "ready")
	require.Equal(t, tid, *st.ThreadID)
	// statuses follow the response
	var respIdx, statusIdx = -1, -1
	for i, m := range c2.Since(mark) {
		if m.Result != nil && respIdx < 0 {
			respIdx = i
		}
		if m.Method == "mcpServer/startupStatus/updated" && statusIdx < 0 {
			statusIdx = i
		}
	}
	require.Less(t, respIdx, statusIdx)
	c2.Close()
	requireAllGone(t, pidDir)
}
