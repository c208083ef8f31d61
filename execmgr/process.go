package execmgr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"appserver/internal/oserr"
	"appserver/internal/pipesize"
	"appserver/sandbox"
	"appserver/stopwatch"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Default timings of a Manager.
const (
	DefaultKillGrace    = 500 * time.Millisecond // SIGTERM → SIGKILL grace
	DefaultDrainTimeout = 2 * time.Second        // how long output is read after the child exited
	readChunkSize       = 64 << 10               // as the reference reads command output; fewer, larger deltas
)

// Errors reported by processes and the manager.
var (
	ErrClosed      = errors.New("execmgr: manager closed")
	ErrStdinClosed = errors.New("execmgr: stdin is closed")
	ErrNotTTY      = errors.New("process is not attached to a PTY")
)

// Stream identifies one output stream of a child.
type Stream uint8

// The output streams; PTY output is always Stdout.
const (
	Stdout Stream = iota
	Stderr
)

// String returns "stdout" or "stderr", the wire names.
func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// Size is a terminal size in character cells.
type Size struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// SpawnRequest describes one child process.
type SpawnRequest struct {
	Argv []string // program and arguments; argv[0] is looked up in the PATH of Env
	Cwd  string   // working directory; "" = inherit
	Env  []string // full environment ("K=V"); nil = this process's environment
	TTY  bool     // run in a new PTY (own session, controlling terminal) instead of pipes
	Size Size     // initial PTY size; zero = 24x80
	// Stdin keeps a writable stdin pipe in pipe mode; otherwise stdin is /dev/null. A PTY always has stdin.
	Stdin bool
	// ShellWrap, when set, rewrites the argv and the environment first (the thread's shell snapshot; not a
	// confinement).
	ShellWrap func(argv, env []string) ([]string, []string)
	// WrapArgv, when set, rewrites the argv just before spawning (the sandbox hook).
	WrapArgv func(argv []string) ([]string, error)
	// OutputCap caps the aggregate transcript (head+tail): 0 = DefaultOutputCap, <0 = keep no transcript.
	OutputCap int
	// OnOutput receives every chunk as it is read, from reader goroutines (stdout and stderr may be
	// concurrent). The chunk is reused afterwards and must not be retained.
	OnOutput func(stream Stream, chunk []byte)
	// Owner groups commands (a thread id): descendants a finished command left running are killed by
	// Manager.KillOwner(Owner) or Manager.Close.
	Owner string
}

// SpawnError says why a child could not be started.
type SpawnError struct {
	Err error
}

// Error renders the failure the way the reference does: `failed to spawn command: <reason> (os error N)`.
func (e *SpawnError) Error() string { return "failed to spawn command: " + oserr.Text(e.Err) }

// Unwrap returns the underlying error.
func (e *SpawnError) Unwrap() error { return e.Err }

// ManagerOptions tunes a Manager; zero values mean the defaults.
type ManagerOptions struct {
	KillGrace    time.Duration // SIGTERM → SIGKILL grace (DefaultKillGrace)
	DrainTimeout time.Duration // output read limit after exit (DefaultDrainTimeout)
	Logger       *slog.Logger
	// NoCgroups tracks descendants by process group and ScopeEnv token only, even where a cgroup v2
	// per command could be created.
	NoCgroups bool
	// NoLauncher starts every sandboxed command with its own helper instead of by a launcher
	// (docs/sandbox.md).
	NoLauncher bool
	// Clock times command/exec's timeoutMs (nil: the real clock); tests pass a fake one.
	Clock stopwatch.Clock
}

// Manager owns every child process it spawns; Close kills them all.
type Manager struct {
	grace  time.Duration
	drain  time.Duration
	log    *slog.Logger
	clock  stopwatch.Clock
	tr     *tracker
	ls     *launcherPool
	mu     sync.Mutex
	closed bool
	procs  map[*Process]struct{}
	// killed counts KillOwner calls per owner while Spawns of that owner are in flight, so that a
	// command whose start overlapped one is killed once started; an owner's entry goes with its
	// last Spawn in flight.
	killed map[string]*ownerSpawns
}

// ownerSpawns is an owner's Spawns in flight and the KillOwner calls since the first of them.
type ownerSpawns struct {
	n     int
	kills uint64
}

