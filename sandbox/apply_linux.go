//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// devWritable are device files a read-only command may still open for writing.
var devWritable = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx"}

// applyAndExec confines the calling thread and execs argv from it. Every restriction is
// per-thread (no TSYNC, so it also works in cgo binaries); execve from the same locked thread
// makes it the whole new process, and children inherit it.
func applyAndExec(pl payload, argv []string) (int, error) {
	runtime.LockOSThread() // never unlocked: this thread execs or the process exits

	if ok, reason := Available(); !ok {
		return ExitCannotExecute, fmt.Errorf("%w: %s", ErrUnavailable, reason)
	}
	dir := pl.Cwd
	if pl.Dir != "" {
		dir = pl.Dir
	}
	if err := os.Chdir(dir); err != nil {
		return ExitCannotExecute, fmt.Errorf("cwd: %w", err)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil && !errors.Is(err, exec.ErrDot) {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return ExitNotFound, fmt.Errorf("%s: command not found", argv[0])
		}
		return ExitCannotExecute, err
	}
	if !pl.Init && !pl.NoPIDNS {
		// Only returns when no PID namespace can be had: then the command runs without one.
		_ = runInPIDNS(pl, argv)
	}
	// ownMountNS: this process already has a private mount namespace of its own.
	ownMountNS := false
	if pl.Init {
		// Without our own /proc the namespace still ends the command's leftovers with it.
		ownMountNS = mountOwnProc() == nil
	}

	var grants []grant
	if pl.Policy.Kind == WorkspaceWrite {
		roots := canonicalRoots(pl.Policy.EffectiveRoots(pl.Cwd, os.Getenv("TMPDIR")))
		protected := protectedPaths(roots)
		mounted := false
		if pl.Protect != protectLandlock {
			tryUserNS := pl.Protect == protectUserNS && !pl.Stage2
			if !tryUserNS {
				err := confineMounts(roots, protected, ownMountNS, pl.Protect == protectRemount)
				if err != nil && !errors.Is(err, errNoMountNS) {
					return ExitCannotExecute, fmt.Errorf("mount namespace: %w", err)
				}
				mounted = err == nil
				tryUserNS = !mounted && !pl.Stage2
			}
			if tryUserNS {
				// Only returns when the user namespace cannot be created.
				_ = runInUserNS(pl, argv)
			}
		}
		if mounted {
			// The working directory still refers to the tree as it was before the mounts.
			if err := os.Chdir(dir); err != nil {
				return ExitCannotExecute, fmt.Errorf("cwd: %w", err)
			}
		}
		if mounted || len(protected) == 0 {
			for _, r := range roots {
				grants = append(grants, grant{path: r, dir: true})
			}
		} else {
			grants = grantsExcluding(roots, protected)
		}
	}
	for _, d := range devWritable {
		grants = append(grants, grant{path: d})
	}
	grants = append(grants, grant{path: "/dev/pts", dir: true, fileOnly: true})

	if pl.Stage2 {
		// Drop the capability the first stage lent us for mounting; the target gets none.
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
			return ExitCannotExecute, fmt.Errorf("clear ambient capabilities: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return ExitCannotExecute, fmt.Errorf("no_new_privs: %w", err)
	}
	if err := restrictLandlock(LandlockABI(), probeOnce().scopeOK, grants, pl.Policy.NetworkAccess); err != nil {
		return ExitCannotExecute, err
	}
	if err := installSeccomp(pl.Policy.NetworkAccess, pl.Policy.Kind == ReadOnly); err != nil {
		return ExitCannotExecute, err
	}
	if pl.Init {
		return runAsInit(path, argv)
	}
	err = syscall.Exec(path, argv, os.Environ())
	if errors.Is(err, unix.ENOENT) {
		return ExitNotFound, fmt.Errorf("%s: %w", argv[0], err)
	}
	return ExitCannotExecute, fmt.Errorf("%s: %w", argv[0], err)
}

// grant is one Landlock write rule: a directory hierarchy (dir) or a single file.
type grant struct {
	path string
	dir  bool
	// fileOnly limits a directory grant to writing existing files beneath it.
	fileOnly bool
}

// canonicalRoots resolves symlinks (Landlock rules bind inodes, protection must see real paths)
// and drops roots that do not exist.
func canonicalRoots(roots []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range roots {
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() || seen[real] {
			continue
		}
		seen[real] = true
		out = append(out, real)
	}
	return out
}

// protectedPaths lists the existing .git/.codex entries of the roots, symlinks resolved.
func protectedPaths(roots []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range roots {
		for _, name := range ProtectedNames {
			real, err := filepath.EvalSymlinks(filepath.Join(r, name))
			if err != nil || seen[real] {
				continue
			}
			seen[real] = true
			out = append(out, real)
		}
	}
	sort.Strings(out)
	return out
}

// grantsExcluding covers the roots with Landlock grants that leave out the protected paths.
// Landlock rules are additive over a hierarchy, so a directory that contains a protected path
// cannot be granted as a whole: its children are granted one by one instead (recursively along
// the way to the protected path), and the directory itself gets no entry-creation rights.
func grantsExcluding(roots, protected []string) []grant {
	var out []grant
	var walk func(dir string)
	walk = func(dir string) {
		if !containsProtected(dir, protected) {
			out = append(out, grant{path: dir, dir: true})
			return
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			child := filepath.Join(dir, e.Name())
			if isProtected(child, protected) {
				continue
			}
			switch t := e.Type(); {
			case t.IsDir():
				walk(child)
			case t.IsRegular(), t&os.ModeNamedPipe != 0:
				out = append(out, grant{path: child})
			}
			// Symlinks are skipped: a rule would bind their target, which may lie elsewhere.
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return out
}

func containsProtected(dir string, protected []string) bool {
	for _, p := range protected {
		if within(p, dir) {
			return true
		}
	}
	return false
}

func isProtected(path string, protected []string) bool {
	for _, p := range protected {
		if path == p {
			return true
		}
	}
	return false
}

// restrictLandlock enforces the write grants (reads and execution stay unrestricted), blocks TCP
// bind/connect without network (ABI >= 4), and scopes signals and abstract unix sockets (ABI >= 6)
// on the calling thread.
func restrictLandlock(abi int, scope bool, grants []grant, network bool) error {
	dirWrite := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	fileWrite := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE)
	if abi >= 2 {
		dirWrite |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		dirWrite |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
		fileWrite |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: dirWrite}
	if !network && abi >= 9 {
		// Connecting to pathname unix sockets created outside the sandbox (docker.sock, agents).
		attr.Handled_access_fs |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	if !network && abi >= 4 {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 6 && scope {
		attr.Scoped = unix.LANDLOCK_SCOPE_SIGNAL
		if !network {
			attr.Scoped |= unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		}
	}
	fd, err := landlockCreateRuleset(&attr)
	if err != nil {
		return fmt.Errorf("landlock create ruleset: %w", err)
	}
	defer unix.Close(fd)
	for _, g := range grants {
		access := fileWrite
		if g.dir && !g.fileOnly {
			access = dirWrite
		}
		pfd, err := unix.Open(g.path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // a root or device that does not exist needs no rule
		}
		err = landlockAddPathRule(fd, access, pfd)
		unix.Close(pfd)
		if err != nil {
			return fmt.Errorf("landlock rule for %s: %w", g.path, err)
		}
	}
	// Without the TSYNC flag this confines the calling thread only, which is the one that execs.
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); e != 0 {
		return fmt.Errorf("landlock restrict: %w", e)
	}
	return nil
}

// landlockABIVersion asks the kernel for its Landlock ABI version.
func landlockABIVersion() (int, error) {
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func landlockCreateRuleset(attr *unix.LandlockRulesetAttr) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr), 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func landlockAddPathRule(rulesetFD int, access uint64, pathFD int) error {
	// The kernel struct is packed (u64 + s32); the Go layout matches it in its first 12 bytes.
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pathFD)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
