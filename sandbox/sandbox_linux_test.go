//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"appserver/sandbox/confine"
)

const orig = "orig\n"

// fixture is a workspace with protected entries, plus a directory outside every writable root.
type fixture struct {
	base, ws, outside string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{".git/hooks", ".codex", "sub"} {
		require.NoError(t, os.MkdirAll(filepath.Join(f.ws, d), 0o755))
	}
	require.NoError(t, os.MkdirAll(f.outside, 0o755))
	for _, p := range []string{".git/config", ".codex/config.toml", "file.txt", "sub/file"} {
		require.NoError(t, os.WriteFile(filepath.Join(f.ws, p), []byte(orig), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(f.outside, "readme"), []byte("secret\n"), 0o644))
	require.NoError(t, os.Symlink(f.outside, filepath.Join(f.ws, "link")))
	return f
}

func requireSandbox(t *testing.T) {
	t.Helper()
	if ok, reason := Available(); !ok {
		t.Skipf("kernel sandbox unavailable: %s", reason)
	}
}

// run executes argv under p through the helper (the test binary itself) and returns its exit
// code and combined output.
func run(t *testing.T, p Policy, protect string, cwd string, env []string, argv ...string) (int, string) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	if protect == testLauncher {
		return runLaunched(t, p, cwd, env, nil, argv...)
	}
	reexec := protect == testReexec
	if reexec {
		protect = protectAuto
	}
	args, err := wrapArgv(self, p, cwd, "", argv, protect)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	starts := Starts(args)
	if reexec {
		starts = starts[len(starts)-1:]
	}
	var buf strings.Builder
	var cmd *exec.Cmd
	for _, st := range starts {
		cmd = exec.CommandContext(ctx, st.Argv[0], st.Argv[1:]...)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = &buf, &buf
		applyStart(cmd, st)
		if err = cmd.Start(); err == nil || !st.Refused(err) {
			break
		}
	}
	require.NoError(t, err)
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		require.NoError(t, err)
	}
	return cmd.ProcessState.ExitCode(), buf.String()
}

// runLaunched runs argv under p (read-only) through a launcher started for it, with stdout and
// stderr on one pipe, or with tty as stdio (session leader, controlling terminal) when given.
func runLaunched(t *testing.T, p Policy, cwd string, env []string, tty *os.File, argv ...string) (int, string) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	args, err := wrapArgv(self, p, cwd, "", argv, protectAuto)
	require.NoError(t, err)
	la, ok := Launchable(args)
	require.True(t, ok, "a read-only command is launchable")
	l := startTestLauncher(t, self, la.Key)
	defer l.Close()
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	req := confine.LaunchRequest{Argv: la.Argv, Env: append(os.Environ(), env...), Dir: la.Dir, Setpgid: true}
	var c *Launched
	var out []byte
	if tty != nil {
		req.Setpgid, req.Setsid, req.Setctty = false, true, true
		c, err = l.Spawn(context.Background(), req, [3]*os.File{tty, tty, tty}, -1)
		require.NoError(t, err)
	} else {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		c, err = l.Spawn(context.Background(), req, [3]*os.File{null, w, w}, -1)
		w.Close()
		require.NoError(t, err)
		out, err = io.ReadAll(r)
		require.NoError(t, err)
	}
	ws := c.Wait()
	if ws.Signaled() {
		return 128 + int(ws.Signal()), string(out)
	}
	return ws.ExitStatus(), string(out)
}

// startTestLauncher starts a launcher for key, skipping the test where no namespace can be had.
// launcherWithNull starts a plain test launcher and opens /dev/null for its commands' stdio; both are
// closed when the test ends.
func launcherWithNull(t *testing.T) (*Launcher, *os.File) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	l := startTestLauncher(t, self, LaunchKey{})
	t.Cleanup(l.Close)
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	t.Cleanup(func() { null.Close() })
	return l, null
}

func startTestLauncher(t *testing.T, self string, key LaunchKey) *Launcher {
	t.Helper()
	l, err := StartLauncher(context.Background(), self, key, LauncherOptions{CgroupFD: -1})
	if err != nil && refused[startDirect].Load() && refused[startUserNS].Load() {
		t.Skipf("no launcher without PID namespaces: %v", err)
	}
	require.NoError(t, err)
	return l
}

// testLauncher, as run's protect, runs the command through a Launcher (read-only only).
const testLauncher = "test-launcher"

// testReexec, as run's protect, starts the helper as WrapArgv returned it (protectAuto): the helper
// then re-executes itself into its namespaces, instead of being cloned into them (Starts).
const testReexec = "test-reexec"

// applyStart puts st's argv and namespaces into cmd, as execmgr does.
func applyStart(cmd *exec.Cmd, st Start) {
	cmd.Args = st.Argv
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= st.Cloneflags
	cmd.SysProcAttr.UidMappings, cmd.SysProcAttr.GidMappings = st.UidMappings, st.GidMappings
	cmd.SysProcAttr.AmbientCaps = st.AmbientCaps
}

