package execmgr

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/sandbox"
)

// launcherManager is a Manager whose read-only sandboxed commands go through launchers, and the
// sandbox hook for such a command in dir; the test is skipped where that cannot work here.
func launcherManager(t *testing.T, opts ManagerOptions) (*Manager, func([]string) ([]string, error)) {
	t.Helper()
	if ok, reason := sandbox.Available(); !ok {
		t.Skipf("kernel sandbox unavailable: %s", reason)
	}
	m := NewManager(opts)
	t.Cleanup(func() { _ = m.Close() })
	sc := m.tr.open("probe")
	hasCg := sc.cgFD >= 0
	m.tr.release(sc)
	if !hasCg {
		t.Skip("launchers need a cgroup per command; none here")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	return m, func(argv []string) ([]string, error) {
		return sandbox.WrapArgvIn(self, sandbox.Policy{Kind: sandbox.ReadOnly}, dir, "", argv)
	}
}

// launched reports whether p was started by a launcher.
func launched(p *Process) bool {
	_, ok := p.child.(launchedChild)
	return ok
}

// launcherPids lists the live launchers of m.
func launcherPids(m *Manager) []int {
	m.ls.mu.Lock()
	defer m.ls.mu.Unlock()
	var out []int
	for _, e := range m.ls.byKey {
		out = append(out, e.l.Pid())
	}
	return out
}

// parentOf is the parent pid of pid, from /proc.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.NoError(t, err)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	require.NoError(t, err)
	return ppid
}

func spawnRO(t *testing.T, m *Manager, wrap func([]string) ([]string, error), owner string, tty bool, script string, s *streams) *Process {
	t.Helper()
	argv := []string{"sh", "-c", script}
	if a, ok := strings.CutPrefix(script, "argv:"); ok {
		argv = strings.Fields(a)
		for i := range argv {
			argv[i] = strings.ReplaceAll(argv[i], "~", " ")
		}
	}
	req := SpawnRequest{Owner: owner, Argv: argv, TTY: tty, WrapArgv: wrap}
	if s != nil {
		req.OnOutput = s.on
	}
	p, err := m.Spawn(context.Background(), req)
	require.NoError(t, err)
	return p
}

// TestLauncherReused: an owner's second read-only command is forked by the launcher of the
// first; no other launcher (or helper) starts, and another owner gets its own.
func TestLauncherReused(t *testing.T) {
	m, wrap := launcherManager(t, ManagerOptions{})
	var pids []int
	for i := 0; i < 3; i++ {
		var s streams
		p := spawnRO(t, m, wrap, "t1", false, "echo $PPID; sleep 0.1", &s)
		require.True(t, launched(p))
		require.Eventually(t, func() bool { o, _ := s.get(); return strings.Contains(o, "\n") }, time.Minute, time.Millisecond)
		ls := launcherPids(m)
		require.Len(t, ls, 1, "one launcher for the owner")
		require.Equal(t, ls[0], parentOf(t, p.Pid()), "the command is the launcher's child")
		pids = append(pids, ls[0])
		out, _ := s.get()
		require.Equal(t, "1\n", out, "its parent is process 1 of the namespace")
		require.Equal(t, 0, waitDone(t, p, time.Minute))
	}
	require.Equal(t, pids[0], pids[1])
	require.Equal(t, pids[0], pids[2])
	p := spawnRO(t, m, wrap, "t2", false, "true", nil)
	require.Equal(t, 0, waitDone(t, p, time.Minute))
	require.Len(t, launcherPids(m), 2, "another owner has a launcher of its own")
}

