package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mcptest"
	"appserver/internal/mockmodel"
)

// answered reports whether the client has seen the response to request id.
func answered(c *apptest.Client, id int64) bool {
	for _, m := range c.Messages() {
		if m.Method == "" && m.ID != nil && m.ID == float64(id) {
			return true
		}
	}
	return false
}

// A thread/start waiting for a required MCP server that never answers its initialize must not delay
// any other request: not thread/loaded/list, not turn/interrupt of another thread, not the counter.
func TestSilentMCPServerDelaysNoOtherRequest(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(60)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	busy := c.StartThread(nil)
	turn := c.StartTurn(busy, "hang")
	c.WaitNotification("turn/started", nil)

	slow := c.Send("thread/start", map[string]any{"cwd": c.Work, "config": map[string]any{
		"mcp_servers": map[string]any{"silent": map[string]any{
			"command": mcptest.Binary(t), "required": true, "startup_timeout_sec": 600,
			"env": map[string]any{mcptest.EnvMode: "noinit", mcptest.EnvPidDir: t.TempDir()},
		}},
	}})
	var list struct{ Data []string }
	c.Result("thread/loaded/list", map[string]any{}, &list)
	require.Contains(t, list.Data, busy)
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", busy))
	require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", busy))
	c.Result("turn/interrupt", map[string]any{"threadId": busy, "turnId": turn}, nil)
	require.Equal(t, "interrupted", c.WaitTurnCompleted()["status"])
	require.False(t, answered(c, slow), "thread/start is still waiting for its MCP server")
}
