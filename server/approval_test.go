package server_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/stopwatch/stopwatchtest"
)

const (
	rejectedText       = `exec_command failed: CreateProcess { message: "Rejected(\"rejected by user\")" }`
	approvalFailedText = `exec_command failed: CreateProcess { message: "Rejected(\"approval request failed\")" }`
	cmdApproval        = "item/commandExecution/requestApproval"
	patchApproval      = "item/fileChange/requestApproval"
)

// decide answers every approval request with a fixed decision.
func decide(decision any) func(apptest.Message) (any, int, string, bool) {
	return func(m apptest.Message) (any, int, string, bool) {
		return map[string]any{"decision": decision}, 0, "", true
	}
}

// approvalClient starts a server whose thread runs under approvalPolicy "untrusted" (every command asks).
func approvalClient(t *testing.T, mm *mockmodel.Server, opts apptest.Options, threadExtra map[string]any) (*apptest.Client, string) {
	t.Helper()
	opts.Model = mm
	c := startIsolated(t, opts)
	c.Initialize(false)
	extra := map[string]any{"approvalPolicy": "untrusted"}
	for k, v := range threadExtra {
		extra[k] = v
	}
	return c, c.StartThread(extra)
}

func serverRequests(msgs []apptest.Message, method string) []apptest.Message {
	var out []apptest.Message
	for _, m := range msgs {
		if m.IsServerRequest() && m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// approvalFlow is the reference order of an answered command approval inside a turn.
var approvalFlow = []string{
	"thread/status/changed:active[waitingOnApproval]", "item/started:commandExecution",
	"request:" + cmdApproval, "serverRequest/resolved", "thread/status/changed:active", "item/completed:commandExecution",
}

// refusalFlow is the reference order of a refused command (decline, error reply, timeout): the item
// completes before the waitingOnApproval flag drops.
var refusalFlow = []string{
	"thread/status/changed:active[waitingOnApproval]", "item/started:commandExecution",
	"request:" + cmdApproval, "serverRequest/resolved", "item/completed:commandExecution", "thread/status/changed:active",
}

func turnFlow(middle ...string) []string {
	out := []string{"warning", "thread/status/changed:active", "turn/started", "item/started:userMessage", "item/completed:userMessage"}
	out = append(out, middle...)
	return append(out, "item/started:agentMessage", "item/completed:agentMessage", "thread/status/changed:idle", "turn/completed")
}

func TestApprovalAccept(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "echo hello", "yield_time_ms": 30000, "sandbox_permissions": "require_escalated", "justification": "to greet"}), finalMessage("done"))
	c := startIsolated(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(map[string]any{"approvalPolicy": "untrusted"})
	c.SetAnswerer(decide("accept"))
	release := holdStartupWindow(t, c, tid, "call_1") // "hello" comes inside the window: no delta
	mark := c.Mark()
	turnID := c.StartTurn(tid, "run")
	release()
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	msgs := c.Since(mark)
	want := turnFlow(approvalFlow...) // an experimental client is also told the read state changed
	idle := slices.Index(want, "thread/status/changed:idle")
	want = slices.Insert(want, idle, "thread/readState/changed")
	require.Equal(t, want, flow(t, msgs))

	reqs := serverRequests(msgs, cmdApproval)
	require.Len(t, reqs, 1)
	p := decodeMap(t, reqs[0].Params)
	require.Equal(t, "command", p["kind"])
	require.Equal(t, tid, p["threadId"])
	require.Equal(t, turnID, p["turnId"])
	require.Equal(t, "call_1", p["itemId"])
	require.Equal(t, "local", p["environmentId"])
	require.Equal(t, "/bin/bash -lc 'echo hello'", p["command"])
	require.Equal(t, c.Work, p["cwd"])
	require.Equal(t, "to greet", p["reason"])
	require.Equal(t, []any{"echo", "hello"}, p["proposedExecpolicyAmendment"])
	require.Equal(t, []any{"accept", map[string]any{"acceptWithExecpolicyAmendment": map[string]any{"execpolicy_amendment": []any{"echo", "hello"}}}, "cancel"}, p["availableDecisions"])
	resolved := notificationsOf(t, msgs, "serverRequest/resolved")
	require.Len(t, resolved, 1)
	require.Equal(t, tid, resolved[0]["threadId"])
	require.EqualValues(t, reqs[0].ID, resolved[0]["requestId"])

	started, completed := itemEvents(t, msgs, "call_1")
	require.Len(t, started, 1)
	require.Len(t, completed, 1)
	require.Nil(t, started[0]["processId"], "no process before the approval")
	require.Equal(t, "agent", started[0]["source"])
	require.Equal(t, p["startedAtMs"], started[0]["startedAtMs"])
	require.Equal(t, "completed", completed[0]["status"])
	require.Equal(t, "unifiedExecStartup", completed[0]["source"])
	require.NotNil(t, completed[0]["processId"])
	require.Equal(t, "hello\n", completed[0]["aggregatedOutput"])
	require.Contains(t, callOutput(t, mm, "call_1"), "Process exited with code 0\n")
}

