package execmgr

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"appserver/stopwatch"

	"github.com/stretchr/testify/require"
)

// recorder is an Observer that records every call.
type recorder struct {
	mu          sync.Mutex
	started     []string
	deltas      strings.Builder
	interaction []string
	exits       int
	events      []string // "started", "delta:<text>", "interaction:<text>", "exited"
	code        int
	agg         string
	exitedCh    chan struct{}
	startedCh   chan struct{}
}

func newRecorder() *recorder {
	return &recorder{exitedCh: make(chan struct{}), startedCh: make(chan struct{})}
}

func (r *recorder) Started(id, cmd, cwd string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, id, cmd, cwd)
	r.events = append(r.events, "started")
	if len(r.started) == 3 {
		close(r.startedCh)
	}
}

// waitStarted blocks until the first Started call (bounded, for a failing test not to hang).
func (r *recorder) waitStarted(t *testing.T) {
	select {
	case <-r.startedCh:
	case <-time.After(time.Minute):
		t.Error("Started was not called")
	}
}
func (r *recorder) OutputDelta(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deltas.Write(b)
	r.events = append(r.events, "delta:"+string(b))
}
func (r *recorder) Interaction(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.interaction = append(r.interaction, s)
	r.events = append(r.events, "interaction:"+s)
}
func (r *recorder) Exited(code int, agg string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exits++
	r.events = append(r.events, "exited")
	r.code, r.agg = code, agg
	if r.exits == 1 {
		close(r.exitedCh)
	}
}

func (r *recorder) waitExited(t *testing.T) {
	t.Helper()
	select {
	case <-r.exitedCh:
	case <-time.After(time.Minute):
		t.Fatal("Exited was not called")
	}
}

func newTestSessions(t *testing.T) (*Sessions, *Manager) {
	t.Helper()
	m := NewManager(ManagerOptions{KillGrace: 200 * time.Millisecond})
	t.Cleanup(func() { _ = m.Close() })
	return NewSessions(SessionsOptions{Manager: m, DeterministicIDs: true}), m
}

func u64(v uint64) *uint64 { return &v }
func bptr(v bool) *bool    { return &v }

var textRE = regexp.MustCompile(`^Chunk ID: [0-9a-f]{6}\nWall time: \d+\.\d{4} seconds\n(Process exited with code -?\d+|Process running with session ID \d+)\nOriginal token count: \d+\nOutput:\n`)

func TestExecCommandEchoHello(t *testing.T) {
	x, _ := newTestSessions(t)
	rec := newRecorder()
	dir := t.TempDir()
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "echo hello", YieldTimeMs: u64(30000)}, Cwd: dir, Observer: rec})
	require.NoError(t, err)
	require.Regexp(t, textRE, res.Text)
	require.True(t, res.Exited)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, "hello\n", res.Output)
	require.True(t, strings.HasSuffix(res.Text, "Process exited with code 0\nOriginal token count: 2\nOutput:\nhello\n"), res.Text)
	require.Less(t, res.WallTime, 25*time.Second, "returns at exit, not at the 30 s yield deadline")
	select {
	case <-rec.exitedCh: // the item completes before the model hears the result
	default:
		require.Fail(t, "an exited result must come after the observer's Exited call")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, []string{"1000", "/bin/bash -lc 'echo hello'", dir}, rec.started)
	require.Equal(t, 1, rec.exits)
	require.Equal(t, "hello\n", rec.agg)
	// Output of the startup window is never streamed; output after it is (on a loaded machine bash may
	// print only after the window), both as the reference.
	if rec.deltas.Len() == 0 {
		require.Equal(t, []string{"started", "exited"}, rec.events)
	} else {
		require.Equal(t, []string{"started", "delta:hello\n", "exited"}, rec.events)
	}
	require.Empty(t, x.SessionIDs(), "an exited process is not stored")
}

