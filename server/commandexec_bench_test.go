package server_test

import (
	"bufio"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// streamBenchBytes is what BenchmarkCommandExecStreamed moves per iteration, as the
// `appserver-bench exec` throughput test does.
const streamBenchBytes = 256 << 20

// BenchmarkCommandExecStreamed moves 256 MiB of `head -c … /dev/zero` through a streamed
// command/exec over real pipes, counting the decoded bytes of command/exec/outputDelta.
func BenchmarkCommandExecStreamed(b *testing.B) {
	rs := startRawServer(b, true)
	argv := []string{"head", "-c", fmt.Sprint(streamBenchBytes), "/dev/zero"}
	b.SetBytes(streamBenchBytes)
	k, deltas := 0, 0
	cpu0 := cpuTime(b)
	for b.Loop() {
		var got int
		res := rs.call(b, "command/exec", map[string]any{
			"command": argv, "processId": fmt.Sprintf("bench-%d", k), "streamStdoutStderr": true,
			"disableOutputCap": true, "disableTimeout": true,
			"sandboxPolicy": map[string]any{"type": "dangerFullAccess"},
		}, func(line []byte) {
			if n := deltaLen(line); n > 0 {
				got += n
				deltas++
			}
		})
		k++
		require.JSONEq(b, `{"exitCode":0,"stdout":"","stderr":""}`, string(res))
		require.Equal(b, streamBenchBytes, got)
	}
	b.ReportMetric(float64(deltas)/float64(k), "deltas/op")
	// CPU time is steadier than wall time on a shared machine: server and client, this process.
	b.ReportMetric(float64((cpuTime(b)-cpu0).Milliseconds())/float64(k), "cpu-ms/op")
}

// cpuTime returns the user+system CPU time this process has used.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bufferedBenchBytes is what BenchmarkCommandExecBuffered moves per iteration: its reply is six times
// that in JSON (NULs are escaped as \u0000).
const bufferedBenchBytes = 32 << 20

// BenchmarkCommandExecBuffered moves 32 MiB of NUL bytes through a buffered command/exec
// (disableOutputCap) over real pipes, reading the reply line as it streams in.
func BenchmarkCommandExecBuffered(b *testing.B) {
	rs := startRawServer(b, true)
	argv := []string{"head", "-c", fmt.Sprint(bufferedBenchBytes), "/dev/zero"}
	const wantLen = len(`{"id":,"result":{"exitCode":0,"stdout":"","stderr":""}}`) + 6*bufferedBenchBytes
	b.SetBytes(bufferedBenchBytes)
	cpu0 := cpuTime(b)
	k := 0
	for b.Loop() {
		id := rs.send(b, "command/exec", map[string]any{
			"command": argv, "disableOutputCap": true, "disableTimeout": true,
			"sandboxPolicy": map[string]any{"type": "dangerFullAccess"},
		})
		prefix := fmt.Sprintf(`{"id":%d,"result":{"exitCode":0,"stdout":"`, id)
		for {
			head, err := rs.out.Peek(len(prefix))
			require.NoError(b, err)
			if string(head) == prefix {
				break
			}
			_, err = readFullLine(rs.out) // another notification
			require.NoError(b, err)
		}
		n, last := 0, byte(0)
		for { // count the line without holding it
			chunk, err := rs.out.ReadSlice('\n')
			n += len(chunk)
			if len(chunk) > 1 {
				last = chunk[len(chunk)-2]
			}
			if err == nil {
				break
			}
			require.ErrorIs(b, err, bufio.ErrBufferFull)
		}
		require.Equal(b, wantLen+len(fmt.Sprint(id))+1, n)
		require.Equal(b, byte('}'), last)
		k++
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Milliseconds())/float64(k), "cpu-ms/op")
}
