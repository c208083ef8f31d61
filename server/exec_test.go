package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// --- helpers shared by the exec, approval, sandbox and elicitation tests ---

// startIsolated starts a test server with HOME pointing at an empty directory, so login shells don't
// read the host's profile (its output would leak into command output).
func startIsolated(t *testing.T, opts apptest.Options) *apptest.Client {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	return apptest.Start(t, opts)
}

// execCall scripts one model response that calls exec_command.
func execCall(callID string, args map[string]any) mockmodel.Response {
	return mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", callID, args)}}
}

// finalMessage scripts a final assistant message.
func finalMessage(text string) mockmodel.Response {
	return mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(text, 1)}}
}

// callOutput returns the output text the server sent the model for callID, searching every request.
func callOutput(t *testing.T, mm *mockmodel.Server, callID string) string {
	t.Helper()
	for _, r := range mm.ResponseRequests() {
		input, _ := r.Body["input"].([]any)
		for _, it := range input {
			m, _ := it.(map[string]any)
			if m == nil || m["call_id"] != callID || !strings.HasSuffix(fmt.Sprint(m["type"]), "_call_output") {
				continue
			}
			if s, ok := m["output"].(string); ok {
				return s
			}
			return string(mustJSON(t, m["output"]))
		}
	}
	require.Failf(t, "no output", "the model never received an output for %s", callID)
	return ""
}

func decodeMap(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// itemEvents returns the item/started and item/completed items with this id, in order.
func itemEvents(t *testing.T, msgs []apptest.Message, id string) (started, completed []map[string]any) {
	t.Helper()
	for _, m := range msgs {
		if m.Method != "item/started" && m.Method != "item/completed" {
			continue
		}
		item := decodeMap(t, m.Params)["item"].(map[string]any)
		if item["id"] != id {
			continue
		}
		if m.Method == "item/started" {
			started = append(started, item)
		} else {
			completed = append(completed, item)
		}
	}
	return started, completed
}

// flow lists notifications and server requests ("request:<method>") after skipping noise; item
// notifications are suffixed with the item type, and status changes with their flags.
func flow(t *testing.T, msgs []apptest.Message, skip ...string) []string {
	t.Helper()
	skipSet := map[string]bool{"item/agentMessage/delta": true}
	for _, s := range append(usageNoise, skip...) {
		skipSet[s] = true
	}
	var out []string
	for _, m := range msgs {
		switch {
		case m.IsServerRequest():
			out = append(out, "request:"+m.Method)
		case m.IsNotification() && !skipSet[m.Method]:
			p := decodeMap(t, m.Params)
			name := m.Method
			switch m.Method {
			case "item/started", "item/completed":
				name += ":" + fmt.Sprint(p["item"].(map[string]any)["type"])
			case "thread/status/changed":
				st := p["status"].(map[string]any)
				name += ":" + fmt.Sprint(st["type"])
				if flags, ok := st["activeFlags"].([]any); ok && len(flags) > 0 {
					name += fmt.Sprint(flags)
				}
			}
			out = append(out, name)
		}
	}
	return out
}

// notificationsFor returns the params of method notifications about one item.
func notificationsFor(t *testing.T, msgs []apptest.Message, method, itemID string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range msgs {
		if m.Method == method && m.IsNotification() {
			p := decodeMap(t, m.Params)
			if p["itemId"] == itemID {
				out = append(out, p)
			}
		}
	}
	return out
}

func deltaText(t *testing.T, msgs []apptest.Message, itemID string) []string {
	var out []string
	for _, p := range notificationsFor(t, msgs, "item/commandExecution/outputDelta", itemID) {
		out = append(out, p["delta"].(string))
	}
	return out
}

var execTextRE = regexp.MustCompile(`^Chunk ID: [0-9a-f]{6}\nWall time: \d+\.\d{4} seconds\n`)
var sessionIDRE = regexp.MustCompile(`Process running with session ID (\d+)\n`)

// --- unified exec ---

func TestExecCommandItemAndOutput(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "echo hello", "yield_time_ms": 30000}), finalMessage("ok"))
	c := startIsolated(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "run it")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])
	msgs := c.Since(mark)
	// Output inside the startup window is not streamed; on a loaded machine `echo` may only write after
	// the window, so a delta is tolerated here (TestExecOutputStreamsAfterStartup pins the rule).
	var steps []string
	for _, s := range flow(t, msgs) {
		if s != "item/commandExecution/outputDelta" {
			steps = append(steps, s)
		}
	}
	require.Equal(t, []string{
		"warning", "thread/status/changed:active", "turn/started", "item/started:userMessage", "item/completed:userMessage",
		"item/started:commandExecution", "item/completed:commandExecution",
		"item/started:agentMessage", "item/completed:agentMessage", "thread/status/changed:idle", "turn/completed",
	}, steps)

	started, completed := itemEvents(t, msgs, "call_1")
	require.Len(t, started, 1)
	require.Len(t, completed, 1)
	s, done := started[0], completed[0]
	require.Equal(t, "commandExecution", s["type"])
	require.Equal(t, "/bin/bash -lc 'echo hello'", s["command"])
	require.Equal(t, c.Work, s["cwd"])
	require.Equal(t, "inProgress", s["status"])
	require.Equal(t, "unifiedExecStartup", s["source"])
	require.Equal(t, []any{map[string]any{"type": "unknown", "command": "echo hello"}}, s["commandActions"])
	pid, ok := s["processId"].(string)
	require.True(t, ok, "processId is set when the process starts: %v", s)
	_, err := strconv.Atoi(pid)
	require.NoError(t, err)
	require.Nil(t, s["exitCode"])
	require.Nil(t, s["aggregatedOutput"])

	require.Equal(t, "completed", done["status"])
	require.Equal(t, pid, done["processId"])
	require.Equal(t, "unifiedExecStartup", done["source"])
	require.Equal(t, float64(0), done["exitCode"])
	require.Equal(t, "hello\n", done["aggregatedOutput"])
	require.GreaterOrEqual(t, done["durationMs"], float64(0))
	require.Equal(t, s["startedAtMs"], done["startedAtMs"])
	require.NotNil(t, done["completedAtMs"])

	out := callOutput(t, mm, "call_1")
	require.Regexp(t, execTextRE, out)
	require.True(t, strings.HasSuffix(out, "\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nhello\n"), out)
	// the model saw the tool schemas of unified exec
	tools := string(mustJSON(t, mm.ResponseRequests()[0].Body["tools"]))
	require.Contains(t, tools, `"name":"exec_command"`)
	require.Contains(t, tools, `"name":"write_stdin"`)
	require.NotContains(t, tools, `"name":"shell_command"`)
}