func TestExecCommandForcedEnvAndLogin(t *testing.T) {
	x, _ := newTestSessions(t)
	rec := newRecorder()
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{
		Args: ExecCommandArgs{Cmd: "echo $NO_COLOR,$TERM,$LANG,$LC_ALL,$LC_CTYPE,[$COLORTERM],$PAGER,$GIT_PAGER,$GH_PAGER,$CODEX_CI,$KEEP; shopt -q login_shell && echo login || echo nologin", Login: bptr(false), Shell: "/bin/bash"},
		Env:  []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "TERM=xterm", "COLORTERM=truecolor", "KEEP=kept"}, Observer: rec})
	require.NoError(t, err)
	require.Equal(t, "1,dumb,C.UTF-8,C.UTF-8,C.UTF-8,[],cat,cat,cat,1,kept\nnologin\n", res.Output)
	require.Equal(t, "/bin/bash -c 'echo $NO_COLOR,$TERM,$LANG,$LC_ALL,$LC_CTYPE,[$COLORTERM],$PAGER,$GIT_PAGER,$GH_PAGER,$CODEX_CI,$KEEP; shopt -q login_shell && echo login || echo nologin'", rec.started[1])
	res, err = x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "shopt -q login_shell && echo login"}})
	require.NoError(t, err)
	require.Equal(t, "login\n", res.Output)
}

// TestOriginalTokenCountCountsAllOutput: the count told to the model is of everything the command
// wrote (3 MiB here), not of the 1 MiB kept.
func TestOriginalTokenCountCountsAllOutput(t *testing.T) {
	x, _ := newTestSessions(t)
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t),
		Args: ExecCommandArgs{Cmd: "head -c 3145728 /dev/zero | tr '\\0' a", YieldTimeMs: u64(30000)}})
	require.NoError(t, err)
	require.True(t, res.Exited)
	require.Equal(t, 3145728/4, res.OriginalTokenCount)
	require.Contains(t, res.Text, "Original token count: 786432\n")
	require.Less(t, len(res.Output), DefaultOutputCap+100, "only the head and tail are kept")
}

// TestExecCommandYieldThenPollToExit is load-independent: the command waits on a FIFO the test opens
// only after the first call returned, and the yield budget only starts once the first line was read
// (the controller is paused until a marker file appears and the process has output).
func TestExecCommandYieldThenPollToExit(t *testing.T) {
	x, m := newTestSessions(t)
	rec := newRecorder()
	dir := t.TempDir()
	fifo, marker := filepath.Join(dir, "fifo"), filepath.Join(dir, "marker")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	ctrl := stopwatch.NewController()
	ctrl.SetPaused(true)
	go func() {
		for {
			if _, err := os.Stat(marker); err == nil {
				if live := m.Live(); len(live) == 1 && live[0].OutputSeq() > 0 {
					ctrl.SetPaused(false)
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	cmd := fmt.Sprintf("echo first; touch %s; read line < %s; echo second", marker, fifo)
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Controller: ctrl,
		Args: ExecCommandArgs{Cmd: cmd, YieldTimeMs: u64(250)}, Observer: rec})
	require.NoError(t, err)
	require.False(t, res.Exited)
	require.Equal(t, 1000, res.SessionID)
	require.Contains(t, res.Text, "Process running with session ID 1000\n")
	require.Equal(t, "first\n", res.Output)
	require.Equal(t, []int{1000}, x.SessionIDs())

	go func() { // release the command once the poll below is waiting (or about to)
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, _ = f.WriteString("go\n")
			f.Close()
		}
	}()
	res, err = x.WriteStdin(context.Background(), WriteStdinRequest{Args: WriteStdinArgs{SessionID: 1000}})
	require.NoError(t, err)
	require.True(t, res.Exited, res.Text)
	require.Equal(t, "second\n", res.Output, "only output since the previous call")
	require.Contains(t, res.Text, "Process exited with code 0\n")
	require.Empty(t, x.SessionIDs())
	rec.waitExited(t)
	rec.mu.Lock()
	require.Equal(t, "first\nsecond\n", rec.agg)
	want := []string{"started", "delta:second\n", "exited"}
	if len(rec.events) == 4 { // "first" came after the startup window (a loaded machine): streamed too
		want = []string{"started", "delta:first\n", "delta:second\n", "exited"}
	}
	require.Equal(t, want, rec.events, "deltas start once the process is announced; empty polls are no interaction")
	rec.mu.Unlock()

	_, err = x.WriteStdin(context.Background(), WriteStdinRequest{Args: WriteStdinArgs{SessionID: 1000}})
	var te *ToolError
	require.ErrorAs(t, err, &te)
	require.Equal(t, "write_stdin failed: Unknown process id 1000", te.Error())
}

// TestExecCommandTTYReadAnsweredByWriteStdin: a prompt read on a PTY is answered through write_stdin.
// Load-independent: the prompt is collected over as many polls as it takes to arrive, the answer's
// call returns at exit (long yield), and whether the prompt came inside the startup window (not
// streamed) or after it (streamed) is read from the recorded events rather than assumed.
func TestExecCommandTTYReadAnsweredByWriteStdin(t *testing.T) {
	x, _ := newTestSessions(t)
	rec := newRecorder()
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "printf 'name? '; read x; echo got:$x", TTY: true, YieldTimeMs: u64(500)}, Observer: rec})
	require.NoError(t, err)
	prompt := res.Output
	for prompt != "name? " {
		require.False(t, res.Exited, res.Text)
		require.True(t, strings.HasPrefix("name? ", prompt), "output so far %q", prompt)
		res, err = x.WriteStdin(context.Background(), WriteStdinRequest{Args: WriteStdinArgs{SessionID: res.SessionID, YieldTimeMs: u64(500)}})
		require.NoError(t, err)
		prompt += res.Output
	}
	require.False(t, res.Exited)
	res, err = x.WriteStdin(context.Background(), WriteStdinRequest{Args: WriteStdinArgs{SessionID: res.SessionID, Chars: "hi\n", YieldTimeMs: u64(30000)}})
	require.NoError(t, err)
	require.True(t, res.Exited, res.Text)
	require.Equal(t, "hi\r\ngot:hi\r\n", res.Output)
	rec.waitExited(t)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, "name? hi\r\ngot:hi\r\n", rec.agg)
	streamed := "" // the output that arrived after the announcement is streamed, the rest is not
	for _, e := range rec.events[slices.Index(rec.events, "started")+1:] {
		if d, ok := strings.CutPrefix(e, "delta:"); ok {
			streamed += d
		}
	}
	require.Equal(t, streamed, rec.deltas.String(), "no delta before the announcement")
	require.Contains(t, []string{"hi\r\ngot:hi\r\n", "name? hi\r\ngot:hi\r\n"}, rec.deltas.String(),
		"the answer and what follows are streamed; the prompt only if it came after the startup window")
	require.Equal(t, "interaction:hi\n", rec.events[len(rec.events)-2], "the interaction is reported after collection, before the exit")
	require.Equal(t, "exited", rec.events[len(rec.events)-1])
}

