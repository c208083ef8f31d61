//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"appserver/sandbox/confine"
)

// launchStartTimeout bounds a launcher's start (until it confined itself).
const launchStartTimeout = 30 * time.Second

// launchBuffer is the send buffer we ask for: a request (argv and environment) must fit in it.
const launchBuffer = 1 << 20

// Launcher is a confined process 1 of a PID and mount namespace that starts commands on request,
// each forked from its confined thread, so that a command costs a fork and exec instead of a
// start of the helper. Commands end with it: Close (or its death) kills its namespace.
type Launcher struct {
	cmd     *exec.Cmd
	conn    *seqConn
	timeout time.Duration
	// exitGrace is exitReportGrace when the launcher started (read once: tests change the variable).
	exitGrace time.Duration

	// spawnTurn is held (a value in it) by the request waiting for its reply, one at a time: replies
	// come in order. A Spawn that gave up leaves it to the goroutine that settles its reply.
	spawnTurn chan struct{}
	replies   chan launchReply
	dead      chan struct{} // closed when the connection ended (the reader stopped)
	closing   chan struct{} // closed by Close
	exited    chan struct{} // closed once the process was reaped
	once      sync.Once

	mu       sync.Mutex
	children map[int]*Launched // by pid in the launcher's namespace

	sent func() // LauncherOptions.AfterSend
}

type launchReply struct {
	kind  byte
	text  string
	child *Launched
	pidfd int
}

// errCloneRefused marks a launcher start the kernel refused at the clone (see launchRefused).
var errCloneRefused = errors.New("clone refused")

// StartLauncher starts a launcher for key with our binary self, cloned directly into its
// namespaces where the kernel allows it, else inside a new user namespace; it returns once the
// launcher confined itself, or an error when it could not be started. The error wraps
// ErrUnavailable or ErrNamespaces when trying again cannot help (see LauncherPermanent). When ctx
// ends first, the launcher being started is killed and the error wraps ctx's.
func StartLauncher(ctx context.Context, self string, key LaunchKey, opts LauncherOptions) (*Launcher, error) {
	if ok, reason := Available(); !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, reason)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	var errs []error
	permanent := true
	for _, kind := range []int{startDirect, startUserNS} {
		if refused[kind].Load() {
			continue
		}
		l, err := startLauncher(ctx, self, key, kind, opts)
		if err == nil {
			return l, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ErrLaunch, err)
		}
		errs = append(errs, err)
		permanent = permanent && errors.Is(err, errCloneRefused)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%w: %w: none left to try", ErrLaunch, ErrNamespaces)
	}
	if permanent {
		return nil, fmt.Errorf("%w: %w: %w", ErrLaunch, ErrNamespaces, errors.Join(errs...))
	}
	return nil, fmt.Errorf("%w: %w", ErrLaunch, errors.Join(errs...))
}

// launchRefused reports whether err, from cloning a launcher, is the kernel refusing its
// namespaces (or clone3, for its cgroup) for good: as Start.Refused, plus ENOSYS (a kernel
// without clone3), except ENOSPC, a namespace count limit (user.max_*_namespaces) that passes
// once other namespaces ended.
func launchRefused(err error) bool {
	return (nsRefused(err) || errors.Is(err, unix.ENOSYS)) && !errors.Is(err, unix.ENOSPC)
}