// TestExecCommandYieldThenPollToExit is load-independent: the thread is paused (out-of-band counter)
// until the command wrote its first line and touched a marker, so neither the startup window nor the
// yield runs out before it; the command then blocks on a FIFO that the test opens only once the first
// call returned, so the call yields, and the poll returns at the exit.
func TestExecCommandYieldThenPollToExit(t *testing.T) {
	fifo, marker := fifoAndMarker(t)
	mm := mockmodel.New(t)
	mm.Enqueue(
		execCall("call_1", map[string]any{"cmd": fmt.Sprintf("echo before; touch %s; read x < %s; echo after", marker, fifo), "yield_time_ms": 300}),
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("write_stdin", "call_2",
			map[string]any{"session_id": "{{capture_int:session ID (\\d+)}}", "chars": "", "yield_time_ms": 600000})}},
		finalMessage("finished"),
	)
	c := startIsolated(t, apptest.Options{Model: mm, SandboxMode: "danger-full-access"})
	c.Initialize(true)
	tid := c.StartThread(nil)
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
	mark := c.Mark()
	c.StartTurn(tid, "run it")
	waitForFile(t, marker)
	require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid))

	// the exec_command call returned (the second model request arrived) while the process still runs
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, mm.WaitRequests(ctx, 2))
	_, completed := itemEvents(t, c.Since(mark), "call_1")
	require.Empty(t, completed, "the item stays inProgress across the yield")
	first := callOutput(t, mm, "call_1")
	require.Regexp(t, execTextRE, first)
	m := sessionIDRE.FindStringSubmatch(first)
	require.NotNil(t, m, first)
	require.True(t, strings.HasSuffix(first, "Output:\nbefore\n"), first)
	held := time.Now()
	time.Sleep(time.Second) // the command provably runs at least this long (a lower bound, not a margin)
	heldFor := time.Since(held)
	releaseFIFO(t, fifo)

	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])
	msgs := c.Since(mark)
	require.Equal(t, []string{"after\n"}, deltaText(t, msgs, "call_1"), "one delta, for the output after the yield only")
	require.Empty(t, notificationsFor(t, msgs, "item/commandExecution/terminalInteraction", "call_1"), "an empty poll is no interaction")
	fl := flow(t, msgs)
	iDelta := indexOf(fl, "item/commandExecution/outputDelta")
	require.Greater(t, iDelta, indexOf(fl, "item/started:commandExecution"))
	require.Equal(t, "item/completed:commandExecution", fl[iDelta+1], "%v", fl)

	started, completed := itemEvents(t, msgs, "call_1")
	require.Len(t, started, 1)
	require.Len(t, completed, 1)
	require.Equal(t, m[1], started[0]["processId"], "the processId is the session id")
	require.Equal(t, "completed", completed[0]["status"])
	require.Equal(t, float64(0), completed[0]["exitCode"])
	require.Equal(t, "before\nafter\n", completed[0]["aggregatedOutput"])
	require.GreaterOrEqual(t, completed[0]["durationMs"], float64(heldFor.Milliseconds()))

	second := callOutput(t, mm, "call_2")
	require.Regexp(t, execTextRE, second)
	require.True(t, strings.HasSuffix(second, "\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nafter\n"), second)
	_, completed2 := itemEvents(t, msgs, "call_2")
	require.Empty(t, completed2, "write_stdin has no item of its own")
}

