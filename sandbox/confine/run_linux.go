//go:build linux

package confine

import (
	"errors"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"unsafe"
)

// Kernel constants (the same on amd64 and arm64), spelt out so that the helper's start-up does not
// wait for golang.org/x/sys/unix to be initialised.
const (
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446
	landlockRulePathBeneath  = 1
	prSetNoNewPrivs          = 38
	prSetSeccomp             = 22
	seccompModeFilter        = 2
	prCapAmbient             = 47
	prCapAmbientClearAll     = 4
	prSetDumpable            = 4
	oPath                    = 0x200000
)

// forwarded are the signals process 1 relays to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// RunIfRequested runs the Spec on our command line when os.Args[1] is Marker and never returns;
// otherwise it returns at once. Failures go to stderr, prefixed "appserver sandbox:", with exit
// code ExitNotFound or ExitCannotExecute.
func RunIfRequested() {
	if len(os.Args) >= 2 && os.Args[1] == LaunchMarker {
		runLauncher(os.Args[2:])
	}
	if len(os.Args) < 2 || os.Args[1] != Marker {
		return
	}
	code, err := func() (int, error) {
		s, argv, err := parseArgs(os.Args[2:])
		if err != nil {
			return ExitCannotExecute, err
		}
		runtime.LockOSThread() // never unlocked: this thread execs or the process exits
		if s.MountProc && os.Getpid() != 1 {
			// Only process 1 of a PID namespace was cloned into a mount namespace of its own.
			return ExitCannotExecute, errors.New("init stage is not process 1 of a new PID namespace")
		}
		if s.MountProc {
			// Without our own /proc the namespace still ends the command's leftovers with it.
			if syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, "") == nil {
				_ = syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")
			}
		}
		if s.Dir != "" {
			if err := syscall.Chdir(s.Dir); err != nil {
				return ExitCannotExecute, errors.New("cwd: chdir " + s.Dir + ": " + err.Error())
			}
		}
		pathVar, _ := syscall.Getenv("PATH")
		path, code, err := lookPath(argv[0], pathVar, "")
		if err != nil {
			return code, err
		}
		return Run(s, path, argv)
	}()
	os.Stderr.WriteString("appserver sandbox: " + err.Error() + "\n")
	os.Exit(code)
}

// lookPath finds a command like the shell: as given when it contains a slash, else in pathVar
// (relative entries taken from dir, "" for the working directory).
func lookPath(name, pathVar, dir string) (string, int, error) {
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			return name, 0, nil
		}
	}
	for pathVar != "" {
		i := 0
		for i < len(pathVar) && pathVar[i] != ':' {
			i++
		}
		d := pathVar[:i]
		if d == "" {
			d = "."
		}
		cand := d + "/" + name
		check := cand
		if cand[0] != '/' && dir != "" {
			check = dir + "/" + cand
		}
		var st syscall.Stat_t
		if syscall.Stat(check, &st) == nil && st.Mode&syscall.S_IFMT != syscall.S_IFDIR && st.Mode&0o111 != 0 {
			return cand, 0, nil
		}
		if i == len(pathVar) {
			break
		}
		pathVar = pathVar[i+1:]
		if pathVar == "" { // a trailing colon: the working directory
			pathVar = "."
		}
	}
	return "", ExitNotFound, errors.New(name + ": command not found")
}

// Run confines the calling thread (which the caller has locked) as s says and runs argv (path
// resolved): as the child of this process 1 when s.Init, else by exec. It returns only on failure.
func Run(s Spec, path string, argv []string) (int, error) {
	if code, err := confineThread(s); err != nil {
		return code, err
	}
	if s.Init {
		return runAsInit(path, argv)
	}
	err := syscall.Exec(path, argv, os.Environ())
	if errors.Is(err, syscall.ENOENT) {
		return ExitNotFound, errors.New(argv[0] + ": " + err.Error())
	}
	return ExitCannotExecute, errors.New(argv[0] + ": " + err.Error())
}

// confineThread applies s to the calling (locked) thread: ambient capabilities dropped when asked,
// no_new_privs, Landlock and the seccomp filter.
func confineThread(s Spec) (int, error) {
	if s.DropAmbient {
		// The target gets none of the capabilities lent for mounting.
		if err := prctl(prCapAmbient, prCapAmbientClearAll); err != nil {
			return ExitCannotExecute, errors.New("clear ambient capabilities: " + err.Error())
		}
	}
	if err := prctl(prSetNoNewPrivs, 1); err != nil {
		return ExitCannotExecute, errors.New("no_new_privs: " + err.Error())
	}
	if err := Landlock(s.Ruleset, s.Rules); err != nil {
		return ExitCannotExecute, err
	}
	if len(s.Seccomp) > 0 {
		if err := seccomp(s.Seccomp); err != nil {
			return ExitCannotExecute, err
		}
	}
	return 0, nil
}

func prctl(option, arg uintptr) error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, option, arg, 0, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// Landlock enforces the ruleset with rules on the calling thread only (no TSYNC, so it also works
// in cgo binaries); execve from that thread, and its children, inherit it.
func Landlock(rs Ruleset, rules []Rule) error {
	attr := rs
	r, _, e := syscall.RawSyscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return errors.New("landlock create ruleset: " + e.Error())
	}
	fd := int(r)
	defer syscall.Close(fd)
	// struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd.
	var rule struct {
		access uint64
		fd     int32
		_      [4]byte
	}
	for _, g := range rules {
		pfd, err := syscall.Open(g.Path, oPath|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue // a root or device that does not exist needs no rule
		}
		rule.access, rule.fd = g.Access, int32(pfd)
		_, _, e := syscall.RawSyscall6(sysLandlockAddRule, uintptr(fd), landlockRulePathBeneath, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
		syscall.Close(pfd)
		if e != 0 {
			return errors.New("landlock rule for " + g.Path + ": " + e.Error())
		}
	}
	if _, _, e := syscall.RawSyscall(sysLandlockRestrictSelf, uintptr(fd), 0, 0); e != 0 {
		return errors.New("landlock restrict: " + e.Error())
	}
	return nil
}

// seccomp loads the filter (struct sock_filter instructions) on the calling thread; no_new_privs
// must already be set.
func seccomp(filter []byte) error {
	prog := struct {
		len    uint16
		_      [6]byte
		filter unsafe.Pointer
	}{len: uint16(len(filter) / 8), filter: unsafe.Pointer(&filter[0])}
	_, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&prog)), 0, 0, 0)
	runtime.KeepAlive(filter)
	if e != 0 {
		return errors.New("seccomp filter: " + e.Error())
	}
	return nil
}

// runAsInit starts the command as a child of this process 1 (from the calling, confined thread),
// relays signals to it, reaps every orphan, and exits with the command's status once it ended; the
// kernel then kills whatever is left in the namespace.
func runAsInit(path string, argv []string) (int, error) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...) // handled, so the command starts with default dispositions
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return ExitNotFound, errors.New(argv[0] + ": " + err.Error())
		}
		return ExitCannotExecute, errors.New(argv[0] + ": " + err.Error())
	}
	go func() {
		for s := range sigs {
			_ = syscall.Kill(pid, s.(syscall.Signal))
		}
	}()
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err != nil && err != syscall.EINTR {
			os.Exit(ExitCannotExecute)
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(ws.ExitStatus())
	}
}