func startLauncher(ctx context.Context, self string, key LaunchKey, kind int, opts LauncherOptions) (*Launcher, error) {
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	spec, err := readOnlySpec(key.Network, kind == startUserNS)
	if err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	theirs := os.NewFile(uintptr(fds[1]), "launcher")
	defer theirs.Close()
	// Room for large environments (capped by wmem_max).
	_ = unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, launchBuffer)
	conn, err := newSeqConn(fds[0])
	if err != nil {
		return nil, err
	}
	attr := &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if kind == startUserNS {
		uid, gid := os.Getuid(), os.Getgid()
		attr.Cloneflags |= unix.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	if opts.CgroupFD >= 0 {
		attr.UseCgroupFD, attr.CgroupFD = true, opts.CgroupFD
	}
	env := opts.Env
	if env == nil {
		env = []string{}
	}
	cmd := &exec.Cmd{Path: self, Args: append([]string{self}, confine.LauncherArgs(spec)...), Env: env, Dir: "/",
		ExtraFiles: []*os.File{theirs}, SysProcAttr: attr}
	if err := cmd.Start(); err != nil {
		conn.Close()
		if launchRefused(err) {
			return nil, fmt.Errorf("%w: %w", errCloneRefused, err)
		}
		return nil, err
	}
	theirs.Close()
	l := &Launcher{cmd: cmd, conn: conn, timeout: opts.Timeout, exitGrace: exitReportGrace, spawnTurn: make(chan struct{}, 1), sent: opts.AfterSend,
		replies: make(chan launchReply, 1),
		dead:    make(chan struct{}), closing: make(chan struct{}), exited: make(chan struct{}), children: map[int]*Launched{}}
	go func() {
		_ = cmd.Wait()
		close(l.exited)
	}()
	// The first message says whether it confined itself; ctx's end cuts the wait short.
	_ = conn.f.SetReadDeadline(time.Now().Add(launchStartTimeout))
	stop := context.AfterFunc(ctx, func() { _ = conn.f.SetReadDeadline(time.Now()) })
	buf := make([]byte, 4096)
	n, _, err := conn.recv(buf, nil)
	if !stop() {
		// ctx ended (the deadline may be cut short even after a ready message): not kept.
		l.Close()
		return nil, fmt.Errorf("launcher start: %w", context.Cause(ctx))
	}
	_ = conn.f.SetReadDeadline(time.Time{})
	if err != nil || n == 0 || buf[0] != confine.MsgReady {
		l.Close()
		if err == nil && n > 0 && buf[0] == confine.MsgError {
			err = errors.New(string(buf[1:n]))
		} else if err == nil {
			err = errors.New("no ready message")
		}
		return nil, fmt.Errorf("launcher start: %w", err)
	}
	go l.read()
	return l, nil
}

// Pid is the launcher's pid in our namespace.
func (l *Launcher) Pid() int { return l.cmd.Process.Pid }

// Dead is closed once the launcher stopped answering (it exited, was killed, or Close ran).
func (l *Launcher) Dead() <-chan struct{} { return l.dead }

// Close kills the launcher and with it every command it started; it waits (bounded) until the
// launcher was reaped.
func (l *Launcher) Close() {
	l.once.Do(func() {
		close(l.closing)
		_ = l.conn.Close()
		_ = l.cmd.Process.Kill()
	})
	t := time.NewTimer(l.timeout)
	defer t.Stop()
	select {
	case <-l.exited:
	case <-t.C:
	}
}

// read receives the launcher's messages until the connection ends; then every command still
// running is reported as killed.
func (l *Launcher) read() {
	defer func() {
		l.mu.Lock()
		for _, c := range l.children {
			l.finish(c, killedStatus)
		}
		l.mu.Unlock()
		select {
		case <-l.closing:
			// A Spawn that gave up (Close) may have left a reply behind: nobody takes it now.
			l.dropReplies()
		default:
		}
		close(l.dead)
	}()
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, err := l.conn.recv(buf, oob)
		if err != nil || n == 0 {
			return
		}
		msg := buf[:n]
		r := launchReply{kind: msg[0], text: string(msg[1:]), pidfd: -1}
		switch r.kind {
		case confine.MsgExited:
			ns, st, ok := bytes.Cut(msg[1:], []byte(" "))
			pid, err1 := strconv.Atoi(string(ns))
			ws, err2 := strconv.ParseUint(string(st), 10, 32)
			if !ok || err1 != nil || err2 != nil {
				return
			}
			l.mu.Lock()
			if c := l.children[pid]; c != nil {
				l.finish(c, syscall.WaitStatus(ws))
			}
			l.mu.Unlock()
			continue
		case confine.MsgStarted:
			ns, err := strconv.Atoi(r.text)
			if err != nil {
				return
			}
			if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(cms) == 1 {
				if fds, err := unix.ParseUnixRights(&cms[0]); err == nil && len(fds) == 1 {
					r.pidfd = fds[0]
				}
			}
			r.child = &Launched{ns: ns, done: make(chan struct{})}
			l.mu.Lock()
			l.children[ns] = r.child
			l.mu.Unlock()
		}
		select {
		case <-l.closing: // preferred: a Spawn that gave up is not waiting for r
			r.drop()
			return
		default:
		}
		select {
		case l.replies <- r:
		case <-l.closing:
			r.drop()
			return
		}
	}
}

