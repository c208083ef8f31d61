package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"appserver/internal/pipesize"
)

// stdioServer is the binary serving stdio over pipes this test holds, read line by line.
type stdioServer struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	outR  *os.File
	out   *bufio.Reader
	next  int
	waitC chan error
}

func startStdioServer(tb testing.TB, bin string) *stdioServer {
	tb.Helper()
	outR, outW, err := os.Pipe()
	require.NoError(tb, err)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+tb.TempDir(), "HOME="+tb.TempDir())
	cmd.Dir = tb.TempDir()
	cmd.Stdout, cmd.Stderr = outW, io.Discard
	in, err := cmd.StdinPipe()
	require.NoError(tb, err)
	require.NoError(tb, cmd.Start())
	outW.Close()
	s := &stdioServer{cmd: cmd, in: in, outR: outR, out: bufio.NewReaderSize(outR, 1<<20), next: 1, waitC: make(chan error, 1)}
	go func() { s.waitC <- cmd.Wait() }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.waitC
		outR.Close()
	})
	s.call(tb, `"initialize","params":{"clientInfo":{"name":"t","version":"0"}}`, nil)
	return s
}

// call sends {"id":N,"method":<methodAndParams>} and returns the response line, passing every other
// line to other.
func (s *stdioServer) call(tb testing.TB, methodAndParams string, other func(line []byte)) []byte {
	tb.Helper()
	id := s.next
	s.next++
	_, err := fmt.Fprintf(s.in, "{\"id\":%d,\"method\":%s}\n", id, methodAndParams)
	require.NoError(tb, err)
	prefix := fmt.Appendf(nil, `{"id":%d,`, id)
	for {
		line, err := s.out.ReadSlice('\n')
		require.NoError(tb, err)
		if bytes.HasPrefix(line, prefix) {
			return line
		}
		if other != nil {
			other(line)
		}
	}
}

// stop closes stdin and waits for the exit; it returns the process state.
func (s *stdioServer) stop(tb testing.TB) *os.ProcessState {
	tb.Helper()
	require.NoError(tb, s.in.Close())
	select {
	case err := <-s.waitC:
		require.NoError(tb, err)
		s.waitC <- nil // for the cleanup
	case <-time.After(time.Minute):
		tb.Fatal("server did not exit on stdin EOF")
	}
	return s.cmd.ProcessState
}

// TestStdoutPipeGrown: when stdout is a pipe the server raises its capacity, so that streamed
// output runs ahead of the client's reads instead of stalling every 64 KiB.
func TestStdoutPipeGrown(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err == nil && os.Geteuid() != 0 {
		if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n < pipesize.Bulk {
			t.Skipf("pipe-max-size is %d here", n)
		}
	}
	s := startStdioServer(t, binPath)
	// The notification that follows initialize comes from the server once it serves stdio (the answer
	// itself may come from the early start, internal/early).
	for {
		line, err := s.out.ReadSlice('\n')
		require.NoError(t, err)
		if bytes.HasPrefix(line, []byte(`{"method":"remoteControl/status/changed",`)) {
			break
		}
	}
	n, err := unix.FcntlInt(s.outR.Fd(), unix.F_GETPIPE_SZ, 0)
	require.NoError(t, err)
	require.Equal(t, pipesize.Bulk, n)
}

// BenchmarkCommandExecStreamed moves 256 MiB of `head -c … /dev/zero` through a streamed command/exec
// of the real binary over stdio pipes, as `appserver-bench exec` does (APPSERVER_BENCH_BIN picks the
// binary, e.g. a release build). Besides MB/s it reports the CPU time per op of the server with the
// command it ran (from /proc, steadier than wall time on a shared machine) and of this client.
func BenchmarkCommandExecStreamed(b *testing.B) {
	const size = 256 << 20
	s := startStdioServer(b, benchBinary())
	pid := s.cmd.Process.Pid
	req := func(k int) string {
		return fmt.Sprintf(`"command/exec","params":{"command":["head","-c","%d","/dev/zero"],"processId":"bench-%d",`+
			`"streamStdoutStderr":true,"disableOutputCap":true,"disableTimeout":true,"sandboxPolicy":{"type":"dangerFullAccess"}}`, size, k)
	}
	method, key := []byte(`{"method":"command/exec/outputDelta",`), []byte(`"deltaBase64":"`)
	b.SetBytes(size)
	server0, client0 := procCPU(b, pid), selfCPU(b)
	k, deltas := 0, 0
	for b.Loop() {
		got := 0
		res := s.call(b, req(k), func(line []byte) {
			if !bytes.HasPrefix(line, method) {
				return // e.g. remoteControl/status/changed
			}
			i := bytes.Index(line, key)
			require.Positive(b, i, "%.200s", line)
			b64 := line[i+len(key):]
			b64 = b64[:bytes.IndexByte(b64, '"')]
			got += len(b64) / 4 * 3
			if bytes.HasSuffix(b64, []byte("==")) {
				got -= 2
			} else if bytes.HasSuffix(b64, []byte("=")) {
				got--
			}
			deltas++
		})
		k++
		require.Contains(b, string(res), `"result":{"exitCode":0,"stdout":"","stderr":""}`)
		require.Equal(b, size, got)
	}
	server, client := procCPU(b, pid)-server0, selfCPU(b)-client0
	b.ReportMetric(float64(deltas)/float64(k), "deltas/op")
	b.ReportMetric(float64(server.Milliseconds())/float64(k), "server-cpu-ms/op")
	b.ReportMetric(float64(client.Milliseconds())/float64(k), "client-cpu-ms/op")
	s.stop(b)
}

