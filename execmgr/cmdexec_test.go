package execmgr

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/stopwatch/stopwatchtest"
)

type delta struct {
	id     string
	stream string
	data   string
	capped bool
}

type deltaLog struct {
	mu sync.Mutex
	ds []delta
}

func (l *deltaLog) fn(id string, s Stream, b []byte, capped bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ds = append(l.ds, delta{id, s.String(), string(b), capped})
}

func (l *deltaLog) concat(stream string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, d := range l.ds {
		if d.stream == stream {
			b.WriteString(d.data)
		}
	}
	return b.String()
}

func (l *deltaLog) snapshot() []delta {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]delta(nil), l.ds...)
}

func sptr(s string) *string { return &s }
func i64(v int64) *int64    { return &v }

func newRegistry(t *testing.T) *CommandExecRegistry {
	t.Helper()
	r := NewCommandExecRegistry(newTestManager(t))
	t.Cleanup(r.Close)
	return r
}

// runAsync starts Exec in the background and returns a func waiting for its result.
func runAsync(t *testing.T, r *CommandExecRegistry, req CommandExecRequest) func() (CommandExecResponse, error) {
	t.Helper()
	type out struct {
		res CommandExecResponse
		err error
	}
	ch := make(chan out, 1)
	go func() {
		res, err := r.Exec(context.Background(), req)
		ch <- out{res, err}
	}()
	return func() (CommandExecResponse, error) {
		select {
		case o := <-ch:
			return o.res, o.err
		case <-time.After(15 * time.Second):
			t.Fatal("command/exec did not return")
			return CommandExecResponse{}, nil
		}
	}
}

func TestCommandExecBuffered(t *testing.T) {
	r := newRegistry(t)
	dir := t.TempDir()
	res, err := r.Exec(context.Background(), CommandExecRequest{Params: CommandExecParams{Command: []string{"sh", "-c", "echo out; echo err >&2; pwd; exit 3"}, Cwd: sptr(dir)}})
	require.NoError(t, err)
	require.Equal(t, CommandExecResponse{ExitCode: 3, Stdout: OutputOf("out\n" + dir + "\n"), Stderr: OutputOf("err\n")}, res)
}

func TestCommandExecEnvOverrides(t *testing.T) {
	r := newRegistry(t)
	res, err := r.Exec(context.Background(), CommandExecRequest{
		Env:    []string{"PATH=/usr/bin:/bin", "HOME=/root", "KEEP=1"},
		Params: CommandExecParams{Command: []string{"sh", "-c", "echo $FOO-$HOME-$KEEP"}, Env: map[string]*string{"FOO": sptr("bar"), "HOME": nil}}})
	require.NoError(t, err)
	require.Equal(t, "bar--1\n", res.Stdout.String())
}

// TestCommandExecTimeout: timeoutMs is timed by the manager's clock (a fake one here, so nothing depends on
// how fast the machine runs the command): when it runs out the command is killed and answers exit code 124
// with the output so far; timeoutMs 0 times out at once.
func TestCommandExecTimeout(t *testing.T) {
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	m := NewManager(ManagerOptions{Clock: clock})
	t.Cleanup(func() { _ = m.Close() })
	r := NewCommandExecRegistry(m)
	t.Cleanup(r.Close)
	marker := filepath.Join(t.TempDir(), "printed")
	wait := runAsync(t, r, CommandExecRequest{Params: CommandExecParams{
		Command: []string{"sh", "-c", "echo before; : > " + marker + "; sleep 1000; echo after"}, TimeoutMs: i64(2000)}})
	require.Eventually(t, func() bool {
		_, err := os.Stat(marker)
		return err == nil && clock.Pending() == 1
	}, time.Minute, 5*time.Millisecond, "the command printed and the timeout is armed on the manager's clock")
	clock.Advance(1999 * time.Millisecond)
	require.Equal(t, 1, clock.Pending(), "not due yet")
	clock.Advance(time.Millisecond)
	res, err := wait()
	require.NoError(t, err)
	require.Equal(t, CommandExecResponse{ExitCode: 124, Stdout: OutputOf("before\n")}, res)

	wait = runAsync(t, r, CommandExecRequest{Params: CommandExecParams{Command: []string{"sleep", "1000"}, TimeoutMs: i64(0)}})
	require.Eventually(t, func() bool { return clock.Pending() == 1 }, time.Minute, 5*time.Millisecond)
	clock.Advance(0)
	res, err = wait()
	require.NoError(t, err)
	require.Equal(t, 124, res.ExitCode)
}

