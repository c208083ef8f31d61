package execmgr

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSpawnPipesSeparatesStreams(t *testing.T) {
	m := newTestManager(t)
	var s streams
	p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, OnOutput: s.on})
	require.NoError(t, err)
	require.Equal(t, 3, waitDone(t, p, time.Minute))
	out, errOut := s.get()
	require.Equal(t, "out\n", out)
	require.Equal(t, "err\n", errOut)
	require.Contains(t, p.Output(), "out\n")
	require.Contains(t, p.Output(), "err\n")
	require.False(t, p.HasStdin(), "pipes without Stdin have /dev/null stdin")
}

func TestSpawnStdinIsNullByDefault(t *testing.T) {
	m := newTestManager(t)
	var s streams
	p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"cat"}, OnOutput: s.on})
	require.NoError(t, err)
	require.Equal(t, 0, waitDone(t, p, time.Minute))
	require.ErrorIs(t, p.WriteStdin(context.Background(), []byte("x")), ErrStdinClosed)
}

func TestSpawnStdinPipe(t *testing.T) {
	m := newTestManager(t)
	var s streams
	p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"cat"}, Stdin: true, OnOutput: s.on})
	require.NoError(t, err)
	require.NoError(t, p.WriteStdin(context.Background(), []byte("hello\n")))
	require.NoError(t, p.CloseStdin())
	require.Equal(t, 0, waitDone(t, p, time.Minute))
	out, _ := s.get()
	require.Equal(t, "hello\n", out)
}

func TestTTYOrderAndCRLF(t *testing.T) {
	m := newTestManager(t)
	var s streams
	p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"sh", "-c", "echo one; echo two >&2; echo three"}, TTY: true, OnOutput: s.on})
	require.NoError(t, err)
	require.Equal(t, 0, waitDone(t, p, time.Minute))
	out, errOut := s.get()
	require.Equal(t, "one\r\ntwo\r\nthree\r\n", out)
	require.Empty(t, errOut, "PTY output is all on stdout")
}

func TestTTYResize(t *testing.T) {
	m := newTestManager(t)
	var s streams
	p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"sh", "-c", "stty size; read x; stty size"}, TTY: true,
		Size: Size{Rows: 24, Cols: 80}, OnOutput: s.on})
	require.NoError(t, err)
	require.Eventually(t, func() bool { o, _ := s.get(); return strings.Contains(o, "24 80\r\n") }, time.Minute, 10*time.Millisecond)
	require.NoError(t, p.Resize(Size{Rows: 40, Cols: 120}))
	require.NoError(t, p.WriteStdin(context.Background(), []byte("go\n")))
	require.Equal(t, 0, waitDone(t, p, time.Minute))
	out, _ := s.get()
	require.Equal(t, "24 80\r\ngo\r\n40 120\r\n", out)
}

func TestResizePipesFails(t *testing.T) {
	m := newTestManager(t)
	p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"true"}})
	require.NoError(t, err)
	require.ErrorIs(t, p.Resize(Size{Rows: 1, Cols: 1}), ErrNotTTY)
	waitDone(t, p, time.Minute)
}

func TestSignalDeathIs128PlusSignal(t *testing.T) {
	m := newTestManager(t)
	p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"sh", "-c", "kill -TERM $$"}})
	require.NoError(t, err)
	require.Equal(t, 143, waitDone(t, p, time.Minute))
}

func TestKillChildIgnoringTERM(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(map[bool]string{false: "pipes", true: "pty"}[tty], func(t *testing.T) {
			m := NewManager(ManagerOptions{KillGrace: 200 * time.Millisecond})
			defer m.Close()
			var s streams
			p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"sh", "-c", "trap '' TERM; echo ready; sleep 100; echo no"}, TTY: tty, OnOutput: s.on})
			require.NoError(t, err)
			require.Eventually(t, func() bool { o, _ := s.get(); return strings.Contains(o, "ready") }, time.Minute, 10*time.Millisecond)
			pgid := p.Pid()
			p.Kill()
			require.Equal(t, 128+int(syscall.SIGKILL), waitDone(t, p, time.Minute))
			requireGroupGone(t, pgid)
		})
	}
}

