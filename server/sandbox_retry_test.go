package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// TestSandboxDenialAsksToRetryUnsandboxed: under on-request, a command the sandbox refuses leads to an
// approval request; accepting reruns it outside the sandbox, declining leaves it refused.
func TestSandboxDenialAsksToRetryUnsandboxed(t *testing.T) {
	// The denial counts whenever the command exits within the call, not only inside the startup window:
	// "late" fails well after it (a slow machine looks the same).
	for _, tc := range []struct {
		name, cmd, decision string
		written             bool
	}{
		{"accept", "echo hi > made.txt", "accept", true},
		{"decline", "echo hi > made.txt", "decline", false},
		{"late/accept", "sleep 0.5; echo hi > made.txt", "accept", true},
		{"late/decline", "sleep 0.5; echo hi > made.txt", "decline", false},
	} {
		// The early cases pause the thread until the retry is asked: the startup window cannot run out,
		// so the denial falls inside it whatever the load. The late ones run unpaused with the longest
		// yield, and the command's end comes after the window.
		early := !strings.HasPrefix(tc.name, "late/")
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(execCall("call_w", map[string]any{"cmd": tc.cmd, "yield_time_ms": 30000}))
			mm.Enqueue(finalMessage("done"))
			c := startIsolated(t, apptest.Options{Model: mm, ApprovalPolicy: "on-request", SandboxMode: "read-only"})
			var reasons []string
			c.SetAnswerer(func(m apptest.Message) (any, int, string, bool) {
				var p struct{ Reason *string }
				_ = json.Unmarshal(m.Params, &p)
				if p.Reason != nil {
					reasons = append(reasons, *p.Reason)
				}
				return map[string]any{"decision": tc.decision}, 0, "", true
			})
			c.Initialize(true)
			tid := c.StartThread(nil)
			if early {
				require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
			}
			c.StartTurn(tid, "write a file")
			if early {
				c.WaitServerRequest(cmdApproval)
				require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid))
			}
			require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
			require.Equal(t, []string{"command failed; retry without sandbox?"}, reasons)
			_, err := os.Stat(filepath.Join(c.Work, "made.txt"))
			require.Equal(t, tc.written, err == nil)
			out := callOutput(t, mm, "call_w")
			if tc.written {
				require.Equal(t, 0, execExitCode(t, out))
			} else {
				require.Contains(t, out, "rejected by user")
			}
		})
	}
}

// TestWorkdirOutsideWorkspaceIsNotWritable: under workspace-write, exec_command with a workdir outside the
// workspace runs there but may not write there (it used to become a writable root).
func TestWorkdirOutsideWorkspaceIsNotWritable(t *testing.T) {
	// /tmp and $TMPDIR are excluded from the writable roots, so a temporary directory is "outside"
	// wherever the checkout and the test's temporary directories live.
	outside, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_w", map[string]any{"cmd": "pwd; echo hi > made.txt", "workdir": outside, "yield_time_ms": 10000}))
	mm.Enqueue(finalMessage("done"))
	c := startIsolated(t, apptest.Options{Model: mm, ApprovalPolicy: "never", SandboxMode: "workspace-write",
		Config: "[sandbox_workspace_write]\nexclude_slash_tmp = true\nexclude_tmpdir_env_var = true\n"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "write a file")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	out := callOutput(t, mm, "call_w")
	require.Contains(t, out, outside+"\n", "the command ran in its workdir")
	require.NotEqual(t, 0, execExitCode(t, out))
	_, err = os.Stat(filepath.Join(outside, "made.txt"))
	require.True(t, os.IsNotExist(err), "nothing written outside the workspace")
}