func TestCommandExecStreaming(t *testing.T) {
	r := newRegistry(t)
	var log deltaLog
	res, err := r.Exec(context.Background(), CommandExecRequest{OnOutputDelta: log.fn, Params: CommandExecParams{
		Command: []string{"sh", "-c", "echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three"}, ProcessID: sptr("stream-1"), StreamStdoutStderr: true}})
	require.NoError(t, err)
	require.Equal(t, CommandExecResponse{ExitCode: 0}, res, "streamed bytes are not repeated in the result")
	require.Equal(t, "one\nthree\n", log.concat("stdout"))
	require.Equal(t, "two\n", log.concat("stderr"))
	// stdout and stderr are read by separate goroutines: nothing orders their deltas (and a late reader
	// may read "one\nthree\n" at once), so each stream is checked on its own.
	ds := log.snapshot()
	require.NotEmpty(t, ds)
	for _, d := range ds {
		require.Equal(t, "stream-1", d.id)
		require.False(t, d.capped)
	}
}

func TestCommandExecStdinWriteAndClose(t *testing.T) {
	r := newRegistry(t)
	var log deltaLog
	wait := runAsync(t, r, CommandExecRequest{OnOutputDelta: log.fn, Params: CommandExecParams{
		Command: []string{"cat"}, ProcessID: sptr("cat-1"), StreamStdin: true, StreamStdoutStderr: true}})
	require.Eventually(t, func() bool {
		return r.Write(context.Background(), CommandExecWriteParams{ProcessID: "cat-1", DeltaBase64: sptr(base64.StdEncoding.EncodeToString([]byte("hello cat\n")))}) == nil
	}, time.Minute, 10*time.Millisecond)
	require.Eventually(t, func() bool { return log.concat("stdout") == "hello cat\n" }, time.Minute, 10*time.Millisecond)
	require.NoError(t, r.Write(context.Background(), CommandExecWriteParams{ProcessID: "cat-1", CloseStdin: true}))
	res, err := wait()
	require.NoError(t, err)
	require.Equal(t, CommandExecResponse{ExitCode: 0}, res)
	// Finished: the id is gone.
	require.EqualError(t, r.Write(context.Background(), CommandExecWriteParams{ProcessID: "cat-1", CloseStdin: true}), `no active command/exec for process id "cat-1"`)
}

func TestCommandExecBufferedStdin(t *testing.T) {
	r := newRegistry(t)
	wait := runAsync(t, r, CommandExecRequest{Params: CommandExecParams{Command: []string{"cat"}, ProcessID: sptr("s1"), StreamStdin: true}})
	require.Eventually(t, func() bool {
		return r.Write(context.Background(), CommandExecWriteParams{ProcessID: "s1", DeltaBase64: sptr("aGkK"), CloseStdin: true}) == nil
	}, time.Minute, 10*time.Millisecond)
	res, err := wait()
	require.NoError(t, err)
	require.Equal(t, CommandExecResponse{ExitCode: 0, Stdout: OutputOf("hi\n")}, res)
}

func TestCommandExecTTYResize(t *testing.T) {
	r := newRegistry(t)
	var log deltaLog
	wait := runAsync(t, r, CommandExecRequest{OnOutputDelta: log.fn, Params: CommandExecParams{
		Command: []string{"sh", "-c", "stty size; read x; echo got:$x; stty size"}, ProcessID: sptr("tty-1"), TTY: true, Size: &Size{Rows: 24, Cols: 80}}})
	require.Eventually(t, func() bool { return log.concat("stdout") == "24 80\r\n" }, time.Minute, 10*time.Millisecond)
	require.NoError(t, r.Resize(CommandExecResizeParams{ProcessID: "tty-1", Size: Size{Rows: 40, Cols: 120}}))
	require.NoError(t, r.Write(context.Background(), CommandExecWriteParams{ProcessID: "tty-1", DeltaBase64: sptr("aGkK")}))
	res, err := wait()
	require.NoError(t, err)
	require.Equal(t, CommandExecResponse{ExitCode: 0}, res)
	require.Equal(t, "24 80\r\nhi\r\ngot:hi\r\n40 120\r\n", log.concat("stdout"))
	require.Empty(t, log.concat("stderr"))
}

