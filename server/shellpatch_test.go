package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// A model without the apply_patch tool (every model outside the catalogue, in the reference) patches
// through exec_command: `apply_patch <<'EOF'` … `EOF`. The reference runs that as the patch it is (a
// fileChange item and a fileChange approval, no command), frames the report as exec_command output, and
// under untrusted asks even inside the writable roots. Seen with testdata/conformance apply_patch_approval.
func TestExecCommandApplyPatchHeredocIsAPatch(t *testing.T) {
	heredoc := func(patch string) map[string]any {
		return map[string]any{"cmd": "apply_patch <<'EOF'\n" + patch + "EOF\n", "yield_time_ms": 5000}
	}
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", heredoc("*** Begin Patch\n*** Update File: a.txt\n@@\n-hello\n+hello world\n*** End Patch\n")), finalMessage("patched"),
		execCall("call_2", heredoc("*** Begin Patch\n*** Add File: b.txt\n+new\n*** End Patch\n")), finalMessage("declined"),
		execCall("call_3", map[string]any{"cmd": "cd sub && apply_patch <<EOF\n*** Begin Patch\n*** Add File: c.txt\n+c\n*** End Patch\nEOF"}), finalMessage("in sub"))
	c, tid := approvalClient(t, mm, apptest.Options{SandboxMode: "workspace-write"}, nil)
	require.NoError(t, os.WriteFile(filepath.Join(c.Work, "a.txt"), []byte("hello\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(c.Work, "sub"), 0o755))

	c.SetAnswerer(decide("accept"))
	mark := c.Mark()
	c.StartTurn(tid, "patch a.txt")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	msgs := c.Since(mark)
	b, err := os.ReadFile(filepath.Join(c.Work, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello world\n", string(b))
	require.Regexp(t, `^Wall time: 0\.0000 seconds\nOutput:\nExit code: 0\nWall time: [0-9.]+ seconds\nOutput:\nSuccess. Updated the following files:\nM a.txt\n$`, callOutput(t, mm, "call_1"))
	require.Len(t, serverRequests(msgs, cmdApproval), 0, "no command approval")
	require.Len(t, serverRequests(msgs, patchApproval), 1, "untrusted asks inside the writable roots too")
	// the diff follows the patch, then the end of each model response of the turn
	require.Equal(t, []string{"warning", "thread/status/changed:active", "turn/started", "item/started:userMessage", "item/completed:userMessage",
		"item/started:fileChange", "thread/status/changed:active[waitingOnApproval]", "request:" + patchApproval,
		"serverRequest/resolved", "thread/status/changed:active", "item/completed:fileChange", "turn/diff/updated", "turn/diff/updated",
		"item/started:agentMessage", "item/completed:agentMessage", "turn/diff/updated", "thread/status/changed:idle", "turn/completed"}, flow(t, msgs))

	c.SetAnswerer(decide("decline"))
	mark = c.Mark()
	c.StartTurn(tid, "add b.txt")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	msgs = c.Since(mark)
	require.NoFileExists(t, filepath.Join(c.Work, "b.txt"))
	require.Equal(t, "patch rejected by user", callOutput(t, mm, "call_2"))
	// a refused patch drops the waitingOnApproval flag before its item completes (unlike a command)
	require.Equal(t, turnFlow("item/started:fileChange", "thread/status/changed:active[waitingOnApproval]", "request:"+patchApproval,
		"serverRequest/resolved", "thread/status/changed:active", "item/completed:fileChange"), flow(t, msgs))

	c.SetAnswerer(decide("accept"))
	c.StartTurn(tid, "patch in sub")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	b, err = os.ReadFile(filepath.Join(c.Work, "sub", "c.txt"))
	require.NoError(t, err, "the patch applies in the directory of the cd")
	require.Equal(t, "c\n", string(b))
}
