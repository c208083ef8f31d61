package server_test

import (
	"fmt"
	"testing"

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
	k := 0
	for b.Loop() {
		var got int
		res := rs.call(b, "command/exec", map[string]any{
			"command": argv, "processId": fmt.Sprintf("bench-%d", k), "streamStdoutStderr": true,
			"disableOutputCap": true, "disableTimeout": true,
			"sandboxPolicy": map[string]any{"type": "dangerFullAccess"},
		}, func(line []byte) { got += deltaLen(line) })
		k++
		require.JSONEq(b, `{"exitCode":0,"stdout":"","stderr":""}`, string(res))
		require.Equal(b, streamBenchBytes, got)
	}
}