func TestExecTTYWriteStdinAnswersRead(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		execCall("call_1", map[string]any{"cmd": "read x; echo got:$x", "tty": true, "yield_time_ms": 500}),
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("write_stdin", "call_2",
			map[string]any{"session_id": "{{capture_int:session ID (\\d+)}}", "chars": "hi\n", "yield_time_ms": 30000})}},
		finalMessage("finished"),
	)
	c := startIsolated(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "run it")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])
	msgs := c.Since(mark)

	first := callOutput(t, mm, "call_1")
	m := sessionIDRE.FindStringSubmatch(first)
	require.NotNil(t, m, first)
	second := callOutput(t, mm, "call_2")
	require.Contains(t, second, "\nProcess exited with code 0\n")
	require.True(t, strings.HasSuffix(second, "Output:\nhi\r\ngot:hi\r\n"), "%q", second)

	require.Equal(t, "hi\r\ngot:hi\r\n", strings.Join(deltaText(t, msgs, "call_1"), ""), "the tty echo and the answer, with CRLF")
	inter := notificationsFor(t, msgs, "item/commandExecution/terminalInteraction", "call_1")
	require.Len(t, inter, 1)
	require.Equal(t, "hi\n", inter[0]["stdin"])
	require.Equal(t, m[1], inter[0]["processId"])
	require.Equal(t, tid, inter[0]["threadId"])

	// reference order: the deltas, then the interaction, then the completion
	fl := flow(t, msgs)
	iInter := indexOf(fl, "item/commandExecution/terminalInteraction")
	require.Greater(t, iInter, lastIndexOf(fl, "item/commandExecution/outputDelta"), "%v", fl)
	require.Equal(t, "item/completed:commandExecution", fl[iInter+1], "%v", fl)
	_, completed := itemEvents(t, msgs, "call_1")
	require.Len(t, completed, 1)
	require.Equal(t, "completed", completed[0]["status"])
	require.Equal(t, "hi\r\ngot:hi\r\n", completed[0]["aggregatedOutput"])
}

func TestWriteStdinUnknownSession(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("write_stdin", "call_1", map[string]any{"session_id": 999999, "chars": ""})}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("write_stdin", "call_2", map[string]any{"session_id": 999999, "chars": "x"})}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("write_stdin", "call_3", `{"chars":`)}},
		finalMessage("ok"),
	)
	c := startIsolated(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "poll")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])
	require.Equal(t, "write_stdin failed: Unknown process id 999999", callOutput(t, mm, "call_1"))
	require.Equal(t, "write_stdin failed: Unknown process id 999999", callOutput(t, mm, "call_2"))
	require.Contains(t, callOutput(t, mm, "call_3"), "failed to parse function arguments")
	require.NotContains(t, flow(t, c.Since(mark)), "item/started:commandExecution")
}

func TestExecCommandBadArguments(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		execCall("call_1", map[string]any{"cmd": ""}),
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_2", `{"cmd": 5}`)}},
		finalMessage("ok"),
	)
	c := startIsolated(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "bad")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])
	require.NotEmpty(t, callOutput(t, mm, "call_1"))
	require.Contains(t, callOutput(t, mm, "call_2"), "failed to parse function arguments")
}