func sh(t *testing.T, p Policy, protect string, f fixture, script string, env ...string) (int, string) {
	t.Helper()
	env = append(env, "OUT="+f.outside)
	return run(t, p, protect, f.ws, env, "sh", "-c", script)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func requireAbsent(t *testing.T, path string) {
	t.Helper()
	_, err := os.Lstat(path)
	require.True(t, errors.Is(err, os.ErrNotExist), "%s must not exist (err=%v)", path, err)
}

// confined lists the sandboxed configurations every escape must fail under.
var confined = []struct {
	name    string
	p       Policy
	protect string
}{
	{"read-only", Policy{Kind: ReadOnly}, protectAuto},
	{"workspace-write", Policy{Kind: WorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}, protectAuto},
	{"workspace-write/userns", Policy{Kind: WorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}, protectUserNS},
	{"workspace-write/landlock-only", Policy{Kind: WorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}, protectLandlock},
	// The helper started as WrapArgv returned it, re-executing itself into its namespaces (the
	// others are cloned into them by the spawner, see Starts).
	{"read-only/reexec", Policy{Kind: ReadOnly}, testReexec},
	// Started by a launcher, a confined process 1 that forks each command (Launcher).
	{"read-only/launcher", Policy{Kind: ReadOnly}, testLauncher},
}

func TestAvailableHere(t *testing.T) {
	ok, reason := Available()
	t.Logf("Available: %v (%s), ABI %d", ok, reason, LandlockABI())
	if !ok {
		t.Skipf("kernel sandbox unavailable: %s", reason)
	}
	require.Contains(t, reason, "landlock ABI")
	require.GreaterOrEqual(t, LandlockABI(), 1)
}

func TestEscapesFail(t *testing.T) {
	requireSandbox(t)
	escapes := []struct {
		name   string
		script string
		check  func(t *testing.T, f fixture)
	}{
		{"write outside", `echo pwned > "$OUT/new"`,
			func(t *testing.T, f fixture) { requireAbsent(t, filepath.Join(f.outside, "new")) }},
		{"append outside", `echo pwned >> "$OUT/readme"`,
			func(t *testing.T, f fixture) {
				require.Equal(t, "secret\n", readFile(t, filepath.Join(f.outside, "readme")))
			}},
		{"truncate outside", `truncate -s 0 "$OUT/readme"`,
			func(t *testing.T, f fixture) {
				require.Equal(t, "secret\n", readFile(t, filepath.Join(f.outside, "readme")))
			}},
		{"mkdir outside", `mkdir "$OUT/d"`,
			func(t *testing.T, f fixture) { requireAbsent(t, filepath.Join(f.outside, "d")) }},
		{"remove outside", `rm -f "$OUT/readme"`,
			func(t *testing.T, f fixture) {
				require.Equal(t, "secret\n", readFile(t, filepath.Join(f.outside, "readme")))
			}},
		{"new file in .git", `echo pwned > .git/hooks/pre-commit`,
			func(t *testing.T, f fixture) { requireAbsent(t, filepath.Join(f.ws, ".git/hooks/pre-commit")) }},
		{"modify .git/config", `echo pwned >> .git/config`,
			func(t *testing.T, f fixture) { require.Equal(t, orig, readFile(t, filepath.Join(f.ws, ".git/config"))) }},
		{"modify .codex", `echo pwned > .codex/config.toml`,
			func(t *testing.T, f fixture) {
				require.Equal(t, orig, readFile(t, filepath.Join(f.ws, ".codex/config.toml")))
			}},
		{"write through symlink", `echo pwned > link/new`,
			func(t *testing.T, f fixture) { requireAbsent(t, filepath.Join(f.outside, "new")) }},
		{"write through new symlink", `ln -s "$OUT" l2; echo pwned > l2/new`,
			func(t *testing.T, f fixture) { requireAbsent(t, filepath.Join(f.outside, "new")) }},
		{"mv over .git/config", `echo pwned > sub/evil; mv -f sub/evil .git/config`,
			func(t *testing.T, f fixture) { require.Equal(t, orig, readFile(t, filepath.Join(f.ws, ".git/config"))) }},
		{"mv .git away", `mv .git moved && mkdir .git && echo pwned > .git/config`,
			func(t *testing.T, f fixture) { require.Equal(t, orig, readFile(t, filepath.Join(f.ws, ".git/config"))) }},
		{"rm .git", `rm -rf .git`,
			func(t *testing.T, f fixture) { require.Equal(t, orig, readFile(t, filepath.Join(f.ws, ".git/config"))) }},
		{"hardlink into .git", `ln .git/config sub/hard && echo pwned >> sub/hard`,
			func(t *testing.T, f fixture) { require.Equal(t, orig, readFile(t, filepath.Join(f.ws, ".git/config"))) }},
		{"setsid child writes outside", `setsid -w sh -c 'echo pwned > "$OUT/new"'`,
			func(t *testing.T, f fixture) { requireAbsent(t, filepath.Join(f.outside, "new")) }},
	}
	for _, c := range confined {
		t.Run(c.name, func(t *testing.T) {
			for _, e := range escapes {
				t.Run(e.name, func(t *testing.T) {
					f := newFixture(t)
					code, out := sh(t, c.p, c.protect, f, e.script)
					t.Logf("exit %d: %s", code, strings.TrimSpace(out))
					require.NotZero(t, code, "escape must fail")
					require.Regexp(t, `Permission denied|Read-only file system|Operation not permitted|Invalid cross-device link|Device or resource busy`, out)
					e.check(t, f)
				})
			}
		})
	}
}

// TestDenialMessages pins what a denial looks like to the command, as documented in docs/sandbox.md.
func TestDenialMessages(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	ww := confined[1].p
	// With a mount namespace, everything outside the roots is a read-only mount.
	code, out := sh(t, ww, protectAuto, f, `echo x > "$OUT/new"`)
	require.Equal(t, 2, code) // sh's status for a failed redirection
	if !strings.Contains(out, "Permission denied") || os.Geteuid() == 0 {
		require.Contains(t, out, "Read-only file system")
		code, out = sh(t, ww, protectAuto, f, `echo x > .git/config`)
		require.Equal(t, 2, code)
		require.Contains(t, out, "Read-only file system")
	}
	// Landlock alone refuses with EACCES.
	code, out = sh(t, ww, protectLandlock, f, `echo x > "$OUT/new"`)
	require.Equal(t, 2, code)
	require.Contains(t, out, "Permission denied")
	code, out = sh(t, ww, protectLandlock, f, `echo x > .git/config`)
	require.Equal(t, 2, code)
	require.Contains(t, out, "Permission denied")
	// Read-only has no mount tree: Landlock again.
	code, out = sh(t, Policy{Kind: ReadOnly}, protectAuto, f, `echo x > new`)
	require.Equal(t, 2, code)
	require.Contains(t, out, "Permission denied")
}

func TestWorkspaceWriteAllows(t *testing.T) {
	requireSandbox(t)
	for _, c := range confined[1:4] { // the workspace-write ones
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			code, out := sh(t, c.p, c.protect, f, `set -e
echo new > sub/new
echo more >> file.txt
mkdir -p sub/a/b && echo deep > sub/a/b/c
mv sub/new sub/a/moved
ln -s moved sub/a/lnk
rm -r sub/a/b
git_cfg=$(cat .git/config)
test "$git_cfg" = orig`)
			require.Zero(t, code, out)
			require.Equal(t, "new\n", readFile(t, filepath.Join(f.ws, "sub/a/moved")))
			require.Equal(t, orig+"more\n", readFile(t, filepath.Join(f.ws, "file.txt")))
			requireAbsent(t, filepath.Join(f.ws, "sub/a/b"))
		})
	}
	for _, c := range confined[1:3] {
		t.Run(c.name+"/new top-level file", func(t *testing.T) {
			f := newFixture(t)
			code, out := sh(t, c.p, c.protect, f, `echo top > top.txt && mv top.txt top2.txt && echo x > .git/config`)
			if strings.Contains(out, "top.txt: Permission denied") {
				t.Skip("no mount namespace here (needs CAP_SYS_ADMIN or user namespaces): Landlock-only protection")
			}
			require.NotZero(t, code, out)
			require.Contains(t, out, "Read-only file system")
			require.Equal(t, "top\n", readFile(t, filepath.Join(f.ws, "top2.txt")))
			require.Equal(t, orig, readFile(t, filepath.Join(f.ws, ".git/config")))
		})
	}
	t.Run("landlock-only cannot add top-level entries next to .git", func(t *testing.T) {
		f := newFixture(t)
		code, out := sh(t, confined[3].p, protectLandlock, f, `echo top > top.txt`)
		require.NotZero(t, code)
		require.Contains(t, out, "Permission denied")
	})
	t.Run("landlock-only root without protected entries is fully writable", func(t *testing.T) {
		f := newFixture(t)
		require.NoError(t, os.RemoveAll(filepath.Join(f.ws, ".git")))
		require.NoError(t, os.RemoveAll(filepath.Join(f.ws, ".codex")))
		code, out := sh(t, confined[3].p, protectLandlock, f, `echo top > top.txt`)
		require.Zero(t, code, out)
	})
}

func TestWorkspaceWriteTempDirsAndExtraRoots(t *testing.T) {
	requireSandbox(t)
	slashTmp, err := os.MkdirTemp("/tmp", "sandbox-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(slashTmp) })

	tests := []struct {
		name  string
		p     Policy
		dir   func(f fixture) string
		allow bool
	}{
		{"/tmp by default", Policy{Kind: WorkspaceWrite, ExcludeTmpdirEnvVar: true}, func(fixture) string { return slashTmp }, true},
		{"/tmp excluded", Policy{Kind: WorkspaceWrite, ExcludeSlashTmp: true}, func(fixture) string { return slashTmp }, false},
		{"$TMPDIR by default", Policy{Kind: WorkspaceWrite, ExcludeSlashTmp: true}, func(f fixture) string { return filepath.Join(f.base, "tmpdir") }, true},
		{"$TMPDIR excluded", Policy{Kind: WorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}, func(f fixture) string { return filepath.Join(f.base, "tmpdir") }, false},
		{"extra writable root", Policy{Kind: WorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}, func(f fixture) string { return f.outside }, true},
		{"read-only ignores temp dirs", Policy{Kind: ReadOnly}, func(fixture) string { return slashTmp }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tmpdir := filepath.Join(f.base, "tmpdir")
			require.NoError(t, os.Mkdir(tmpdir, 0o755))
			p := tc.p
			if tc.name == "extra writable root" {
				p.WritableRoots = []string{f.outside}
			}
			target := filepath.Join(tc.dir(f), "f-"+strings.NewReplacer(" ", "_", "/", "_", "$", "").Replace(tc.name))
			code, out := sh(t, p, protectAuto, f, `echo ok > "$TARGET"`, "TMPDIR="+tmpdir, "TARGET="+target)
			if tc.allow {
				require.Zero(t, code, out)
				require.Equal(t, "ok\n", readFile(t, target))
			} else {
				require.NotZero(t, code, out)
				requireAbsent(t, target)
			}
		})
	}
}

func TestReadsAndDevicesWork(t *testing.T) {
	requireSandbox(t)
	for _, c := range confined {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			code, out := sh(t, c.p, c.protect, f, `cat "$OUT/readme" && cat .git/config && ls / >/dev/null && echo x > /dev/null && head -c 4 /dev/zero | wc -c`)
			require.Zero(t, code, out)
			require.Equal(t, "secret\norig\n4\n", out)
		})
	}
}

func TestDangerFullAccessIsUnwrapped(t *testing.T) {
	f := newFixture(t)
	for _, p := range []Policy{{Kind: DangerFullAccess}, {Kind: External}} {
		argv := []string{"sh", "-c", `echo free > "$OUT/new-` + p.Kind.String() + `"`}
		got, err := WrapArgv("/nonexistent/self", p, f.ws, argv)
		require.NoError(t, err)
		require.Equal(t, argv, got)
		code, out := run(t, p, protectAuto, f.ws, []string{"OUT=" + f.outside}, argv...)
		require.Zero(t, code, out)
		require.Equal(t, "free\n", readFile(t, filepath.Join(f.outside, "new-"+p.Kind.String())))
	}
}

