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
	"unsafe"

	"golang.org/x/sys/unix"

	"appserver/sandbox/confine"
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
	grants = append(grants, deviceGrants...)
	spec, err := confineSpec(grants, pl.Policy, pl.Stage2, pl.Init)
	if err != nil {
		return ExitCannotExecute, err
	}
	return confine.Run(spec, path, argv)
}

// deviceGrants are the write grants of every sandboxed command: devWritable and existing PTYs.
var deviceGrants = func() []grant {
	var g []grant
	for _, d := range devWritable {
		g = append(g, grant{path: d})
	}
	return append(g, grant{path: "/dev/pts", dir: true, fileOnly: true})
}()

// confineSpec is the confinement of a command with grants under p: Landlock with the grants, the
// seccomp filter, and (stage2) dropping the capabilities lent for mounting; init runs the command
// as a child of this process 1.
func confineSpec(grants []grant, p Policy, stage2, init bool) (confine.Spec, error) {
	filter, err := seccompProgram(p.NetworkAccess, p.Kind == ReadOnly)
	if err != nil {
		return confine.Spec{}, err
	}
	rs, rules := landlockRules(LandlockABI(), probeOnce().scopeOK, grants, p.NetworkAccess)
	return confine.Spec{Init: init, DropAmbient: stage2, Ruleset: rs, Rules: rules,
		Seccomp: unsafe.Slice((*byte)(unsafe.Pointer(&filter[0])), len(filter)*int(unsafe.Sizeof(filter[0])))}, nil
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
	rs, rules := landlockRules(abi, scope, grants, network)
	return confine.Landlock(rs, rules)
}

// landlockRules is the Landlock ruleset and rules of restrictLandlock.
func landlockRules(abi int, scope bool, grants []grant, network bool) (confine.Ruleset, []confine.Rule) {
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
	rs := confine.Ruleset{FS: dirWrite}
	if !network && abi >= 9 {
		// Connecting to pathname unix sockets created outside the sandbox (docker.sock, agents).
		rs.FS |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	if !network && abi >= 4 {
		rs.Net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 6 && scope {
		rs.Scoped = unix.LANDLOCK_SCOPE_SIGNAL
		if !network {
			rs.Scoped |= unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		}
	}
	rules := make([]confine.Rule, 0, len(grants))
	for _, g := range grants {
		access := fileWrite
		if g.dir && !g.fileOnly {
			access = dirWrite
		}
		rules = append(rules, confine.Rule{Access: access, Path: g.path})
	}
	return rs, rules
}

// landlockABIVersion asks the kernel for its Landlock ABI version.
func landlockABIVersion() (int, error) {
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