// TestLauncherSandboxProperties: the documented properties hold for launcher-started commands.
func TestLauncherSandboxProperties(t *testing.T) {
	m, wrap := launcherManager(t, ManagerOptions{})
	outside := t.TempDir()
	victim := fmt.Sprintf("/proc/%d/environ", os.Getpid())
	plain := filepath.Join(outside, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("true\n"), 0o644))
	for _, c := range []struct {
		name   string
		tty    bool
		script string
		code   int
		out    string
	}{
		{"exit 0", false, "true", 0, ""},
		{"exit 1", false, "false", 1, ""},
		{"not found", false, "argv:no-such-command-xyz", 127, "appserver sandbox: no-such-command-xyz: command not found"},
		{"not executable", false, "argv:" + plain, 126, "appserver sandbox: " + plain + ": permission denied"},
		{"signal death", false, "kill -TERM $$", 143, ""},
		{"write denied", false, "echo x > " + filepath.Join(outside, "f") + " && echo wrote", 2, "ermission denied"},
		{"network denied", false, "argv:bash -c exec~3<>/dev/tcp/127.0.0.1/9", 1, "socket: Operation not permitted"},
		{"others invisible", false, "cat " + victim + " | tr '\\0' '\\n' | grep -c PATH=; ls /proc | grep -c '^[0-9]'", 0, "No such file"},
		{"cannot signal outside", false, "kill -0 " + strconv.Itoa(os.Getpid()), 1, "No such process"},
		{"pty", true, "test -t 0 && tty && stty size && echo via-tty > /dev/tty", 0, "via-tty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s streams
			p := spawnRO(t, m, wrap, "t", c.tty, c.script, &s)
			require.True(t, launched(p))
			code := waitDone(t, p, 30*time.Second)
			out, errOut := s.get()
			require.Equal(t, c.code, code, "%s|%s", out, errOut)
			require.Contains(t, out+errOut, c.out)
			require.NotContains(t, out, "wrote")
			require.NotContains(t, out, "connected")
			if c.tty {
				require.Contains(t, out, "/dev/pts/")
				require.Contains(t, out, "24 80")
			}
		})
	}
	_, err := os.Stat(filepath.Join(outside, "f"))
	require.True(t, os.IsNotExist(err))
}

// TestLauncherLeftoversDieWithTheCommand: background jobs and setsid daemons of a launched
// command are killed when it exits, as in a PID namespace of its own.
func TestLauncherLeftoversDieWithTheCommand(t *testing.T) {
	m, wrap := launcherManager(t, ManagerOptions{})
	n := uniqueSleep()
	p := spawnRO(t, m, wrap, "t", false, fmt.Sprintf(`sleep %[1]s >/dev/null 2>&1 & setsid sleep %[1]s >/dev/null 2>&1 & echo started`, n), nil)
	require.True(t, launched(p))
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))
	requireNoneRunning(t, n)
	require.Len(t, launcherPids(m), 1, "the launcher stays")

	// A leftover holding the command's stdout dies when the command exits, not after the drain.
	m, wrap = launcherManager(t, ManagerOptions{DrainTimeout: 10 * time.Minute})
	n = uniqueSleep()
	p = spawnRO(t, m, wrap, "t", false, "sleep "+n+" & echo started", nil)
	require.True(t, launched(p))
	require.Equal(t, 0, waitDone(t, p, time.Minute))
	requireNoneRunning(t, n)
}

// TestLauncherKilledMidCommand: a command whose launcher dies ends as killed, and the owner's
// next command gets a new launcher.
func TestLauncherKilledMidCommand(t *testing.T) {
	m, wrap := launcherManager(t, ManagerOptions{})
	var s streams
	p := spawnRO(t, m, wrap, "t", false, "echo ready; exec sleep "+uniqueSleep(), &s)
	require.True(t, launched(p))
	require.Eventually(t, func() bool { o, _ := s.get(); return strings.Contains(o, "ready") }, time.Minute, time.Millisecond)
	ls := launcherPids(m)
	require.Len(t, ls, 1)
	require.NoError(t, syscall.Kill(ls[0], syscall.SIGKILL))
	require.Equal(t, 128+int(syscall.SIGKILL), waitDone(t, p, 30*time.Second))
	p = spawnRO(t, m, wrap, "t", false, "echo again", nil)
	require.True(t, launched(p), "a new launcher")
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))
	require.Contains(t, p.Output(), "again")
	require.NotEqual(t, ls, launcherPids(m))
}