// procCPU is the user+system CPU time of pid and of the children it reaped (fields 14–17 of
// /proc/<pid>/stat, in USER_HZ ticks of 10 ms).
func procCPU(tb testing.TB, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(tb, err)
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	var ticks int64
	for _, v := range f[11:15] {
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(tb, err)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// selfCPU is the user+system CPU time of this process.
func selfCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestEarlyInitializeSameStream: a plain stdio start answers initialize before the server is up
// (internal/early); with requests right behind it in the same write, and with the same input under
// an option that leaves the start-up as it was (-c), the client reads the same messages in order.
func TestEarlyInitializeSameStream(t *testing.T) {
	input := `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"t","version":"0"}}}` + "\n" +
		`{"method":"initialized"}` + "\n" +
		`{"id":2,"method":"initialize","params":{"clientInfo":{"name":"t","version":"0"}}}` + "\n" +
		`{"id":3,"method":"no/such"}` + "\n"
	run := func(args ...string) []string {
		home := t.TempDir()
		require.NoError(t, os.WriteFile(home+"/installation_id", []byte("11111111-2222-4333-8444-555555555555"), 0o644))
		cmd := exec.Command(binPath, args...)
		cmd.Env = append(os.Environ(), "CODEX_HOME="+home, "HOME="+t.TempDir())
		cmd.Dir = t.TempDir()
		cmd.Stdin = strings.NewReader(input)
		out, err := cmd.Output()
		require.NoError(t, err)
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if i := strings.Index(l, `,"emittedAtMs":`); i >= 0 {
				l = l[:i] + "}"
			}
			lines = append(lines, strings.ReplaceAll(l, home, "HOME"))
		}
		return lines
	}
	early := run()
	require.Equal(t, run("-c", "model_reasoning_effort=\"low\""), early)
	require.Equal(t, early, run("app-server"))
	require.Len(t, early, 4, "%q", early)
	require.Contains(t, early[0], `{"id":1,"result":{"codexHome":"HOME"`)
	require.Contains(t, early[1], `"method":"remoteControl/status/changed"`)
	require.Contains(t, early[2], `"id":2`)
	require.Contains(t, early[2], "Already initialized")
	require.Contains(t, early[3], `"id":3`)
}

// TestQuickAnswerInitialisedEarly: the quick answer to initialize (internal/early/quick) is started
// right after package os, before the packages that hold internal/early back (encoding/json, log/slog,
// database/sql, ...): an import that sorts late (bytes and strconv: after unicode and os/signal;
// strings, bufio, fmt, path/filepath: after database/sql) would move it after them.
func TestQuickAnswerInitialisedEarly(t *testing.T) {
	cmd := exec.Command(binPath)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "CODEX_HOME="+t.TempDir(), "HOME="+t.TempDir())
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"t","version":"0"}}}` + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	require.Contains(t, stdout.String(), `{"id":1,"result":{"codexHome":`)
	pos := map[string]int{}
	for i, line := range strings.Split(stderr.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			pos[f[1]] = i + 1
		}
	}
	quick := pos["appserver/internal/early/quick"]
	require.NotZero(t, quick, "no init trace of the quick answer:\n%s", stderr.String())
	for _, pkg := range []string{"unicode", "os/signal", "encoding/json", "log/slog", "database/sql", "encoding/gob",
		"appserver/internal/early"} {
		require.NotZero(t, pos[pkg], "%s has no init trace", pkg)
		require.Less(t, quick, pos[pkg], "quick is initialised after %s", pkg)
	}
}