func TestWriteStdinToPipeSessionFails(t *testing.T) {
	x, _ := newTestSessions(t)
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "sleep 100", YieldTimeMs: u64(250)}})
	require.NoError(t, err)
	_, err = x.WriteStdin(context.Background(), WriteStdinRequest{Args: WriteStdinArgs{SessionID: res.SessionID, Chars: "x"}})
	require.EqualError(t, err, "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open")
	require.True(t, x.Terminate(res.SessionID))
	require.False(t, x.Terminate(res.SessionID))
}

func TestExecCommandSeqTruncation(t *testing.T) {
	x, _ := newTestSessions(t)
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "seq 1 30000", MaxOutputTokens: u64(60), YieldTimeMs: u64(10000)}})
	require.NoError(t, err)
	require.True(t, res.Exited)
	require.Equal(t, 42224, res.OriginalTokenCount)
	var head, tail strings.Builder
	for i := 1; i <= 43; i++ {
		fmt.Fprintf(&head, "%d\n", i)
	}
	for i := 29981; i <= 30000; i++ {
		fmt.Fprintf(&tail, "%d\n", i)
	}
	want := "Process exited with code 0\nOriginal token count: 42224\nOutput:\n" +
		"Warning: truncated output (original token count: 42224)\nTotal output lines: 30000\n\n" +
		head.String() + "…42164 tokens truncated…" + tail.String()
	require.True(t, strings.HasSuffix(res.Text, want), res.Text)
	require.Regexp(t, textRE, res.Text)
}