func notificationsOf(t *testing.T, msgs []apptest.Message, method string) []map[string]any {
	var out []map[string]any
	for _, m := range msgs {
		if m.IsNotification() && m.Method == method {
			out = append(out, decodeMap(t, m.Params))
		}
	}
	return out
}

func TestApprovalAcceptForSessionIsReused(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		execCall("call_1", map[string]any{"cmd": "echo again"}),
		execCall("call_2", map[string]any{"cmd": "echo again"}),
		execCall("call_3", map[string]any{"cmd": "echo other"}),
		finalMessage("done"),
	)
	c, tid := approvalClient(t, mm, apptest.Options{}, nil)
	c.SetAnswerer(decide("acceptForSession"))
	mark := c.Mark()
	c.StartTurn(tid, "run twice")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	msgs := c.Since(mark)
	reqs := serverRequests(msgs, cmdApproval)
	require.Len(t, reqs, 2, "the identical command is not asked again; a different one is")
	require.Equal(t, "call_1", decodeMap(t, reqs[0].Params)["itemId"])
	require.Equal(t, "call_3", decodeMap(t, reqs[1].Params)["itemId"])
	for _, id := range []string{"call_1", "call_2", "call_3"} {
		_, completed := itemEvents(t, msgs, id)
		require.Len(t, completed, 1, id)
		require.Equal(t, "completed", completed[0]["status"], id)
		require.Contains(t, callOutput(t, mm, id), "Process exited with code 0\n", id)
	}
}

func TestApprovalExecpolicyAmendmentRemembersPrefix(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		execCall("call_1", map[string]any{"cmd": "echo one two"}),
		execCall("call_2", map[string]any{"cmd": "echo three"}),
		execCall("call_3", map[string]any{"cmd": "printf x"}),
		finalMessage("done"),
	)
	c, tid := approvalClient(t, mm, apptest.Options{}, nil)
	c.SetAnswerer(func(m apptest.Message) (any, int, string, bool) {
		if decodeMap(t, m.Params)["itemId"] == "call_1" {
			return map[string]any{"decision": map[string]any{"acceptWithExecpolicyAmendment": map[string]any{"execpolicy_amendment": []string{"echo"}}}}, 0, "", true
		}
		return map[string]any{"decision": "accept"}, 0, "", true
	})
	mark := c.Mark()
	c.StartTurn(tid, "prefix")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	msgs := c.Since(mark)
	reqs := serverRequests(msgs, cmdApproval)
	require.Len(t, reqs, 2, "`echo three` matches the approved prefix; `printf x` does not")
	require.Equal(t, "call_1", decodeMap(t, reqs[0].Params)["itemId"])
	require.Equal(t, "call_3", decodeMap(t, reqs[1].Params)["itemId"])
	require.True(t, strings.HasSuffix(callOutput(t, mm, "call_2"), "Output:\nthree\n"))
	require.True(t, strings.HasSuffix(callOutput(t, mm, "call_3"), "Output:\nx"))
}

