package shellsnapshot

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/execmgr"
	"appserver/stopwatch/stopwatchtest"
)

// hang bounds waits that only a real hang exceeds.
const hang = 2 * time.Minute

type fixture struct {
	home, codexHome string
	env             []string
}

// newFixture makes a HOME with the given login profile and bashrc.
func newFixture(t *testing.T, profile, bashrc string) fixture {
	t.Helper()
	root := t.TempDir()
	f := fixture{home: filepath.Join(root, "home"), codexHome: filepath.Join(root, "codex")}
	require.NoError(t, os.MkdirAll(f.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.home, ".bash_profile"), []byte(profile), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.home, ".bashrc"), []byte(bashrc), 0o644))
	f.env = []string{"HOME=" + f.home, "PATH=" + os.Getenv("PATH"), "CODEX_HOME=" + f.codexHome}
	return f
}

func (f fixture) start(t *testing.T, timeout time.Duration) *Snapshot {
	t.Helper()
	s := Start(Options{CodexHome: f.codexHome, ThreadID: "thr-1", Shell: "/bin/bash", Cwd: f.home, Env: f.env, Timeout: timeout})
	require.NotNil(t, s)
	t.Cleanup(s.Close)
	return s
}

func waitDone(t *testing.T, s *Snapshot) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(hang):
		t.Fatal("capture never finished")
	}
}

