package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/stopwatch/stopwatchtest"
)

// eventuallyPauseState waits until the test MCP server "p" of tid reports want.
func eventuallyPauseState(t *testing.T, c *apptest.Client, tid, want string) {
	t.Helper()
	require.Eventually(t, func() bool { return pauseState(t, c, tid) == want }, apptest.WaitLimit, 20*time.Millisecond,
		"the MCP server never learnt paused=%s", want)
}

func TestPauseHoldsCombineAndReachMCPServers(t *testing.T) {
	pidDir := t.TempDir()
	c := apptest.Start(t, apptest.Options{Config: mcpServerTOML(t, "p", "pause-ok", pidDir)})
	c.Initialize(true)
	tid := startReadyThread(t, c, "p")
	th, ok := c.Srv.Threads().Get(tid)
	require.True(t, ok)
	require.Equal(t, "unset", pauseState(t, c, tid))

	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
	require.True(t, th.Controller().Paused(), "the local pause is in place when increment answers")
	eventuallyPauseState(t, c, tid, "true")
	release := th.HoldPause()
	require.Equal(t, counterResult{0, true}, elicit(t, c, "thread/decrement_elicitation", tid),
		"decrement answers the thread's real state: a pending elicitation still holds it")
	require.True(t, th.Controller().Paused())
	release()
	release() // idempotent
	require.False(t, th.Controller().Paused())
	eventuallyPauseState(t, c, tid, "false")

	release = th.HoldPause()
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
	release()
	require.True(t, th.Controller().Paused(), "the counter still holds the deadlines")
	require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid))
	require.False(t, th.Controller().Paused())
	eventuallyPauseState(t, c, tid, "false")
}

// An MCP server that refuses the update, refuses only the resume, or never answers changes nothing
// locally: the counter answers at once and the thread pauses and resumes.
func TestPauseDoesNotDependOnMCPServers(t *testing.T) {
	for _, mode := range []string{"pause-fail", "pause-fail-resume", "pause-hang"} {
		t.Run(mode, func(t *testing.T) {
			c := apptest.Start(t, apptest.Options{Config: mcpServerTOML(t, "p", mode, t.TempDir())})
			c.Initialize(true)
			tid := startReadyThread(t, c, "p")
			th, _ := c.Srv.Threads().Get(tid)
			require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
			require.True(t, th.Controller().Paused())
			require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid))
			require.False(t, th.Controller().Paused(), "a refused resume must not leave the thread paused")
			requireErrorMatch(t, c.Request("thread/decrement_elicitation", map[string]any{"threadId": tid}), -32600,
				"^out-of-band elicitation count is already zero$")
		})
	}
}

// helperConn is a second client connection on the same server, driven by hand.
type helperConn struct {
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func dialHelper(t *testing.T, c *apptest.Client) *helperConn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	rc := &helperConn{in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	go func() {
		rc.done <- c.Srv.ServeConn(context.Background(), inR, outW)
		_ = outW.Close()
	}()
	t.Cleanup(func() { _ = inW.Close() })
	return rc
}

// call sends a request and returns its result, skipping notifications.
func (rc *helperConn) call(t *testing.T, id int, method string, params any) json.RawMessage {
	t.Helper()
	line, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	require.NoError(t, err)
	_, err = rc.in.Write(append(line, '\n'))
	require.NoError(t, err)
	for rc.out.Scan() {
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		require.NoError(t, json.Unmarshal(rc.out.Bytes(), &m))
		if m.ID != nil && *m.ID == id && m.Method == "" {
			require.Nil(t, m.Error, "%s failed: %s", method, rc.out.Text())
			return m.Result
		}
	}
	t.Fatalf("connection ended before answering %s", method)
	return nil
}

// A client that raised the counter and went away leaves nobody to lower it: its increments are
// released, the thread resumes and its MCP servers are told paused:false.
func TestPauseReleasedWhenItsConnectionDrops(t *testing.T) {
	pidDir := t.TempDir()
	c := apptest.Start(t, apptest.Options{Config: mcpServerTOML(t, "p", "pause-ok", pidDir)})
	c.Initialize(true)
	tid := startReadyThread(t, c, "p")
	th, _ := c.Srv.Threads().Get(tid)

	other := dialHelper(t, c)
	other.call(t, 0, "initialize", map[string]any{"clientInfo": map[string]any{"name": "helper", "version": "1"},
		"capabilities": map[string]any{"experimentalApi": true}})
	var res counterResult
	require.NoError(t, json.Unmarshal(other.call(t, 1, "thread/increment_elicitation", map[string]any{"threadId": tid}), &res))
	require.Equal(t, counterResult{1, true}, res)
	require.Equal(t, counterResult{2, true}, elicit(t, c, "thread/increment_elicitation", tid))
	require.NoError(t, json.Unmarshal(other.call(t, 2, "thread/increment_elicitation", map[string]any{"threadId": tid}), &res))
	require.Equal(t, counterResult{3, true}, res)
	eventuallyPauseState(t, c, tid, "true")

	require.NoError(t, other.in.Close())
	require.NoError(t, <-other.done)
	require.True(t, th.Controller().Paused(), "the first client's increment still holds the thread")
	require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid),
		"only the closed connection's two increments were released")
	eventuallyPauseState(t, c, tid, "false")
}

