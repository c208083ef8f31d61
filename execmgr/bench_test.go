package execmgr

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"testing"
)

const benchBytes = 256 << 20

var benchCmd = []string{"head", "-c", fmt.Sprint(benchBytes), "/dev/zero"}

// BenchmarkCommandExecBuffered moves 256 MiB through command/exec with the output cap disabled.
func BenchmarkCommandExecBuffered(b *testing.B) {
	r := NewCommandExecRegistry(NewManager(ManagerOptions{}))
	defer r.Close()
	b.SetBytes(benchBytes)
	for b.Loop() {
		res, err := r.Exec(context.Background(), CommandExecRequest{Params: CommandExecParams{Command: benchCmd, DisableOutputCap: true}})
		if err != nil || res.Stdout.Len() != benchBytes {
			b.Fatalf("err=%v len=%d", err, res.Stdout.Len())
		}
	}
}

// BenchmarkCommandExecStreamed moves 256 MiB through command/exec as output deltas.
func BenchmarkCommandExecStreamed(b *testing.B) {
	r := NewCommandExecRegistry(NewManager(ManagerOptions{}))
	defer r.Close()
	b.SetBytes(benchBytes)
	for b.Loop() {
		var n int
		res, err := r.Exec(context.Background(), CommandExecRequest{
			OnOutputDelta: func(_ string, _ Stream, chunk []byte, _ bool) { n += len(chunk) },
			Params:        CommandExecParams{Command: benchCmd, DisableOutputCap: true, ProcessID: new(string), StreamStdoutStderr: true}})
		if err != nil || res.ExitCode != 0 || n != benchBytes {
			b.Fatalf("err=%v n=%d", err, n)
		}
	}
}

// BenchmarkRawPipe is the baseline: the same bytes read straight from an os/exec pipe.
func BenchmarkRawPipe(b *testing.B) {
	b.SetBytes(benchBytes)
	for b.Loop() {
		cmd := exec.Command(benchCmd[0], benchCmd[1:]...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, out)
		if err != nil || n != benchBytes {
			b.Fatalf("err=%v n=%d", err, n)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}