// NewManager returns an empty Manager.
func NewManager(opts ManagerOptions) *Manager {
	m := &Manager{grace: opts.KillGrace, drain: opts.DrainTimeout, log: opts.Logger, procs: map[*Process]struct{}{},
		killed: map[string]*ownerSpawns{}}
	if m.grace <= 0 {
		m.grace = DefaultKillGrace
	}
	if m.drain <= 0 {
		m.drain = DefaultDrainTimeout
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	m.clock = opts.Clock
	if m.clock == nil {
		m.clock = stopwatch.RealClock()
	}
	m.tr = newTracker(m.log)
	m.tr.cgInit = opts.NoCgroups
	m.ls = newLauncherPool(m.log, m.tr, opts.NoLauncher, m.grace)
	return m
}

// Live returns the processes not yet finished (exited and drained).
func (m *Manager) Live() []*Process {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Process, 0, len(m.procs))
	for p := range m.procs {
		out = append(out, p)
	}
	return out
}

// KillOwner kills every live process of owner (SIGTERM, then SIGKILL after the grace, as Kill;
// launched commands too: their launcher is ended once they ended) and whatever its finished
// commands left running (background jobs, setsid daemons): their cgroups, or the processes
// carrying their ScopeEnv token. It does not wait for the grace.
func (m *Manager) KillOwner(owner string) {
	m.mu.Lock()
	if s := m.killed[owner]; s != nil {
		s.kills++
	}
	var procs []*Process
	for p := range m.procs {
		if p.owner == owner {
			procs = append(procs, p)
		}
	}
	m.mu.Unlock()
	for _, p := range procs {
		p.Kill()
	}
	m.tr.killOwner(owner)
	m.ls.closeOwner(owner)
}

// Close kills every live process group and waits, bounded by grace+drain+2s, for them to finish; then
// it kills every descendant any command left running. Later Spawn calls fail with ErrClosed.
func (m *Manager) Close() error {
	defer m.tr.close()
	defer m.ls.closeAll() // after the live commands had their grace, before the cgroups go
	m.mu.Lock()
	m.closed = true
	procs := make([]*Process, 0, len(m.procs))
	for p := range m.procs {
		procs = append(procs, p)
	}
	m.mu.Unlock()
	for _, p := range procs {
		p.Kill()
	}
	limit := time.NewTimer(m.grace + m.drain + 2*time.Second)
	defer limit.Stop()
	for _, p := range procs {
		for _, ch := range []<-chan struct{}{p.done, p.killDone} {
			select {
			case <-ch:
			case <-limit.C:
				return errors.New("execmgr: timed out waiting for processes to exit")
			}
		}
	}
	return nil
}

func (m *Manager) forget(p *Process) {
	m.mu.Lock()
	delete(m.procs, p)
	m.mu.Unlock()
}