// TestLauncherKillOwnerAndCloseLeaveNothing: KillOwner ends the owner's launcher and commands
// (one that ignores SIGTERM at the end of its grace, and its launcher with it), Close every other
// one.
func TestLauncherKillOwnerAndCloseLeaveNothing(t *testing.T) {
	// A long drain limit: Close's bound (grace+drain+2 s) must only fail on a hang.
	m, wrap := launcherManager(t, ManagerOptions{KillGrace: 100 * time.Millisecond, DrainTimeout: time.Minute})
	n1, n2 := uniqueSleep(), uniqueSleep()
	var s1, s2 streams
	p1 := spawnRO(t, m, wrap, "t1", false, "trap '' TERM; echo ready; sleep "+n1, &s1)
	p2 := spawnRO(t, m, wrap, "t2", false, "echo ready; sleep "+n2, &s2)
	require.True(t, launched(p1) && launched(p2))
	for _, s := range []*streams{&s1, &s2} {
		require.Eventually(t, func() bool { o, _ := s.get(); return strings.Contains(o, "ready") }, time.Minute, time.Millisecond)
	}
	ls := launcherPids(m)
	require.Len(t, ls, 2)
	m.KillOwner("t1")
	require.Equal(t, 128+int(syscall.SIGKILL), waitDone(t, p1, 30*time.Second))
	requireNoneRunning(t, n1)
	require.Len(t, pidsRunning("sleep", n2), 1, "another owner's command is left alone")
	left := launcherPids(m)
	require.Len(t, left, 1)
	for _, pid := range ls {
		if pid != left[0] {
			require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, time.Minute, 10*time.Millisecond,
				"the killed owner's launcher %d still running", pid)
		}
	}
	require.NoError(t, m.Close())
	waitDone(t, p2, 30*time.Second)
	requireNoneRunning(t, n2)
	for _, pid := range ls {
		require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, time.Minute, 10*time.Millisecond,
			"launcher %d still running", pid)
	}
}

// TestLauncherKillIgnoringTERM: a launched command that ignores SIGTERM is killed after the grace.
func TestLauncherKillIgnoringTERM(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(map[bool]string{false: "pipes", true: "pty"}[tty], func(t *testing.T) {
			m, wrap := launcherManager(t, ManagerOptions{KillGrace: 200 * time.Millisecond})
			var s streams
			p := spawnRO(t, m, wrap, "t", tty, "trap '' TERM; echo ready; sleep 100; echo no", &s)
			require.True(t, launched(p))
			require.Eventually(t, func() bool { o, _ := s.get(); return strings.Contains(o, "ready") }, time.Minute, 10*time.Millisecond)
			pgid := p.Pid()
			p.Kill()
			require.Equal(t, 128+int(syscall.SIGKILL), waitDone(t, p, time.Minute))
			requireGroupGone(t, pgid)
			require.Len(t, launcherPids(m), 1, "the launcher stays")
		})
	}
}

// TestNoLauncherOption: NoLauncher starts each command with its own helper.
func TestNoLauncherOption(t *testing.T) {
	m, wrap := launcherManager(t, ManagerOptions{NoLauncher: true})
	p := spawnRO(t, m, wrap, "t", false, "true", nil)
	require.False(t, launched(p))
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))
	require.Empty(t, launcherPids(m))
}