func TestFormatModelOutputFitsUnchanged(t *testing.T) {
	require.Equal(t, "abcd", FormatModelOutput("abcd", 1))
	require.Equal(t, "Warning: truncated output (original token count: 2)\nTotal output lines: 1\n\nab…1 tokens truncated…ef",
		FormatModelOutput("abcdef", 1))
	// Multi-byte runes are never split.
	got, cut := TruncateMiddle("ééééé", 1)
	require.True(t, cut)
	require.Equal(t, "é…2 tokens truncated…é", got)
	got, _ = TruncateMiddle("abc", 0)
	require.Equal(t, "…1 tokens truncated…", got)
	require.Equal(t, 0, CountLines(""))
	require.Equal(t, 1, CountLines("a\n"))
	require.Equal(t, 2, CountLines("a\nb"))
}

func TestExecCommandBadWorkdirAndShell(t *testing.T) {
	x, _ := newTestSessions(t)
	rec := newRecorder()
	_, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "true", Workdir: "/nonexistent/dir"}, Observer: rec})
	var te *ToolError
	require.ErrorAs(t, err, &te)
	require.Equal(t, `exec_command failed: CreateProcess { message: "Rejected(\"Failed to create unified exec process: No such file or directory (os error 2)\")" }`, te.Msg)
	require.Equal(t, "Failed to create unified exec process: No such file or directory (os error 2)", te.Output)
	require.Empty(t, rec.events, "no process, no item events")
	require.Empty(t, x.SessionIDs())

	// An unknown shell falls back to /bin/sh; a bare name is resolved through PATH.
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "echo hi", Shell: "/no/such/shell"}, Observer: rec})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, "hi\n", res.Output)
	require.Equal(t, "/bin/sh -lc 'echo hi'", rec.started[1])
	rec2 := newRecorder()
	_, err = x.ExecCommand(context.Background(), ExecCommandRequest{Env: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, Args: ExecCommandArgs{Cmd: "echo hi", Shell: "sh"}, Observer: rec2})
	require.NoError(t, err)
	require.Equal(t, "/usr/bin/sh -lc 'echo hi'", rec2.started[1])

	res, err = x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "no-such-command-xyz"}})
	require.NoError(t, err)
	require.Equal(t, 127, res.ExitCode)
	require.Contains(t, res.Output, "command not found")
	res, err = x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "kill -9 $$"}})
	require.NoError(t, err)
	require.Contains(t, res.Text, "Process exited with code 137\nOriginal token count: 0\nOutput:\n")
}

func TestExecCommandExitedAfterReturn(t *testing.T) {
	x, _ := newTestSessions(t)
	rec := newRecorder()
	gate := filepath.Join(t.TempDir(), "gate")
	// The command ends only once the call returned (not after a sleep the yield must outlast).
	cmd := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.01; done; echo late; exit 7", gate)
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: cmd, YieldTimeMs: u64(250)}, Observer: rec})
	require.NoError(t, err)
	require.False(t, res.Exited)
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	rec.waitExited(t) // nobody polls: the background watcher completes the item
	rec.mu.Lock()
	require.Equal(t, 7, rec.code)
	require.Equal(t, "late\n", rec.agg)
	require.Equal(t, []string{"started", "delta:late\n", "exited"}, rec.events)
	rec.mu.Unlock()
	// The exited session stays stored until polled; the poll reports the exit and releases it.
	require.Equal(t, []int{res.SessionID}, x.SessionIDs())
	res, err = x.WriteStdin(context.Background(), WriteStdinRequest{Args: WriteStdinArgs{SessionID: res.SessionID}})
	require.NoError(t, err)
	require.True(t, res.Exited)
	require.Equal(t, 7, res.ExitCode)
	require.Equal(t, "late\n", res.Output)
	time.Sleep(50 * time.Millisecond)
	rec.mu.Lock()
	require.Equal(t, 1, rec.exits, "Exited exactly once")
	rec.mu.Unlock()
}

func TestExecCommandPausedControllerHoldsResult(t *testing.T) {
	x, _ := newTestSessions(t)
	ctrl := stopwatch.NewController()
	start := time.Now()
	resumeAt := 2 * time.Second
	var resumed, announced time.Time
	var mu sync.Mutex
	// Paused from the announcement until resumeAt later, whatever the load.
	obs := ObserverFuncs{OnStarted: func(string, string, string) {
		mu.Lock()
		announced = time.Now()
		mu.Unlock()
		ctrl.SetPaused(true)
		go func() {
			time.Sleep(resumeAt)
			mu.Lock()
			resumed = time.Now()
			mu.Unlock()
			ctrl.SetPaused(false)
		}()
	}}
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "sleep 1.5; echo done", YieldTimeMs: u64(700)}, Controller: ctrl, Observer: obs})
	returned := time.Now()
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.False(t, resumed.IsZero(), "returned before the resume (after %v)", returned.Sub(start))
	require.False(t, returned.Before(resumed))
	require.True(t, res.Exited, res.Text)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, "done\n", res.Output)
	require.GreaterOrEqual(t, res.WallTime, resumed.Sub(announced), "wall time (from the announcement) includes the pause")
}