// Spawn starts a child. Errors are returned only for a bad request, a closed manager or ctx ended
// (before the start, or while a sandbox launcher was being asked to start it: a command it starts
// anyway is killed); a child that cannot be started (missing binary, bad cwd) yields a finished
// Process with a non-zero exit code (127 not found, 126 not executable, 1 otherwise), the reason on
// stderr and SpawnErr set.
func (m *Manager) Spawn(ctx context.Context, req SpawnRequest) (*Process, error) {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, errors.New("execmgr: empty argv")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	sp := m.killed[req.Owner]
	if sp == nil {
		sp = &ownerSpawns{}
		m.killed[req.Owner] = sp
	}
	sp.n++
	killedBefore := sp.kills
	m.mu.Unlock()
	spawned := false // the end of the spawn is recorded under mu with the check below
	defer func() {
		if !spawned {
			m.mu.Lock()
			m.spawnEnded(req.Owner, sp)
			m.mu.Unlock()
		}
	}()
	argv := slices.Clone(req.Argv)
	env := req.Env
	if env == nil {
		env = os.Environ()
	}
	if req.ShellWrap != nil {
		argv, env = req.ShellWrap(argv, env)
	}
	if req.WrapArgv != nil {
		var err error
		if argv, err = req.WrapArgv(argv); err != nil {
			return nil, fmt.Errorf("execmgr: wrap argv: %w", err)
		}
		if len(argv) == 0 {
			return nil, errors.New("execmgr: wrapped argv is empty")
		}
	}
	sc := m.tr.open(req.Owner)
	env = MergeEnv(env, ScopeEnv+"="+sc.token)
	p := &Process{
		m:        m,
		owner:    req.Owner,
		scope:    sc,
		tty:      req.TTY,
		onOut:    req.OnOutput,
		subs:     map[int]func(Stream, []byte){},
		exited:   make(chan struct{}),
		done:     make(chan struct{}),
		killDone: make(chan struct{}),
		started:  time.Now(),
		code:     -1,
	}
	if req.OutputCap >= 0 {
		p.agg = NewHeadTailBuffer(req.OutputCap)
	}
	var err error
	path, err := lookPath(argv[0], env, req.Cwd)
	if err == nil {
		if req.TTY {
			err = p.startPTY(ctx, path, argv, env, req)
		} else {
			err = p.startPipes(ctx, path, argv, env, req)
		}
	}
	if ab := (*sandbox.SpawnAbandoned)(nil); errors.As(err, &ab) {
		// ctx ended while a launcher may be starting the command: it is killed, and its cgroup
		// removed once that is settled.
		m.tr.releaseAfter(sc, ab.Settled)
		return nil, ab.Cause
	}
	if err != nil {
		m.tr.release(sc)
		p.failSpawn(err)
		return p, nil
	}
	sc.started(p.pid)
	m.mu.Lock()
	spawned = true
	m.spawnEnded(req.Owner, sp)
	if m.closed || sp.kills != killedBefore {
		// Closed, or KillOwner ran while this command was being started (it could not see it).
		m.mu.Unlock()
		p.KillNow()
	} else {
		m.procs[p] = struct{}{}
		m.mu.Unlock()
	}
	go p.wait()
	return p, nil
}

// spawnEnded records the end of a Spawn of owner (sp, its entry in killed); called with mu held.
func (m *Manager) spawnEnded(owner string, sp *ownerSpawns) {
	if sp.n--; sp.n == 0 {
		delete(m.killed, owner)
	}
}

// lookPath resolves argv0 like execvp, using the PATH of the child's environment.
func lookPath(argv0 string, env []string, cwd string) (string, error) {
	if strings.Contains(argv0, "/") {
		return argv0, nil
	}
	pathVar := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	var denied bool
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" {
			dir = "."
		}
		cand := filepath.Join(dir, argv0)
		check := cand
		if !filepath.IsAbs(check) && cwd != "" {
			check = filepath.Join(cwd, check)
		}
		fi, err := os.Stat(check)
		if err != nil || fi.IsDir() {
			continue
		}
		if fi.Mode()&0o111 == 0 {
			denied = true
			continue
		}
		if !filepath.IsAbs(cand) {
			cand = "./" + cand
		}
		return cand, nil
	}
	if denied {
		return "", &os.PathError{Op: "exec", Path: argv0, Err: syscall.EACCES}
	}
	return "", &os.PathError{Op: "exec", Path: argv0, Err: syscall.ENOENT}
}

// Process is one child (and its process group) owned by a Manager.
type Process struct {
	m       *Manager
	owner   string
	scope   *scope
	child   started
	pid     int
	tty     bool
	master  *os.File // PTY master (pollable)
	readers []*os.File
	stdinMu sync.Mutex
	stdin   *os.File // pipe writer or PTY master; nil when closed / absent
	onOut   func(Stream, []byte)
	agg     *HeadTailBuffer
	started time.Time

	mu       sync.Mutex
	subs     map[int]func(Stream, []byte)
	nextSub  int
	code     int
	exitedAt time.Time
	spawnErr error

	live     atomic.Int32  // running reader goroutines
	outSeq   atomic.Uint64 // chunks delivered so far
	readDone chan struct{}
	exited   chan struct{}
	done     chan struct{}
	killOnce sync.Once
	killDone chan struct{} // closed when a Kill sequence has finished
}