// listen opens a loopback TCP listener and reports every line a client sends.
func listen(t *testing.T) (string, <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	got := make(chan string, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			b, _ := io.ReadAll(c)
			_ = c.Close()
			got <- string(b)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return ln.Addr().String(), got
}

func TestNetwork(t *testing.T) {
	requireSandbox(t)
	self, err := os.Executable()
	require.NoError(t, err)
	for _, c := range confined {
		t.Run(c.name+"/off", func(t *testing.T) {
			addr, got := listen(t)
			f := newFixture(t)
			code, out := run(t, c.p, c.protect, f.ws, []string{actionEnv + "=dial " + addr}, self)
			require.Equal(t, 3, code, out)
			require.Contains(t, out, "operation not permitted")
			select {
			case s := <-got:
				t.Fatalf("listener received %q", s)
			default:
			}
			// bash's /dev/tcp goes through socket(2) as well.
			if _, err := exec.LookPath("bash"); err == nil {
				host, port, _ := net.SplitHostPort(addr)
				code, out = run(t, c.p, c.protect, f.ws, nil, "bash", "-c", "echo hi > /dev/tcp/"+host+"/"+port)
				require.NotZero(t, code, out)
				select {
				case s := <-got:
					t.Fatalf("listener received %q", s)
				default:
				}
			}
		})
		t.Run(c.name+"/on", func(t *testing.T) {
			addr, got := listen(t)
			f := newFixture(t)
			p := c.p
			p.NetworkAccess = true
			code, out := run(t, p, c.protect, f.ws, []string{actionEnv + "=dial " + addr}, self)
			require.Zero(t, code, out)
			select {
			case s := <-got:
				require.Equal(t, "hello\n", s)
			case <-time.After(time.Minute):
				t.Fatal("listener received nothing")
			}
		})
	}
}

// TestLandlockBlocksTCPOnItsOwn checks the second network layer without the seccomp filter.
func TestLandlockBlocksTCPOnItsOwn(t *testing.T) {
	requireSandbox(t)
	if LandlockABI() < 4 {
		t.Skip("TCP rules need Landlock ABI 4")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	addr, got := listen(t)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), actionEnv+"=landlock-dial "+addr)
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Equal(t, 3, cmd.ProcessState.ExitCode(), string(out))
	require.Contains(t, string(out), "permission denied")
	select {
	case s := <-got:
		t.Fatalf("listener received %q", s)
	default:
	}
}

func TestCannotSignalOutside(t *testing.T) {
	requireSandbox(t)
	if LandlockABI() < 6 || !probeOnce().scopeOK {
		t.Skip("signal scoping needs Landlock ABI 6")
	}
	victim := exec.Command("sleep", "300")
	require.NoError(t, victim.Start())
	exited := make(chan error, 1)
	go func() { exited <- victim.Wait() }()
	t.Cleanup(func() {
		_ = victim.Process.Kill()
		<-exited
	})
	f := newFixture(t)
	for _, protect := range []string{protectAuto, testLauncher} {
		code, out := sh(t, Policy{Kind: ReadOnly}, protect, f, "kill -TERM "+strconv.Itoa(victim.Process.Pid)+"; kill -TERM "+strconv.Itoa(os.Getpid()))
		require.NotZero(t, code, out)
		// EPERM from Landlock's signal scope, or ESRCH where the command has its own PID namespace.
		require.Regexp(t, `Operation not permitted|No such process`, out)
		select {
		case err := <-exited:
			t.Fatalf("victim died (%s): %v", protect, err)
		default:
		}
	}
}

// TestDetachedChildConfined checks that a grandchild in a new session and process group (what
// setsid(2) and job control give) still carries the restrictions.
func TestDetachedChildConfined(t *testing.T) {
	requireSandbox(t)
	self, err := os.Executable()
	require.NoError(t, err)
	for _, c := range confined {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			target := filepath.Join(f.outside, "new")
			code, out := run(t, c.p, c.protect, f.ws, []string{actionEnv + "=detach " + target}, self)
			require.Equal(t, 4, code, out)
			require.Regexp(t, "permission denied|read-only file system", out)
			requireAbsent(t, target)
		})
	}
}

func TestHelperFailures(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	for _, protect := range []string{protectAuto, testLauncher} {
		code, out := run(t, Policy{Kind: ReadOnly}, protect, f.ws, nil, "no-such-command-xyz")
		require.Equal(t, ExitNotFound, code, protect)
		require.Contains(t, out, "appserver sandbox: no-such-command-xyz: command not found", protect)

		code, out = run(t, Policy{Kind: ReadOnly}, protect, f.ws, nil, filepath.Join(f.ws, "file.txt"))
		require.Equal(t, ExitCannotExecute, code, out)
		require.Contains(t, out, "appserver sandbox:")
	}

	self, err := os.Executable()
	require.NoError(t, err)
	for _, args := range [][]string{
		{HelperArg},
		{HelperArg, "{}", "--"},
		{HelperArg, "not json", "--", "true"},
		{HelperArg, `{"policy":{"type":"readOnly"},"cwd":"/"}`, "true"},
		{HelperArg, `{"policy":{"type":"readOnly"},"cwd":"rel"}`, "--", "true"},
		{HelperArg, `{"policy":{"type":"dangerFullAccess"},"cwd":"/"}`, "--", "true"},
		{HelperArg, `{"policy":{"type":"bogus"},"cwd":"/"}`, "--", "true"},
		{HelperArg, `{"policy":{"type":"readOnly"},"cwd":"/","protect":"magic"}`, "--", "true"},
		{HelperArg, `{"policy":{"type":"readOnly"},"cwd":"/nonexistent-dir-xyz"}`, "--", "true"},
	} {
		cmd := exec.Command(self, args...)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%q", args)
		require.Equal(t, ExitCannotExecute, cmd.ProcessState.ExitCode(), "%q: %s", args, out)
		require.Contains(t, string(out), "appserver sandbox:")
	}
}

func TestWrapArgvRejectsBadInput(t *testing.T) {
	ro := Policy{Kind: ReadOnly}
	tests := []struct {
		name string
		self string
		p    Policy
		cwd  string
		argv []string
	}{
		{"empty argv", "/bin/self", ro, "/", nil},
		{"empty command", "/bin/self", ro, "/", []string{""}},
		{"relative self", "self", ro, "/", []string{"true"}},
		{"relative cwd", "/bin/self", ro, "rel", []string{"true"}},
		{"bad kind", "/bin/self", Policy{Kind: Kind(9)}, "/", []string{"true"}},
		{"empty root", "/bin/self", Policy{Kind: WorkspaceWrite, WritableRoots: []string{""}}, "/", []string{"true"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := WrapArgv(tc.self, tc.p, tc.cwd, tc.argv)
			require.Error(t, err)
		})
	}
}

func TestWrapArgvWhenUnavailable(t *testing.T) {
	saved := probeOnce
	t.Cleanup(func() { probeOnce = saved })
	probeOnce = func() probeResult { return probeResult{reason: "landlock is not supported by this kernel (ENOSYS)"} }
	ok, reason := Available()
	require.False(t, ok)
	require.Contains(t, reason, "ENOSYS")
	_, err := WrapArgv("/bin/self", Policy{Kind: ReadOnly}, "/", []string{"true"})
	require.ErrorIs(t, err, ErrUnavailable)
	require.Contains(t, err.Error(), "ENOSYS")
	got, err := WrapArgv("/bin/self", Policy{Kind: DangerFullAccess}, "/", []string{"true"})
	require.NoError(t, err)
	require.Equal(t, []string{"true"}, got)
}

func TestWrapArgvShape(t *testing.T) {
	requireSandbox(t)
	p := Policy{Kind: WorkspaceWrite, WritableRoots: []string{"rel", "/abs/"}}
	got, err := WrapArgv("/bin/self", p, "/w", []string{"ls", "-l"})
	require.NoError(t, err)
	require.Equal(t, []string{"/bin/self", HelperArg,
		`{"policy":{"type":"workspaceWrite","writableRoots":["/w/rel","/abs"],"networkAccess":false,"excludeTmpdirEnvVar":false,"excludeSlashTmp":false},"cwd":"/w"}`,
		"--", "ls", "-l"}, got)
}

func TestSeccompAssembleRejectsBadJumps(t *testing.T) {
	_, err := assemble([]bpfInsn{{code: 0, jt: "nowhere"}})
	require.Error(t, err)
	_, err = assemble([]bpfInsn{{label: "back", code: 0}, {code: 0, jt: "back"}})
	require.Error(t, err)
	for _, network := range []bool{false, true} {
		for _, ro := range []bool{false, true} {
			prog, err := seccompProgram(network, ro)
			require.NoError(t, err)
			require.NotEmpty(t, prog)
		}
	}
}