// drop closes the pidfd of a reply nobody takes.
func (r launchReply) drop() {
	if r.pidfd >= 0 {
		unix.Close(r.pidfd)
	}
}

// dropReplies drops a reply left in the channel.
func (l *Launcher) dropReplies() {
	for {
		select {
		case r := <-l.replies:
			r.drop()
		default:
			return
		}
	}
}

// Spawn starts req with stdio (stdin, stdout, stderr) and, when cgroupFD >= 0, in that cgroup.
// A command that could not be found or executed is a Launched that ended with 127 or 126 (the
// reason written to its stderr). An error means the launcher could not start it (the caller
// starts it the per-command way); a launcher that did not answer in time is closed. When ctx ends
// first, Spawn returns at once: with ctx's error before the request was sent, else with a
// *SpawnAbandoned (the command must not be started another way: it may be running on the stdio).
func (l *Launcher) Spawn(ctx context.Context, req confine.LaunchRequest, stdio [3]*os.File, cgroupFD int) (*Launched, error) {
	notSent := fmt.Errorf("%w: %w", ErrLauncherDead, ErrNotSent)
	select {
	case l.spawnTurn <- struct{}{}:
	case <-l.dead:
		return nil, notSent
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	turn := true // released on return unless handed to settle
	defer func() {
		if turn {
			<-l.spawnTurn
		}
	}()
	select {
	case <-l.dead:
		return nil, notSent
	default:
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	fds := []int{int(stdio[0].Fd()), int(stdio[1].Fd()), int(stdio[2].Fd())}
	req.Cgroup = cgroupFD >= 0
	if req.Cgroup {
		fds = append(fds, cgroupFD)
	}
	msg := req.Marshal()
	if len(msg) > confine.MaxLaunchRequest {
		// The send buffer may take it, but the launcher would receive it cut short.
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(msg))
	}
	err := l.conn.send(msg, unix.UnixRights(fds...))
	for _, f := range stdio {
		runtimeKeepAlive(f)
	}
	if err != nil {
		if errors.Is(err, unix.EMSGSIZE) {
			return nil, fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
		if errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET) || errors.Is(err, os.ErrClosed) {
			return nil, fmt.Errorf("%w: send: %w: %w", ErrLauncherDead, ErrNotSent, err) // not a refusal
		}
		return nil, fmt.Errorf("%w: send: %w", ErrLaunch, err)
	}
	if l.sent != nil {
		l.sent()
	}
	t := time.NewTimer(l.timeout)
	defer t.Stop()
	var r launchReply
	select {
	case r = <-l.replies:
	case <-l.dead:
		select {
		case r = <-l.replies: // it answered before it died: the command started (and died with it)
		default:
			return nil, ErrLauncherDead
		}
	case <-t.C:
		l.Close()
		l.dropReplies() // a reply that came meanwhile; one still later is dropped by the reader
		return nil, fmt.Errorf("%w: no reply within %v", ErrLauncherDead, l.timeout)
	case <-ctx.Done():
		cg := -1
		if cgroupFD >= 0 {
			cg, _ = unix.FcntlInt(uintptr(cgroupFD), unix.F_DUPFD_CLOEXEC, 0) // -1 if it fails: the pidfd still kills the command
		}
		settled := make(chan struct{})
		turn = false
		go l.settle(cg, settled)
		return nil, &SpawnAbandoned{Cause: context.Cause(ctx), Settled: settled}
	}
	switch r.kind {
	case confine.MsgStarted:
		if r.pidfd >= 0 {
			r.child.pid = fdinfoPid(r.pidfd)
			l.watch(r.child, r.pidfd)
		}
		return r.child, nil
	case confine.MsgFailed:
		code, err := strconv.Atoi(r.text)
		if err != nil {
			return nil, fmt.Errorf("%w: bad reply %q", ErrLaunch, r.text)
		}
		c := &Launched{done: make(chan struct{}), status: syscall.WaitStatus(code << 8)}
		close(c.done)
		return c, nil
	case confine.MsgError:
		return nil, fmt.Errorf("%w: %s", ErrLaunch, r.text)
	}
	l.Close()
	return nil, fmt.Errorf("%w: unexpected reply %q", ErrLaunch, r.kind)
}

// settle takes the reply of a request whose Spawn gave up (holding the spawn turn, which it then
// releases): a command the launcher started anyway is killed, with everything in its cgroup (cg,
// a descriptor of its directory that settle closes, or -1), and settled is closed once it ended.
// Bounded as Spawn is: a launcher that does not answer in time is closed.
func (l *Launcher) settle(cg int, settled chan<- struct{}) {
	defer close(settled)
	defer func() { <-l.spawnTurn }()
	if cg >= 0 {
		defer unix.Close(cg)
	}
	t := time.NewTimer(l.timeout)
	defer t.Stop()
	var r launchReply
	select {
	case r = <-l.replies:
	case <-l.dead:
		select {
		case r = <-l.replies:
		default:
			return
		}
	case <-t.C:
		l.Close()
		l.dropReplies()
		return
	}
	if r.kind != confine.MsgStarted {
		return
	}
	if cg >= 0 {
		if fd, err := unix.Openat(cg, "cgroup.kill", unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
			_, _ = unix.Write(fd, []byte("1"))
			unix.Close(fd)
		}
	}
	if r.pidfd >= 0 {
		_ = unix.PidfdSendSignal(r.pidfd, unix.SIGKILL, nil, 0)
		l.watch(r.child, r.pidfd) // bounds the wait for the launcher's report of its end
	}
	select {
	case <-r.child.done:
	case <-t.C: // no pidfd and no report: the launcher is wedged
		l.Close()
	}
}

// finish reports c ended with status; called with mu held, c still in children.
func (l *Launcher) finish(c *Launched, status syscall.WaitStatus) {
	delete(l.children, c.ns)
	c.status = status
	close(c.done)
}

// exitReportGrace is how long after a command's exit (seen on its pidfd) the launcher's report
// may take before the command is reported killed: a launcher stopped from outside must not hold
// a command that ended.
var exitReportGrace = 10 * time.Second // shorter in tests

// watch closes pidfd once c ended; if c's process ended (the pidfd became readable) but the
// launcher has not reported it within exitReportGrace, c is reported killed.
func (l *Launcher) watch(c *Launched, pidfd int) {
	if err := unix.SetNonblock(pidfd, true); err != nil {
		unix.Close(pidfd)
		return
	}
	f := os.NewFile(uintptr(pidfd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return
	}
	go func() {
		defer f.Close()
		_ = rc.Read(func(fd uintptr) bool {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			return n > 0 || (err != nil && err != unix.EINTR)
		})
		t := time.NewTimer(l.exitGrace)
		defer t.Stop()
		select {
		case <-c.done:
		case <-t.C:
			l.mu.Lock()
			if l.children[c.ns] == c {
				l.finish(c, killedStatus)
			}
			l.mu.Unlock()
		}
	}()
}

// fdinfoPid is the pid (in our namespace) of the process a pidfd refers to; 0 once it was reaped.
func fdinfoPid(pidfd int) int {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(pidfd))
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
			pid, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil || pid < 0 {
				return 0
			}
			return pid
		}
	}
	return 0
}

