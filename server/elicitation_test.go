package server_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// These tests run in real time: the margins (hundreds of milliseconds to seconds) are sized for a
// loaded 2-core machine.

type counterResult struct {
	Count  int64 `json:"count"`
	Paused bool  `json:"paused"`
}

func elicit(t *testing.T, c *apptest.Client, method, tid string) counterResult {
	t.Helper()
	var res counterResult
	c.Result(method, map[string]any{"threadId": tid}, &res)
	return res
}

// waitCommandStarted waits for the commandExecution item of a call to start.
func waitCommandStarted(c *apptest.Client, callID string) {
	c.T.Helper()
	c.WaitNotification("item/started", func(p json.RawMessage) bool {
		var n struct {
			Item struct{ Type, ID string }
		}
		return json.Unmarshal(p, &n) == nil && n.Item.Type == "commandExecution" && n.Item.ID == callID
	})
}

var wallTimeRE = regexp.MustCompile(`Wall time: ([0-9.]+) seconds`)

func wallTime(t *testing.T, out string) float64 {
	t.Helper()
	m := wallTimeRE.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	f, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return f
}

// holdAndCount sleeps d and returns how many model requests arrived by then.
func holdAndCount(mm *mockmodel.Server, d time.Duration) int {
	time.Sleep(d)
	return len(mm.ResponseRequests())
}

func elicitClient(t *testing.T, mm *mockmodel.Server, config string) (*apptest.Client, string) {
	t.Helper()
	c := startIsolated(t, apptest.Options{Model: mm, Config: config})
	c.Initialize(true)
	return c, c.StartThread(nil)
}

// TestElicitationPausesExecYield: a pause that lands inside the yield holds the tool result past the
// yield deadline and past the process's exit. Load-independent: the command waits on a FIFO the test
// opens only once the pause is in place, so it exits while paused; if the machine was so slow that the
// yield ran out before the pause landed (the result then says "session ID", which is correct), the run
// is repeated with a doubled yield.
func TestElicitationPausesExecYield(t *testing.T) {
	for yield := 700; ; yield *= 2 {
		if pausesExecYield(t, yield) {
			return
		}
		require.Less(t, yield, 20000, "the pause never landed before the yield deadline")
		t.Logf("the yield of %d ms ran out before the pause landed; again with a longer one", yield)
	}
}

func pausesExecYield(t *testing.T, yieldMS int) (pausedInTime bool) {
	fifo, marker := fifoAndMarker(t)
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": fmt.Sprintf("touch %s; read x < %s; echo done", marker, fifo), "yield_time_ms": yieldMS}), finalMessage("ok"))
	c := startIsolated(t, apptest.Options{Model: mm, SandboxMode: "danger-full-access"})
	c.Initialize(true)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "run")
	waitCommandStarted(c, "call_1")
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
	paused := time.Now()
	releaseFIFO(t, fifo) // the process exits while paused
	c.WaitNotification("item/completed", func(p json.RawMessage) bool {
		var n struct{ Item struct{ ID string } }
		return json.Unmarshal(p, &n) == nil && n.Item.ID == "call_1"
	}) // as in the reference, the item completes when the process ends; only the tool result is held
	hold := max(2*time.Second, time.Duration(yieldMS)*time.Millisecond+time.Second)
	if holdAndCount(mm, hold) > 1 {
		out := callOutput(t, mm, "call_1")
		require.Regexp(t, sessionIDRE, out, "the result came while paused: it must have yielded before the pause landed")
		require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid))
		c.WaitTurnCompleted()
		return false
	}
	heldFor := time.Since(paused)
	_, early := itemEvents(t, c.Since(mark), "call_1")
	require.Len(t, early, 1)
	require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid))
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

	out := callOutput(t, mm, "call_1")
	require.Contains(t, out, "\nProcess exited with code 0\n")
	require.True(t, strings.HasSuffix(out, "Output:\ndone\n"), out)
	require.GreaterOrEqual(t, wallTime(t, out), heldFor.Seconds()-0.01, "the reported wall time includes the pause")
	_, completed := itemEvents(t, c.Since(mark), "call_1")
	require.Len(t, completed, 1)
	require.Equal(t, "done\n", completed[0]["aggregatedOutput"])
	requireErrorMatch(t, c.Request("thread/decrement_elicitation", map[string]any{"threadId": tid}), -32600, "^out-of-band elicitation count is already zero$")
	return true
}

func TestElicitationControlYieldsSessionID(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "sleep 30; echo done", "yield_time_ms": 700}), finalMessage("ok"))
	c, tid := elicitClient(t, mm, "")
	c.StartTurn(tid, "run")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	out := callOutput(t, mm, "call_1")
	require.Regexp(t, sessionIDRE, out, "without a pause the call yields (at 0.7 s of charged time)")
	require.Less(t, wallTime(t, out), 30.0, "yielded before the command could end")
}

