package execmgr

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"appserver/stopwatch"

	"github.com/stretchr/testify/require"
)

func TestShellCommandSuccess(t *testing.T) {
	m := newTestManager(t)
	rec := newRecorder()
	res, err := m.ShellCommand(context.Background(), ShellCommandRequest{Args: ShellCommandArgs{Command: "echo out; echo err >&2; exit 2"}, Env: testEnv(t), Observer: rec})
	require.NoError(t, err)
	require.Equal(t, 2, res.ExitCode)
	require.False(t, res.TimedOut)
	require.Regexp(t, regexp.MustCompile(`^Exit code: 2\nWall time: \d+(\.\d)? seconds\nOutput:\n`), res.Text)
	require.Contains(t, res.Output, "out\n")
	require.Contains(t, res.Output, "err\n")
	rec.waitExited(t)
	require.Equal(t, []string{"", "/bin/bash -lc 'echo out; echo err >&2; exit 2'", ""}, rec.started)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, 2, rec.code)
	require.Contains(t, rec.deltas.String(), "out\n", "the classic tool streams all output")
	require.Contains(t, rec.deltas.String(), "err\n")
	require.Equal(t, "exited", rec.events[len(rec.events)-1])
}

func TestShellCommandTimeout(t *testing.T) {
	m := newTestManager(t)
	// The 400 ms budget starts once "start" was read (paused until then), whatever the load.
	ctrl := stopwatch.NewController()
	ctrl.SetPaused(true)
	go func() {
		for {
			if live := m.Live(); len(live) == 1 && live[0].OutputSeq() > 0 {
				ctrl.SetPaused(false)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	res, err := m.ShellCommand(context.Background(), ShellCommandRequest{Args: ShellCommandArgs{Command: "echo start; trap '' TERM; sleep 1000", TimeoutMs: u64(400), Login: bptr(false)}, Env: testEnv(t), Controller: ctrl})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, 124, res.ExitCode)
	require.Equal(t, "command timed out after 400 milliseconds\nstart\n", res.Output)
	require.Regexp(t, regexp.MustCompile(`^Exit code: 124\nWall time: \d+(\.\d)? seconds\nOutput:\ncommand timed out after 400 milliseconds\nstart\n$`), res.Text)
}

func TestShellCommandTimeoutPausedByController(t *testing.T) {
	m := newTestManager(t)
	ctrl := stopwatch.NewController()
	ctrl.SetPaused(true)
	// The command runs 3 s while paused, then is released and ends: longer than its 2 s budget in
	// wall time, but only the time after the resume is charged.
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(3 * time.Second)
		// Released before the resume: the 2 s budget never has to cover the command's end.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			_, _ = f.WriteString("go\n")
			f.Close()
		}
		ctrl.SetPaused(false)
	}()
	start0 := time.Now()
	res, err := m.ShellCommand(context.Background(), ShellCommandRequest{Args: ShellCommandArgs{Command: "read x < " + fifo + "; echo ok", TimeoutMs: u64(2000), Login: bptr(false)}, Env: testEnv(t), Controller: ctrl})
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start0), 3*time.Second)
	require.False(t, res.TimedOut)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, "ok\n", res.Output)
	// The command ends when the fifo is written, which may be before that goroutine's resume: a late
	// resume would cancel the pause below.
	<-resumed

	ctrl.SetPaused(true)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		ctrl.SetPaused(false)
	}()
	start := time.Now()
	res, err = m.ShellCommand(context.Background(), ShellCommandRequest{Args: ShellCommandArgs{Command: "sleep 30", TimeoutMs: u64(300), Login: bptr(false)}, Env: testEnv(t), Controller: ctrl})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond, "no time is charged while paused")
}

func TestShellCommandCancel(t *testing.T) {
	m := newTestManager(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled once the command started (not on a timer that a slow spawn could outlast).
	obs := ObserverFuncs{OnStarted: func(string, string, string) { cancel() }}
	_, err := m.ShellCommand(ctx, ShellCommandRequest{Args: ShellCommandArgs{Command: "sleep 1000", Login: bptr(false)}, Env: testEnv(t), Observer: obs})
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.Eventually(t, func() bool { return len(m.Live()) == 0 }, time.Minute, 20*time.Millisecond)
}

func TestShellCommandTruncatedText(t *testing.T) {
	m := newTestManager(t)
	res, err := m.ShellCommand(context.Background(), ShellCommandRequest{Args: ShellCommandArgs{Command: "seq 1 30000", Login: bptr(false)}, Env: testEnv(t), MaxOutputTokens: 60})
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`^Exit code: 0\nWall time: \d+(\.\d)? seconds\nTotal output lines: 30000\nOutput:\n1\n2\n`), res.Text)
	require.Contains(t, res.Text, "43\n…42164 tokens truncated…29981\n")
	require.True(t, strings.HasSuffix(res.Text, "30000\n"))
}

func TestFormatSeconds(t *testing.T) {
	require.Equal(t, "0", formatSeconds(0))
	require.Equal(t, "0.1", formatSeconds(120*time.Millisecond))
	require.Equal(t, "2", formatSeconds(1960*time.Millisecond))
	require.Equal(t, "10.5", formatSeconds(10500*time.Millisecond))
}