// TestLauncherEndsWhenIdle: a launcher without commands for the idle time is ended; the owner's
// next command starts a new one.
func TestLauncherEndsWhenIdle(t *testing.T) {
	m, wrap := launcherManager(t, ManagerOptions{})
	m.ls.idle = 50 * time.Millisecond
	var s streams
	p := spawnRO(t, m, wrap, "t", false, "echo ready; exec sleep "+uniqueSleep(), &s)
	p2 := spawnRO(t, m, wrap, "t", false, "true", nil)
	require.True(t, launched(p) && launched(p2))
	require.Equal(t, 0, waitDone(t, p2, 30*time.Second))
	ls := launcherPids(m)
	require.Len(t, ls, 1)
	require.Eventually(t, func() bool { o, _ := s.get(); return strings.Contains(o, "ready") }, time.Minute, time.Millisecond)
	require.Equal(t, ls, launcherPids(m), "a launcher with a running command stays")
	p.Kill()
	waitDone(t, p, 30*time.Second)
	require.Eventually(t, func() bool { return len(launcherPids(m)) == 0 }, time.Minute, 10*time.Millisecond)
	require.Eventually(t, func() bool { return syscall.Kill(ls[0], 0) != nil }, time.Minute, 10*time.Millisecond,
		"the idle launcher's process ended")
	p = spawnRO(t, m, wrap, "t", false, "true", nil)
	require.True(t, launched(p))
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))
	require.NotEqual(t, ls, launcherPids(m))
}

// spawnResult is the outcome of a Spawn run on another goroutine.
type spawnResult struct {
	p   *Process
	err error
}

// spawnAsync spawns a read-only `sh -c script` for owner on another goroutine.
func spawnAsync(ctx context.Context, m *Manager, wrap func([]string) ([]string, error), owner, script string) <-chan spawnResult {
	ch := make(chan spawnResult, 1)
	go func() {
		p, err := m.Spawn(ctx, SpawnRequest{Owner: owner, Argv: []string{"sh", "-c", script}, WrapArgv: wrap})
		ch <- spawnResult{p, err}
	}()
	return ch
}

// recvSpawn is the process of a spawnAsync; a spawn still blocked after 30 s (a hang, not a
// slow machine) fails the test.
func recvSpawn(t *testing.T, ch <-chan spawnResult, what string) *Process {
	t.Helper()
	select {
	case r := <-ch:
		require.NoError(t, r.err, what)
		return r.p
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: the spawn is still blocked after 30 s", what)
		return nil
	}
}

// startWaiters is how many commands of owner wait for a launcher start by another command.
func startWaiters(m *Manager, owner string) int {
	m.ls.mu.Lock()
	defer m.ls.mu.Unlock()
	n := 0
	for k, st := range m.ls.starting {
		if k.owner == owner {
			n += st.waiters
		}
	}
	return n
}

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestLauncherStartBlocksOnlyItsKey: a launcher start that hangs does not hold another owner's
// commands; a second command of its owner waits for it and then uses that launcher, and a
// waiting command whose context ends starts the per-command way instead.
func TestLauncherStartBlocksOnlyItsKey(t *testing.T) {
	m, wrap := launcherManager(t, ManagerOptions{})
	entered, release, calls := blockFirstLauncherStart(t, m)

	first := spawnAsync(context.Background(), m, wrap, "t1", "echo $PPID")
	waitEntered(t, entered)
	p := recvSpawn(t, spawnAsync(context.Background(), m, wrap, "t2", "true"), "another owner's command")
	require.True(t, launched(p), "another owner gets its own launcher meanwhile")
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))

	second := spawnAsync(context.Background(), m, wrap, "t1", "echo $PPID")
	require.Eventually(t, func() bool { return startWaiters(m, "t1") == 1 }, 30*time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	third := spawnAsync(ctx, m, wrap, "t1", "echo fallback")
	require.Eventually(t, func() bool { return startWaiters(m, "t1") == 2 }, 30*time.Second, time.Millisecond)
	cancel()
	p = recvSpawn(t, third, "a waiting command whose context ended")
	require.False(t, launched(p), "started the per-command way")
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))
	require.Contains(t, p.Output(), "fallback")

	release()
	for _, ch := range []<-chan spawnResult{first, second} {
		p := recvSpawn(t, ch, "the owner's commands")
		require.True(t, launched(p))
		require.Equal(t, 0, waitDone(t, p, 30*time.Second))
		require.Equal(t, "1\n", p.Output(), "started in the launcher's namespace")
	}
	require.Equal(t, int32(2), calls.Load(), "one start per owner")
	require.Len(t, launcherPids(m), 2)
}