func snapshotFiles(t *testing.T, codexHome string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(codexHome, Dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func runArgv(t *testing.T, argv []string, env []string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

const userProfile = `echo login >> "$HOME/logins"
export FROM_PROFILE=profile-value
export CODEX_THREAD_ID=from-profile
export TRICKY=$'a\'b"c$d\nline2 \\ e'
set -o noclobber
`

const userBashrc = `greet() { echo "hello $1"; }
alias ll='ls -l'
export FROM_BASHRC=bashrc-value
`

func TestCaptureAndApply(t *testing.T) {
	f := newFixture(t, userProfile, userBashrc)
	s := f.start(t, 0)
	waitDone(t, s)
	path := s.Path()
	require.NotEmpty(t, path)
	require.Regexp(t, `^thr-1\.\d+\.sh$`, filepath.Base(path))
	require.Equal(t, filepath.Join(f.codexHome, Dir), filepath.Dir(path))
	require.Equal(t, []string{filepath.Base(path)}, snapshotFiles(t, f.codexHome), "the temporary file is renamed into place")
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, want := range []string{"greet ()", "alias ll='ls -l'", `declare -x FROM_PROFILE="profile-value"`,
		`declare -x FROM_BASHRC="bashrc-value"`, "set -o noclobber"} {
		require.Contains(t, string(body), want)
	}
	require.NotContains(t, string(body), "declare -x PWD=")

	script := `echo "$FROM_PROFILE $FROM_BASHRC $CODEX_THREAD_ID $1"; type greet >/dev/null 2>&1 || echo no-functions; tr '\0' ' ' < /proc/$$/cmdline`
	argv, env := s.Apply([]string{"/bin/bash", "-lc", script, "arg0", "it's"}, append(f.env, "CODEX_THREAD_ID=thread-of-command"), Protected)
	require.Equal(t, []string{"/bin/bash", "-c", script, "arg0", "it's"}, argv)
	out := runArgv(t, argv, env)
	// exports reach the command, the command's own CODEX_THREAD_ID wins, functions do not, no login shell
	require.Equal(t, "profile-value bashrc-value thread-of-command it's\nno-functions\n/bin/bash -c "+script+" arg0 it's ", out)

	// a protected variable the command does not have stays unset
	argv, env = s.Apply([]string{"/bin/bash", "-lc", `echo "[${CODEX_THREAD_ID-unset}]"`}, f.env, Protected)
	require.Equal(t, "[unset]\n", runArgv(t, argv, env))

	require.Contains(t, env, "TRICKY=a'b\"c$d\nline2 \\ e")
	// the file itself recreates the same exports when sourced
	out = runArgv(t, []string{"/bin/bash", "-c", ". " + execmgr.ShellQuote(path) + ` >/dev/null 2>&1; printf %s "$TRICKY"`}, f.env)
	require.Equal(t, "a'b\"c$d\nline2 \\ e", out)
	out = runArgv(t, []string{"/bin/bash", "-c", ". " + execmgr.ShellQuote(path) + ` >/dev/null 2>&1; echo "$FROM_PROFILE $FROM_BASHRC"`}, f.env)
	require.Equal(t, "profile-value bashrc-value\n", out)

	logins, err := os.ReadFile(filepath.Join(f.home, "logins"))
	require.NoError(t, err)
	require.Equal(t, "login\n", string(logins), "the commands ran without a login shell")

	s.Close()
	require.Empty(t, snapshotFiles(t, f.codexHome), "Close deletes the snapshot")
	require.Empty(t, s.Path())
	orig := []string{"/bin/bash", "-lc", "true"}
	argv, env = s.Apply(orig, f.env, Protected)
	require.Equal(t, orig, argv, "a closed snapshot changes nothing")
	require.Equal(t, f.env, env)
}

func TestApplyLeavesNonLoginCommands(t *testing.T) {
	f := newFixture(t, "", "")
	s := f.start(t, 0)
	waitDone(t, s)
	require.NotEmpty(t, s.Path())
	for _, argv := range [][]string{{"/bin/bash", "-c", "true"}, {"/bin/bash", "-lc"}, {"ls", "-l", "x"}} {
		got, env := s.Apply(argv, f.env, Protected)
		require.Equal(t, argv, got)
		require.Equal(t, f.env, env)
	}
	var nilSnap *Snapshot
	got, _ := nilSnap.Apply([]string{"/bin/bash", "-lc", "x"}, nil, Protected)
	require.Equal(t, []string{"/bin/bash", "-lc", "x"}, got)
}

func TestFailedCaptureFallsBack(t *testing.T) {
	f := newFixture(t, "exit 3\n", "")
	s := f.start(t, 0)
	waitDone(t, s)
	require.Empty(t, s.Path())
	require.Empty(t, snapshotFiles(t, f.codexHome))
	argv := []string{"/bin/bash", "-lc", "true"}
	got, _ := s.Apply(argv, f.env, Protected)
	require.Equal(t, argv, got)
}

func TestInvalidSnapshotIsDiscarded(t *testing.T) {
	// An exported SHELLOPTS is written as `declare -rx SHELLOPTS=...`, which a fresh bash refuses.
	f := newFixture(t, "", "export SHELLOPTS\n")
	s := f.start(t, 0)
	waitDone(t, s)
	require.Empty(t, s.Path())
	require.Empty(t, snapshotFiles(t, f.codexHome), "no temporary file is left")
}

func TestSlowCaptureIsKilled(t *testing.T) {
	f := newFixture(t, `echo $$ > "$HOME/pid"; exec sleep 1000`+"\n", "")
	// The timeout runs on a fake clock: it passes only once bash wrote its pid, however slow the machine.
	clock := stopwatchtest.NewFakeClock(time.Unix(0, 0))
	s := Start(Options{CodexHome: f.codexHome, ThreadID: "thr-1", Shell: "/bin/bash", Cwd: f.home, Env: f.env,
		Timeout: 3 * time.Second, Clock: clock})
	require.NotNil(t, s)
	t.Cleanup(s.Close)
	var raw []byte
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(f.home, "pid"))
		raw = b
		return err == nil && len(b) > 0 && b[len(b)-1] == '\n'
	}, hang, 10*time.Millisecond, "the capture never started")
	clock.Advance(3*time.Second - time.Millisecond)
	select {
	case <-s.Done():
		t.Fatal("the capture ended before its timeout")
	default:
	}
	clock.Advance(time.Millisecond)
	waitDone(t, s)
	require.Empty(t, s.Path())
	require.Empty(t, snapshotFiles(t, f.codexHome))
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the capture's process is gone")
}

