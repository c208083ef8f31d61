package execmgr

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/stopwatch"
)

func identityWrap(argv []string) ([]string, error) { return argv, nil }

// TestSandboxDenialIsAnnounced: a sandboxed command refused by the sandbox inside the startup window is
// announced and ended like any other failure, as the reference's unified exec reports it.
func TestSandboxDenialIsAnnounced(t *testing.T) {
	x, _ := newTestSessions(t)
	rec := newRecorder()
	// A paused controller freezes the startup window: the command ends inside it whatever the load.
	ctrl := stopwatch.NewController()
	ctrl.SetPaused(true)
	go func() { // the reply of a paused thread waits for it to go on
		rec.waitStarted(t)
		ctrl.SetPaused(false)
	}()
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), WrapArgv: identityWrap, Observer: rec, Controller: ctrl,
		Args: ExecCommandArgs{Cmd: "echo 'x: Read-only file system' >&2; exit 1", Login: bptr(false)}})
	require.NoError(t, err)
	require.True(t, res.Exited)
	require.Equal(t, 1, res.ExitCode)
	require.Contains(t, res.Text, "Process exited with code 1\n")
	require.Contains(t, res.Text, "Output:\nx: Read-only file system\n")
	require.Empty(t, x.SessionIDs())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, "started", rec.events[0])
	require.Equal(t, "exited", rec.events[len(rec.events)-1])
}

func TestStartupWindowAnnouncesOtherFailures(t *testing.T) {
	for name, req := range map[string]ExecCommandRequest{
		"unsandboxed denial text": {Args: ExecCommandArgs{Cmd: "echo 'Permission denied'; exit 1"}},
		"sandboxed other failure": {Args: ExecCommandArgs{Cmd: "echo nope; exit 1"}, WrapArgv: identityWrap},
	} {
		t.Run(name, func(t *testing.T) {
			x, _ := newTestSessions(t)
			rec := newRecorder()
			req.Env, req.Observer = testEnv(t), rec
			res, err := x.ExecCommand(context.Background(), req)
			require.NoError(t, err)
			require.Equal(t, 1, res.ExitCode)
			rec.waitExited(t)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			require.Equal(t, "started", rec.events[0])
			require.Equal(t, "exited", rec.events[len(rec.events)-1])
		})
	}
}

func TestOutputAfterStartupStreamsDuringFirstCall(t *testing.T) {
	x, m := newTestSessions(t)
	rec := newRecorder()
	dir := t.TempDir()
	fifo, marker := filepath.Join(dir, "fifo"), filepath.Join(dir, "marker")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	// The startup window (a stopwatch of the paused controller) only runs once "early" was written
	// and read; "late" is only written once the process was announced.
	ctrl := stopwatch.NewController()
	ctrl.SetPaused(true)
	go func() {
		for {
			if _, err := os.Stat(marker); err == nil {
				if live := m.Live(); len(live) == 1 && live[0].OutputSeq() > 0 {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		ctrl.SetPaused(false)
		rec.waitStarted(t)
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			_, _ = f.WriteString("go\n")
			f.Close()
		}
	}()
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Observer: rec, Controller: ctrl,
		Args: ExecCommandArgs{Cmd: "echo early; touch " + marker + "; read x < " + fifo + "; echo late", YieldTimeMs: u64(30000)}})
	require.NoError(t, err)
	require.True(t, res.Exited)
	require.Equal(t, "early\nlate\n", res.Output)
	rec.waitExited(t)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, []string{"started", "delta:late\n", "exited"}, rec.events, "output of the startup window is not streamed; later output is")
	require.Equal(t, "early\nlate\n", rec.agg)
}

func TestPausedCallReportsExitBeforeReturning(t *testing.T) {
	x, _ := newTestSessions(t)
	rec := newRecorder()
	ctrl := stopwatch.NewController()
	ctrl.SetPaused(true)
	done := make(chan ExecResult, 1)
	go func() { // ends when ExecCommand returns after the resume below
		res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Observer: rec, Controller: ctrl,
			Args: ExecCommandArgs{Cmd: "echo bye", Login: bptr(false)}})
		if err != nil {
			res.Text = err.Error()
		}
		done <- res
	}()
	rec.waitExited(t) // the item completes while the result is still held
	select {
	case res := <-done:
		t.Fatalf("returned while paused: %s", res.Text)
	case <-time.After(300 * time.Millisecond):
	}
	ctrl.SetPaused(false)
	select {
	case res := <-done:
		require.True(t, res.Exited, res.Text)
		require.Equal(t, "bye\n", res.Output)
	case <-time.After(time.Minute):
		t.Fatal("no result after the resume")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, 1, rec.exits)
}