// runtimeKeepAlive keeps f (and so its descriptor) open until the message carrying it was sent.
func runtimeKeepAlive(f *os.File) { runtime.KeepAlive(f) }

// seqConn is our end of the launcher's SOCK_SEQPACKET pair, on the runtime's poller so that Close
// ends a blocked receive (package net is not used: its initialisation would slow down the helper,
// which shares this package's start-up, see internal/reexec).
type seqConn struct {
	f  *os.File
	rc syscall.RawConn
}

func newSeqConn(fd int) (*seqConn, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "launcher")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &seqConn{f: f, rc: rc}, nil
}

// recv receives one message; descriptors in it are close-on-exec.
func (c *seqConn) recv(buf, oob []byte) (n, oobn int, err error) {
	rerr := c.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, err = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return err != unix.EAGAIN
	})
	if rerr != nil {
		return 0, 0, rerr
	}
	return n, oobn, err
}

// send sends one message with ancillary data oob.
func (c *seqConn) send(b, oob []byte) error {
	var err error
	werr := c.rc.Write(func(fd uintptr) bool {
		err = unix.Sendmsg(int(fd), b, oob, nil, unix.MSG_NOSIGNAL)
		return err != unix.EAGAIN
	})
	if werr != nil {
		return werr
	}
	return err
}

func (c *seqConn) Close() error { return c.f.Close() }