func TestGrantsExcluding(t *testing.T) {
	f := newFixture(t)
	nested := filepath.Join(f.base, "nested")
	require.NoError(t, os.MkdirAll(filepath.Join(nested, "inner", ".git"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(nested, "other"), 0o755))
	roots := canonicalRoots([]string{f.ws, nested, filepath.Join(nested, "inner"), filepath.Join(f.base, "missing")})
	prot := protectedPaths(roots)
	require.Equal(t, canonicalize(t, []string{
		filepath.Join(nested, "inner", ".git"), filepath.Join(f.ws, ".codex"), filepath.Join(f.ws, ".git"),
	}), prot)
	var got []string
	for _, g := range grantsExcluding(roots, prot) {
		got = append(got, strings.TrimPrefix(g.path, canonicalize(t, []string{f.base})[0]))
	}
	// ws/link is a symlink and is skipped; nested/inner holds only its protected .git.
	require.ElementsMatch(t, []string{"/ws/file.txt", "/ws/sub", "/nested/other"}, got)
}

func canonicalize(t *testing.T, paths []string) []string {
	t.Helper()
	out := make([]string, len(paths))
	for i, p := range paths {
		r, err := filepath.EvalSymlinks(p)
		require.NoError(t, err)
		out[i] = r
	}
	return out
}

// unprivEnv marks the re-run of this test binary as an unprivileged user.
const unprivEnv = "SANDBOXTEST_UNPRIVILEGED"

// TestUnprivileged re-runs the sandbox tests as an unprivileged user when we are root, so the
// user-namespace and Landlock-only paths are covered the way a normal user meets them.
func TestUnprivileged(t *testing.T) {
	requireSandbox(t)
	if os.Getenv(unprivEnv) != "" {
		t.Skip("already unprivileged")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the other tests already run unprivileged")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "sandbox-unpriv-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "sandbox.test")
	data, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, data, 0o755))
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o755))
	require.NoError(t, os.Chmod(tmp, 0o1777))
	// Only a hang should end this run: under a loaded machine (race build) the subset took over 5 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.count=1", "-test.v",
		"-test.run", "TestEscapesFail|TestWorkspaceWriteAllows|TestNetwork|TestDetachedChildConfined|TestReadsAndDevicesWork|TestDenialMessages|TestUnderPTY|TestUserNSStageRelaysSignals|"+
			"TestWorkspaceWriteRefusesMetadataOutsideRoots|TestWorkspaceWriteMetadataInsideRoots|TestMountFlagsKept|TestLauncherNotTraceable|TestLauncherPermanent|TestLauncherSpawnAbandoned|TestLauncherStartCancelled")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), unprivEnv+"=1", "TMPDIR="+tmp, "HOME="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: TestEscapesFail/workspace-write/userns/")
	require.Contains(t, string(out), "--- PASS: TestEscapesFail/workspace-write/landlock-only/")
	require.Regexp(t, `--- (PASS|SKIP): TestWorkspaceWriteRefusesMetadataOutsideRoots/userns`, string(out))
	require.Regexp(t, `--- (PASS|SKIP): TestEscapesFail/read-only/launcher/`, string(out))
	require.Regexp(t, `--- (PASS|SKIP): TestLauncherNotTraceable`, string(out))
	require.Regexp(t, `--- (PASS|SKIP): TestLauncherPermanent`, string(out))
	require.Regexp(t, `--- (PASS|SKIP): TestLauncherSpawnAbandoned`, string(out))
	require.Regexp(t, `--- (PASS|SKIP): TestLauncherStartCancelled`, string(out))
	if strings.Contains(string(out), "--- SKIP: TestEscapesFail/read-only/launcher") {
		t.Log("no launcher for unprivileged users here (no user namespaces)")
	}
	if strings.Contains(string(out), "--- SKIP: TestWorkspaceWriteAllows/workspace-write/new_top-level_file") {
		t.Log("user namespaces are unavailable to unprivileged users here: Landlock-only protection")
	}
}

// TestUnderPTY runs the helper the way execmgr does, as a session leader on a PTY: the terminal
// stays usable (writes to /dev/tty, ioctls) through every protection path.
func TestUnderPTY(t *testing.T) {
	requireSandbox(t)
	self, err := os.Executable()
	require.NoError(t, err)
	for _, c := range confined {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			newPTY := `script -qec "echo new-pty" /dev/null`
			if _, err := exec.LookPath("script"); err != nil {
				newPTY = "echo new-pty" // no util-linux script(1) here
			}
			script := `test -t 0 && echo via-tty > /dev/tty && stty size && ` + newPTY + ` && echo x > .git/config`
			if c.protect == testLauncher {
				ptmx, tty, err := pty.Open()
				require.NoError(t, err)
				defer ptmx.Close()
				require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Rows: 33, Cols: 77}))
				read := make(chan []byte, 1)
				go func() {
					b, _ := io.ReadAll(ptmx) // EIO once the child side closes
					read <- b
				}()
				code, _ := runLaunched(t, c.p, f.ws, nil, tty, "sh", "-c", script)
				tty.Close()
				out := <-read
				require.Equal(t, 2, code, "%s", out)
				require.Contains(t, string(out), "via-tty")
				require.Contains(t, string(out), "33 77")
				require.Contains(t, string(out), "new-pty", "a new PTY can be opened through /dev/ptmx")
				require.Equal(t, orig, readFile(t, filepath.Join(f.ws, ".git/config")))
				return
			}
			protect := c.protect
			if protect == testReexec {
				protect = protectAuto
			}
			args, err := wrapArgv(self, c.p, f.ws, "", []string{"sh", "-c", script}, protect)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			cmd.Dir = f.ws
			if starts := Starts(args); c.protect != testReexec && len(starts) > 1 {
				applyStart(cmd, starts[0]) // cloned into the namespaces directly, as execmgr does
			}
			ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 33, Cols: 77})
			require.NoError(t, err)
			defer ptmx.Close()
			out, _ := io.ReadAll(ptmx) // EIO once the child side closes
			err = cmd.Wait()
			require.Error(t, err, "%s", out)
			require.Equal(t, 2, cmd.ProcessState.ExitCode(), "%s", out)
			require.Contains(t, string(out), "via-tty")
			require.Contains(t, string(out), "33 77")
			require.Contains(t, string(out), "new-pty", "a new PTY can be opened through /dev/ptmx")
			require.Equal(t, orig, readFile(t, filepath.Join(f.ws, ".git/config")))
		})
	}
}

// TestUserNSStageRelaysSignals checks that the waiting first stage forwards a SIGTERM to the
// sandboxed command and then reports the same death.
func TestUserNSStageRelaysSignals(t *testing.T) {
	requireSandbox(t)
	self, err := os.Executable()
	require.NoError(t, err)
	f := newFixture(t)
	args, err := wrapArgv(self, confined[2].p, f.ws, "", []string{"sleep", "300"}, protectUserNS)
	require.NoError(t, err)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = f.ws
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	var child int
	direct := false
	// The sleep is a descendant: below the PID-namespace stage and the user-namespace stage.
	var findSleep func(pid, depth int) int
	findSleep = func(pid, depth int) int {
		if depth > 4 {
			return 0
		}
		// Children are listed per thread (the one that forked them), so read every task's list.
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		var kids []string
		for _, tf := range tasks {
			if b, err := os.ReadFile(tf); err == nil {
				kids = append(kids, strings.Fields(string(b))...)
			}
		}
		for _, f := range kids {
			c, _ := strconv.Atoi(f)
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", c)); strings.HasSuffix(exe, "/sleep") {
				return c
			}
			if d := findSleep(c, depth+1); d != 0 {
				return d
			}
		}
		return 0
	}
	require.Eventually(t, func() bool {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid)); strings.HasSuffix(exe, "/sleep") {
			direct = true // no second stage: user namespaces are unavailable
			return true
		}
		child = findSleep(cmd.Process.Pid, 0)
		return child != 0
	}, time.Minute, 20*time.Millisecond, "sandboxed sleep never started: %s", func() string {
		out, _ := exec.Command("ps", "-e", "-o", "pid,ppid,uid,stat,args", "--forest").CombinedOutput()
		return string(out)
	}())
	if direct {
		t.Skip("user namespaces unavailable: no second stage")
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		exited <- err
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			require.Equal(t, syscall.SIGTERM, ws.Signal())
		} else {
			require.Equal(t, 128+int(syscall.SIGTERM), ws.ExitStatus())
		}
	case <-time.After(time.Minute):
		t.Fatal("helper did not exit after SIGTERM")
	}
	// The kernel's SIGKILL of the namespace's processes is asynchronous: a loaded machine may show the
	// child a moment after the helper's exit.
	require.Eventually(t, func() bool {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", child)); os.IsNotExist(err) {
			return true
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		return strings.Contains(string(b), ") Z ")
	}, time.Minute, 10*time.Millisecond, "sandboxed child %d survived", child)
}

// TestPrivilegedSyscallsDenied checks the seccomp deny list with a harmless call: setting the
// hostname to its current value, which root could otherwise do.
func TestPrivilegedSyscallsDenied(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("only root could succeed, so only root can tell the filter works")
	}
	if _, err := exec.LookPath("hostname"); err != nil {
		t.Skip("no hostname tool")
	}
	name, err := os.Hostname()
	require.NoError(t, err)
	f := newFixture(t)
	for _, c := range confined[:2] {
		code, out := run(t, c.p, c.protect, f.ws, nil, "hostname", name)
		require.NotZero(t, code, "%s: %s", c.name, out)
		require.Regexp(t, "Operation not permitted|must be root", out) // EPERM, as hostname words it
	}
	code, out := run(t, Policy{Kind: DangerFullAccess}, protectAuto, f.ws, nil, "hostname", name)
	require.Zero(t, code, out)
}

