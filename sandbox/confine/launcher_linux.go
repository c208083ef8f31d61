//go:build linux

package confine

import (
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
)

// launcher is the state of a running launcher: the commands it started (by pid in its namespace)
// and the lock that orders a command's MsgStarted before its MsgExited.
type launcher struct {
	mu      sync.Mutex
	started map[int]bool
}

// runLauncher is the launcher's main: it never returns. Process 1 of its namespaces, it mounts its
// own /proc, confines its locked thread as the Spec says and serves spawn requests on LaunchFD
// until the server closes its end (or dies); then it exits and the kernel kills whatever is left
// in the namespace.
func runLauncher(args []string) {
	runtime.LockOSThread() // never unlocked: every command is forked from this confined thread
	send := func(b []byte) { _ = syscall.Sendmsg(LaunchFD, b, nil, nil, syscall.MSG_NOSIGNAL) }
	fail := func(reason string) {
		send(append([]byte{MsgError}, reason...))
		os.Exit(ExitCannotExecute)
	}
	s, _, err := parseArgs(args)
	if err != nil {
		fail(err.Error())
	}
	if os.Getpid() != 1 {
		fail("launcher is not process 1 of a new PID namespace")
	}
	if s.MountProc && syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, "") == nil {
		_ = syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")
	}
	_ = syscall.Chdir("/")
	syscall.CloseOnExec(LaunchFD) // commands must not inherit the launcher's socket
	// Every signal is handled (and discarded, SIGCHLD reaps): process 1 dies of no signal a command
	// sends it, and commands start with default dispositions.
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs)
	// Not dumpable: a command (without CAP_SYS_PTRACE) cannot ptrace it or open its /proc/1/mem to
	// reach its unconfined runtime threads through the confined one. Commands are dumpable again
	// after their execve.
	if err := prctl(prSetDumpable, 0); err != nil {
		fail("not dumpable: " + err.Error())
	}
	if _, err := confineThread(s); err != nil {
		fail(err.Error())
	}
	l := &launcher{started: map[int]bool{}}
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGCHLD {
				l.reap(send)
			}
		}
	}()
	send([]byte{MsgReady})
	buf := make([]byte, MaxLaunchRequest)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	for {
		n, oobn, flags, _, err := syscall.Recvmsg(LaunchFD, buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n == 0 {
			os.Exit(0)
		}
		var fds []int
		if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if f, err := syscall.ParseUnixRights(&m); err == nil {
					fds = append(fds, f...)
				}
			}
		}
		if flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 {
			// Cut short (the server never sends more than MaxLaunchRequest and four descriptors).
			send(append([]byte{MsgError}, "bad request: truncated"...))
		} else {
			l.spawn(buf[:n], fds, send)
		}
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}
}

// spawn starts the command of one request and answers it.
func (l *launcher) spawn(msg []byte, fds []int, send func([]byte)) {
	r, ok := parseLaunchRequest(msg)
	if !ok || len(fds) != 3+b2i(r.Cgroup) {
		send(append([]byte{MsgError}, "bad request"...))
		return
	}
	failed := func(code int, reason string) {
		_, _ = syscall.Write(fds[2], []byte("appserver sandbox: "+reason+"\n"))
		send(append([]byte{MsgFailed}, strconv.Itoa(code)...))
	}
	var st syscall.Stat_t
	if err := syscall.Stat(r.Dir, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		if err == nil {
			err = syscall.ENOTDIR
		}
		failed(ExitCannotExecute, "cwd: chdir "+r.Dir+": "+err.Error())
		return
	}
	pathVar := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range r.Env {
		if len(kv) >= 5 && kv[:5] == "PATH=" {
			pathVar = kv[5:]
		}
	}
	path, code, err := lookPath(r.Argv[0], pathVar, r.Dir)
	if err != nil {
		failed(code, err.Error())
		return
	}
	check := path
	if check[0] != '/' {
		check = r.Dir + "/" + check
	}
	if err := syscall.Stat(check, &st); err != nil || st.Mode&syscall.S_IFMT == syscall.S_IFDIR || st.Mode&0o111 == 0 {
		if err == nil {
			err = syscall.EACCES
		}
		if err == syscall.ENOENT {
			failed(ExitNotFound, r.Argv[0]+": "+err.Error())
		} else {
			failed(ExitCannotExecute, r.Argv[0]+": "+err.Error())
		}
		return
	}
	pidfd := -1
	sys := &syscall.SysProcAttr{Setsid: r.Setsid, Setctty: r.Setctty, Setpgid: r.Setpgid, PidFD: &pidfd}
	if r.Cgroup {
		sys.UseCgroupFD, sys.CgroupFD = true, fds[3]
	}
	l.mu.Lock() // a fast command's MsgExited must follow its MsgStarted
	defer l.mu.Unlock()
	pid, err := syscall.ForkExec(path, r.Argv, &syscall.ProcAttr{Dir: r.Dir, Env: r.Env,
		Files: []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])}, Sys: sys})
	if err != nil {
		// The checks above found the command: most likely the cgroup was refused; the caller
		// starts this command without the launcher, which reports any genuine exec failure.
		send(append([]byte{MsgError}, ("start " + r.Argv[0] + ": " + err.Error())...))
		return
	}
	l.started[pid] = true
	rights := syscall.UnixRights(pidfd)
	_ = syscall.Sendmsg(LaunchFD, append([]byte{MsgStarted}, strconv.Itoa(pid)...), rights, nil, syscall.MSG_NOSIGNAL)
	syscall.Close(pidfd)
}

// reap collects every ended child (commands and the orphans process 1 inherits) and reports the
// commands it started.
func (l *launcher) reap(send func([]byte)) {
	for {
		l.mu.Lock()
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			l.mu.Unlock()
			continue
		}
		if err != nil || pid <= 0 {
			l.mu.Unlock()
			return
		}
		if l.started[pid] {
			delete(l.started, pid)
			send(append(append(append([]byte{MsgExited}, strconv.Itoa(pid)...), ' '), strconv.FormatUint(uint64(ws), 10)...))
		}
		l.mu.Unlock()
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