// "Yes, and don't ask again for commands that start with …" saves the prefix to $CODEX_HOME/rules/default.rules,
// where a later thread finds it, and tells the model after the call's output, as the reference does.
func TestApprovalExecpolicyAmendmentIsSaved(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		execCall("call_1", map[string]any{"cmd": "echo one"}),
		finalMessage("done"),
		execCall("call_2", map[string]any{"cmd": "echo again"}),
		finalMessage("done again"),
	)
	c, tid := approvalClient(t, mm, apptest.Options{}, nil)
	c.SetAnswerer(func(m apptest.Message) (any, int, string, bool) {
		return map[string]any{"decision": map[string]any{"acceptWithExecpolicyAmendment": map[string]any{"execpolicy_amendment": []string{"echo"}}}}, 0, "", true
	})
	mark := c.Mark()
	c.StartTurn(tid, "save it")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	require.Len(t, serverRequests(c.Since(mark), cmdApproval), 1)

	rules, err := os.ReadFile(filepath.Join(c.Home, "rules", "default.rules"))
	require.NoError(t, err)
	require.Equal(t, "prefix_rule(pattern=[\"echo\"], decision=\"allow\")\n", string(rules))

	input, ok := mm.ResponseRequests()[1].Body["input"].([]any)
	require.True(t, ok)
	require.GreaterOrEqual(t, len(input), 2)
	out, note := input[len(input)-2].(map[string]any), input[len(input)-1].(map[string]any)
	require.Equal(t, "function_call_output", out["type"])
	require.Equal(t, "developer", note["role"])
	require.Equal(t, []any{map[string]any{"type": "input_text", "text": "Approved command prefix saved:\n- [\"echo\"]"}}, note["content"])

	// A new thread runs `echo …` without asking.
	tid2 := c.StartThread(map[string]any{"approvalPolicy": "untrusted"})
	mark = c.Mark()
	c.StartTurn(tid2, "again")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	require.Empty(t, serverRequests(c.Since(mark), cmdApproval), "the saved prefix approves the command")
	require.True(t, strings.HasSuffix(callOutput(t, mm, "call_2"), "Output:\nagain\n"))
}

func TestApprovalDecline(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "touch declined.txt"}), finalMessage("ok, not running it"))
	c, tid := approvalClient(t, mm, apptest.Options{}, map[string]any{"sandbox": "danger-full-access"})
	c.SetAnswerer(decide("decline"))
	mark := c.Mark()
	c.StartTurn(tid, "run")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"], "the turn continues after a decline")
	msgs := c.Since(mark)
	require.Equal(t, turnFlow(refusalFlow...), flow(t, msgs))
	_, completed := itemEvents(t, msgs, "call_1")
	require.Len(t, completed, 1)
	require.Equal(t, "declined", completed[0]["status"])
	require.Nil(t, completed[0]["exitCode"])
	require.Nil(t, completed[0]["processId"])
	require.Equal(t, rejectedText, callOutput(t, mm, "call_1"))
	require.NoFileExists(t, filepath.Join(c.Work, "declined.txt"))
	require.Len(t, mm.ResponseRequests(), 2)
}

func TestApprovalCancelInterruptsTurn(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "touch cancelled.txt"}), finalMessage("must not be requested"))
	c, tid := approvalClient(t, mm, apptest.Options{}, map[string]any{"sandbox": "danger-full-access"})
	c.SetAnswerer(decide("cancel"))
	mark := c.Mark()
	c.StartTurn(tid, "run")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "interrupted", turn["status"])
	msgs := c.Since(mark)
	require.Equal(t, []string{
		"warning", "thread/status/changed:active", "turn/started", "item/started:userMessage", "item/completed:userMessage",
		"thread/status/changed:active[waitingOnApproval]", "item/started:commandExecution", "request:" + cmdApproval,
		"serverRequest/resolved", "item/completed:commandExecution", "thread/status/changed:active",
		"thread/status/changed:idle", "turn/completed",
	}, flow(t, msgs))
	_, completed := itemEvents(t, msgs, "call_1")
	require.Len(t, completed, 1)
	require.Equal(t, "declined", completed[0]["status"])
	time.Sleep(300 * time.Millisecond)
	require.Len(t, mm.ResponseRequests(), 1, "no further model request after a cancel")
	require.Equal(t, 1, mm.Pending())
	require.NoFileExists(t, filepath.Join(c.Work, "cancelled.txt"))
}