// TestElicitationOverlappingIncrementsNeedTwoDecrements: with two increments outstanding, one
// decrement still holds the tool result; the second releases it. Load-independent as
// TestElicitationPausesExecYield: the command waits on a FIFO released only once the thread is paused.
func TestElicitationOverlappingIncrementsNeedTwoDecrements(t *testing.T) {
	for yield := 700; ; yield *= 2 {
		if overlappingIncrements(t, yield) {
			return
		}
		require.Less(t, yield, 20000, "the pause never landed before the yield deadline")
		t.Logf("the yield of %d ms ran out before the pause landed; again with a longer one", yield)
	}
}

func overlappingIncrements(t *testing.T, yieldMS int) (pausedInTime bool) {
	fifo, marker := fifoAndMarker(t)
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": fmt.Sprintf("touch %s; read x < %s; echo done", marker, fifo), "yield_time_ms": yieldMS}), finalMessage("ok"))
	c := startIsolated(t, apptest.Options{Model: mm, SandboxMode: "danger-full-access"})
	c.Initialize(true)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "run")
	waitCommandStarted(c, "call_1")
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
	require.Equal(t, counterResult{2, true}, elicit(t, c, "thread/increment_elicitation", tid))
	releaseFIFO(t, fifo) // the process exits while paused
	c.WaitNotification("item/completed", func(p json.RawMessage) bool {
		var n struct{ Item struct{ ID string } }
		return json.Unmarshal(p, &n) == nil && n.Item.ID == "call_1"
	})
	hold := max(2*time.Second, time.Duration(yieldMS)*time.Millisecond+time.Second)
	if holdAndCount(mm, hold) > 1 {
		require.Regexp(t, sessionIDRE, callOutput(t, mm, "call_1"), "the result came while paused: it must have yielded before the pause landed")
		require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/decrement_elicitation", tid))
		require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid))
		c.WaitTurnCompleted()
		return false
	}
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/decrement_elicitation", tid))
	require.Equal(t, 1, holdAndCount(mm, hold), "one outstanding elicitation still pauses")
	require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid))
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	out := callOutput(t, mm, "call_1")
	require.Contains(t, out, "\nProcess exited with code 0\n")
	require.True(t, strings.HasSuffix(out, "Output:\ndone\n"), out)
	return true
}

func TestElicitationPausedBeforeCommandStarts(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "echo early", "yield_time_ms": 250}), finalMessage("ok"))
	c, tid := elicitClient(t, mm, "")
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
	c.StartTurn(tid, "run")
	waitCommandStarted(c, "call_1")
	require.Equal(t, 1, holdAndCount(mm, 1500*time.Millisecond), "a command started while paused is held too")
	require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid))
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	require.True(t, strings.HasSuffix(callOutput(t, mm, "call_1"), "Process exited with code 0\nOriginal token count: 2\nOutput:\nearly\n"))
}

func TestElicitationPauseIsPerThread(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "sleep 30; echo done", "yield_time_ms": 700}), finalMessage("ok"))
	c, paused := elicitClient(t, mm, "")
	other := c.StartThread(nil)
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", paused))
	c.StartTurn(other, "run")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	out := callOutput(t, mm, "call_1")
	require.Regexp(t, sessionIDRE, out, "the other thread's pause does not hold this one")
	require.Less(t, wallTime(t, out), 30.0, "yielded before the command could end")
	require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", paused))
}

func TestElicitationPausesApprovalTimeout(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "echo hi"}), finalMessage("ok"))
	c := startIsolated(t, apptest.Options{Model: mm, Config: "approval_timeout_ms = 400"})
	c.Initialize(true)
	tid := c.StartThread(map[string]any{"approvalPolicy": "untrusted"})
	c.SetAnswerer(func(apptest.Message) (any, int, string, bool) { return nil, 0, "", false })
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
	mark := c.Mark()
	c.StartTurn(tid, "run")
	c.WaitServerRequest(cmdApproval)
	time.Sleep(1200 * time.Millisecond)
	require.Empty(t, notificationsOf(t, c.Since(mark), "serverRequest/resolved"), "the approval timeout does not run while paused")
	require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid))
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	_, completed := itemEvents(t, c.Since(mark), "call_1")
	require.Len(t, completed, 1)
	require.Equal(t, "declined", completed[0]["status"], "then it times out as a decline")
	require.Equal(t, rejectedText, callOutput(t, mm, "call_1"))
}
