package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/sandbox"
	"appserver/shellsnapshot"
)

// snapshotHome sets a HOME whose login profile and bashrc export a variable each and count logins.
func snapshotHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SHELL", "/bin/bash")
	require.NoError(t, os.WriteFile(filepath.Join(home, ".bash_profile"),
		[]byte("echo login >> \"$HOME/logins\"\nexport FROM_PROFILE=profile-value\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".bashrc"),
		[]byte("export FROM_BASHRC=bashrc-value\nhello() { echo hi; }\n"), 0o644))
	return home
}

// waitSnapshot waits until a snapshot file of thread tid is in place (bounded only against a hang).
func waitSnapshot(t *testing.T, codexHome, tid string) string {
	t.Helper()
	deadline := time.Now().Add(apptest.WaitLimit)
	for {
		matches, _ := filepath.Glob(filepath.Join(codexHome, shellsnapshot.Dir, tid+".*.sh"))
		if len(matches) == 1 {
			return matches[0]
		}
		require.True(t, time.Now().Before(deadline), "no shell snapshot for %s", tid)
		time.Sleep(20 * time.Millisecond)
	}
}

func logins(t *testing.T, home string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "logins"))
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "login\n")
}

const snapshotProbe = `echo "$FROM_PROFILE $FROM_BASHRC $CODEX_THREAD_ID"; tr '\0' ' ' < /proc/$$/cmdline | cut -c1-12`

// TestShellSnapshotReachesCommands: with the snapshot ready, a model's `bash -lc` runs as `bash -c` that
// sources it (the bashrc's export only arrives that way; no further login), under every sandbox mode,
// the item still shows the command as the model asked.
func TestShellSnapshotReachesCommands(t *testing.T) {
	if ok, reason := sandbox.Available(); !ok {
		t.Skipf("the sandbox is unavailable on this machine: %s", reason)
	}
	for _, tc := range []struct{ name, mode string }{
		{"read-only", "read-only"},
		{"workspace-write", "workspace-write"},
		{"danger-full-access", "danger-full-access"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := snapshotHome(t)
			mm := mockmodel.New(t)
			mm.Enqueue(execCall("call_1", map[string]any{"cmd": snapshotProbe, "yield_time_ms": 30000}), finalMessage("ok"))
			c := apptest.Start(t, apptest.Options{Model: mm, SandboxMode: tc.mode})
			c.Initialize(false)
			tid := c.StartThread(nil)
			waitSnapshot(t, c.Home, tid)
			require.Equal(t, 1, logins(t, home), "the capture ran one login shell")

			mark := c.Mark()
			c.StartTurn(tid, "probe")
			require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
			_, completed := itemEvents(t, c.Since(mark), "call_1")
			require.Len(t, completed, 1)
			require.Equal(t, float64(0), completed[0]["exitCode"], completed[0]["aggregatedOutput"])
			require.Equal(t, "profile-value bashrc-value "+tid+"\n/bin/bash -c\n", completed[0]["aggregatedOutput"])
			require.True(t, strings.HasPrefix(completed[0]["command"].(string), "/bin/bash -lc "), completed[0]["command"])
			require.Equal(t, 1, logins(t, home), "the command did not run the login profile")
		})
	}
}

// TestShellSnapshotUserShell: `thread/shellCommand` uses the snapshot too (the reference does).
func TestShellSnapshotUserShell(t *testing.T) {
	home := snapshotHome(t)
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	tid := c.StartThread(nil)
	waitSnapshot(t, c.Home, tid)
	mark := c.Mark()
	require.Nil(t, c.Request("thread/shellCommand", map[string]any{"threadId": tid, "command": `echo "$FROM_BASHRC"`}).Error)
	m := c.WaitNotification("item/completed", func(p json.RawMessage) bool { return strings.Contains(string(p), "commandExecution") })
	var p struct {
		Item map[string]any `json:"item"`
	}
	require.NoError(t, json.Unmarshal(m.Params, &p))
	require.Equal(t, "bashrc-value\n", p.Item["aggregatedOutput"], c.Since(mark))
	require.Equal(t, 1, logins(t, home))
}

// TestShellSnapshotDeletedWithThread: the file goes when the thread is unloaded, and with the server.
func TestShellSnapshotDeletedWithThread(t *testing.T) {
	snapshotHome(t)
	c := apptest.Start(t, apptest.Options{Config: "thread_unload_delay_secs = 1"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	path := waitSnapshot(t, c.Home, tid)
	c.Result("thread/unsubscribe", map[string]any{"threadId": tid}, nil)
	c.WaitNotification("thread/closed", threadIDIs(tid))
	require.NoFileExists(t, path)

	other := c.StartThread(nil)
	path = waitSnapshot(t, c.Home, other)
	c.Close()
	require.NoFileExists(t, path)
}

// TestShellSnapshotFeatureOff: with [features] shell_snapshot = false nothing is captured and commands run
// in a login shell as before.
func TestShellSnapshotFeatureOff(t *testing.T) {
	home := snapshotHome(t)
	mm := mockmodel.New(t)
	mm.Enqueue(execCall("call_1", map[string]any{"cmd": snapshotProbe, "yield_time_ms": 30000}), finalMessage("ok"))
	c := apptest.Start(t, apptest.Options{Model: mm, SandboxMode: "danger-full-access", Config: "[features]\nshell_snapshot = false\n"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "probe")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	_, completed := itemEvents(t, c.Since(mark), "call_1")
	require.Len(t, completed, 1)
	require.Equal(t, "profile-value  "+tid+"\n/bin/bash -l\n", completed[0]["aggregatedOutput"])
	require.Equal(t, 1, logins(t, home), "the command ran the login profile")
	require.NoDirExists(t, filepath.Join(c.Home, shellsnapshot.Dir))
}