func TestGrandchildHoldingStdoutDoesNotHang(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(map[bool]string{false: "pipes", true: "pty"}[tty], func(t *testing.T) {
			m := NewManager(ManagerOptions{DrainTimeout: 300 * time.Millisecond})
			var s streams
			// The background sleep inherits stdout and outlives its parent, which exits only once its
			// output was read (so the short drain limit cannot cut it off).
			gate := filepath.Join(t.TempDir(), "gate")
			script := "trap '' HUP; sleep 1000 & echo started; while [ ! -e " + gate + " ]; do sleep 0.01; done"
			p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"sh", "-c", script}, TTY: tty, OnOutput: s.on})
			require.NoError(t, err)
			pgid := p.Pid()
			require.Eventually(t, func() bool { o, _ := s.get(); return strings.Contains(o, "started") }, time.Minute, 10*time.Millisecond)
			require.NoError(t, os.WriteFile(gate, nil, 0o600))
			select {
			case <-p.Exited():
			case <-time.After(time.Minute):
				t.Fatal("leader did not exit")
			}
			waitDone(t, p, time.Minute) // the grandchild holds the output for 1000 s: only the drain limit ends it
			require.NotEmpty(t, groupMembers(t, pgid), "the grandchild is still alive (not ours to kill after a normal exit)")
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			requireGroupGone(t, pgid)
			require.NoError(t, m.Close())
		})
	}
}

func TestKillWithGrandchildHoldingStdout(t *testing.T) {
	m := NewManager(ManagerOptions{KillGrace: 100 * time.Millisecond})
	defer m.Close()
	var s streams
	p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"sh", "-c", "sh -c 'trap \"\" TERM; sleep 1000' & echo ready; wait"}, OnOutput: s.on})
	require.NoError(t, err)
	require.Eventually(t, func() bool { o, _ := s.get(); return strings.Contains(o, "ready") }, time.Minute, 10*time.Millisecond)
	pgid := p.Pid()
	p.Kill()
	waitDone(t, p, time.Minute) // the grandchild would hold the output for 1000 s
	requireGroupGone(t, pgid)
}

func TestManagerCloseLeavesNoProcess(t *testing.T) {
	// A long drain limit: Close's bound (grace+drain+2 s) must only fail on a hang.
	m := NewManager(ManagerOptions{KillGrace: 200 * time.Millisecond, DrainTimeout: time.Minute})
	var pgids []int
	for i, argv := range [][]string{
		{"sleep", "100"},
		{"sh", "-c", "trap '' TERM; sleep 100 & sleep 100 & wait"},
		{"sh", "-c", "sleep 100 | cat"},
	} {
		for _, tty := range []bool{false, true} {
			p, err := m.Spawn(context.Background(), SpawnRequest{Argv: argv, TTY: tty})
			require.NoError(t, err, "spawn %d", i)
			require.Greater(t, p.Pid(), 0)
			pgids = append(pgids, p.Pid())
		}
	}
	require.Eventually(t, func() bool {
		for _, g := range pgids {
			if len(groupMembers(t, g)) == 0 {
				return false
			}
		}
		return true
	}, time.Minute, 20*time.Millisecond)
	require.NoError(t, m.Close())
	for _, g := range pgids {
		// SIGKILL has been sent to every group; give the kernel a moment to tear them down.
		require.Eventually(t, func() bool { return len(groupMembers(t, g)) == 0 }, time.Minute, 10*time.Millisecond,
			"group %d survived Close", g)
	}
	require.Empty(t, m.Live())
	_, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"true"}})
	require.ErrorIs(t, err, ErrClosed)
}

