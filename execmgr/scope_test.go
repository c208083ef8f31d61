package execmgr

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pidsRunning lists the live (non-zombie) processes whose command line is exactly argv.
func pidsRunning(argv ...string) []int {
	want := []byte(strings.Join(argv, "\x00") + "\x00")
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Equal(b, want) {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// uniqueSleep is a sleep duration no other test uses, to find the processes in /proc.
func uniqueSleep() string { return strconv.Itoa(100000 + rand.IntN(800000)) }

// detachScript starts a background sleep with redirected output, a setsid one and a double-forked
// setsid one, then exits at once.
func detachScript(n string) string {
	return fmt.Sprintf(`sleep %[1]s >/dev/null 2>&1 & setsid sleep %[1]s >/dev/null 2>&1 & (setsid sh -c 'sleep %[1]s & exit' >/dev/null 2>&1 &); sleep 0.2; echo started`, n)
}

func spawnDetached(t *testing.T, m *Manager, owner, n string) {
	t.Helper()
	p, err := m.Spawn(context.Background(), SpawnRequest{Owner: owner, Argv: []string{"sh", "-c", detachScript(n)}})
	require.NoError(t, err)
	require.Equal(t, 0, waitDone(t, p, 30*time.Second))
	require.Contains(t, p.Output(), "started")
	require.Eventually(t, func() bool { return len(pidsRunning("sleep", n)) == 3 }, time.Minute, 10*time.Millisecond,
		"the three detached sleeps run after the command exited")
}

func requireNoneRunning(t *testing.T, n string) {
	t.Helper()
	require.Eventually(t, func() bool { return len(pidsRunning("sleep", n)) == 0 }, time.Minute, 10*time.Millisecond,
		"detached sleeps %s still running: %v", n, pidsRunning("sleep", n))
}

func TestKillOwnerKillsDetachedDescendants(t *testing.T) {
	for _, noCg := range []bool{false, true} {
		t.Run(fmt.Sprintf("noCgroups=%v", noCg), func(t *testing.T) {
			m := NewManager(ManagerOptions{NoCgroups: noCg})
			t.Cleanup(func() { _ = m.Close() })
			mine, other := uniqueSleep(), uniqueSleep()
			spawnDetached(t, m, "thread-a", mine)
			spawnDetached(t, m, "thread-b", other)
			m.KillOwner("thread-a")
			requireNoneRunning(t, mine)
			require.Len(t, pidsRunning("sleep", other), 3, "another owner's processes are left alone")
			require.NoError(t, m.Close())
			requireNoneRunning(t, other)
		})
	}
}

func TestSessionsTerminateAllKillsLeftovers(t *testing.T) {
	m := newTestManager(t)
	x := NewSessions(SessionsOptions{Manager: m, Owner: "thread-x"})
	n := uniqueSleep()
	spawnDetached(t, m, "thread-x", n)
	x.TerminateAll()
	requireNoneRunning(t, n)
}

func TestKillReachesSetsidDescendants(t *testing.T) {
	for _, noCg := range []bool{false, true} {
		t.Run(fmt.Sprintf("noCgroups=%v", noCg), func(t *testing.T) {
			m := NewManager(ManagerOptions{NoCgroups: noCg})
			t.Cleanup(func() { _ = m.Close() })
			n := uniqueSleep()
			s := &streams{}
			p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"sh", "-c", "setsid sleep " + n + " >/dev/null 2>&1 & echo ready; sleep " + n}, OnOutput: s.on})
			require.NoError(t, err)
			require.Eventually(t, func() bool { return len(pidsRunning("sleep", n)) == 2 }, time.Minute, 10*time.Millisecond)
			p.Kill()
			waitDone(t, p, 30*time.Second)
			requireNoneRunning(t, n)
		})
	}
}