// descendants lists the live (non-zombie) processes below pid, from /proc.
func descendants(t *testing.T, root int) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	parent := map[int]int{}
	info := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(raw)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		info[pid] = strings.ReplaceAll(string(cmd), "\x00", " ")
	}
	out := map[int]string{}
	for pid := range parent {
		for p, n := parent[pid], 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == root {
				out[pid] = info[pid]
				break
			}
		}
	}
	return out
}

func TestNoProcessLeftAfterServerCloses(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		execCall("call_1", map[string]any{"cmd": "sleep 60", "yield_time_ms": 250}),
		execCall("call_2", map[string]any{"cmd": "sleep 61 & sleep 62", "yield_time_ms": 250, "tty": true}),
		finalMessage("left running"),
	)
	c := startIsolated(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "background")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	require.Regexp(t, sessionIDRE, callOutput(t, mm, "call_1"))
	require.Regexp(t, sessionIDRE, callOutput(t, mm, "call_2"))
	me := os.Getpid()
	var before map[int]string
	// the shells may not have started their sleeps yet on a loaded machine: wait for them
	require.Eventually(t, func() bool {
		before = descendants(t, me)
		sleeps := 0
		for _, cmd := range before {
			if strings.HasPrefix(cmd, "sleep 6") {
				sleeps++
			}
		}
		return sleeps == 3
	}, 2*time.Minute, 20*time.Millisecond, "the background commands run: %v", lazy(func() any { return before }))

	c.Close()
	var left map[int]string
	require.Eventually(t, func() bool {
		left = descendants(t, me)
		return len(left) == 0
	}, 2*time.Minute, 50*time.Millisecond, "processes left after the server closed: %v", lazy(func() any { return left }))
}

type lazy func() any

func (l lazy) String() string { return fmt.Sprint(l()) }

func TestExecCommandSpawnFailure(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		execCall("call_1", map[string]any{"cmd": "echo hi", "workdir": "/nonexistent/dir"}),
		execCall("call_2", map[string]any{"cmd": "echo hi", "shell": "/nonexistent/shell"}),
		finalMessage("ok"),
	)
	c := startIsolated(t, apptest.Options{Model: mm, SandboxMode: "danger-full-access"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "fail to spawn")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	msgs := c.Since(mark)
	const reason = "Failed to create unified exec process: No such file or directory (os error 2)"
	require.Equal(t, `exec_command failed: CreateProcess { message: "Rejected(\"`+reason+`\")" }`, callOutput(t, mm, "call_1"))
	started, completed := itemEvents(t, msgs, "call_1")
	require.Len(t, started, 1)
	require.Len(t, completed, 1)
	require.Equal(t, "unifiedExecStartup", started[0]["source"])
	require.Nil(t, started[0]["processId"])
	require.Equal(t, "/nonexistent/dir", started[0]["cwd"])
	require.Equal(t, "failed", completed[0]["status"])
	require.Equal(t, float64(-1), completed[0]["exitCode"])
	require.Equal(t, reason, completed[0]["aggregatedOutput"])
	require.Nil(t, completed[0]["processId"])
	// an unknown shell falls back to /bin/sh, as the reference does, and the item shows it
	require.True(t, strings.HasSuffix(callOutput(t, mm, "call_2"), "Process exited with code 0\nOriginal token count: 1\nOutput:\nhi\n"))
	started2, _ := itemEvents(t, msgs, "call_2")
	require.Len(t, started2, 1)
	require.Equal(t, "/bin/sh -lc 'echo hi'", started2[0]["command"])
}

// TestExecInterruptKeepsProcessRunning is load-independent: the thread is paused until the command
// wrote "start" (inside the startup window, so not streamed), and the command then waits on a FIFO the
// test opens only after the turn was interrupted, so "end" is written after the interrupt.
func TestExecInterruptKeepsProcessRunning(t *testing.T) {
	fifo, marker := fifoAndMarker(t)
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": fmt.Sprintf("echo start; touch %s; read x < %s; echo end", marker, fifo), "yield_time_ms": 600000}), finalMessage("must not be requested"))
	c := startIsolated(t, apptest.Options{Model: mm, SandboxMode: "danger-full-access"})
	c.Initialize(true)
	tid := c.StartThread(nil)
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
	mark := c.Mark()
	turnID := c.StartTurn(tid, "run")
	waitForFile(t, marker)
	require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid))
	waitCommandStarted(c, "call_1")
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": turnID}, nil)
	require.Equal(t, "interrupted", c.WaitTurnCompleted()["status"])
	releaseFIFO(t, fifo)
	// as in the reference, the process outlives the interrupted turn and its item completes later
	done := c.WaitNotification("item/completed", nil)
	item := decodeMap(t, done.Params)["item"].(map[string]any)
	require.Equal(t, "call_1", item["id"])
	require.Equal(t, "completed", item["status"])
	require.Equal(t, "start\nend\n", item["aggregatedOutput"])
	msgs := c.Since(mark)
	require.Equal(t, []string{"end\n"}, deltaText(t, msgs, "call_1"), "output after the interrupt streams")
	fl := flow(t, msgs)
	require.Equal(t, []string{"thread/status/changed:idle", "turn/completed", "item/commandExecution/outputDelta", "item/completed:commandExecution"}, fl[len(fl)-4:])
	require.Len(t, mm.ResponseRequests(), 1)
}