func TestApprovalErrorReplyFailsItem(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "touch failed.txt"}), finalMessage("it failed"))
	c, tid := approvalClient(t, mm, apptest.Options{}, map[string]any{"sandbox": "danger-full-access"})
	c.SetAnswerer(func(apptest.Message) (any, int, string, bool) { return nil, -32000, "client cannot decide", true })
	mark := c.Mark()
	c.StartTurn(tid, "run")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"], "an error reply is a failure, not a hang")
	msgs := c.Since(mark)
	require.Equal(t, turnFlow(refusalFlow...), flow(t, msgs))
	_, completed := itemEvents(t, msgs, "call_1")
	require.Len(t, completed, 1)
	require.Equal(t, "failed", completed[0]["status"])
	require.Equal(t, approvalFailedText, callOutput(t, mm, "call_1"))
	require.NoFileExists(t, filepath.Join(c.Work, "failed.txt"))
}

func TestApprovalPendingThenInterrupt(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "touch never.txt"}), finalMessage("must not be requested"))
	c, tid := approvalClient(t, mm, apptest.Options{}, map[string]any{"sandbox": "danger-full-access"})
	c.SetAnswerer(func(apptest.Message) (any, int, string, bool) { return nil, 0, "", false })
	mark := c.Mark()
	turnID := c.StartTurn(tid, "run")
	req := c.WaitServerRequest(cmdApproval)
	// while pending, the thread shows waitingOnApproval
	waiting := c.Since(mark)
	require.Contains(t, flow(t, waiting), "thread/status/changed:active[waitingOnApproval]")
	require.Empty(t, notificationsOf(t, waiting, "serverRequest/resolved"))

	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": turnID}, nil)
	turn := c.WaitTurnCompleted()
	require.Equal(t, "interrupted", turn["status"])
	c.WaitNotification("serverRequest/resolved", nil)
	time.Sleep(300 * time.Millisecond)
	msgs := c.Since(mark)
	fl := flow(t, msgs)
	require.Greater(t, indexOf(fl, "serverRequest/resolved"), indexOf(fl, "turn/completed"), "the request is cleared after the turn completed: %v", fl)
	_, completed := itemEvents(t, msgs, "call_1")
	require.Empty(t, completed, "the item never completes")
	require.Len(t, mm.ResponseRequests(), 1)

	// a late answer is harmless and runs nothing
	c.Respond(req.ID, map[string]any{"decision": "accept"})
	time.Sleep(200 * time.Millisecond)
	require.NoFileExists(t, filepath.Join(c.Work, "never.txt"))
	require.Len(t, mm.ResponseRequests(), 1)
}

func TestApprovalDisconnectWhilePending(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "touch orphan.txt"}), finalMessage("after disconnect"))
	c, tid := approvalClient(t, mm, apptest.Options{}, map[string]any{"sandbox": "danger-full-access"})
	c.SetAnswerer(func(apptest.Message) (any, int, string, bool) { return nil, 0, "", false })
	c.StartTurn(tid, "run")
	c.WaitServerRequest(cmdApproval)
	done := make(chan struct{})
	go func() {
		c.Close() // stdin EOF, then the server's own Close
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(apptest.WaitLimit):
		t.Fatal("the server hangs on a pending approval after the client left")
	}
	require.NoFileExists(t, filepath.Join(c.Work, "orphan.txt"), "an unanswered approval never grants")
}

func TestApprovalTimeoutDeclines(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "touch timeout.txt"}), finalMessage("timed out"))
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	c, tid := approvalClient(t, mm, apptest.Options{Clock: clock, Config: "approval_timeout_ms = 300"}, map[string]any{"sandbox": "danger-full-access"})
	c.SetAnswerer(func(apptest.Message) (any, int, string, bool) { return nil, 0, "", false })
	mark := c.Mark()
	c.StartTurn(tid, "run")
	c.WaitServerRequest(cmdApproval)
	clock.Advance(300 * time.Millisecond) // the timeout fires only once the request is out
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	msgs := c.Since(mark)
	require.Equal(t, turnFlow(refusalFlow...), flow(t, msgs))
	_, completed := itemEvents(t, msgs, "call_1")
	require.Len(t, completed, 1)
	require.Equal(t, "declined", completed[0]["status"])
	require.Equal(t, rejectedText, callOutput(t, mm, "call_1"))
	require.NoFileExists(t, filepath.Join(c.Work, "timeout.txt"))
}