func TestExecCommandPausedThenResumedKeepsRemainingBudget(t *testing.T) {
	x, _ := newTestSessions(t)
	ctrl := stopwatch.NewController()
	var mu sync.Mutex
	var paused time.Duration
	done := make(chan struct{})
	// Pause when the process is announced (the yield budget starts there), so the whole pause falls
	// inside the measured wall time whatever the load.
	obs := ObserverFuncs{OnStarted: func(string, string, string) {
		ctrl.SetPaused(true)
		go func() {
			defer close(done)
			from := time.Now()
			time.Sleep(time.Second)
			mu.Lock()
			paused = time.Since(from)
			mu.Unlock()
			ctrl.SetPaused(false)
		}()
	}}
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "sleep 100", YieldTimeMs: u64(500)}, Controller: ctrl, Observer: obs})
	require.NoError(t, err)
	<-done
	require.False(t, res.Exited)
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, res.WallTime, paused+500*time.Millisecond, "yield budget is not charged while paused")
	x.TerminateAll()
}

func TestExecCommandContextCancelKeepsSession(t *testing.T) {
	x, _ := newTestSessions(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled once the process is announced (not on a timer that a slow spawn could outlast).
	obs := ObserverFuncs{OnStarted: func(string, string, string) { cancel() }}
	_, err := x.ExecCommand(ctx, ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "sleep 100", YieldTimeMs: u64(600000)}, Observer: obs})
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.Len(t, x.SessionIDs(), 1, "an interrupted call leaves the background terminal running")
	x.TerminateAll()
	require.Empty(t, x.SessionIDs())
}

func TestSessionsPruning(t *testing.T) {
	// A long drain limit: Close's bound (grace+drain+2 s) for the 64 sessions must only fail on a hang.
	m := NewManager(ManagerOptions{KillGrace: 200 * time.Millisecond, DrainTimeout: time.Minute})
	t.Cleanup(func() { _ = m.Close() })
	x := NewSessions(SessionsOptions{Manager: m, DeterministicIDs: true})
	var wg sync.WaitGroup
	errs := make(chan error, MaxSessions)
	for i := 0; i < MaxSessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "sleep 100", YieldTimeMs: u64(250)}})
			if err == nil && res.Exited {
				err = errors.New("exited early")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, x.SessionIDs(), MaxSessions)
	// Make the LRU order deterministic: session id 1000+k was used at time k+1.
	x.mu.Lock()
	for id, s := range x.store {
		s.lastUsed = uint64(id - 999)
	}
	x.clock = MaxSessions
	s1005, s1060 := x.store[1005], x.store[1060]
	x.mu.Unlock()
	// 1005 (unprotected) and 1060 (among the 8 most recent) exit but stay stored.
	for _, s := range []*session{s1005, s1060} {
		s.proc.KillNow()
		<-s.proc.Done()
	}
	s1000 := func() *session { x.mu.Lock(); defer x.mu.Unlock(); return x.store[1000] }()

	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "sleep 100", YieldTimeMs: u64(250)}})
	require.NoError(t, err)
	require.Equal(t, 1064, res.SessionID)
	ids := x.SessionIDs()
	require.Len(t, ids, MaxSessions)
	require.NotContains(t, ids, 1005, "the LRU exited session outside the protected set goes first")
	require.Contains(t, ids, 1000)
	require.Contains(t, ids, 1060)
	require.Equal(t, "The maximum number of unified exec processes you can keep open is 60 and you currently have 64 processes open. Reuse older processes or close them to prevent automatic pruning of old processes", res.Warning)

	res, err = x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "sleep 100", YieldTimeMs: u64(250)}})
	require.NoError(t, err)
	ids = x.SessionIDs()
	require.NotContains(t, ids, 1000, "no unprotected exited session: the LRU live one is evicted")
	require.Contains(t, ids, 1060, "protected even though it exited")
	require.Contains(t, ids, res.SessionID)
	select {
	case <-s1000.proc.Done():
	case <-time.After(time.Minute):
		t.Fatal("the pruned session was not terminated")
	}
	_, err = x.WriteStdin(context.Background(), WriteStdinRequest{Args: WriteStdinArgs{SessionID: 1000}})
	require.EqualError(t, err, "write_stdin failed: Unknown process id 1000")

	x.TerminateAll()
	require.NoError(t, m.Close())
	require.Empty(t, m.Live())
}