// A thread unloaded while paused tells its MCP servers paused:false before they are stopped.
func TestPauseUnloadTellsMCPServersToResume(t *testing.T) {
	pidDir := t.TempDir()
	c := apptest.Start(t, apptest.Options{Config: mcpServerTOML(t, "p", "pause-ok", pidDir)})
	c.Initialize(true)
	tid := startReadyThread(t, c, "p")
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
	eventuallyPauseState(t, c, tid, "true")
	require.True(t, c.Srv.Threads().Unload(tid))
	b, err := os.ReadFile(pauseFile(pidDir, "p"))
	require.NoError(t, err)
	require.Equal(t, "false", strings.TrimSpace(string(b)))
	requireAllGone(t, pidDir)
}

// approval_timeout_ms of an MCP tool approval is charged only while the counter is at zero.
func TestMCPApprovalTimeoutFrozenByCounter(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "add", "c1", map[string]any{"a": 1, "b": 2})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	c := apptest.Start(t, apptest.Options{Model: mm, ApprovalPolicy: "on-request", Clock: clock,
		Config: "approval_timeout_ms = 100\n" + mcpServerTOML(t, "good", "", pidDir)})
	c.Initialize(true)
	tid := startReadyThread(t, c, "good")
	mark := c.Mark()
	c.StartTurn(tid, "add")
	c.WaitServerRequest("mcpServer/elicitation/request") // never answered
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
	time.Sleep(300 * time.Millisecond) // real time passing must not matter (it did: a wall-clock timeout)
	clock.Advance(time.Hour)
	c.Result("thread/loaded/list", map[string]any{}, nil)
	for _, m := range c.Since(mark) {
		require.NotEqual(t, "serverRequest/resolved", m.Method, "the approval timed out while the counter was up")
	}
	require.Equal(t, counterResult{0, true}, elicit(t, c, "thread/decrement_elicitation", tid), "the pending approval holds the thread")
	clock.Advance(100 * time.Millisecond)
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	_, completed := mcpItems(t, c, mark)
	require.Equal(t, "user rejected MCP tool call", completed["c1"].Error.Message)
}

// Under approval_policy never an MCP server's own elicitation is declined without asking, as the
// reference does (observed: the tool got {"action":"decline"} and no request reached the client).
func TestMCPServerElicitationDeclinedUnderNever(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "ask", "c1", map[string]any{})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ApprovalPolicy: "never", Config: mcpServerTOML(t, "good", "", pidDir)})
	c.Initialize(false)
	tid := startReadyThread(t, c, "good")
	mark := c.Mark()
	c.StartTurn(tid, "ask")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	for _, m := range c.Since(mark) {
		require.False(t, m.IsServerRequest(), "a client that chose never was asked: %s", string(m.Raw))
	}
	_, completed := mcpItems(t, c, mark)
	require.Equal(t, "completed", completed["c1"].Status)
	require.Equal(t, `{"action":"decline"}`, completed["c1"].Result.Content[0]["text"])
}
