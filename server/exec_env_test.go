package server_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// TestShellEnvCarriesThreadID checks that every command a thread runs sees CODEX_THREAD_ID set to the
// thread's id, overriding a value inherited from the server's own environment.
func TestShellEnvCarriesThreadID(t *testing.T) {
	for _, tc := range []struct {
		name, tool, config string
		args               map[string]any
	}{
		{"exec_command", "exec_command", "",
			map[string]any{"cmd": `echo "tid=$CODEX_THREAD_ID"`, "yield_time_ms": 10000}},
		{"exec_command tty", "exec_command", "",
			map[string]any{"cmd": `echo "tid=$CODEX_THREAD_ID"`, "yield_time_ms": 10000, "tty": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CODEX_THREAD_ID", "inherited-from-server")
			mm := mockmodel.New(t)
			mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall(tc.tool, "call_1", tc.args)}},
				finalMessage("ok"))
			c := startIsolated(t, apptest.Options{Model: mm, Config: tc.config})
			c.Initialize(false)
			tid := c.StartThread(nil)
			require.NotEmpty(t, tid)
			mark := c.Mark()
			c.StartTurn(tid, "print the thread id")
			require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

			_, completed := itemEvents(t, c.Since(mark), "call_1")
			require.Len(t, completed, 1)
			require.Equal(t, float64(0), completed[0]["exitCode"])
			// a PTY turns "\n" into "\r\n"
			require.Regexp(t, `^tid=`+regexp.QuoteMeta(tid)+`\r?\n$`, completed[0]["aggregatedOutput"])
			require.Contains(t, callOutput(t, mm, "call_1"), "tid="+tid)
		})
	}
}