// backoffStep advances the clock, then spawns a command: calls is the launcher start count after
// it, launched whether the command was launched.
type backoffStep struct {
	advance  time.Duration
	calls    int32
	launched bool
}

// TestLauncherStartFailureBackOff: a start failure that may pass pauses launchers for a minute,
// doubling while it fails again, and a launched command resets the back-off; a failure that
// does not pass (namespaces refused) turns them off for good.
func TestLauncherStartFailureBackOff(t *testing.T) {
	passing := fmt.Errorf("%w: %w", sandbox.ErrLaunch, syscall.EAGAIN)
	permanent := fmt.Errorf("%w: %w: %w", sandbox.ErrLaunch, sandbox.ErrNamespaces, syscall.EPERM)
	for _, c := range []struct {
		name  string
		errs  []error // of the first starts; later ones start a real launcher
		steps []backoffStep
	}{
		{"passing", []error{passing, passing}, []backoffStep{
			{0, 1, false},
			{launcherRetry - time.Second, 1, false},
			{time.Second, 2, false},     // the pause ended: a new try fails
			{launcherRetry, 2, false},   // the pause doubled
			{launcherRetry, 3, true},    // then it works
			{0, 3, true},                // and the launcher is reused
			{launcherRetryMax, 3, true}, // no pause left
		}},
		{"permanent", []error{permanent}, []backoffStep{
			{0, 1, false},
			{launcherRetryMax, 1, false},
			{24 * time.Hour, 1, false},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, wrap := launcherManager(t, ManagerOptions{})
			clock := &fakeClock{t: time.Unix(1e9, 0)}
			m.ls.now = clock.now
			var calls atomic.Int32
			m.ls.start = func(ctx context.Context, self string, key sandbox.LaunchKey, opts sandbox.LauncherOptions) (*sandbox.Launcher, error) {
				if n := int(calls.Add(1)); n <= len(c.errs) {
					return nil, c.errs[n-1]
				}
				return sandbox.StartLauncher(ctx, self, key, opts)
			}
			for i, s := range c.steps {
				clock.advance(s.advance)
				p := spawnRO(t, m, wrap, "t", false, "echo ok", nil)
				require.Equal(t, 0, waitDone(t, p, 30*time.Second), "step %d", i)
				require.Equal(t, "ok\n", p.Output(), "step %d", i)
				require.Equal(t, s.calls, calls.Load(), "step %d: starts", i)
				require.Equal(t, s.launched, launched(p), "step %d: launched", i)
			}
		})
	}
}

// TestLauncherRefusalsPause: refusals in a row pause launchers without ending one that runs a
// command; after the pause the owner's commands are launched again.
func TestLauncherRefusalsPause(t *testing.T) {
	m, wrap := launcherManager(t, ManagerOptions{})
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	m.ls.now = clock.now
	argv, err := wrap([]string{"true"})
	require.NoError(t, err)
	la, ok := sandbox.Launchable(argv)
	require.True(t, ok)
	ctx := context.Background()
	running := m.ls.get(ctx, "t", la) // stands for a command running in the launcher
	require.NotNil(t, running)
	refusal := fmt.Errorf("%w: start true: %w", sandbox.ErrLaunch, syscall.EAGAIN)
	for i := 0; i < launcherFailLimit; i++ {
		e := m.ls.get(ctx, "t", la)
		require.Same(t, running, e, "refusal %d", i)
		m.ls.failed(e, refusal)
	}
	require.Nil(t, m.ls.get(ctx, "t", la), "paused")
	p := spawnRO(t, m, wrap, "t", false, "true", nil)
	require.False(t, launched(p))
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))
	require.Equal(t, []int{running.l.Pid()}, launcherPids(m), "the launcher with a running command stays")
	require.NoError(t, syscall.Kill(running.l.Pid(), 0))

	clock.advance(launcherRetry)
	p = spawnRO(t, m, wrap, "t", false, "true", nil)
	require.True(t, launched(p), "launched again after the pause")
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))
	require.Equal(t, []int{running.l.Pid()}, launcherPids(m), "by the same launcher")
	m.ls.release(running)
}