func TestSessionsWarningBelowThreshold(t *testing.T) {
	x, _ := newTestSessions(t)
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "sleep 100", YieldTimeMs: u64(250)}})
	require.NoError(t, err)
	require.Empty(t, res.Warning)
	x.TerminateAll()
}

func TestRandomSessionIDs(t *testing.T) {
	m := newTestManager(t)
	x := NewSessions(SessionsOptions{Manager: m})
	seen := map[int]bool{}
	for i := 0; i < 200; i++ {
		id := x.reserve()
		require.GreaterOrEqual(t, id, 1000)
		require.Less(t, id, 100000)
		require.False(t, seen[id])
		seen[id] = true
	}
}

func TestShellJoin(t *testing.T) {
	tests := []struct {
		want string
		argv []string
	}{
		{"/bin/bash -lc 'echo hello'", []string{"/bin/bash", "-lc", "echo hello"}},
		// Observed from the reference: a quote forces double quotes up to the `$`, which goes single-quoted.
		{`/bin/bash -lc "printf 'name? '; read x; echo got:"'$x'`, []string{"/bin/bash", "-lc", "printf 'name? '; read x; echo got:$x"}},
		{"/bin/bash -lc true", []string{"/bin/bash", "-lc", "true"}},
		{"/bin/bash -lc 'kill -9 $$'", []string{"/bin/bash", "-lc", "kill -9 $$"}},
		{"''", []string{""}},
		{"ls -la a+b/c.d:e@f]g_h", []string{"ls", "-la", "a+b/c.d:e@f]g_h"}},
		{"'a=b' 'a,b' '%x' '~' '#' '*'", []string{"a=b", "a,b", "%x", "~", "#", "*"}},
		{`"don't"`, []string{"don't"}},
		{`"'\""`, []string{`'"`}},
		{`"a\\b"`, []string{`a\b`}},
		{`'^x'`, []string{"^x"}},
		{`x'^y'`, []string{"x^y"}},
		{`'ünï'`, []string{"ünï"}},
		{`"it's "'$HOME'`, []string{"it's $HOME"}},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, ShellJoin(tc.argv), "%q", tc.argv)
	}
}

func TestToolSchemasMatchReference(t *testing.T) {
	schemas := UnifiedExecToolSchemas()
	require.Len(t, schemas, 2)
	ref := loadReferenceTools(t)
	for _, s := range schemas {
		var got map[string]any
		require.NoError(t, jsonUnmarshal(s, &got))
		want, ok := ref[got["name"].(string)]
		require.True(t, ok, "tool %v not in the reference request", got["name"])
		require.Equal(t, want, got)
	}
	var sc map[string]any
	require.NoError(t, jsonUnmarshal(ShellCommandToolSchema(), &sc))
	require.Equal(t, "shell_command", sc["name"])
	params := sc["parameters"].(map[string]any)
	require.Equal(t, []any{"command"}, params["required"])
	props := params["properties"].(map[string]any)
	for _, k := range []string{"command", "workdir", "timeout_ms", "login", "sandbox_permissions", "justification", "prefix_rule"} {
		require.Contains(t, props, k)
	}
}

func TestArgsDecode(t *testing.T) {
	var a ExecCommandArgs
	require.NoError(t, jsonUnmarshal([]byte(`{"cmd": "echo hello", "yield_time_ms": 2000, "login": false, "tty": true}`), &a))
	require.Equal(t, "echo hello", a.Cmd)
	require.EqualValues(t, 2000, *a.YieldTimeMs)
	require.False(t, *a.Login)
	require.True(t, a.TTY)
	var w WriteStdinArgs
	require.NoError(t, jsonUnmarshal([]byte(`{"session_id": 1000, "chars": "x"}`), &w))
	require.Equal(t, 1000, w.SessionID)
	require.Error(t, jsonUnmarshal([]byte(`{"session_id": "abc"}`), &w))
}