// TestReadOnlyRefusesMetadataAndUnixSockets: under read-only, chmod/chown/utimes/xattrs of files the
// command can reach fail, and so does connecting to a unix socket (docker.sock, agents).
func TestReadOnlyRefusesMetadataAndUnixSockets(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	target := filepath.Join(f.outside, "readme")
	before, err := os.Stat(target)
	require.NoError(t, err)
	for _, script := range []string{
		`chmod 600 "$OUT/readme"`,
		`chown 65534 "$OUT/readme"`,
		`touch -d 2000-01-01 "$OUT/readme"`,
		`touch -m "$OUT/readme"`,
	} {
		code, out := sh(t, Policy{Kind: ReadOnly}, protectAuto, f, script)
		t.Logf("%s: exit %d: %s", script, code, strings.TrimSpace(out))
		require.NotZero(t, code, script)
		require.Regexp(t, `Operation not permitted|Permission denied`, out, script)
	}
	after, err := os.Stat(target)
	require.NoError(t, err)
	require.Equal(t, before.Mode(), after.Mode())
	require.Equal(t, before.ModTime(), after.ModTime())
	require.Equal(t, before.Sys().(*syscall.Stat_t).Uid, after.Sys().(*syscall.Stat_t).Uid)

	sock := filepath.Join(f.outside, "agent.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	self, err := os.Executable()
	require.NoError(t, err)
	code, out := run(t, Policy{Kind: ReadOnly}, protectAuto, f.ws, []string{actionEnv + "=unixdial " + sock}, self)
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "operation not permitted")
	// With the network allowed, unix sockets work as well.
	code, out = run(t, Policy{Kind: ReadOnly, NetworkAccess: true}, protectAuto, f.ws, []string{actionEnv + "=unixdial " + sock}, self)
	require.Equal(t, 0, code, out)
	// Pipes and socketpairs are not sockets one connects to: a shell pipeline still works.
	code, out = sh(t, Policy{Kind: ReadOnly}, protectAuto, f, `echo hi | cat`)
	require.Equal(t, 0, code, out)
}

// TestWorkdirOutsideWorkspaceGainsNothing: a command run in a directory outside the workspace (a
// tool call's workdir) may not write there; the roots come from the policy's cwd.
func TestWorkdirOutsideWorkspaceGainsNothing(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	self, err := os.Executable()
	require.NoError(t, err)
	p := Policy{Kind: WorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}
	args, err := WrapArgvIn(self, p, f.ws, f.outside, []string{"sh", "-c", `pwd; echo pwned > new; echo ok > "$WS/inside"`})
	require.NoError(t, err)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = f.outside
	cmd.Env = append(os.Environ(), "WS="+f.ws)
	out, _ := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.Contains(t, string(out), f.outside+"\n", "the command runs in its workdir")
	require.Regexp(t, "Permission denied|Read-only file system", string(out))
	requireAbsent(t, filepath.Join(f.outside, "new"))
	require.Equal(t, "ok\n", readFile(t, filepath.Join(f.ws, "inside")), "the workspace stays writable")
}

// TestOtherProcessesInvisible: the command has its own PID namespace and /proc, so another process's
// /proc/<pid>/environ (the server's secrets) cannot be read, under every confined configuration.
func TestOtherProcessesInvisible(t *testing.T) {
	requireSandbox(t)
	victim := exec.Command("sleep", "300")
	victim.Env = append(os.Environ(), "VICTIM_SECRET=hunter2")
	require.NoError(t, victim.Start())
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
	for _, c := range confined {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			script := fmt.Sprintf(`cat /proc/%d/environ; cat /proc/%d/environ; ls /proc | grep -c '^[0-9]'`, victim.Process.Pid, os.Getpid())
			_, out := sh(t, c.p, c.protect, f, script)
			t.Logf("%s", out)
			require.NotContains(t, out, "VICTIM_SECRET")
			require.NotContains(t, out, "PATH=", "the test process's environment is not readable either")
			require.Contains(t, out, "No such file or directory")
		})
	}
}

// TestLeftoversDieWithTheCommand: what a sandboxed command leaves in the background (even detached
// with setsid) is killed by the kernel when the command exits.
func TestLeftoversDieWithTheCommand(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	n := strconv.Itoa(300000 + os.Getpid()%100000)
	code, out := sh(t, Policy{Kind: ReadOnly}, protectAuto, f, fmt.Sprintf(`sleep %s >/dev/null 2>&1 & setsid sleep %s >/dev/null 2>&1 & echo started`, n, n))
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool {
		b, _ := exec.Command("pgrep", "-f", "^sleep "+n+"$").Output()
		return len(strings.TrimSpace(string(b))) == 0
	}, time.Minute, 10*time.Millisecond, "a leftover of the sandboxed command is still running")
}

// wwNoNet is the workspace-write policy of the escape suite: the workspace only, no network.
var wwNoNet = Policy{Kind: WorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}

// mountConfined lists the workspace-write configurations that build a read-only mount tree: the
// direct mount namespace, the user namespace, and the per-mount remount fallback.
var mountConfined = []struct {
	name    string
	protect string
}{
	{"auto", protectAuto},
	{"userns", protectUserNS},
	{"remount", protectRemount},
}

// hostMounts reads the mount table of the test process (outside any sandbox).
func hostMounts(t *testing.T) []mountInfo {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	m, err := parseMountInfo(string(b))
	require.NoError(t, err)
	return m
}

// skipWithoutMountNS skips when the helper fell back to Landlock alone (no user namespaces).
func skipWithoutMountNS(t *testing.T, p Policy, protect string, f fixture) {
	t.Helper()
	_, out := sh(t, p, protect, f, `grep -c . /proc/self/mountinfo >/dev/null; echo x > top-probe && rm top-probe`)
	if strings.Contains(out, "Permission denied") {
		t.Skip("no mount namespace here (needs CAP_SYS_ADMIN or user namespaces): Landlock-only mode")
	}
}

// attemptsScript runs each attempt in one shell (a sandbox run costs several process starts) and
// reports it as "ESCAPED <i>" or "refused <i>: <error text>".
func attemptsScript(attempts []string) string {
	var b strings.Builder
	for i, a := range attempts {
		fmt.Fprintf(&b, "if out=$( (%s) 2>&1 ); then echo 'ESCAPED %d'; else echo \"refused %d: $out\" | tr '\\n' ' '; echo; fi\n", a, i, i)
	}
	return b.String()
}

// requireAllRefused checks the output of attemptsScript: every attempt refused with a denial.
func requireAllRefused(t *testing.T, attempts []string, out string) {
	t.Helper()
	for i, a := range attempts {
		require.NotContains(t, out, fmt.Sprintf("ESCAPED %d\n", i), a)
		require.Regexp(t, fmt.Sprintf(`(?m)^refused %d: .*(?i:read-only file system|operation not permitted|permission denied)`, i), out, a)
	}
}

// TestWorkspaceWriteRefusesMetadataOutsideRoots: chmod, chown, utimes and xattr changes of files
// outside the writable roots fail with EROFS, because the tree outside the roots is read-only.
func TestWorkspaceWriteRefusesMetadataOutsideRoots(t *testing.T) {
	requireSandbox(t)
	self, err := os.Executable()
	require.NoError(t, err)
	for _, c := range mountConfined {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			skipWithoutMountNS(t, wwNoNet, c.protect, f)
			target := filepath.Join(f.outside, "readme")
			require.NoError(t, unix.Setxattr(target, xattrName, []byte("0"), 0))
			before, err := os.Stat(target)
			require.NoError(t, err)
			uid := strconv.Itoa(os.Getuid())
			attempts := []string{
				`chmod 600 "$OUT/readme"`,
				`chmod 644 "$OUT/readme"`, // its current mode: still a change on a read-only mount
				`chown 65534 "$OUT/readme"`,
				`chown ` + uid + ` "$OUT/readme"`,
				`touch -d 2000-01-01 "$OUT/readme"`,
				`touch -m "$OUT/readme"`,
				`chmod 700 "$OUT"`,
				`chmod 600 link/readme`, // through a symlink in the workspace
				`SANDBOXTEST_ACTION="setxattr $OUT/readme" "$SELF"`,
				`SANDBOXTEST_ACTION="removexattr $OUT/readme" "$SELF"`,
				// Through the workspace's writable mount of the same file system (needs
				// CAP_DAC_READ_SEARCH, which a root server's command has).
				`SANDBOXTEST_ACTION="handlechmod $OUT/readme" "$SELF"`,
				// Through the root of process 1's other threads (still in the writable tree).
				`ok=; for r in /proc/1/task/*/root; do chmod 600 "$r$OUT/readme" && ok=1; done; test -n "$ok"`,
			}
			code, out := sh(t, wwNoNet, c.protect, f, attemptsScript(attempts), "SELF="+self)
			t.Logf("exit %d:\n%s", code, out)
			requireAllRefused(t, attempts, out)
			require.Contains(t, out, "Read-only file system")
			after, err := os.Stat(target)
			require.NoError(t, err)
			require.Equal(t, before.Mode(), after.Mode())
			require.Equal(t, before.ModTime(), after.ModTime())
			require.Equal(t, before.Sys().(*syscall.Stat_t).Uid, after.Sys().(*syscall.Stat_t).Uid)
			v := make([]byte, 8)
			n, err := unix.Getxattr(target, xattrName, v)
			require.NoError(t, err)
			require.Equal(t, "0", string(v[:n]))
			dirInfo, err := os.Stat(f.outside)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o755), dirInfo.Mode().Perm())
		})
	}
	t.Run("landlock-only", func(t *testing.T) {
		t.Skip("known limit (docs/sandbox.md): without a mount namespace, metadata changes outside the roots are not refused")
	})
}