func TestWriteStdinToPipeSessionAndBackgroundCompletion(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		execCall("call_1", map[string]any{"cmd": "sleep 1; echo end", "yield_time_ms": 250}),
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("write_stdin", "call_2",
			map[string]any{"session_id": "{{capture_int:session ID (\\d+)}}", "chars": "x\n"})}},
		finalMessage("left running"),
	)
	c := startIsolated(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "run")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	require.Equal(t, "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open", callOutput(t, mm, "call_2"))
	done := c.WaitNotification("item/completed", nil)
	item := decodeMap(t, done.Params)["item"].(map[string]any)
	require.Equal(t, "call_1", item["id"], "the background process completes its item after the turn")
	require.Equal(t, "end\n", item["aggregatedOutput"])
	require.Equal(t, []string{"end\n"}, deltaText(t, c.Since(mark), "call_1"))
	require.Empty(t, notificationsFor(t, c.Since(mark), "item/commandExecution/terminalInteraction", "call_1"), "a refused write is no interaction")
}

func TestExecOutputStreamsAfterStartup(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "echo early; sleep 0.8; echo late", "yield_time_ms": 10000}), finalMessage("ok"))
	c := startIsolated(t, apptest.Options{Model: mm, SandboxMode: "danger-full-access"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "run")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	msgs := c.Since(mark)
	// the reference announces the process ~150 ms after the spawn and streams what comes later, also
	// while the first exec_command call still collects
	deltas := deltaText(t, msgs, "call_1")
	require.NotEmpty(t, deltas)
	require.Equal(t, "late\n", deltas[len(deltas)-1])
	require.Contains(t, []string{"late\n", "early\nlate\n"}, strings.Join(deltas, ""))
	fl := flow(t, msgs)
	require.Less(t, indexOf(fl, "item/started:commandExecution"), indexOf(fl, "item/commandExecution/outputDelta"))
	require.Equal(t, "item/completed:commandExecution", fl[lastIndexOf(fl, "item/commandExecution/outputDelta")+1])
	require.True(t, strings.HasSuffix(callOutput(t, mm, "call_1"), "Process exited with code 0\nOriginal token count: 3\nOutput:\nearly\nlate\n"))
}

func TestExecEmptyOutputIsNull(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "exit 3"}), finalMessage("ok"))
	c := startIsolated(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "quiet")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	_, completed := itemEvents(t, c.Since(mark), "call_1")
	require.Len(t, completed, 1)
	require.Equal(t, "failed", completed[0]["status"])
	require.Equal(t, float64(3), completed[0]["exitCode"])
	v, present := completed[0]["aggregatedOutput"]
	require.True(t, present)
	require.Nil(t, v, "an empty transcript is null, as in the reference")
	require.True(t, strings.HasSuffix(callOutput(t, mm, "call_1"), "Process exited with code 3\nOriginal token count: 0\nOutput:\n"))
}

// TestClassicShellNotOffered: with features.unified_exec = false the reference still offers exec_command
// and answers a shell_command call "unsupported call", with no item for the client.
func TestClassicShellNotOffered(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("shell_command", "call_1",
		map[string]any{"command": "echo hi"})}}, finalMessage("ok"))
	c := startIsolated(t, apptest.Options{Model: mm, SandboxMode: "danger-full-access", Config: "[features]\nunified_exec = false\n"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "shell")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	tools := string(mustJSON(t, mm.ResponseRequests()[0].Body["tools"]))
	require.Contains(t, tools, `"name":"exec_command"`)
	require.NotContains(t, tools, `"name":"shell_command"`)
	require.Equal(t, "unsupported call: shell_command", callOutput(t, mm, "call_1"))
	started, completed := itemEvents(t, c.Since(mark), "call_1")
	require.Empty(t, started)
	require.Empty(t, completed)
}