// TestKillOwnerDuringSpawnKillsTheCommand: a command whose start overlaps KillOwner (here: it
// waits for its owner's launcher to start) is killed once started, not left running.
func TestKillOwnerDuringSpawnKillsTheCommand(t *testing.T) {
	m, wrap := launcherManager(t, ManagerOptions{})
	entered, release, _ := blockFirstLauncherStart(t, m)

	ch := spawnAsync(context.Background(), m, wrap, "t1", "sleep 1000")
	waitEntered(t, entered)
	m.KillOwner("t1")
	release()
	p := recvSpawn(t, ch, "the command started after KillOwner")
	require.NotEqual(t, 0, waitDone(t, p, 30*time.Second), "killed, not left running")
}

// blockFirstLauncherStart makes m's first launcher start wait until release is called (at the latest
// when the test ends, before the Manager's Close); entered is closed once that start began, calls
// counts the starts.
func blockFirstLauncherStart(t *testing.T, m *Manager) (entered <-chan struct{}, release func(), calls *atomic.Int32) {
	in, unblock := make(chan struct{}), make(chan struct{})
	calls = new(atomic.Int32)
	m.ls.start = func(ctx context.Context, self string, key sandbox.LaunchKey, opts sandbox.LauncherOptions) (*sandbox.Launcher, error) {
		if calls.Add(1) == 1 {
			close(in)
			<-unblock
		}
		return sandbox.StartLauncher(ctx, self, key, opts)
	}
	var once sync.Once
	release = func() { once.Do(func() { close(unblock) }) }
	t.Cleanup(release)
	return in, release, calls
}

// waitEntered waits (bounded) for the blocked launcher start to begin.
func waitEntered(t *testing.T, entered <-chan struct{}) {
	t.Helper()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the launcher start did not begin")
	}
}