func TestOnRequestEscalationAsks(t *testing.T) {
	mm := mockmodel.New(t)
	outside := outsideDir(t)
	target := filepath.Join(outside, "escalated.txt")
	mm.Enqueue(
		execCall("call_1", map[string]any{"cmd": "echo sandboxed"}),
		execCall("call_2", map[string]any{"cmd": "echo x > " + target, "sandbox_permissions": "require_escalated", "justification": "write outside"}),
		finalMessage("done"),
	)
	c := startIsolated(t, apptest.Options{Model: mm, ApprovalPolicy: "on-request", SandboxMode: "workspace-write"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.SetAnswerer(decide("accept"))
	mark := c.Mark()
	c.StartTurn(tid, "escalate")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := serverRequests(c.Since(mark), cmdApproval)
	require.Len(t, reqs, 1, "only the escalated command asks")
	p := decodeMap(t, reqs[0].Params)
	require.Equal(t, "call_2", p["itemId"])
	require.Equal(t, "write outside", p["reason"])
	require.Contains(t, callOutput(t, mm, "call_2"), "Process exited with code 0\n")
	got, err := os.ReadFile(target)
	require.NoError(t, err, "the approved escalation runs outside the sandbox")
	require.Equal(t, "x\n", string(got))
}

// --- apply_patch ---

// patchModel is a catalogue model: the reference offers apply_patch by model, to none outside the catalogue.
const patchModel = "gpt-5.5"

func patchCall(callID, patch string) mockmodel.Response {
	return mockmodel.Response{Items: []mockmodel.Item{mockmodel.CustomToolCall("apply_patch", callID, patch)}}
}

func TestApplyPatchAddUpdateDeleteMove(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(patchCall("call_1", `*** Begin Patch
*** Add File: hello.txt
+hello
*** Update File: upd.txt
@@
 one
-two
+TWO
*** Delete File: del.txt
*** Update File: old.txt
*** Move to: sub/new.txt
@@
-old
+new
*** End Patch`), finalMessage("patched"))
	c := startIsolated(t, apptest.Options{Model: mm, ModelID: patchModel, SandboxMode: "workspace-write"})
	require.NoError(t, os.WriteFile(filepath.Join(c.Work, "upd.txt"), []byte("one\ntwo\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(c.Work, "del.txt"), []byte("bye\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(c.Work, "old.txt"), []byte("old\n"), 0o644))
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "patch")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(c.Work, name))
		require.NoError(t, err, name)
		return string(b)
	}
	require.Equal(t, "hello\n", read("hello.txt"))
	require.Equal(t, "one\nTWO\n", read("upd.txt"))
	require.Equal(t, "new\n", read("sub/new.txt"))
	require.NoFileExists(t, filepath.Join(c.Work, "del.txt"))
	require.NoFileExists(t, filepath.Join(c.Work, "old.txt"))

	require.Regexp(t, `^Exit code: 0\nWall time: [0-9.]+ seconds\nOutput:\nSuccess. Updated the following files:\nA hello.txt\nM upd.txt\nM sub/new.txt\nD del.txt\n$`, callOutput(t, mm, "call_1"))
	msgs := c.Since(mark)
	// the diff follows the patch, then the end of each model response of the turn (as in the reference)
	require.Equal(t, []string{"thread/status/changed:active", "turn/started", "item/started:userMessage", "item/completed:userMessage",
		"item/started:fileChange", "item/completed:fileChange", "turn/diff/updated", "turn/diff/updated",
		"item/started:agentMessage", "item/completed:agentMessage", "turn/diff/updated", "thread/status/changed:idle", "turn/completed"}, flow(t, msgs))
	started, completed := itemEvents(t, msgs, "call_1")
	require.Len(t, started, 1)
	require.Equal(t, "inProgress", started[0]["status"])
	require.Len(t, completed, 1)
	require.Equal(t, "completed", completed[0]["status"])
	kinds := map[string]string{}
	for _, ch := range completed[0]["changes"].([]any) {
		m := ch.(map[string]any)
		k := m["kind"].(map[string]any)
		kinds[filepath.Base(m["path"].(string))] = k["type"].(string)
		if filepath.Base(m["path"].(string)) == "old.txt" {
			require.Equal(t, filepath.Join(c.Work, "sub/new.txt"), k["move_path"])
		}
	}
	require.Equal(t, map[string]string{"hello.txt": "add", "upd.txt": "update", "del.txt": "delete", "old.txt": "update"}, kinds)
	diffs := notificationsOf(t, msgs, "turn/diff/updated")
	require.Len(t, diffs, 3)
	diff := diffs[0]["diff"].(string)
	require.Contains(t, diff, "+hello")
	require.Contains(t, diff, "-two\n+TWO")
}