func (p *Process) startPipes(ctx context.Context, path string, argv, env []string, req SpawnRequest) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	_, _ = pipesize.Grow(outR, pipesize.Bulk) // best effort: a smaller pipe only costs more system calls
	_, _ = pipesize.Grow(errR, pipesize.Bulk)
	childEnds := []*os.File{outW, errW}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: req.Cwd, Stdout: outW, Stderr: errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
	var inW *os.File
	if req.Stdin {
		inR, w, err := os.Pipe()
		if err != nil {
			closeAll(outR, outW, errR, errW)
			return err
		}
		cmd.Stdin, inW = inR, w
		childEnds = append(childEnds, inR)
	}
	child, err := p.start(ctx, cmd)
	closeAll(childEnds...)
	if err != nil {
		closeAll(outR, errR, inW)
		return err
	}
	p.child, p.pid, p.stdin = child, child.pid(), inW
	p.startReaders(map[Stream]*os.File{Stdout: outR, Stderr: errR})
	return nil
}

func (p *Process) startPTY(ctx context.Context, path string, argv, env []string, req SpawnRequest) error {
	master, slave, err := pty.Open()
	if err != nil {
		return err
	}
	size := req.Size
	if size.Rows == 0 || size.Cols == 0 {
		size = Size{Rows: 24, Cols: 80}
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: size.Rows, Cols: size.Cols}); err != nil {
		closeAll(master, slave)
		return err
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: req.Cwd, Stdin: slave, Stdout: slave, Stderr: slave,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}}
	child, err := p.start(ctx, cmd)
	slave.Close()
	if err != nil {
		master.Close()
		return err
	}
	// creack/pty leaves the master in blocking mode; re-open it as a pollable, non-blocking descriptor so
	// reads honour deadlines and Close (a grandchild holding the slave must not hang us).
	nfd, derr := unix.FcntlInt(master.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if derr == nil {
		derr = unix.SetNonblock(nfd, true)
	}
	if derr == nil {
		master.Close()
		master = os.NewFile(uintptr(nfd), "/dev/ptmx")
	} else {
		p.m.log.Warn("execmgr: pty master stays blocking", "err", derr)
	}
	p.child, p.pid, p.master, p.stdin = child, child.pid(), master, master
	p.startReaders(map[Stream]*os.File{Stdout: master})
	return nil
}

// start starts cmd: a read-only sandboxed command by the owner's launcher when the process has a
// cgroup (startLaunched), else a sandbox helper directly in its namespaces where the kernel allows
// it (sandbox.Starts), in the process's cgroup when it has one.
func (p *Process) start(ctx context.Context, cmd *exec.Cmd) (started, error) {
	if c, ok, err := p.startLaunched(ctx, cmd); ok || err != nil {
		return c, err
	}
	var err error
	for _, st := range sandbox.Starts(cmd.Args) {
		attr := *cmd.SysProcAttr
		attr.Cloneflags |= st.Cloneflags
		attr.UidMappings, attr.GidMappings, attr.AmbientCaps = st.UidMappings, st.GidMappings, st.AmbientCaps
		c := &exec.Cmd{Path: cmd.Path, Args: st.Argv, Env: cmd.Env, Dir: cmd.Dir, Stdin: cmd.Stdin, Stdout: cmd.Stdout,
			Stderr: cmd.Stderr, SysProcAttr: &attr}
		if err = p.startInScope(c); err == nil {
			return cmdChild{c}, nil
		}
		if !st.Refused(err) {
			break
		}
	}
	return nil, err
}

// startInScope starts cmd in the process's cgroup when it has one. Pdeathsig (set by the callers)
// kills the child if the server dies; the watchdog and the cgroup take care of its descendants. A
// kernel that refuses CLONE_INTO_CGROUP turns cgroups off for the Manager.
func (p *Process) startInScope(cmd *exec.Cmd) error {
	sc := p.scope
	if sc.cgFD < 0 {
		return cmd.Start()
	}
	attr := *cmd.SysProcAttr
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, sc.cgFD
	err := cmd.Start()
	if err == nil {
		return nil
	}
	retry := &exec.Cmd{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir, Stdin: cmd.Stdin, Stdout: cmd.Stdout,
		Stderr: cmd.Stderr, SysProcAttr: &attr}
	if rerr := retry.Start(); rerr != nil {
		return err
	}
	p.m.tr.disableCgroups(sc, err)
	*cmd = *retry // cmd was never started; the copy is the started one
	return nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

func (p *Process) startReaders(rs map[Stream]*os.File) {
	p.readDone = make(chan struct{})
	p.live.Store(int32(len(rs)))
	for s, f := range rs {
		p.readers = append(p.readers, f)
		go p.readLoop(s, f)
	}
}

// Unread reports whether output still waits in the process's pipes (or PTY) to be read: a command that
// exited while its last output sat in the pipe buffer is still being drained, however slowly its reader
// runs on a loaded machine.
func (p *Process) Unread() bool {
	for _, f := range p.readers {
		rc, err := f.SyscallConn()
		if err != nil {
			continue
		}
		n := 0
		_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
		if n > 0 {
			return true
		}
	}
	return false
}

func (p *Process) readLoop(s Stream, f *os.File) {
	defer func() {
		if p.live.Add(-1) == 0 {
			close(p.readDone)
		}
	}()
	buf := make([]byte, readChunkSize)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			p.deliver(s, buf[:n])
		}
		if err != nil { // EOF, EIO (PTY slave closed) or the drain deadline
			return
		}
	}
}

