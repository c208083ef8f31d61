package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// TestSandboxDenialIsAFailedItem: a command the sandbox refuses is shown as a failed commandExecution item
// (started, then completed with its exit code and output) and goes back to the model; no approval to rerun
// it unsandboxed is asked, under on-request as under never, as the reference's unified exec does.
func TestSandboxDenialIsAFailedItem(t *testing.T) {
	for _, policy := range []string{"on-request", "never"} {
		t.Run(policy, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(execCall("call_w", map[string]any{"cmd": "echo hi > made.txt", "yield_time_ms": 30000}))
			mm.Enqueue(finalMessage("done"))
			c := startIsolated(t, apptest.Options{Model: mm, ApprovalPolicy: policy, SandboxMode: "read-only"})
			var asked []string
			c.SetAnswerer(func(m apptest.Message) (any, int, string, bool) {
				asked = append(asked, m.Method)
				return map[string]any{"decision": "accept"}, 0, "", true
			})
			c.Initialize(true)
			tid := c.StartThread(nil)
			mark := c.Mark()
			c.StartTurn(tid, "write a file")
			require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
			require.Empty(t, asked, "no approval is asked")
			_, err := os.Stat(filepath.Join(c.Work, "made.txt"))
			require.True(t, os.IsNotExist(err), "nothing written")
			out := callOutput(t, mm, "call_w")
			require.Equal(t, 1, execExitCode(t, out))
			var events []string
			for _, m := range c.Since(mark) {
				if m.Method != "item/started" && m.Method != "item/completed" {
					continue
				}
				var p struct {
					Item struct {
						ID, Status string
						ExitCode   *int `json:"exitCode"`
					}
				}
				require.NoError(t, json.Unmarshal(m.Params, &p))
				if p.Item.ID == "call_w" {
					ev := m.Method + " " + p.Item.Status
					if p.Item.ExitCode != nil {
						ev += " " + strconv.Itoa(*p.Item.ExitCode)
					}
					events = append(events, ev)
				}
			}
			require.Equal(t, []string{"item/started inProgress", "item/completed failed 1"}, events)
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