func TestApplyPatchHunkMismatch(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(patchCall("call_1", `*** Begin Patch
*** Update File: keep.txt
@@
-not there
+replacement
*** End Patch`), patchCall("call_2", "not a patch"), finalMessage("it failed"))
	c := startIsolated(t, apptest.Options{Model: mm, ModelID: patchModel, SandboxMode: "workspace-write"})
	require.NoError(t, os.WriteFile(filepath.Join(c.Work, "keep.txt"), []byte("original\n"), 0o644))
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "patch")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"], "a failed patch goes back to the model")
	out := callOutput(t, mm, "call_1")
	require.Contains(t, out, "keep.txt", "the error names the file")
	require.Contains(t, out, "not there")
	require.Contains(t, callOutput(t, mm, "call_2"), "Begin Patch")
	b, err := os.ReadFile(filepath.Join(c.Work, "keep.txt"))
	require.NoError(t, err)
	require.Equal(t, "original\n", string(b), "nothing changed")
	require.Empty(t, notificationsOf(t, c.Since(mark), "turn/diff/updated"))
}

// outsideDir is a directory outside every writable root (/tmp and $TMPDIR are writable roots).
func outsideDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "appserver-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func TestApplyPatchOutsideRootsAsks(t *testing.T) {
	for _, tc := range []struct {
		decision string
		status   string
		written  bool
	}{
		{"accept", "completed", true},
		{"decline", "declined", false},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			outside := outsideDir(t)
			target := filepath.Join(outside, "out.txt")
			mm := mockmodel.New(t)
			mm.Enqueue(patchCall("call_1", "*** Begin Patch\n*** Add File: "+target+"\n+outside\n*** End Patch"), finalMessage("done"))
			c := startIsolated(t, apptest.Options{Model: mm, ModelID: patchModel, ApprovalPolicy: "on-request", SandboxMode: "workspace-write"})
			c.Initialize(false)
			tid := c.StartThread(nil)
			c.SetAnswerer(decide(tc.decision))
			mark := c.Mark()
			turnID := c.StartTurn(tid, "patch outside")
			require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
			msgs := c.Since(mark)
			reqs := serverRequests(msgs, patchApproval)
			require.Len(t, reqs, 1)
			p := decodeMap(t, reqs[0].Params)
			require.Equal(t, "call_1", p["itemId"])
			require.Equal(t, turnID, p["turnId"])
			fl := flow(t, msgs)
			i := indexOf(fl, "item/started:fileChange")
			require.Equal(t, []string{"item/started:fileChange", "thread/status/changed:active[waitingOnApproval]", "request:" + patchApproval,
				"serverRequest/resolved"}, fl[i:i+4])
			require.ElementsMatch(t, []string{"thread/status/changed:active", "item/completed:fileChange"}, fl[i+4:i+6])
			_, completed := itemEvents(t, msgs, "call_1")
			require.Len(t, completed, 1)
			require.Equal(t, tc.status, completed[0]["status"])
			out := callOutput(t, mm, "call_1")
			if tc.written {
				b, err := os.ReadFile(target)
				require.NoError(t, err)
				require.Equal(t, "outside\n", string(b))
				require.Contains(t, out, "Success. Updated the following files:\nA "+target+"\n")
			} else {
				require.NoFileExists(t, target)
				require.Equal(t, "patch rejected by user", out)
			}
		})
	}
}

