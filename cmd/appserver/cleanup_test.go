package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/mockmodel"
)

// sleepers lists the live processes whose command line is exactly `sleep n`.
func sleepers(n string) []int {
	want := []byte("sleep\x00" + n + "\x00")
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err != nil || !bytes.Equal(b, want) {
			continue
		}
		if alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// detachingTurn starts the binary with a thread whose turn runs cmd through exec_command under the
// sandbox mode, and returns once the turn completed with the command still running (yield 300 ms).
func detachingTurn(t *testing.T, sandboxMode, cmd string) (*proc, any) {
	t.Helper()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": cmd, "yield_time_ms": 300})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	home := writeConfig(t, fmt.Sprintf(`model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = %q
thread_unload_delay_secs = 1
[model_providers.mock]
name = "mock"
base_url = %q
request_max_retries = 0
stream_max_retries = 0
`, sandboxMode, mm.URL()))
	p := startBinary(t, home)
	p.request(0, "initialize", map[string]any{"clientInfo": map[string]any{"name": "t", "version": "1"}})
	res := p.request(1, "thread/start", map[string]any{})
	tid := res["result"].(map[string]any)["thread"].(map[string]any)["id"]
	p.request(3, "turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "go"}}})
	p.waitFor(func(m map[string]any) bool { return m["method"] == "turn/completed" })
	return p, tid
}

// detachAll backgrounds a sleep with redirected output, a setsid one and a double-forked setsid one,
// then keeps a foreground sleep running.
func detachAll(n string) string {
	return fmt.Sprintf(`sleep %[1]s >/dev/null 2>&1 & setsid sleep %[1]s >/dev/null 2>&1 & (setsid sh -c 'sleep %[1]s & exit' >/dev/null 2>&1 &); sleep %[1]s`, n)
}

func requireSleepers(t *testing.T, n string, want int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(sleepers(n)) == want }, time.Minute, 10*time.Millisecond,
		"want %d `sleep %s` processes, have %v", want, n, sleepers(n))
}

// TestSIGKILLMidCommandKillsEverything: SIGKILL of the server while a command runs kills the command and
// every descendant, detached or not (the reference: 0 of 20 survive), sandboxed or not.
func TestSIGKILLMidCommandKillsEverything(t *testing.T) {
	for _, mode := range []string{"danger-full-access", "workspace-write", "read-only"} {
		t.Run(mode, func(t *testing.T) {
			n := strconv.Itoa(200000 + rand.IntN(700000))
			p, _ := detachingTurn(t, mode, detachAll(n))
			requireSleepers(t, n, 4)
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
			<-p.done
			requireSleepers(t, n, 0)
		})
	}
}

// TestDetachedChildrenDieWithThreadAndServer: what a finished command left running (a background job with
// redirected output, setsid daemons) lives until its thread closes, and nothing outlives the server.
func TestDetachedChildrenDieWithThreadAndServer(t *testing.T) {
	t.Run("thread close", func(t *testing.T) {
		n := strconv.Itoa(200000 + rand.IntN(700000))
		p, tid := detachingTurn(t, "danger-full-access", detachAll(n)+" & exit 0")
		requireSleepers(t, n, 4)
		res := p.request(4, "thread/unsubscribe", map[string]any{"threadId": tid})
		require.Equal(t, "unsubscribed", res["result"].(map[string]any)["status"])
		p.waitFor(func(m map[string]any) bool { return m["method"] == "thread/closed" })
		requireSleepers(t, n, 0)
	})
	t.Run("stdin EOF", func(t *testing.T) {
		n := strconv.Itoa(200000 + rand.IntN(700000))
		p, _ := detachingTurn(t, "danger-full-access", detachAll(n)+" & exit 0")
		requireSleepers(t, n, 4)
		require.NoError(t, p.stdin.Close())
		select {
		case err := <-p.done:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Fatal("server did not exit")
		}
		// Killed before the exit; a loaded machine may show a SIGKILLed sleeper a moment longer.
		require.Eventually(t, func() bool { return len(sleepers(n)) == 0 }, time.Minute, 10*time.Millisecond,
			"nothing outlives the server: %v; %s", sleepers(n), strings.TrimSpace(p.stderr.String()))
	})
}