// TestWorkspaceWriteMetadataInsideRoots: the same operations inside a writable root (and in an
// extra root and $TMPDIR) keep working under every workspace-write configuration.
func TestWorkspaceWriteMetadataInsideRoots(t *testing.T) {
	requireSandbox(t)
	self, err := os.Executable()
	require.NoError(t, err)
	all := append(append([]struct{ name, protect string }(nil), mountConfined...), struct{ name, protect string }{"landlock-only", protectLandlock})
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			extra := filepath.Join(f.base, "extra")
			tmpdir := filepath.Join(f.base, "tmpdir")
			require.NoError(t, os.Mkdir(extra, 0o755))
			require.NoError(t, os.Mkdir(tmpdir, 0o755))
			files := []string{filepath.Join(f.ws, "sub/file"), filepath.Join(extra, "f"), filepath.Join(tmpdir, "f")}
			for _, file := range files {
				require.NoError(t, os.WriteFile(file, []byte(orig), 0o644))
				require.NoError(t, os.WriteFile(file+".x", []byte(orig), 0o644))
				require.NoError(t, unix.Setxattr(file+".x", xattrName, []byte("0"), 0))
			}
			p := Policy{Kind: WorkspaceWrite, WritableRoots: []string{extra}, ExcludeSlashTmp: true}
			uid := strconv.Itoa(os.Getuid())
			code, out := sh(t, p, c.protect, f, `set -e
for F in "$F1" "$F2" "$F3"; do
	chmod 600 "$F"
	chown `+uid+` "$F"
	touch -d 2000-01-01 "$F"
	SANDBOXTEST_ACTION="setxattr $F" "$SELF"
	SANDBOXTEST_ACTION="removexattr $F.x" "$SELF"
	echo more >> "$F"
	touch -d 2001-01-01 "$F"
done
# A relative path in the working directory resolves through the writable mount too.
chmod 640 file.txt
touch -d 2002-02-02 file.txt`, "TMPDIR="+tmpdir, "F1="+files[0], "F2="+files[1], "F3="+files[2], "SELF="+self)
			require.Zero(t, code, out)
			for _, file := range files {
				fi, err := os.Stat(file)
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), file)
				require.Equal(t, 2001, fi.ModTime().Year(), file)
				v := make([]byte, 8)
				n, err := unix.Getxattr(file, xattrName, v)
				require.NoError(t, err, file)
				require.Equal(t, "1", string(v[:n]))
				_, err = unix.Getxattr(file+".x", xattrName, v)
				require.ErrorIs(t, err, unix.ENODATA, file+".x")
			}
			fi, err := os.Stat(filepath.Join(f.ws, "file.txt"))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
			require.Equal(t, 2002, fi.ModTime().Year())
		})
	}
}

// TestMountFlagsKept: inside the read-only tree every mount keeps its nosuid/nodev/noexec flags,
// mounts outside the roots are read-only, the workspace is writable with its mount's flags, /proc is
// the namespace's own and devices stay writable.
func TestMountFlagsKept(t *testing.T) {
	requireSandbox(t)
	host := hostMounts(t)
	for _, c := range mountConfined {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			skipWithoutMountNS(t, wwNoNet, c.protect, f)
			code, out := sh(t, wwNoNet, c.protect, f, `set -e
cat /proc/self/mountinfo > mountinfo.txt
echo x > /dev/null
: > /dev/full
ls /proc | grep -c '^[0-9]'
head -c 3 /dev/zero | wc -c`)
			require.Zero(t, code, out)
			counts := strings.Fields(out)
			require.Len(t, counts, 2, out)
			require.Equal(t, "3", counts[1], "reads of /dev/zero")
			n, err := strconv.Atoi(counts[0])
			require.NoError(t, err)
			require.Less(t, n, 10, "/proc lists only the sandbox's own processes")
			inside, err := parseMountInfo(readFile(t, filepath.Join(f.ws, "mountinfo.txt")))
			require.NoError(t, err)
			top := map[string]mountInfo{}
			for _, m := range inside {
				top[m.point] = m // later entries are mounted on top of earlier ones
			}
			ws, err := filepath.EvalSymlinks(f.ws)
			require.NoError(t, err)
			for _, h := range host {
				in, ok := top[h.point]
				if !ok {
					continue // hidden under another mount, or unreachable
				}
				for _, flag := range []string{"nosuid", "nodev", "noexec"} {
					if h.opts[flag] {
						require.True(t, in.opts[flag], "%s lost %s: %v", h.point, flag, in.opts)
					}
				}
				if !within(ws, h.point) || h.point == "/" {
					require.True(t, in.opts["ro"], "%s must be read-only inside the sandbox", h.point)
				}
			}
			w, ok := top[ws]
			require.True(t, ok, "the workspace is a mount of its own: %v", inside)
			require.True(t, w.opts["rw"], "the workspace stays writable")
			var under mountInfo
			for _, h := range host {
				if within(ws, h.point) {
					under = h // the last match is the deepest and top-most
				}
			}
			for _, flag := range []string{"nosuid", "nodev", "noexec"} {
				require.Equal(t, under.opts[flag], w.opts[flag], "the workspace keeps %s of %s", flag, under.point)
			}
			require.Equal(t, "proc", top["/proc"].fstype)
		})
	}
}

// TestWorkspaceWriteRefusesUnixSockets: without network, connecting to a unix socket fails under
// workspace-write too, whether it lies outside the roots (docker.sock, an ssh-agent) or inside; pipes,
// stream socketpairs and Python multiprocessing keep working.
func TestWorkspaceWriteRefusesUnixSockets(t *testing.T) {
	requireSandbox(t)
	self, err := os.Executable()
	require.NoError(t, err)
	// The seccomp rule is the same with and without a mount namespace: one configuration of each.
	for _, c := range []struct{ name, protect string }{{"auto", protectAuto}, {"landlock-only", protectLandlock}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			// Socket paths must be short (108 bytes): one directory outside, one made a writable root.
			var socks []string
			for range 2 {
				dir, err := os.MkdirTemp("/tmp", "sb")
				require.NoError(t, err)
				t.Cleanup(func() { _ = os.RemoveAll(dir) })
				sock := filepath.Join(dir, "s")
				ln, err := net.Listen("unix", sock)
				require.NoError(t, err)
				t.Cleanup(func() { _ = ln.Close() })
				socks = append(socks, sock)
			}
			pol := wwNoNet
			pol.WritableRoots = []string{filepath.Dir(socks[1])}
			attempts := []string{
				`SANDBOXTEST_ACTION="unixdial $S1" "$SELF"`, // outside the roots
				`SANDBOXTEST_ACTION="unixdial $S2" "$SELF"`, // in a writable root
				`SANDBOXTEST_ACTION="unixsocket x" "$SELF"`,
				// A datagram socketpair could be re-addressed to any datagram socket (connect, sendmsg).
				`SANDBOXTEST_ACTION="socketpair dgram" "$SELF"`,
			}
			env := []string{"SELF=" + self, "S1=" + socks[0], "S2=" + socks[1]}
			code, out := sh(t, pol, c.protect, f, attemptsScript(attempts), env...)
			t.Logf("exit %d:\n%s", code, out)
			requireAllRefused(t, attempts, out)
			pol.NetworkAccess = true
			code, out = sh(t, pol, c.protect, f, `set -e
SANDBOXTEST_ACTION="unixdial $S1" "$SELF"
SANDBOXTEST_ACTION="unixdial $S2" "$SELF"`, env...)
			require.Zero(t, code, "with network: %s", out)
			pol.NetworkAccess = false
			script := `set -e
SANDBOXTEST_ACTION="socketpair stream" "$SELF"
SANDBOXTEST_ACTION="socketpair seqpacket" "$SELF"
echo hi | cat | tr h H`
			want := "Hi\n"
			if _, err := exec.LookPath("python3"); err == nil {
				script += `
python3 -c '
import multiprocessing as mp
def work(c): c.send(c.recv() * 2); c.close()
if __name__ == "__main__":
    a, b = mp.Pipe()
    p = mp.Process(target=work, args=(b,)); p.start()
    a.send(21); print(a.recv()); p.join()
'`
				want += "42\n"
			}
			code, out = sh(t, pol, c.protect, f, script, env...)
			require.Zero(t, code, out)
			require.Equal(t, want, out)
		})
	}
}

// TestPreexistingHardLinkHole pins a documented limit (docs/sandbox.md): a hard link that already
// sits in a writable root is the outside file's inode, so writes and metadata changes through it
// land outside under every configuration. A new hard link to an outside file cannot be made.
func TestPreexistingHardLinkHole(t *testing.T) {
	requireSandbox(t)
	all := append(append([]struct{ name, protect string }(nil), mountConfined...), struct{ name, protect string }{"landlock-only", protectLandlock})
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			target := filepath.Join(f.outside, "readme")
			if err := os.Link(target, filepath.Join(f.ws, "hl")); err != nil {
				t.Skipf("cannot hard-link here: %v", err)
			}
			code, out := sh(t, wwNoNet, c.protect, f, `ln "$OUT/readme" sub/new-link`)
			require.NotZero(t, code, out)
			require.Regexp(t, `Invalid cross-device link|Read-only file system|Permission denied`, out)
			requireAbsent(t, filepath.Join(f.ws, "sub/new-link"))
			code, out = sh(t, wwNoNet, c.protect, f, `echo through-link >> hl && chmod 600 hl`)
			require.Zero(t, code, out)
			require.Equal(t, "secret\nthrough-link\n", readFile(t, target), "the known hole: the outside inode changed")
			fi, err := os.Stat(target)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		})
	}
}