func TestCommandExecTTYDefaultSize(t *testing.T) {
	r := newRegistry(t)
	var log deltaLog
	res, err := r.Exec(context.Background(), CommandExecRequest{OnOutputDelta: log.fn, Params: CommandExecParams{Command: []string{"stty", "size"}, ProcessID: sptr("t2"), TTY: true}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, "24 80\r\n", log.concat("stdout"))
}

func TestCommandExecTerminate(t *testing.T) {
	for _, tc := range []struct {
		name string
		tty  bool
		cmd  []string
	}{
		{"sleep", false, []string{"sleep", "30"}},
		{"ignores TERM", false, []string{"sh", "-c", "trap '' TERM; sleep 30"}},
		{"tty", true, []string{"sh", "-c", "sleep 30"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry(t)
			var log deltaLog
			wait := runAsync(t, r, CommandExecRequest{OnOutputDelta: log.fn, Params: CommandExecParams{Command: tc.cmd, ProcessID: sptr("sleep-1"), DisableTimeout: true, TTY: tc.tty}})
			require.Eventually(t, func() bool { return r.Terminate(CommandExecTerminateParams{ProcessID: "sleep-1"}) == nil }, time.Minute, 10*time.Millisecond)
			res, err := wait()
			require.NoError(t, err)
			require.Equal(t, CommandExecResponse{ExitCode: 137}, res)
		})
	}
}

func TestCommandExecValidation(t *testing.T) {
	tests := []struct {
		name string
		p    CommandExecParams
		code int
		msg  string
	}{
		{"empty command", CommandExecParams{Command: []string{}}, -32600, "command must not be empty"},
		{"nil command", CommandExecParams{}, -32600, "command must not be empty"},
		{"tty without id", CommandExecParams{Command: []string{"cat"}, TTY: true}, -32600, "command/exec tty or streaming requires a client-supplied processId"},
		{"stdin without id", CommandExecParams{Command: []string{"cat"}, StreamStdin: true}, -32600, "command/exec tty or streaming requires a client-supplied processId"},
		{"stream without id", CommandExecParams{Command: []string{"cat"}, StreamStdoutStderr: true}, -32600, "command/exec tty or streaming requires a client-supplied processId"},
		{"timeout and disable", CommandExecParams{Command: []string{"echo"}, TimeoutMs: i64(100), DisableTimeout: true}, -32602, "command/exec cannot set both timeoutMs and disableTimeout"},
		{"cap and disable", CommandExecParams{Command: []string{"echo"}, OutputBytesCap: u64(5), DisableOutputCap: true}, -32602, "command/exec cannot set both outputBytesCap and disableOutputCap"},
		{"size without tty", CommandExecParams{Command: []string{"echo", "x"}, Size: &Size{Rows: 1, Cols: 1}, ProcessID: sptr("p-size")}, -32602, "command/exec size requires tty: true"},
	}
	r := newRegistry(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Exec(context.Background(), CommandExecRequest{Params: tc.p})
			var re *RequestError
			require.ErrorAs(t, err, &re)
			require.Equal(t, tc.code, re.Code)
			require.Equal(t, tc.msg, re.Message)
		})
	}
}

func TestCommandExecUnknownProcess(t *testing.T) {
	r := newRegistry(t)
	want := &RequestError{Code: -32600, Message: `no active command/exec for process id "nope"`}
	require.Equal(t, want, r.Write(context.Background(), CommandExecWriteParams{ProcessID: "nope", DeltaBase64: sptr("eAo=")}))
	require.Equal(t, want, r.Resize(CommandExecResizeParams{ProcessID: "nope", Size: Size{Rows: 1, Cols: 1}}))
	require.Equal(t, want, r.Terminate(CommandExecTerminateParams{ProcessID: "nope"}))
}

func TestCommandExecIDErrors(t *testing.T) {
	r := newRegistry(t)
	wait := runAsync(t, r, CommandExecRequest{Params: CommandExecParams{Command: []string{"sleep", "30"}, ProcessID: sptr("dup")}})
	// Registered and attached to its process (Live alone can be seen a moment before the registry has it).
	require.Eventually(t, func() bool { _, err := r.lookup("dup"); return err == nil }, time.Minute, 10*time.Millisecond)
	_, err := r.Exec(context.Background(), CommandExecRequest{Params: CommandExecParams{Command: []string{"true"}, ProcessID: sptr("dup")}})
	require.Equal(t, &RequestError{Code: -32600, Message: `duplicate active command/exec process id: "dup"`}, err)
	require.Equal(t, &RequestError{Code: -32600, Message: "stdin streaming is not enabled for this command/exec"},
		r.Write(context.Background(), CommandExecWriteParams{ProcessID: "dup", DeltaBase64: sptr("eAo=")}))
	require.Equal(t, &RequestError{Code: -32600, Message: "failed to resize PTY: process is not attached to a PTY"},
		r.Resize(CommandExecResizeParams{ProcessID: "dup", Size: Size{Rows: 3, Cols: 3}}))
	require.NoError(t, r.Terminate(CommandExecTerminateParams{ProcessID: "dup"}))
	res, err := wait()
	require.NoError(t, err)
	require.Equal(t, 137, res.ExitCode)
}