// TestEscalationApprovedForSessionStaysUnsandboxed repeats an escalated write outside the writable roots
// after acceptForSession: the second run is not asked again and still runs outside the sandbox.
func TestEscalationApprovedForSessionStaysUnsandboxed(t *testing.T) {
	for _, tc := range []struct{ tool, config, argName string }{
		{"exec_command", "", "cmd"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			outside := outsideDir(t)
			cmd := "echo x >> " + filepath.Join(outside, "log.txt")
			call := func(id string) mockmodel.Response {
				return mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall(tc.tool, id,
					map[string]any{tc.argName: cmd, "sandbox_permissions": "require_escalated"})}}
			}
			mm := mockmodel.New(t)
			mm.Enqueue(call("call_1"), call("call_2"), finalMessage("done"))
			c := startIsolated(t, apptest.Options{Model: mm, ApprovalPolicy: "on-request", SandboxMode: "workspace-write", Config: tc.config})
			c.Initialize(false)
			tid := c.StartThread(nil)
			c.SetAnswerer(decide("acceptForSession"))
			mark := c.Mark()
			c.StartTurn(tid, "escalate twice")
			require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
			require.Len(t, serverRequests(c.Since(mark), cmdApproval), 1)
			b, err := os.ReadFile(filepath.Join(outside, "log.txt"))
			require.NoError(t, err)
			require.Equal(t, "x\nx\n", string(b), "both runs wrote outside the workspace: %s", callOutput(t, mm, "call_2"))
		})
	}
}

func TestUntrustedAsksEvenForSafeCommands(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "pwd"}), execCall("call_2", map[string]any{"cmd": "pwd && ls > out.txt"}),
		execCall("call_3", map[string]any{"cmd": "ls *.txt"}), finalMessage("done"))
	c, tid := approvalClient(t, mm, apptest.Options{}, nil)
	c.SetAnswerer(decide("decline"))
	mark := c.Mark()
	c.StartTurn(tid, "inspect")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := serverRequests(c.Since(mark), cmdApproval)
	require.Len(t, reqs, 3, "untrusted asks for every command, as the reference does")
	proposals := [][]any{}
	for _, r := range reqs {
		proposals = append(proposals, decodeMap(t, r.Params)["proposedExecpolicyAmendment"].([]any))
	}
	require.Equal(t, [][]any{{"pwd"}, {"/bin/bash", "-lc", "pwd && ls > out.txt"}, {"/bin/bash", "-lc", "ls *.txt"}}, proposals)
}

// TestEscalationArgumentChecks covers the argument refusals the reference makes before any item.
func TestEscalationArgumentChecks(t *testing.T) {
	for _, tc := range []struct {
		name, policy, args, want string
	}{
		{"justification alone", "on-request", `{"cmd": "echo b", "justification": ""}`,
			"`justification` requires an explicit `sandbox_permissions`; use `sandbox_permissions: \"require_escalated\"` for unsandboxed execution, or omit `justification`."},
		{"unknown variant", "on-request", `{"cmd": "echo c", "sandbox_permissions": "bogus"}`,
			"failed to parse function arguments: unknown variant `bogus`, expected one of `use_default`, `require_escalated`, `with_additional_permissions` at line 1 column 48"},
		{"additional permissions", "on-request", `{"cmd": "echo d", "sandbox_permissions": "with_additional_permissions"}`,
			"additional permissions are disabled; enable `features.exec_permission_approvals` before using `with_additional_permissions`"},
		{"escalation under never", "never", `{"cmd": "echo x", "sandbox_permissions": "require_escalated"}`,
			"approval policy is Never; reject command \u2014 you cannot ask for escalated permissions if the approval policy is Never"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_1", tc.args)}},
				execCall("call_2", map[string]any{"cmd": "echo ok", "sandbox_permissions": "use_default", "justification": "fine with an explicit value"}),
				finalMessage("done"))
			c := startIsolated(t, apptest.Options{Model: mm, ApprovalPolicy: tc.policy, SandboxMode: "workspace-write"})
			c.Initialize(false)
			tid := c.StartThread(nil)
			c.SetAnswerer(decide("accept"))
			mark := c.Mark()
			c.StartTurn(tid, "args")
			require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
			require.Equal(t, tc.want, callOutput(t, mm, "call_1"))
			started, completed := itemEvents(t, c.Since(mark), "call_1")
			require.Empty(t, started)
			require.Empty(t, completed)
			require.Empty(t, serverRequests(c.Since(mark), cmdApproval))
			require.Contains(t, callOutput(t, mm, "call_2"), "Process exited with code 0\n")
		})
	}
}