// TestWatchdogCleansUpAfterSIGKILL runs a Manager in a child process (this test binary), SIGKILLs
// that process mid-command and expects the command and its detached descendants to die.
func TestWatchdogCleansUpAfterSIGKILL(t *testing.T) {
	if os.Getenv("EXECMGR_SIGKILL_CHILD") != "" {
		t.Skip("helper mode")
	}
	for _, noCg := range []string{"", "1"} {
		t.Run("noCgroups="+noCg, func(t *testing.T) {
			n := uniqueSleep()
			cmd := exec.Command(os.Args[0], "-test.run=^TestSIGKILLChild$", "-test.v")
			cmd.Env = append(os.Environ(), "EXECMGR_SIGKILL_SLEEP="+n, "EXECMGR_SIGKILL_NOCG="+noCg)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			require.Eventually(t, func() bool { return len(pidsRunning("sleep", n)) == 3 }, 30*time.Second, 10*time.Millisecond,
				"child output: %s", &out)
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			requireNoneRunning(t, n)
		})
	}
}

// TestSIGKILLChild is the victim of TestWatchdogCleansUpAfterSIGKILL; it only runs when asked to.
func TestSIGKILLChild(t *testing.T) {
	n := os.Getenv("EXECMGR_SIGKILL_SLEEP")
	if n == "" {
		t.Skip("runs as the child of TestWatchdogCleansUpAfterSIGKILL")
	}
	m := NewManager(ManagerOptions{NoCgroups: os.Getenv("EXECMGR_SIGKILL_NOCG") != ""})
	req := SpawnRequest{Owner: "t", Argv: []string{"sh", "-c",
		"setsid sleep " + n + " >/dev/null 2>&1 & sleep " + n + " >/dev/null 2>&1 & sleep " + n}}
	if os.Getenv("EXECMGR_SIGKILL_RO") != "" {
		_, req.WrapArgv = launcherManager(t, ManagerOptions{})
	}
	// One foreground sleep (the running command) plus a setsid one and a background one.
	p, err := m.Spawn(context.Background(), req)
	require.NoError(t, err)
	if os.Getenv("EXECMGR_SIGKILL_RO") != "" {
		require.True(t, launched(p))
		fmt.Printf("LAUNCHER %d\n", launcherPids(m)[0])
	}
	select {} // until SIGKILLed
}

// TestLauncherDiesWithTheServer: a SIGKILLed server takes its launcher, the launched command and
// the command's descendants with it.
func TestLauncherDiesWithTheServer(t *testing.T) {
	if os.Getenv("EXECMGR_SIGKILL_CHILD") != "" || os.Getenv("EXECMGR_SIGKILL_SLEEP") != "" {
		t.Skip("helper mode")
	}
	launcherManager(t, ManagerOptions{}) // skips where launchers cannot work
	n := uniqueSleep()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSIGKILLChild$", "-test.v")
	cmd.Env = append(os.Environ(), "EXECMGR_SIGKILL_SLEEP="+n, "EXECMGR_SIGKILL_RO=1")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var launcher int
	require.Eventually(t, func() bool {
		o := out.String()
		if i := strings.Index(o, "LAUNCHER "); i >= 0 {
			_, _ = fmt.Sscanf(o[i:], "LAUNCHER %d", &launcher)
		}
		return launcher != 0 && len(pidsRunning("sleep", n)) == 3
	}, 30*time.Second, 10*time.Millisecond, "child output: %s", &out)
	require.NotZero(t, launcher)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	requireNoneRunning(t, n)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(launcher) + "/cmdline")
		return !bytes.Contains(b, []byte("__appserver_launcher"))
	}, time.Minute, 10*time.Millisecond, "launcher %d still running", launcher)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in different goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestCloseSweepsOnlyAfterACommand(t *testing.T) {
	idle := NewManager(ManagerOptions{})
	before := sweeps.Load()
	require.NoError(t, idle.Close())
	require.Equal(t, before, sweeps.Load(), "a Manager that never started a command has nothing to sweep")

	m := NewManager(ManagerOptions{})
	p, err := m.Spawn(context.Background(), SpawnRequest{Argv: []string{"true"}, OnOutput: func(Stream, []byte) {}})
	require.NoError(t, err)
	require.Equal(t, 0, waitDone(t, p, time.Minute))
	before = sweeps.Load()
	require.NoError(t, m.Close())
	require.Greater(t, sweeps.Load(), before, "closing after a command sweeps for its descendants")
}