// TestCloseDuringCapture: Close kills a running capture and returns once it is gone; the capture's own
// timeout is far beyond the test's bound, so only the kill can end it.
func TestCloseDuringCapture(t *testing.T) {
	f := newFixture(t, `echo $$ > "$HOME/pid"; exec sleep 100000`+"\n", "")
	s := f.start(t, time.Hour)
	pidFile := filepath.Join(f.home, "pid")
	deadline := time.Now().Add(hang)
	var raw []byte
	for {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			raw = b
			break
		}
		require.True(t, time.Now().Before(deadline), "the capture never started")
		time.Sleep(10 * time.Millisecond)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(hang):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		t.Fatal("Close did not end the capture")
	}
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the capture's process is gone (killed and reaped)")
	require.Empty(t, s.Path())
	require.Empty(t, snapshotFiles(t, f.codexHome))
}

// TestSweepOncePerHome: the stale snapshots of every CODEX_HOME this process captures in are swept, not
// only the first one's.
func TestSweepOncePerHome(t *testing.T) {
	old := time.Now().Add(-Retention - time.Hour)
	for i := range 2 {
		f := newFixture(t, "", "")
		stale := filepath.Join(f.codexHome, Dir, "gone-"+strconv.Itoa(i)+".1.sh")
		require.NoError(t, os.MkdirAll(filepath.Dir(stale), 0o755))
		require.NoError(t, os.WriteFile(stale, nil, 0o644))
		require.NoError(t, os.Chtimes(stale, old, old))
		s := f.start(t, 0)
		waitDone(t, s)
		require.NotEmpty(t, s.Path())
		require.NoFileExists(t, stale, "home %d swept", i)
	}
}

func TestUnsupportedShell(t *testing.T) {
	require.Nil(t, Start(Options{CodexHome: t.TempDir(), ThreadID: "x", Shell: "/usr/bin/fish"}))
	require.True(t, Supported("/usr/local/bin/bash"))
	require.False(t, Supported("/bin/sh"))
}

func TestSweep(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, Dir)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	now := time.Now()
	old := now.Add(-Retention - time.Hour)
	write := func(path string, mt time.Time) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, nil, 0o644))
		require.NoError(t, os.Chtimes(path, mt, mt))
	}
	sessions := filepath.Join(home, "sessions", "2026", "01", "02")
	write(filepath.Join(sessions, "rollout-2026-01-02T00-00-00-fresh.jsonl"), now)
	write(filepath.Join(sessions, "rollout-2026-01-02T00-00-00-stale.jsonl"), old)
	write(filepath.Join(home, "archived_sessions", "rollout-2026-01-02T00-00-00-archived.jsonl"), now)
	for _, name := range []string{"fresh.1.sh", "stale.1.sh", "archived.1.sh", "orphan-old.1.sh", "orphan-new.tmp-1", "active.1.sh"} {
		mt := now
		if strings.HasPrefix(name, "orphan-old") || name == "active.1.sh" {
			mt = old
		}
		write(filepath.Join(dir, name), mt)
	}
	write(filepath.Join(sessions, "rollout-2026-01-02T00-00-00-active.jsonl"), old)
	Sweep(home, "active", now, slog.New(slog.DiscardHandler))
	require.ElementsMatch(t, []string{"fresh.1.sh", "archived.1.sh", "orphan-new.tmp-1", "active.1.sh"}, snapshotFiles(t, home))
}