func TestExecCommandExitWithoutOutputClose(t *testing.T) {
	m := NewManager(ManagerOptions{KillGrace: 200 * time.Millisecond, DrainTimeout: 30 * time.Second})
	t.Cleanup(func() { _ = m.Close() })
	x := NewSessions(SessionsOptions{Manager: m, DeterministicIDs: true})
	rec := newRecorder()
	// The background sleep keeps stdout open after bash exited: the call waits at most 50 ms more. Bash
	// exits only once "hi" was read, so that those 50 ms need not cover a late reader.
	gate := filepath.Join(t.TempDir(), "gate")
	go func() {
		for {
			if live := m.Live(); len(live) == 1 && live[0].OutputSeq() > 0 {
				_ = os.WriteFile(gate, nil, 0o600)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	cmd := fmt.Sprintf("sleep 1000 & echo hi; while [ ! -e %s ]; do sleep 0.01; done", gate)
	res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: cmd, Login: bptr(false), YieldTimeMs: u64(600000)}, Observer: rec})
	require.NoError(t, err)
	require.Len(t, m.Live(), 1, "still draining the grandchild's pipe")
	for _, p := range m.Live() {
		pgid := p.Pid()
		t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	}
	require.True(t, res.Exited, res.Text)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, "hi\n", res.Output)
	require.Less(t, res.WallTime, 25*time.Second, "not held until the 30 s drain limit")
	rec.waitExited(t)
	require.Empty(t, x.SessionIDs())
}

func TestTerminatedSessionReportsExitCodeMinusOne(t *testing.T) {
	for _, all := range []bool{false, true} {
		x, _ := newTestSessions(t)
		rec := newRecorder()
		res, err := x.ExecCommand(context.Background(), ExecCommandRequest{Env: testEnv(t), Args: ExecCommandArgs{Cmd: "echo up; sleep 100", YieldTimeMs: u64(250)}, Observer: rec})
		require.NoError(t, err)
		require.False(t, res.Exited)
		// The yield may end before the shell printed (a loaded machine): terminate once "up" was seen, in
		// the call's output (inside the startup window) or streamed after it.
		require.Eventually(t, func() bool {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			return res.Output == "up\n" || strings.Contains(rec.deltas.String(), "up\n")
		}, time.Minute, 5*time.Millisecond)
		if all {
			x.TerminateAll()
		} else {
			require.True(t, x.Terminate(res.SessionID))
		}
		rec.waitExited(t)
		rec.mu.Lock()
		require.Equal(t, -1, rec.code, "a terminated session is not reported with the signal's exit status")
		require.Equal(t, "up\n", rec.agg)
		rec.mu.Unlock()
		require.Empty(t, x.SessionIDs())
		require.False(t, x.Terminate(res.SessionID), "a terminated session is forgotten")
	}
}

// TestUnreadSeesOutputLeftInThePipe: a command that exited while its output still sits in the pipe (its
// reader is held up, as on a loaded machine) has Unread output until the reader drains it; collect waits
// for it rather than cutting the output after the exit grace.
func TestUnreadSeesOutputLeftInThePipe(t *testing.T) {
	m := newTestManager(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	first, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	// The reader takes "x" and is then held; only then is the rest written (it fits the pipe) and the
	// command exits, so the rest is certainly unread.
	p, err := m.Spawn(context.Background(), SpawnRequest{Owner: "t", Argv: []string{"sh", "-c", "printf x; read _ < " + fifo + "; head -c 30000 /dev/zero"},
		OutputCap: -1, OnOutput: func(Stream, []byte) { once.Do(func() { close(first); <-release }) }})
	require.NoError(t, err)
	<-first
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, _ = f.WriteString("go\n")
	require.NoError(t, f.Close())
	select {
	case <-p.Exited():
	case <-time.After(2 * time.Minute):
		t.Fatal("the command did not exit")
	}
	require.True(t, p.Unread(), "output waits in the pipe behind the held reader")
	close(release)
	select {
	case <-p.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("the output was not drained")
	}
	require.False(t, p.Unread())
}