// childCgroups lists the cgroups left below m's own.
func childCgroups(m *Manager) []string {
	m.tr.mu.Lock()
	base := m.tr.cgBase
	m.tr.mu.Unlock()
	ents, _ := os.ReadDir(base)
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestLauncherKillOwnerGivesTheGrace: KillOwner gives launched commands their SIGTERM grace, as
// commands with a helper of their own get it: one that traps SIGTERM cleans up and exits with its
// own status, one that ignores it runs on until the grace ends (KillOwner does not wait for it, and
// its launcher stays meanwhile). Once both ended, the launcher and every cgroup are gone.
func TestLauncherKillOwnerGivesTheGrace(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(map[bool]string{false: "pipes", true: "pty"}[tty], func(t *testing.T) {
			m, wrap := launcherManager(t, ManagerOptions{KillGrace: time.Hour})
			n := uniqueSleep()
			var s1, s2 streams
			p1 := spawnRO(t, m, wrap, "t1", tty, "trap 'echo cleaned; exit 3' TERM; echo ready; sleep 1000 & wait", &s1)
			p2 := spawnRO(t, m, wrap, "t1", tty, "trap '' TERM; echo ready; exec sleep "+n, &s2)
			require.True(t, launched(p1) && launched(p2))
			for _, s := range []*streams{&s1, &s2} {
				require.Eventually(t, func() bool { o, _ := s.get(); return strings.Contains(o, "ready") }, time.Minute, time.Millisecond)
			}
			ls := launcherPids(m)
			require.Len(t, ls, 1)

			returned := make(chan struct{})
			go func() {
				m.KillOwner("t1")
				close(returned)
			}()
			select {
			case <-returned:
			case <-time.After(30 * time.Second):
				t.Fatal("KillOwner waits for the grace")
			}
			require.Equal(t, 3, waitDone(t, p1, 30*time.Second), "the trap ran: %q", p1.Output())
			require.Contains(t, p1.Output(), "cleaned")
			require.Empty(t, launcherPids(m), "out of the pool: the owner's next command starts a new one")
			select {
			case <-p2.Exited():
				t.Fatalf("a command ignoring SIGTERM ended before its grace: %d", p2.ExitCode())
			default:
			}
			require.NoError(t, syscall.Kill(ls[0], 0), "its launcher stays while it runs")

			p2.KillNow() // the end of its grace
			require.Equal(t, 128+int(syscall.SIGKILL), waitDone(t, p2, 30*time.Second))
			requireNoneRunning(t, n)
			require.Eventually(t, func() bool { return syscall.Kill(ls[0], 0) != nil }, time.Minute, 10*time.Millisecond,
				"the launcher ended with its last command")
			require.Eventually(t, func() bool { return len(childCgroups(m)) == 0 }, time.Minute, 10*time.Millisecond,
				"cgroups left: %v", childCgroups(m))
			requireGroupGone(t, p1.Pid())
			requireGroupGone(t, p2.Pid())
		})
	}
}

// TestKillOwnerStateIsBounded: the Manager keeps nothing per owner passed to KillOwner once no
// Spawn of that owner is in flight.
func TestKillOwnerStateIsBounded(t *testing.T) {
	m := newTestManager(t)
	for i := 0; i < 100; i++ {
		m.KillOwner("t" + strconv.Itoa(i))
	}
	p, err := m.Spawn(context.Background(), SpawnRequest{Owner: "t1", Argv: []string{"true"}})
	require.NoError(t, err)
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))
	m.KillOwner("t1")
	_, err = m.Spawn(context.Background(), SpawnRequest{Owner: "t2", Argv: []string{"true"}, WrapArgv: func([]string) ([]string, error) {
		return nil, fmt.Errorf("refused")
	}})
	require.Error(t, err)
	m.mu.Lock()
	defer m.mu.Unlock()
	require.Empty(t, m.killed)
}

// TestLauncherStartCancelledByTheCaller: a command whose context ends while its owner's launcher
// is being started stops waiting for it at once and starts the per-command way; the launcher being
// started is killed, and launchers are not paused for it.
func TestLauncherStartCancelledByTheCaller(t *testing.T) {
	m, wrap := launcherManager(t, ManagerOptions{})
	dir := t.TempDir()
	n := uniqueSleep()
	never := filepath.Join(dir, "never-ready") // a launcher that never says it is ready
	require.NoError(t, os.WriteFile(never, []byte("#!/bin/sh\necho > "+dir+"/started\nexec sleep "+n+"\n"), 0o755))
	var calls atomic.Int32
	m.ls.start = func(ctx context.Context, self string, key sandbox.LaunchKey, opts sandbox.LauncherOptions) (*sandbox.Launcher, error) {
		if calls.Add(1) == 1 {
			opts.Env = append(opts.Env, "PATH=/usr/bin:/bin")
			self = never
		}
		return sandbox.StartLauncher(ctx, self, key, opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := spawnAsync(ctx, m, wrap, "t1", "echo fallback")
	require.Eventually(t, func() bool { _, err := os.Stat(dir + "/started"); return err == nil }, 30*time.Second, time.Millisecond,
		"the launcher process did not start")
	cancel()
	p := recvSpawn(t, ch, "a command whose context ended during its launcher's start")
	require.False(t, launched(p))
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))
	require.Equal(t, "fallback\n", p.Output())
	requireNoneRunning(t, n)
	require.Empty(t, launcherPids(m))

	p = spawnRO(t, m, wrap, "t1", false, "true", nil)
	require.True(t, launched(p), "launchers are not paused by a cancelled start")
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))
	require.Equal(t, int32(2), calls.Load())
}