func TestSpawnFailures(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		req  SpawnRequest
		code int
		want string
	}{
		{"missing absolute binary", SpawnRequest{Argv: []string{"/no/such/binary"}}, 127, "failed to spawn command: No such file or directory (os error 2)"},
		{"missing binary in PATH", SpawnRequest{Argv: []string{"no-such-binary-xyz"}}, 127, "No such file or directory (os error 2)"},
		{"bad cwd", SpawnRequest{Argv: []string{"true"}, Cwd: "/nonexistent/dir"}, 127, "No such file or directory (os error 2)"},
		{"not executable", SpawnRequest{Argv: []string{dir}}, 126, "Permission denied (os error 13)"},
		{"bad cwd tty", SpawnRequest{Argv: []string{"true"}, Cwd: "/nonexistent/dir", TTY: true}, 127, "No such file or directory"},
	}
	m := newTestManager(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s streams
			tc.req.OnOutput = s.on
			p, err := m.Spawn(context.Background(), tc.req)
			require.NoError(t, err)
			require.Equal(t, tc.code, waitDone(t, p, time.Minute))
			var serr *SpawnError
			require.ErrorAs(t, p.SpawnErr(), &serr)
			_, errOut := s.get()
			require.Contains(t, errOut, tc.want)
			require.True(t, strings.HasSuffix(errOut, "\n"))
		})
	}
}

func TestSpawnBadRequests(t *testing.T) {
	m := newTestManager(t)
	_, err := m.Spawn(context.Background(), SpawnRequest{})
	require.Error(t, err)
	_, err = m.Spawn(context.Background(), SpawnRequest{Argv: []string{""}})
	require.Error(t, err)
	_, err = m.Spawn(context.Background(), SpawnRequest{Argv: []string{"true"}, WrapArgv: func([]string) ([]string, error) { return nil, nil }})
	require.Error(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = m.Spawn(ctx, SpawnRequest{Argv: []string{"true"}})
	require.ErrorIs(t, err, context.Canceled)
}

func TestWrapArgvAndEnv(t *testing.T) {
	m := newTestManager(t)
	var s streams
	var seen []string
	p, err := m.Spawn(context.Background(), SpawnRequest{
		Argv: []string{"sh", "-c", "echo $FOO; pwd"}, Env: []string{"FOO=bar", "PATH=/usr/bin:/bin"}, Cwd: "/",
		WrapArgv: func(argv []string) ([]string, error) { seen = argv; return append([]string{"env"}, argv...), nil },
		OnOutput: s.on})
	require.NoError(t, err)
	require.Equal(t, 0, waitDone(t, p, time.Minute))
	require.Equal(t, []string{"sh", "-c", "echo $FOO; pwd"}, seen)
	out, _ := s.get()
	require.Equal(t, "bar\n/\n", out)
}

func TestSubscribeGetsLiveOutput(t *testing.T) {
	m := newTestManager(t)
	p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"sh", "-c", "read x; echo got $x"}, TTY: true})
	require.NoError(t, err)
	var s streams
	unsub := p.Subscribe(s.on)
	require.NoError(t, p.WriteStdin(context.Background(), []byte("a\n")))
	waitDone(t, p, time.Minute)
	unsub()
	out, _ := s.get()
	require.Contains(t, out, "got a\r\n")
}

func TestHeadTailBuffer(t *testing.T) {
	b := NewHeadTailBuffer(10)
	b.Write([]byte("0123"))
	require.Equal(t, "0123", b.String())
	b.Write([]byte("456789"))
	require.Equal(t, "0123456789", b.String())
	require.EqualValues(t, 0, b.Omitted())
	b.Write([]byte("abc"))
	require.Equal(t, "01234\n... 3 bytes omitted ...\n89abc", b.String())
	for i := 0; i < 100; i++ {
		b.Write([]byte("x"))
	}
	b.Write([]byte("WXYZ"))
	require.Equal(t, "01234\n... 107 bytes omitted ...\nxWXYZ", b.String())
	require.EqualValues(t, 117, b.Total())
	require.Equal(t, "01234\n... 107 bytes omitted ...\nxWXYZ", string(b.Drain()))
	require.Equal(t, "", b.String())
	big := NewHeadTailBuffer(0)
	chunk := []byte(strings.Repeat("y", 300<<10))
	for i := 0; i < 4; i++ {
		big.Write(chunk)
	}
	require.EqualValues(t, 4*len(chunk)-DefaultOutputCap, big.Omitted())
	require.Len(t, big.Bytes(), DefaultOutputCap+len("\n... 180224 bytes omitted ...\n"))
	one := NewHeadTailBuffer(10)
	one.Write([]byte("abcdefghijklmnopqrstuvwxyz"))
	require.Equal(t, "abcde\n... 16 bytes omitted ...\nvwxyz", one.String())
}