func (p *Process) deliver(s Stream, chunk []byte) {
	p.outSeq.Add(1)
	if p.agg != nil {
		p.agg.Write(chunk)
	}
	if p.onOut != nil {
		p.onOut(s, chunk)
	}
	p.mu.Lock()
	if len(p.subs) == 0 {
		p.mu.Unlock()
		return
	}
	subs := make([]func(Stream, []byte), 0, len(p.subs))
	for _, f := range p.subs {
		subs = append(subs, f)
	}
	p.mu.Unlock()
	for _, f := range subs {
		f(s, chunk)
	}
}

// failSpawn turns a start failure into a finished process with the reason on stderr.
func (p *Process) failSpawn(err error) {
	serr := &SpawnError{Err: err}
	code := 1
	switch {
	case errors.Is(err, syscall.ENOENT):
		code = 127
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC):
		code = 126
	}
	p.mu.Lock()
	p.spawnErr = serr
	p.mu.Unlock()
	go func() {
		p.deliver(Stderr, []byte(serr.Error()+"\n"))
		p.mu.Lock()
		p.code, p.exitedAt = code, time.Now()
		p.mu.Unlock()
		close(p.exited)
		close(p.done)
	}()
}

// wait reaps the child, then drains its output for at most the drain timeout.
func (p *Process) wait() {
	code := p.child.wait()
	if p.scope.dieWithCommand {
		// As in the command's own PID namespace: what it left behind dies with it, before the drain.
		killCgroup(p.scope.cg)
	}
	p.mu.Lock()
	p.code, p.exitedAt = code, time.Now()
	p.mu.Unlock()
	close(p.exited)
	t := time.NewTimer(p.m.drain)
	select {
	case <-p.readDone:
	case <-t.C:
		for _, f := range p.readers {
			_ = f.SetReadDeadline(time.Now())
		}
		select {
		case <-p.readDone:
		case <-time.After(time.Second):
			p.m.log.Warn("execmgr: output reader did not stop", "pid", p.pid)
		}
	}
	t.Stop()
	p.stdinMu.Lock()
	if p.stdin != nil && p.stdin != p.master {
		p.stdin.Close()
	}
	p.stdin = nil
	p.stdinMu.Unlock()
	closeAll(p.readers...)
	p.m.tr.finished(p.scope)
	p.m.forget(p) // before done, so that Close's waiters see an empty table
	close(p.done)
}

func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
	return ps.ExitCode()
}

// Pid is the child's pid (also its process group id); 0 when the spawn failed.
func (p *Process) Pid() int { return p.pid }

// TTY reports whether the child runs in a PTY.
func (p *Process) TTY() bool { return p.tty }

// StartedAt is when the spawn happened.
func (p *Process) StartedAt() time.Time { return p.started }

// SpawnErr is the *SpawnError when the child could not be started, else nil.
func (p *Process) SpawnErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spawnErr
}

// Exited is closed once the child has been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// OutputSeq counts the output chunks read so far; it changes while output is still arriving.
func (p *Process) OutputSeq() uint64 { return p.outSeq.Load() }

// Done is closed once the child exited and its output was drained (or the drain limit passed).
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitCode is the exit status (128+signal for a signal death), or -1 while running.
func (p *Process) ExitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code
}

// Duration is the run time: spawn to exit, or spawn to now while running.
func (p *Process) Duration() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exitedAt.IsZero() {
		return time.Since(p.started)
	}
	return p.exitedAt.Sub(p.started)
}

