package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/mockmodel"
)

// waitMethod reads lines until a notification of method arrives.
func (c *wireClient) waitMethod(method string) {
	want := []byte(`"method":"` + method + `"`)
	for {
		line, err := c.out.ReadBytes('\n')
		require.NoError(c.tb, err)
		if bytes.Contains(line, want) {
			return
		}
	}
}

// BenchmarkOneMessageTurn times what `appserver-bench turn` measures, in process: turn/start → turn/completed of a
// one-message turn on one thread (the mock answers each model request at once with one message). cpu-ms/op
// (server, client and mock) and allocations are steadier than wall time on a shared machine.
func BenchmarkOneMessageTurn(b *testing.B) { benchmarkOneMessageTurn(b, false) }

// BenchmarkOneMessageTurnIndexed is BenchmarkOneMessageTurn after a thread/list, as a UI sends at start: the
// thread index is open, so every turn's end also updates it.
func BenchmarkOneMessageTurnIndexed(b *testing.B) { benchmarkOneMessageTurn(b, true) }

func benchmarkOneMessageTurn(b *testing.B, indexed bool) {
	home := filepath.Join(b.TempDir(), "codex_home")
	require.NoError(b, os.MkdirAll(home, 0o755))
	mm := mockmodel.New(b)
	c := startWire(b, home, mm)
	defer c.close()
	var started struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	require.NoError(b, json.Unmarshal(c.call("thread/start", map[string]any{}), &started))
	if indexed {
		c.call("thread/list", map[string]any{})
	}
	noDelay := 0
	turn := func() {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}, EventDelayMs: &noDelay})
		c.call("turn/start", map[string]any{"threadId": started.Thread.ID,
			"input": []any{map[string]any{"type": "text", "text": "hello"}}})
		c.waitMethod("turn/completed")
	}
	turn()
	turn()
	runtime.GC()
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		turn()
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkToolTurn times a turn whose model response makes ten exec_command `true` calls under the
// read-only sandbox (as `appserver-bench turn --tools 10`), with the thread's shell snapshot ready.
// child-cpu-ms/op is the CPU of the sandbox helpers and shells.
func BenchmarkToolTurn(b *testing.B) {
	root := b.TempDir()
	b.Setenv("HOME", root)
	home := filepath.Join(root, "codex_home")
	require.NoError(b, os.MkdirAll(home, 0o755))
	mm := mockmodel.New(b)
	c := startWire(b, home, mm)
	defer c.close()
	var started struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	require.NoError(b, json.Unmarshal(c.call("thread/start", map[string]any{}), &started))
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(home, "shell_snapshots", "*.sh")); len(m) > 0 {
			break
		}
		require.True(b, time.Now().Before(deadline), "no shell snapshot")
	}
	noDelay := 0
	turn := func() {
		var calls []mockmodel.Item
		for i := range 10 {
			calls = append(calls, mockmodel.FunctionCall("exec_command", fmt.Sprintf("call_%d", i), map[string]any{"cmd": "true"}))
		}
		mm.Enqueue(mockmodel.Response{Items: calls, EventDelayMs: &noDelay},
			mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}, EventDelayMs: &noDelay})
		c.call("turn/start", map[string]any{"threadId": started.Thread.ID,
			"input": []any{map[string]any{"type": "text", "text": "hello"}}})
		c.waitMethod("turn/completed")
	}
	turn()
	runtime.GC()
	b.ReportAllocs()
	cpu0, child0 := cpuTime(b), childCPUTime(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		turn()
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64((childCPUTime(b)-child0).Microseconds())/1000/float64(b.N), "child-cpu-ms/op")
}

func childCPUTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
