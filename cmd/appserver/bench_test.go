package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/sandbox"
)

// benchBinary is the binary the start-up benchmarks run: APPSERVER_BENCH_BIN (e.g. a release build,
// `make build`) or the one TestMain built.
func benchBinary() string {
	if p := os.Getenv("APPSERVER_BENCH_BIN"); p != "" {
		return p
	}
	return binPath
}

// reportProcessCost reports the children's CPU time per op (user + system, steadier than wall time
// on a shared machine) and the largest peak RSS of one of them.
func reportProcessCost(b *testing.B, cpu time.Duration, maxRSSKiB int64) {
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(maxRSSKiB)/1024, "peak-rss-MiB")
}

// processCost is the CPU time of an exited child including the descendants it waited for (the
// helper's inner stage and the command: wait4 reports both), and its peak RSS in KiB.
func processCost(ps *os.ProcessState) (time.Duration, int64) {
	ru, _ := ps.SysUsage().(*syscall.Rusage)
	if ru == nil {
		return ps.UserTime() + ps.SystemTime(), 0
	}
	return ps.UserTime() + ps.SystemTime(), ru.Maxrss
}

// BenchmarkSandboxedTrue runs `true` under the read-only sandbox policy through the binary acting as
// the sandbox helper: the per-tool-call cost of a sandboxed exec_command apart from the shell.
func BenchmarkSandboxedTrue(b *testing.B) {
	if ok, reason := sandbox.Available(); !ok {
		b.Skip("sandbox unavailable: " + reason)
	}
	argv, err := sandbox.WrapArgv(benchBinary(), sandbox.Policy{Kind: sandbox.ReadOnly}, b.TempDir(), []string{"/bin/true"})
	require.NoError(b, err)
	var cpu time.Duration
	var peak int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(argv[0], argv[1:]...)
		require.NoError(b, cmd.Run())
		c, rss := processCost(cmd.ProcessState)
		cpu += c
		peak = max(peak, rss)
	}
	b.StopTimer()
	reportProcessCost(b, cpu, peak)
}

// BenchmarkStartInitialize starts the server and times spawn → `initialize` response, then closes
// stdin and waits for the exit; it reports the server's CPU time per start and its peak RSS.
func BenchmarkStartInitialize(b *testing.B) {
	home, userHome := b.TempDir(), b.TempDir()
	var cpu time.Duration
	var peak int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(benchBinary())
		cmd.Env = append(os.Environ(), "CODEX_HOME="+home, "HOME="+userHome)
		cmd.Dir = userHome
		stdin, err := cmd.StdinPipe()
		require.NoError(b, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(b, err)
		require.NoError(b, cmd.Start())
		_, err = stdin.Write([]byte(`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"0"}}}` + "\n"))
		require.NoError(b, err)
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(b, err)
		require.True(b, strings.Contains(line, `"id":1`) && strings.Contains(line, `"result"`), line)
		b.StopTimer()
		require.NoError(b, stdin.Close())
		require.NoError(b, cmd.Wait())
		c, rss := processCost(cmd.ProcessState)
		cpu += c
		peak = max(peak, rss)
		b.StartTimer()
	}
	b.StopTimer()
	reportProcessCost(b, cpu, peak)
}