// Output is the aggregate transcript so far (head+tail capped); "" when OutputCap < 0.
func (p *Process) Output() string {
	if p.agg == nil {
		return ""
	}
	return p.agg.String()
}

// Wait blocks until Done and returns the exit code.
func (p *Process) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.done:
		return p.ExitCode(), nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// awaitExit waits for the child to exit, for deadline to fire (a nil deadline never does) or for ctx to end.
// At the deadline a child still running has its group killed with SIGKILL and timedOut is true. It returns
// once the output is drained, except when ctx ends: then it returns ctx's error at once and leaves the
// child to the caller.
func awaitExit[T any](ctx context.Context, p *Process, deadline <-chan T) (timedOut bool, err error) {
	select {
	case <-p.Exited():
	case <-deadline:
		select {
		case <-p.Exited():
		default:
			timedOut = true
			p.KillNow()
		}
	case <-ctx.Done():
		return false, ctx.Err()
	}
	<-p.Done() // bounded by the drain timeout
	return timedOut, nil
}

// Subscribe registers fn for output read from now on (no replay); the returned func unsubscribes.
// fn runs on reader goroutines and must not retain the chunk.
func (p *Process) Subscribe(fn func(Stream, []byte)) (unsubscribe func()) {
	p.mu.Lock()
	id := p.nextSub
	p.nextSub++
	p.subs[id] = fn
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.subs, id)
		p.mu.Unlock()
	}
}

// HasStdin reports whether the child has a writable stdin (a PTY, or pipes spawned with Stdin).
func (p *Process) HasStdin() bool {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	return p.stdin != nil
}

// WriteStdin writes data to the child's stdin; a cancelled ctx aborts a blocked write.
func (p *Process) WriteStdin(ctx context.Context, data []byte) error {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin == nil {
		return ErrStdinClosed
	}
	f := p.stdin
	_ = f.SetWriteDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = f.SetWriteDeadline(time.Now()) })
	defer stop()
	_, err := f.Write(data)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// CloseStdin closes the stdin pipe; for a PTY it sends the EOF character (^D) instead.
func (p *Process) CloseStdin() error {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin == nil {
		return ErrStdinClosed
	}
	if p.tty {
		_, err := p.stdin.Write([]byte{4})
		return err
	}
	err := p.stdin.Close()
	p.stdin = nil
	return err
}

// Resize sets the PTY window size; ErrNotTTY for a piped child.
func (p *Process) Resize(size Size) error {
	if !p.tty || p.master == nil {
		return ErrNotTTY
	}
	rc, err := p.master.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	err = rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	})
	if err != nil {
		return err
	}
	return ierr
}

func (p *Process) signalGroup(sig syscall.Signal) {
	if p.pid <= 0 {
		return
	}
	if p.isDone() { // the group may be gone and its id reused
		return
	}
	if err := unix.Kill(-p.pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		p.m.log.Debug("execmgr: kill group", "pgid", p.pid, "sig", sig, "err", err)
	}
}

// Kill terminates the whole process group: SIGTERM now, then SIGKILL to the group once the leader exited
// or the manager's grace passed, whichever is first (stragglers that ignore SIGTERM die too). It returns at
// once; wait on Done. A process already Done is left alone (its group id may have been reused).
func (p *Process) Kill() {
	p.killOnce.Do(func() {
		if p.pid <= 0 || p.isDone() {
			close(p.killDone)
			return
		}
		p.signalGroup(syscall.SIGTERM)
		go func() {
			defer close(p.killDone)
			t := time.NewTimer(p.m.grace)
			defer t.Stop()
			select {
			case <-p.exited:
			case <-t.C:
			}
			// Unconditionally: the group id cannot be reused while any member is alive.
			if err := unix.Kill(-p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				p.m.log.Debug("execmgr: kill group", "pgid", p.pid, "err", err)
			}
			p.m.tr.kill(p.scope) // descendants that left the group (setsid, double fork)
		}()
	})
}

func (p *Process) isDone() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// KillNow sends SIGKILL to the whole process group, and every descendant that left it, at once.
func (p *Process) KillNow() {
	p.signalGroup(syscall.SIGKILL)
	if p.pid > 0 {
		p.m.tr.kill(p.scope)
	}
}