// TestApprovedCommandsRunUnsandboxed: under untrusted + read-only, what the user approved (at the prompt,
// for the session, or through an execpolicy prefix) runs outside the sandbox, as in the reference.
func TestApprovedCommandsRunUnsandboxed(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": "echo x >> f1.txt"}), execCall("call_2", map[string]any{"cmd": "echo x >> f1.txt"}),
		execCall("call_3", map[string]any{"cmd": "touch a b"}), execCall("call_4", map[string]any{"cmd": "touch c"}), finalMessage("done"))
	c, tid := approvalClient(t, mm, apptest.Options{}, nil) // read-only
	c.SetAnswerer(func(m apptest.Message) (any, int, string, bool) {
		switch decodeMap(t, m.Params)["itemId"] {
		case "call_1":
			return map[string]any{"decision": "acceptForSession"}, 0, "", true
		case "call_3":
			return map[string]any{"decision": map[string]any{"acceptWithExecpolicyAmendment": map[string]any{"execpolicy_amendment": []string{"touch"}}}}, 0, "", true
		}
		return map[string]any{"decision": "decline"}, 0, "", true
	})
	mark := c.Mark()
	c.StartTurn(tid, "write")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	require.Len(t, serverRequests(c.Since(mark), cmdApproval), 2, "call_2 is cached, call_4 matches the prefix")
	for _, id := range []string{"call_1", "call_2", "call_3", "call_4"} {
		require.Contains(t, callOutput(t, mm, id), "Process exited with code 0\n", id)
	}
	b, err := os.ReadFile(filepath.Join(c.Work, "f1.txt"))
	require.NoError(t, err)
	require.Equal(t, "x\nx\n", string(b))
	for _, f := range []string{"a", "b", "c"} {
		require.FileExists(t, filepath.Join(c.Work, f))
	}
}

func TestParallelApprovalsRaiseTheFlagOnce(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{
		mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "echo one"}),
		mockmodel.FunctionCall("exec_command", "call_2", map[string]any{"cmd": "echo two"}),
	}}, finalMessage("done"))
	c, tid := approvalClient(t, mm, apptest.Options{}, nil)
	c.SetAnswerer(func(apptest.Message) (any, int, string, bool) { return nil, 0, "", false })
	mark := c.Mark()
	c.StartTurn(tid, "two at once")
	first := c.WaitServerRequest(cmdApproval)
	second := c.WaitServerRequest(cmdApproval)
	c.Respond(first.ID, map[string]any{"decision": "accept"})
	c.Respond(second.ID, map[string]any{"decision": "accept"})
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	fl := flow(t, c.Since(mark))
	count := func(s string) int {
		n := 0
		for _, x := range fl {
			if x == s {
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, count("thread/status/changed:active[waitingOnApproval]"), "%v", fl)
	require.Equal(t, 2, count("thread/status/changed:active"), "turn start and the end of both approvals: %v", fl)
	require.Equal(t, 2, count("serverRequest/resolved"))
	iFlagDown := lastIndexOf(fl, "thread/status/changed:active")
	require.Greater(t, iFlagDown, lastIndexOf(fl, "serverRequest/resolved"), "the flag drops after the last answer")
	for _, id := range []string{"call_1", "call_2"} {
		require.Contains(t, callOutput(t, mm, id), "Process exited with code 0\n")
	}
}

// An answer that does not decode to a decision is a failed approval request, not a user decline, as
// the reference (observed: {"decision":42} → item failed, "Rejected(\"approval request failed\")").
func TestApprovalUndecodableAnswerFails(t *testing.T) {
	for _, answer := range []any{42, "maybe", nil} {
		mm := mockmodel.New(t)
		mm.Enqueue(execCall("call_1", map[string]any{"cmd": "touch undecodable.txt"}), finalMessage("it failed"))
		c, tid := approvalClient(t, mm, apptest.Options{}, map[string]any{"sandbox": "danger-full-access"})
		c.SetAnswerer(decide(answer))
		mark := c.Mark()
		c.StartTurn(tid, "run")
		require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
		msgs := c.Since(mark)
		require.Equal(t, turnFlow(refusalFlow...), flow(t, msgs))
		_, completed := itemEvents(t, msgs, "call_1")
		require.Len(t, completed, 1)
		require.Equal(t, "failed", completed[0]["status"], "answer %v", answer)
		require.Equal(t, approvalFailedText, callOutput(t, mm, "call_1"))
		require.NoFileExists(t, filepath.Join(c.Work, "undecodable.txt"))
	}
}