func TestCommandExecBadBase64(t *testing.T) {
	r := newRegistry(t)
	wait := runAsync(t, r, CommandExecRequest{Params: CommandExecParams{Command: []string{"cat"}, ProcessID: sptr("b"), StreamStdin: true}})
	var err error
	require.Eventually(t, func() bool {
		err = r.Write(context.Background(), CommandExecWriteParams{ProcessID: "b", DeltaBase64: sptr("***")})
		var re *RequestError
		return err != nil && errorAs(err, &re) && re.Code == -32602
	}, time.Minute, 10*time.Millisecond)
	require.NoError(t, r.Write(context.Background(), CommandExecWriteParams{ProcessID: "b", CloseStdin: true}))
	_, err = wait()
	require.NoError(t, err)
}

func TestCommandExecSpawnFailure(t *testing.T) {
	r := newRegistry(t)
	for _, p := range []CommandExecParams{
		{Command: []string{"/no/such/binary"}},
		{Command: []string{"no-such-binary-xyz"}},
		{Command: []string{"true"}, Cwd: sptr("/nonexistent")},
	} {
		_, err := r.Exec(context.Background(), CommandExecRequest{Params: p})
		require.Equal(t, &RequestError{Code: -32603, Message: "failed to spawn command: No such file or directory (os error 2)"}, err, "%v", p.Command)
	}
}

func TestCommandExecOutputCap(t *testing.T) {
	r := newRegistry(t)
	res, err := r.Exec(context.Background(), CommandExecRequest{Params: CommandExecParams{Command: []string{"sh", "-c", "echo 0123456789; echo abcdefghij >&2"}, OutputBytesCap: u64(5)}})
	require.NoError(t, err)
	require.Equal(t, CommandExecResponse{ExitCode: 0, Stdout: OutputOf("01234"), Stderr: OutputOf("abcde")}, res)

	var log deltaLog
	res, err = r.Exec(context.Background(), CommandExecRequest{OnOutputDelta: log.fn, Params: CommandExecParams{Command: []string{"sh", "-c", "echo 0123456789; sleep 0.1; echo more; echo abcdefghij >&2"}, OutputBytesCap: u64(5), ProcessID: sptr("c1"), StreamStdoutStderr: true}})
	require.NoError(t, err)
	require.Equal(t, CommandExecResponse{}, res)
	ds := log.snapshot()
	require.ElementsMatch(t, []delta{{"c1", "stdout", "01234", true}, {"c1", "stderr", "abcde", true}}, ds)

	// Default cap: 1 MiB per stream; disableOutputCap lifts it.
	res, err = r.Exec(context.Background(), CommandExecRequest{Params: CommandExecParams{Command: []string{"head", "-c", fmt.Sprint(3 << 20), "/dev/zero"}}})
	require.NoError(t, err)
	require.Equal(t, 1<<20, res.Stdout.Len())
	res, err = r.Exec(context.Background(), CommandExecRequest{Params: CommandExecParams{Command: []string{"head", "-c", fmt.Sprint(3 << 20), "/dev/zero"}, DisableOutputCap: true}})
	require.NoError(t, err)
	require.Equal(t, 3<<20, res.Stdout.Len())
}

func TestCommandExecCloseKillsConnectionProcesses(t *testing.T) {
	m := newTestManager(t)
	r := NewCommandExecRegistry(m)
	wait := runAsync(t, r, CommandExecRequest{Params: CommandExecParams{Command: []string{"sh", "-c", "sleep 30 & sleep 30; wait"}, DisableTimeout: true}})
	require.Eventually(t, func() bool { return len(m.Live()) == 1 }, time.Minute, 10*time.Millisecond)
	pgid := m.Live()[0].Pid()
	r.Close()
	res, err := wait()
	require.NoError(t, err)
	require.Equal(t, 137, res.ExitCode)
	requireGroupGone(t, pgid)
	_, err = r.Exec(context.Background(), CommandExecRequest{Params: CommandExecParams{Command: []string{"true"}}})
	require.Error(t, err)
}

func TestCommandExecContextCancel(t *testing.T) {
	m := newTestManager(t)
	r := NewCommandExecRegistry(m)
	t.Cleanup(r.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // cancelled once the command runs (a timer could end before a slow spawn: a spawn error)
		for len(m.Live()) == 0 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_, err := r.Exec(ctx, CommandExecRequest{Params: CommandExecParams{Command: []string{"sleep", "1000"}, DisableTimeout: true}})
	require.ErrorIs(t, err, context.Canceled)
}