// TestQueuedCapturesAreShared: snapshots requested before a capture starts share it (one login shell), and
// each thread still gets its own file.
func TestQueuedCapturesAreShared(t *testing.T) {
	f := newFixture(t, userProfile, userBashrc)
	for range MaxConcurrent { // hold every capture slot, so the three requests queue
		slots <- struct{}{}
	}
	var snaps []*Snapshot
	for i := range 3 {
		s := Start(Options{CodexHome: f.codexHome, ThreadID: "thr-" + strconv.Itoa(i), Shell: "/bin/bash", Cwd: f.home, Env: f.env})
		require.NotNil(t, s)
		t.Cleanup(s.Close)
		snaps = append(snaps, s)
	}
	for range MaxConcurrent {
		<-slots
	}
	paths := map[string]bool{}
	for _, s := range snaps {
		waitDone(t, s)
		require.NotEmpty(t, s.Path())
		paths[s.Path()] = true
		argv, env := s.Apply([]string{"/bin/bash", "-lc", `echo "$FROM_BASHRC"`}, f.env, Protected)
		require.Equal(t, "bashrc-value\n", runArgv(t, argv, env))
	}
	require.Len(t, paths, 3)
	logins, err := os.ReadFile(filepath.Join(f.home, "logins"))
	require.NoError(t, err)
	require.Equal(t, "login\n", string(logins), "one capture served the three threads")

	// a later request gets a capture of its own
	s := f.start(t, 0)
	waitDone(t, s)
	require.NotEmpty(t, s.Path())
	logins, err = os.ReadFile(filepath.Join(f.home, "logins"))
	require.NoError(t, err)
	require.Equal(t, "login\nlogin\n", string(logins))
}

// TestPrepareWaitsForBegin: a prepared snapshot captures nothing until Begin; closed before it, it never
// captures, and Begin after Close does nothing.
func TestPrepareWaitsForBegin(t *testing.T) {
	f := newFixture(t, userProfile, userBashrc)
	o := Options{CodexHome: f.codexHome, ThreadID: "thr-p", Shell: "/bin/bash", Cwd: f.home, Env: f.env}
	s := Prepare(o)
	require.NotNil(t, s)
	require.False(t, s.Begun())
	s.Begin()
	require.True(t, s.Begun())
	waitDone(t, s)
	require.NotEmpty(t, s.Path())
	s.Close()

	s = Prepare(o)
	s.Close()
	select {
	case <-s.Done():
	default:
		t.Fatal("Close did not finish a snapshot that never began")
	}
	s.Begin()
	require.False(t, s.Begun())
	require.Empty(t, snapshotFiles(t, f.codexHome))
	logins, err := os.ReadFile(filepath.Join(f.home, "logins"))
	require.NoError(t, err)
	require.Equal(t, "login\n", string(logins), "only the begun snapshot ran a login shell")
}

// TestCaptureWaitsForTheLoadsToSettle: a batch captures only once snapshots stop joining it, so a burst of
// loads shares one login shell that starts after the burst. (The settle timers are fired by hand.)
func TestCaptureWaitsForTheLoadsToSettle(t *testing.T) {
	f := newFixture(t, userProfile, userBashrc)
	fire := make(chan time.Time)
	armed := make(chan time.Duration, 16)
	settleAfter = func(d time.Duration) (<-chan time.Time, func()) { armed <- d; return fire, func() {} }
	t.Cleanup(func() {
		settleAfter = func(d time.Duration) (<-chan time.Time, func()) {
			tm := time.NewTimer(d)
			return tm.C, func() { tm.Stop() }
		}
	})
	waitArmed := func(want time.Duration) {
		t.Helper()
		select {
		case d := <-armed:
			require.Equal(t, want, d)
		case <-time.After(hang):
			t.Fatal("the batch does not wait for the loads to settle")
		}
	}
	start := func(id string) *Snapshot {
		s := Start(Options{CodexHome: f.codexHome, ThreadID: id, Shell: "/bin/bash", Cwd: f.home, Env: f.env})
		require.NotNil(t, s)
		t.Cleanup(s.Close)
		return s
	}
	a := start("thr-a")
	waitArmed(MaxSettle)
	waitArmed(Settle)
	b := start("thr-b") // joins the settling batch, which waits again
	waitArmed(Settle)
	close(fire)
	waitDone(t, a)
	waitDone(t, b)
	require.NotEmpty(t, a.Path())
	require.NotEmpty(t, b.Path())
	require.NotEqual(t, a.Path(), b.Path())
	logins, err := os.ReadFile(filepath.Join(f.home, "logins"))
	require.NoError(t, err)
	require.Equal(t, "login\n", string(logins), "one capture, after the burst")
}
