package server_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	protocol "appserver/protocol/v2"
)

func processExited(t *testing.T, c *apptest.Client, handle string) protocol.ProcessExitedNotification {
	t.Helper()
	m := c.WaitNotification("process/exited", func(p json.RawMessage) bool {
		var v protocol.ProcessExitedNotification
		return json.Unmarshal(p, &v) == nil && v.ProcessHandle == handle
	})
	var v protocol.ProcessExitedNotification
	require.NoError(t, json.Unmarshal(m.Params, &v))
	return v
}

func TestProcessMethods(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	ok := func(method string, params map[string]any) {
		t.Helper()
		m := c.Request(method, params)
		require.Nil(t, m.Error, "%s: %s", method, m.Raw)
		require.JSONEq(t, `{}`, string(m.Result))
	}

	ok("process/spawn", map[string]any{"command": []string{"sh", "-c", "echo out; echo err >&2; read x; echo got $x; exit 4"},
		"cwd": c.Work, "processHandle": "p1", "streamStdin": true, "streamStdoutStderr": true})
	d := c.WaitNotification("process/outputDelta", nil)
	require.Contains(t, string(d.Params), `"processHandle":"p1"`)
	ok("process/writeStdin", map[string]any{"processHandle": "p1", "deltaBase64": base64.StdEncoding.EncodeToString([]byte("hi\n"))})
	ex := processExited(t, c, "p1")
	require.Equal(t, int32(4), ex.ExitCode)
	require.Empty(t, ex.Stdout, "streamed output is not repeated at exit")
	requireError(t, c.Request("process/writeStdin", map[string]any{"processHandle": "p1", "deltaBase64": "aGkK"}), -32600, `no active process for process handle "p1"`)

	ok("process/spawn", map[string]any{"command": []string{"sh", "-c", "echo collected"}, "cwd": c.Work, "processHandle": "p2"})
	ex = processExited(t, c, "p2")
	require.Equal(t, int32(0), ex.ExitCode)
	require.Equal(t, "collected\n", ex.Stdout)
	require.Equal(t, false, *ex.OutputDrainTimedOut)

	ok("process/spawn", map[string]any{"command": []string{"sleep", "30"}, "cwd": c.Work, "processHandle": "p3"})
	requireError(t, c.Request("process/spawn", map[string]any{"command": []string{"sleep", "30"}, "cwd": c.Work, "processHandle": "p3"}), -32600,
		`duplicate active process handle: "p3"`)
	ok("process/kill", map[string]any{"processHandle": "p3"})
	require.Equal(t, int32(137), processExited(t, c, "p3").ExitCode)
	requireError(t, c.Request("process/kill", map[string]any{"processHandle": "nope"}), -32600, `no active process for process handle "nope"`)

	requireError(t, c.Request("process/spawn", map[string]any{"command": []string{}, "cwd": c.Work, "processHandle": "p4"}), -32600, "command must not be empty")
	requireError(t, c.Request("process/spawn", map[string]any{"command": []string{"nonexistent-cmd-xyz"}, "cwd": c.Work, "processHandle": "p5"}), -32603,
		"failed to spawn process: No such file or directory (os error 2)")

	ok("process/spawn", map[string]any{"command": []string{"sh", "-c", "read x"}, "cwd": c.Work, "processHandle": "p6", "tty": true, "size": map[string]any{"rows": 10, "cols": 40}})
	ok("process/resizePty", map[string]any{"processHandle": "p6", "size": map[string]any{"rows": 20, "cols": 80}})
	ok("process/kill", map[string]any{"processHandle": "p6"})
	processExited(t, c, "p6")
}