func TestOutermostAndMountInfo(t *testing.T) {
	require.Equal(t, []string{"/a", "/ab", "/tmp"}, outermost([]string{"/tmp/x", "/tmp", "/a/b", "/ab", "/a"}))
	require.Equal(t, []string{"/"}, outermost([]string{"/w", "/"}))
	require.Empty(t, outermost(nil))

	m, err := parseMountInfo("26 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n" +
		"27 26 0:24 / /mnt/a\\040b ro,nosuid,nodev shared:1 master:2 - tmpfs tmpfs ro,size=4k\n")
	require.NoError(t, err)
	require.Len(t, m, 2)
	require.Equal(t, "/", m[0].point)
	require.True(t, m[0].opts["rw"])
	require.Equal(t, "/mnt/a b", m[1].point)
	require.Equal(t, "tmpfs", m[1].fstype)
	require.True(t, m[1].opts["nosuid"] && m[1].opts["nodev"] && m[1].opts["ro"])
	require.Equal(t, uintptr(unix.MS_NOSUID|unix.MS_NODEV|unix.MS_STRICTATIME), mountFlags(m[1].opts))
	require.Equal(t, uintptr(unix.MS_RELATIME), mountFlags(m[0].opts))
	for _, bad := range []string{"1 2 3", "1 2 0:1 / / rw shared:1", "1 2 0:1 / /x\\04 rw - t s o", "1 2 0:1 / /x\\999 rw - t s o"} {
		_, err := parseMountInfo(bad)
		require.Error(t, err, bad)
	}
}

// TestWholeTreeWritableRoot: a writable root of "/" leaves the tree writable (no read-only pass),
// and .git stays protected.
func TestWholeTreeWritableRoot(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	p := Policy{Kind: WorkspaceWrite, WritableRoots: []string{"/"}, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}
	code, out := sh(t, p, protectAuto, f, `echo ok > "$OUT/new" && chmod 600 "$OUT/new"`)
	require.Zero(t, code, out)
	require.Equal(t, "ok\n", readFile(t, filepath.Join(f.outside, "new")))
	code, out = sh(t, p, protectAuto, f, `echo x > .git/config`)
	require.NotZero(t, code, out)
	require.Equal(t, orig, readFile(t, filepath.Join(f.ws, ".git/config")))
}

// TestStartsClonesHelperAsInit: a spawner following Starts starts the helper as process 1 of its
// new PID namespace (one helper process, not one that re-executes itself), and the command runs
// confined as its child.
func TestStartsClonesHelperAsInit(t *testing.T) {
	requireSandbox(t)
	self, err := os.Executable()
	require.NoError(t, err)
	f := newFixture(t)
	args, err := WrapArgv(self, Policy{Kind: ReadOnly}, f.ws, []string{"sh", "-c", `echo pid=$$; echo x > new; read line`})
	require.NoError(t, err)
	require.Len(t, Starts([]string{"sh", "-c", "true"}), 1, "a command that is not a helper's is started as it is")
	starts := Starts(args)
	require.Greater(t, len(starts), 1, "the helper can be cloned into its namespaces")
	for _, st := range starts[:len(starts)-1] {
		require.NotZero(t, st.Cloneflags&unix.CLONE_NEWPID)
		require.NotZero(t, st.Cloneflags&unix.CLONE_NEWNS)
	}
	var cmd *exec.Cmd
	var out strings.Builder
	var stdin io.WriteCloser
	for _, st := range starts {
		cmd = exec.Command(st.Argv[0], st.Argv[1:]...)
		cmd.Dir = f.ws
		cmd.Stdout, cmd.Stderr = &out, &out
		stdin, err = cmd.StdinPipe()
		require.NoError(t, err)
		applyStart(cmd, st)
		if err = cmd.Start(); err == nil || !st.Refused(err) {
			break
		}
	}
	require.NoError(t, err)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	require.NoError(t, err)
	_ = stdin.Close()
	_ = cmd.Wait()
	if cmd.Args[2] == args[2] {
		t.Skip("no namespaces for the helper here: it was started as WrapArgv returned it")
	}
	var nspid string
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
			nspid = strings.TrimSpace(v)
		}
	}
	fields := strings.Fields(nspid)
	require.Len(t, fields, 2, "NSpid %q: the started process is in a new PID namespace", nspid)
	require.Equal(t, "1", fields[1], "the started process is process 1 of its namespace")
	require.NotContains(t, out.String(), "pid=1\n", "the command is the helper's child")
	require.Contains(t, out.String(), "pid=", "the command ran")
	require.Contains(t, out.String(), "Permission denied", "the command is confined")
	requireAbsent(t, filepath.Join(f.ws, "new"))
}

// TestLauncherExitStatuses: a launcher reports its commands' statuses as the helper does: the
// exit code, 128+N for a death by signal N, 127/126 for a command it cannot run.
func TestLauncherExitStatuses(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	for script, want := range map[string]int{"true": 0, "false": 1, "exit 7": 7, "kill -TERM $$": 128 + 15,
		"kill -KILL $$": 128 + 9, "no-such-command-xyz": 127, "./file.txt": 126} {
		code, out := sh(t, Policy{Kind: ReadOnly}, testLauncher, f, script)
		require.Equal(t, want, code, "%s: %s", script, out)
	}
	code, out := run(t, Policy{Kind: ReadOnly}, testLauncher, filepath.Join(f.ws, "gone"), nil, "true")
	require.Equal(t, ExitCannotExecute, code, out)
	require.Contains(t, out, "appserver sandbox: cwd: chdir")
}

// TestLauncherServesManyAndDies: one launcher starts several commands concurrently; once it is
// closed, a command still running is reported killed, and nothing of it is left.
func TestLauncherServesManyAndDies(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	l, null := launcherWithNull(t)
	n := strconv.Itoa(400000 + os.Getpid()%100000)
	var kids []*Launched
	for i := 0; i < 5; i++ {
		c, err := l.Spawn(context.Background(), confine.LaunchRequest{Argv: []string{"sh", "-c", "echo $$ > /dev/null"}, Env: os.Environ(), Dir: f.ws, Setpgid: true},
			[3]*os.File{null, null, null}, -1)
		require.NoError(t, err)
		kids = append(kids, c)
	}
	for _, c := range kids {
		require.Equal(t, 0, c.Wait().ExitStatus())
	}
	long, err := l.Spawn(context.Background(), confine.LaunchRequest{Argv: []string{"sleep", n}, Env: os.Environ(), Dir: f.ws, Setpgid: true},
		[3]*os.File{null, null, null}, -1)
	require.NoError(t, err)
	require.NotZero(t, long.Pid())
	require.Eventually(t, func() bool { // the exec may still be finishing
		out, _ := os.ReadFile("/proc/" + strconv.Itoa(long.Pid()) + "/cmdline")
		return string(out) == "sleep\x00"+n+"\x00"
	}, time.Minute, time.Millisecond, "Pid is the command's pid in our namespace")
	l.Close()
	ws := long.Wait()
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "%v", ws)
	require.Eventually(t, func() bool {
		b, _ := exec.Command("pgrep", "-f", "^sleep "+n+"$").Output()
		return len(strings.TrimSpace(string(b))) == 0
	}, time.Minute, 10*time.Millisecond)
	_, err = l.Spawn(context.Background(), confine.LaunchRequest{Argv: []string{"true"}, Dir: "/"}, [3]*os.File{null, null, null}, -1)
	require.ErrorIs(t, err, ErrLauncherDead)
}

// TestLauncherThatDoesNotAnswer: a spawn whose reply does not come within the launcher's timeout
// fails with ErrLauncherDead, and the launcher is killed.
func TestLauncherThatDoesNotAnswer(t *testing.T) {
	requireSandbox(t)
	self, err := os.Executable()
	require.NoError(t, err)
	l, err := StartLauncher(context.Background(), self, LaunchKey{}, LauncherOptions{CgroupFD: -1, Timeout: 100 * time.Millisecond})
	if err != nil && refused[startDirect].Load() && refused[startUserNS].Load() {
		t.Skipf("no launcher without PID namespaces: %v", err)
	}
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, syscall.Kill(l.Pid(), syscall.SIGSTOP)) // it never answers
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	_, err = l.Spawn(context.Background(), confine.LaunchRequest{Argv: []string{"true"}, Dir: "/"}, [3]*os.File{null, null, null}, -1)
	require.ErrorIs(t, err, ErrLauncherDead)
	select {
	case <-l.Dead():
	case <-time.After(time.Minute):
		t.Fatal("the launcher was not closed")
	}
	require.Eventually(t, func() bool { return syscall.Kill(l.Pid(), 0) != nil }, time.Minute, 10*time.Millisecond,
		"the launcher process was not killed")
}

// TestLauncherNotTraceable: an unprivileged launched command cannot read the launcher's memory
// (its unconfined threads share it): the launcher holds capabilities the command lacks (in its user
// namespace) and is not dumpable.
func TestLauncherNotTraceable(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	code, out := sh(t, Policy{Kind: ReadOnly}, testLauncher, f, `grep -c . /proc/1/maps`)
	if os.Geteuid() == 0 {
		t.Logf("as root (CAP_SYS_PTRACE): %d %s", code, out)
		return
	}
	require.NotZero(t, code, out)
	require.Contains(t, out, "ermission denied")
}

