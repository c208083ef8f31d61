package server_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/sandbox"
)

var exitCodeRE = regexp.MustCompile(`\nProcess exited with code (-?\d+)\n`)

func execExitCode(t *testing.T, out string) int {
	t.Helper()
	m := exitCodeRE.FindStringSubmatch(out)
	require.NotNil(t, m, "the command did not finish: %s", out)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// TestSandboxThroughExecCommand runs the same writes and a loopback connect under each sandbox mode.
func TestSandboxThroughExecCommand(t *testing.T) {
	if ok, reason := sandbox.Available(); !ok {
		t.Skipf("the sandbox is unavailable on this machine: %s", reason)
	}
	for _, tc := range []struct {
		mode                                  string
		inWork, inTmp, outside, git, connects bool
	}{
		{mode: "read-only"},
		{mode: "workspace-write", inWork: true, inTmp: true},
		{mode: "danger-full-access", inWork: true, inTmp: true, outside: true, git: true, connects: true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { _ = ln.Close() })
			var accepted atomic.Int32
			go func() { // ends when the listener is closed at cleanup
				for {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					accepted.Add(1)
					_ = conn.Close()
				}
			}()
			port := ln.Addr().(*net.TCPAddr).Port
			outside := filepath.Join(outsideDir(t), "outside.txt")
			inTmp := filepath.Join(t.TempDir(), "tmp.txt")

			mm := mockmodel.New(t)
			calls := []struct{ id, cmd string }{
				{"call_outside", "echo o > " + outside}, // denied in both sandboxed modes
				{"call_work", "echo w > work.txt"},
				{"call_tmp", "echo t > " + inTmp},
				{"call_git", "echo g > .git/config"},
				{"call_net", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port)},
			}
			for _, cl := range calls {
				mm.Enqueue(execCall(cl.id, map[string]any{"cmd": cl.cmd, "yield_time_ms": 30000}))
			}
			mm.Enqueue(finalMessage("done"))
			c := startIsolated(t, apptest.Options{Model: mm, SandboxMode: tc.mode})
			require.NoError(t, os.Mkdir(filepath.Join(c.Work, ".git"), 0o755))
			c.Initialize(true)
			tid := c.StartThread(nil)
			mark := c.Mark()
			c.StartTurn(tid, "probe the sandbox")
			require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
			msgs := c.Since(mark)

			check := func(callID string, allowed bool, path string) {
				t.Helper()
				out := callOutput(t, mm, callID)
				code := execExitCode(t, out)
				if allowed {
					require.Equal(t, 0, code, "%s: %s", callID, out)
				} else {
					require.NotEqual(t, 0, code, "%s: %s", callID, out)
					require.Regexp(t, `(Permission denied|Read-only file system|Operation not permitted)\n$`, out, "%s is refused by the sandbox", callID)
				}
				// as in the reference, a sandbox denial is shown like any failed command
				started, completed := itemEvents(t, msgs, callID)
				require.Len(t, started, 1, callID)
				require.Len(t, completed, 1, callID)
				if allowed {
					require.Equal(t, "completed", completed[0]["status"], callID)
				} else {
					require.Equal(t, "failed", completed[0]["status"], callID)
				}
				if path != "" {
					_, err := os.Stat(path)
					require.Equal(t, allowed, err == nil, "%s: file %s exists=%v", callID, path, err == nil)
				}
			}
			check("call_work", tc.inWork, filepath.Join(c.Work, "work.txt"))
			check("call_tmp", tc.inTmp, inTmp)
			check("call_outside", tc.outside, outside)
			check("call_git", tc.git, filepath.Join(c.Work, ".git", "config"))
			check("call_net", tc.connects, "")
			if tc.connects {
				require.Contains(t, callOutput(t, mm, "call_net"), "Output:\nconnected\n")
				require.Eventually(t, func() bool { return accepted.Load() == 1 }, 5e9, 1e7)
			} else {
				require.Zero(t, accepted.Load(), "network access is off")
			}
		})
	}
}
