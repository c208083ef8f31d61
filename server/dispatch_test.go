package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

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

// Ten thousand pipelined requests while the client does not read its output: every request gets
// exactly one successful reply once it reads (the server stops reading instead of refusing).
func TestPipelinedFloodWithUnreadOutput(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- c.Srv.ServeConn(context.Background(), inR, outW)
		_ = outW.Close()
	}()
	const n = 10000
	go func() {
		w := bufio.NewWriter(inW)
		_, _ = w.WriteString(`{"id":"init","method":"initialize","params":{"clientInfo":{"name":"flood","version":"1"}}}` + "\n")
		for i := range n {
			_, _ = fmt.Fprintf(w, `{"id":%d,"method":"thread/loaded/list","params":{}}`+"\n", i)
		}
		_ = w.Flush()
		_ = inW.Close()
	}()
	time.Sleep(500 * time.Millisecond) // nobody reads for a while
	seen := map[int]bool{}
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Error  json.RawMessage `json:"error"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		if m.Method != "" || string(m.ID) == `"init"` {
			continue
		}
		require.Nil(t, m.Error, "refused: %s", sc.Text())
		id, err := strconv.Atoi(string(m.ID))
		require.NoError(t, err)
		require.False(t, seen[id], "two replies to %d", id)
		seen[id] = true
	}
	require.NoError(t, <-done)
	require.Len(t, seen, n)
}