// TestStoppedLauncherDoesNotHoldAnEndedCommand: a command that ended while its launcher is
// stopped (and cannot report it) is reported killed after the grace.
func TestStoppedLauncherDoesNotHoldAnEndedCommand(t *testing.T) {
	requireSandbox(t)
	old := exitReportGrace
	exitReportGrace = 50 * time.Millisecond
	t.Cleanup(func() { exitReportGrace = old })
	l, null := launcherWithNull(t)
	c, err := l.Spawn(context.Background(), confine.LaunchRequest{Argv: []string{"sleep", "1000"}, Dir: "/", Setpgid: true}, [3]*os.File{null, null, null}, -1)
	require.NoError(t, err)
	require.NotZero(t, c.Pid())
	require.NoError(t, syscall.Kill(l.Pid(), syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(l.Pid(), syscall.SIGCONT) })
	require.NoError(t, syscall.Kill(c.Pid(), syscall.SIGKILL))
	ws := c.Wait() // bounded by the grace, not by the stopped launcher
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "%v", ws)
	select {
	case <-l.Dead():
		t.Fatal("the launcher is only stopped")
	default:
	}
}

// TestLauncherPermanent: a launcher start fails for good only when the sandbox or its namespaces
// are refused; a failure that may pass (here: a binary that cannot be run) is not.
func TestLauncherPermanent(t *testing.T) {
	for errno, want := range map[syscall.Errno]bool{unix.EPERM: true, unix.EINVAL: true, unix.EACCES: true,
		unix.EUSERS: true, unix.ENOSYS: true, unix.ENOSPC: false, unix.EAGAIN: false, unix.ENOMEM: false, unix.EBUSY: false} {
		err := &os.PathError{Op: "fork/exec", Path: "x", Err: errno}
		require.Equal(t, want, launchRefused(err), "%v", errno)
	}
	require.True(t, LauncherPermanent(fmt.Errorf("%w: no", ErrUnavailable)))
	requireSandbox(t)

	saved := [2]bool{refused[startDirect].Load(), refused[startUserNS].Load()}
	defer func() {
		refused[startDirect].Store(saved[0])
		refused[startUserNS].Store(saved[1])
	}()
	refused[startDirect].Store(true)
	refused[startUserNS].Store(true)
	_, err := StartLauncher(context.Background(), os.Args[0], LaunchKey{}, LauncherOptions{CgroupFD: -1})
	require.ErrorIs(t, err, ErrNamespaces)
	require.True(t, LauncherPermanent(err))
	refused[startDirect].Store(saved[0])
	refused[startUserNS].Store(saved[1])

	l, err := StartLauncher(context.Background(), os.Args[0], LaunchKey{}, LauncherOptions{CgroupFD: -1})
	if LauncherPermanent(err) {
		t.Skipf("no launcher here: %v", err)
	}
	require.NoError(t, err)
	l.Close()
	_, err = StartLauncher(context.Background(), filepath.Join(t.TempDir(), "missing"), LaunchKey{}, LauncherOptions{CgroupFD: -1})
	require.ErrorIs(t, err, ErrLaunch)
	require.False(t, LauncherPermanent(err), "%v", err)
}

// TestRefusedRemembersOnlyLastingRefusals: a refused clone moves on to the next Start; the kind is
// left out of later Starts unless the refusal was a namespace count limit (ENOSPC), which passes.
func TestRefusedRemembersOnlyLastingRefusals(t *testing.T) {
	saved := refused[startDirect].Load()
	defer refused[startDirect].Store(saved)
	st := Start{kind: startDirect}
	for errno, lasting := range map[syscall.Errno]bool{unix.ENOSPC: false, unix.EPERM: true, unix.EUSERS: true} {
		refused[startDirect].Store(false)
		require.True(t, st.Refused(&os.SyscallError{Syscall: "clone", Err: errno}), "%v", errno)
		require.Equal(t, lasting, refused[startDirect].Load(), "%v", errno)
	}
	require.False(t, st.Refused(&os.SyscallError{Syscall: "clone", Err: unix.EAGAIN}))
	require.False(t, Start{kind: startPlain}.Refused(unix.EPERM))
}

// TestLauncherRequestLargerThanItsBuffer: a request larger than the launcher's receive buffer
// (which the socket's send buffer can exceed) is refused as too large, never delivered truncated:
// cut right after a variable, it would run the command without the variables that follow.
func TestLauncherRequestLargerThanItsBuffer(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	l, null := launcherWithNull(t)
	req := confine.LaunchRequest{Argv: []string{"sh", "-c", `printf %s "${#LAST}"`}, Dir: f.ws, Setpgid: true,
		Env: []string{"PATH=" + os.Getenv("PATH")}}
	// Variables under the kernel's limit for one string, filling the request up to exactly the
	// launcher's buffer, each ending with its NUL.
	for i := 0; len(req.Marshal()) < confine.MaxLaunchRequest; i++ {
		name := fmt.Sprintf("PAD%d=", i)
		room := confine.MaxLaunchRequest - len(req.Marshal()) - len(name) - 1
		req.Env = append(req.Env, name+strings.Repeat("p", max(0, min(room, 100000))))
	}
	require.Equal(t, confine.MaxLaunchRequest, len(req.Marshal()))
	req.Env = append(req.Env, "LAST="+strings.Repeat("x", 1000))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	c, err := l.Spawn(context.Background(), req, [3]*os.File{null, w, w}, -1)
	w.Close()
	if err != nil {
		require.ErrorIs(t, err, ErrTooLarge)
		return
	}
	out, _ := io.ReadAll(r)
	c.Wait()
	require.Equal(t, "1000", string(out), "the command got its whole environment")
}

// TestLauncherSpawnAbandoned: a Spawn whose context ends after its request was sent returns at once
// (here the launcher is stopped and cannot answer) with a *SpawnAbandoned; the command the launcher
// starts once it runs again is killed, Settled is closed, and the launcher serves the next Spawn
// (the late reply is not taken for its own).
func TestLauncherSpawnAbandoned(t *testing.T) {
	requireSandbox(t)
	l, null := launcherWithNull(t)
	n := strconv.Itoa(500000 + os.Getpid()%100000)
	require.NoError(t, syscall.Kill(l.Pid(), syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(l.Pid(), syscall.SIGCONT) })
	ctx, cancel := context.WithCancel(context.Background())
	l.sent = cancel // the caller gives up once the request is out
	_, err := l.Spawn(ctx, confine.LaunchRequest{Argv: []string{"sleep", n}, Env: os.Environ(), Dir: "/", Setpgid: true},
		[3]*os.File{null, null, null}, -1)
	l.sent = nil
	var ab *SpawnAbandoned
	require.ErrorAs(t, err, &ab)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, syscall.Kill(l.Pid(), syscall.SIGCONT))
	select {
	case <-ab.Settled:
	case <-time.After(time.Minute):
		t.Fatal("the abandoned request was not settled")
	}
	require.Eventually(t, func() bool {
		b, _ := exec.Command("pgrep", "-f", "^sleep "+n+"$").Output()
		return len(strings.TrimSpace(string(b))) == 0
	}, time.Minute, 10*time.Millisecond, "the command started after its Spawn gave up was not killed")

	c, err := l.Spawn(context.Background(), confine.LaunchRequest{Argv: []string{"sh", "-c", "exit 5"}, Env: os.Environ(), Dir: "/", Setpgid: true},
		[3]*os.File{null, null, null}, -1)
	require.NoError(t, err)
	require.Equal(t, 5, c.Wait().ExitStatus(), "the next Spawn gets its own reply")

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = l.Spawn(ctx, confine.LaunchRequest{Argv: []string{"true"}, Dir: "/"}, [3]*os.File{null, null, null}, -1)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.As(err, &ab), "nothing was sent")
}

// TestLauncherStartCancelled: a launcher start whose context ends while it waits for the launcher
// to confine itself returns at once with the context's error (not a lasting failure), and the
// process being started is killed.
func TestLauncherStartCancelled(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	n := strconv.Itoa(600000 + os.Getpid()%100000)
	// A "launcher" that never says it is ready.
	self := filepath.Join(dir, "never-ready")
	require.NoError(t, os.WriteFile(self, []byte("#!/bin/sh\necho > "+dir+"/started\nexec sleep "+n+"\n"), 0o755))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan error, 1)
	go func() {
		l, err := StartLauncher(ctx, self, LaunchKey{}, LauncherOptions{CgroupFD: -1, Env: []string{"PATH=/usr/bin:/bin"}})
		if l != nil {
			l.Close()
		}
		res <- err
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(dir + "/started"); return err == nil }, 30*time.Second, time.Millisecond,
		"the launcher process did not start")
	cancel()
	var err error
	select {
	case err = <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("StartLauncher did not return when its context ended")
	}
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, LauncherPermanent(err))
	require.Eventually(t, func() bool {
		b, _ := exec.Command("pgrep", "-f", "^sleep "+n+"$").Output()
		return len(strings.TrimSpace(string(b))) == 0
	}, time.Minute, 10*time.Millisecond, "the launcher being started was not killed")
}