// TestReleaseAfterSettled: the scope of a command whose launcher Spawn gave up keeps its cgroup
// until the abandoned request is settled; then whatever is in it is killed and the cgroup removed.
func TestReleaseAfterSettled(t *testing.T) {
	m := newTestManager(t)
	sc := m.tr.open("t")
	if sc.cgFD < 0 {
		m.tr.release(sc)
		t.Skip("no cgroup per command here")
	}
	n := uniqueSleep()
	cmd := exec.Command("sleep", n) // stands for a command the launcher started after its Spawn gave up
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: sc.cgFD, Setpgid: true}
	require.NoError(t, cmd.Start())
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	settled := make(chan struct{})
	m.tr.releaseAfter(sc, settled)
	require.Equal(t, -1, sc.cgFD)
	_, err := os.Stat(sc.cg)
	require.NoError(t, err, "the cgroup stays until the request is settled")
	require.Len(t, pidsRunning("sleep", n), 1)
	close(settled)
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Fatal("the command in the cgroup was not killed")
	}
	require.Eventually(t, func() bool { _, err := os.Stat(sc.cg); return os.IsNotExist(err) }, time.Minute, 10*time.Millisecond,
		"the cgroup was not removed")
}

// TestLauncherSpawnAbandonedByTheCaller: a command whose context ends once its request is with the
// launcher (stopped here, so it cannot answer) makes Spawn return the context's error at once; the
// command the launcher starts when it runs again is killed and its cgroup removed, and the owner's
// next command is launched by the same launcher, with its own reply.
func TestLauncherSpawnAbandonedByTheCaller(t *testing.T) {
	m, wrap := launcherManager(t, ManagerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var first atomic.Bool
	var pid atomic.Int64
	m.ls.start = func(sctx context.Context, self string, key sandbox.LaunchKey, opts sandbox.LauncherOptions) (*sandbox.Launcher, error) {
		opts.AfterSend = func() {
			if first.CompareAndSwap(false, true) {
				cancel() // the caller gives up once its request is out
			}
		}
		l, err := sandbox.StartLauncher(sctx, self, key, opts)
		if err == nil {
			pid.Store(int64(l.Pid()))
			require.NoError(t, syscall.Kill(l.Pid(), syscall.SIGSTOP))
		}
		return l, err
	}
	t.Cleanup(func() { _ = syscall.Kill(int(pid.Load()), syscall.SIGCONT) })
	n := uniqueSleep()
	_, err := m.Spawn(ctx, SpawnRequest{Owner: "t", Argv: []string{"sh", "-c", "exec sleep " + n}, WrapArgv: wrap})
	require.ErrorIs(t, err, context.Canceled)
	ls := launcherPids(m)
	require.Equal(t, []int{int(pid.Load())}, ls)
	require.Len(t, childCgroups(m), 2, "the launcher's cgroup and the abandoned command's")

	require.NoError(t, syscall.Kill(ls[0], syscall.SIGCONT))
	require.Eventually(t, func() bool { return len(childCgroups(m)) == 1 }, 30*time.Second, 10*time.Millisecond,
		"the abandoned command's cgroup was not removed: %v", childCgroups(m))
	require.Empty(t, pidsRunning("sleep", n), "the command started after its Spawn gave up was killed")

	p := spawnRO(t, m, wrap, "t", false, "echo next", nil)
	require.True(t, launched(p))
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))
	require.Equal(t, "next\n", p.Output())
	require.Equal(t, ls, launcherPids(m), "by the same launcher")
	m.mu.Lock()
	require.Empty(t, m.killed)
	m.mu.Unlock()
}
