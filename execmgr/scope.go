package execmgr

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// ScopeEnv is the variable every spawned command gets: "<server pid>.<manager>.<command>". The process
// table sweep recognises the command's descendants by it when cgroups are unavailable.
const ScopeEnv = "APPSERVER_SCOPE"

// ReaperArg is the os.Args[1] marker that turns our own binary into a Manager's watchdog.
const ReaperArg = "__appserver_reaper"

// reaperSelf is the executable that can act as the watchdog; set by RunReaperIfRequested.
var reaperSelf atomic.Pointer[string]

// RunReaperIfRequested must be called first thing in main (and in a TestMain whose Managers should
// have a watchdog). When os.Args[1] is ReaperArg the process is a watchdog: it waits until its
// stdin closes (the server exited or was killed) and then kills every process the server's
// Manager left behind; it never returns. Otherwise it records that this binary can be a watchdog
// and returns.
func RunReaperIfRequested() {
	if len(os.Args) >= 4 && os.Args[1] == ReaperArg {
		os.Exit(runReaper(os.Stdin, os.Args[2], os.Args[3]))
	}
	if self, err := os.Executable(); err == nil {
		reaperSelf.Store(&self)
	}
}

// runReaper is the watchdog: EOF on in (or a termination signal) means the server is gone.
func runReaper(in io.Reader, cgBase, prefix string) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(eof)
	}()
	select {
	case <-eof:
	case <-sigs:
	}
	if cgBase != "-" {
		killCgroupTree(cgBase)
	}
	sweepTokens(func(tok string) bool { return strings.HasPrefix(tok, prefix) })
	if cgBase != "-" {
		removeCgroupTree(cgBase)
	}
	return 0
}

// scope is everything one command may leave behind: its process group, its cgroup (when cgroups
// are available) and the ScopeEnv token its descendants inherit.
type scope struct {
	owner string
	token string
	pgid  int
	cg    string // cgroup directory; "" without cgroups
	cgFD  int    // open directory for CLONE_INTO_CGROUP until the child started; -1 when closed
	// dieWithCommand: everything in the cgroup is killed once the command exited (a command a
	// launcher started, which has no PID namespace of its own to take its leftovers with it).
	dieWithCommand bool
}

// tracker follows every command of one Manager and its descendants after the command exited, until
// its owner (a thread) or the Manager kills them.
type tracker struct {
	log    *slog.Logger
	prefix string

	mu        sync.Mutex
	seq       int
	cgInit    bool
	cgBase    string // this Manager's cgroup directory; "" = no cgroups
	leftovers map[string][]*scope
	closed    bool
	wdStarted bool
	wd        *os.File // write end of the watchdog's stdin
}

var managerSeq atomic.Int64

// sweeps counts process-table sweeps (tests).
var sweeps atomic.Int64

func newTracker(log *slog.Logger) *tracker {
	return &tracker{
		log:       log,
		prefix:    fmt.Sprintf("%d.%d.", os.Getpid(), managerSeq.Add(1)),
		leftovers: map[string][]*scope{},
	}
}

// open prepares the scope of a new command of owner; the command's SysProcAttr is adjusted by apply.
func (t *tracker) open(owner string) *scope {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	s := &scope{owner: owner, token: t.prefix + strconv.Itoa(t.seq), cgFD: -1}
	if !t.cgInit {
		t.cgInit = true
		t.cgBase = makeCgroupBase(t.prefix)
		if t.cgBase != "" {
			t.log.Debug("execmgr: commands run in cgroups", "base", t.cgBase)
		}
	}
	if t.cgBase != "" {
		dir := t.cgBase + "/c" + strconv.Itoa(t.seq)
		if err := os.Mkdir(dir, 0o755); err == nil {
			if fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
				s.cg, s.cgFD = dir, fd
			} else {
				_ = os.Remove(dir)
			}
		}
	}
	if !t.wdStarted && !t.closed {
		t.wdStarted = true
		t.startWatchdog()
	}
	return s
}

// disableCgroups turns cgroups off after the kernel refused to start a child in one.
func (t *tracker) disableCgroups(s *scope, err error) {
	t.log.Info("execmgr: cannot start commands in a cgroup; falling back to process groups", "err", err)
	t.release(s)
	t.mu.Lock()
	base := t.cgBase
	t.cgBase = ""
	t.mu.Unlock()
	if base != "" {
		removeCgroupTree(base)
	}
}

// started records the child's process group and closes the cgroup descriptor.
func (s *scope) started(pgid int) {
	s.pgid = pgid
	if s.cgFD >= 0 {
		unix.Close(s.cgFD)
		s.cgFD = -1
	}
}

// release drops a scope whose command never started.
func (t *tracker) release(s *scope) {
	if s.cgFD >= 0 {
		unix.Close(s.cgFD)
		s.cgFD = -1
	}
	if s.cg != "" {
		_ = os.Remove(s.cg)
		s.cg = ""
	}
}

// releaseAfter drops a scope whose command may still be started by a launcher (its Spawn gave up):
// once settled is closed (that command, if any, was killed), whatever is in its cgroup is killed
// and the cgroup removed.
func (t *tracker) releaseAfter(s *scope, settled <-chan struct{}) {
	if s.cgFD >= 0 {
		unix.Close(s.cgFD)
		s.cgFD = -1
	}
	go func() { // bounded: settled is closed within the launcher's reply timeout and its exit grace
		<-settled
		t.kill(s)
	}()
}

// finished is called once the command exited and its output was drained: descendants still running
// are kept as leftovers of the owner.
func (t *tracker) finished(s *scope) {
	if s.cg != "" && !cgroupPopulated(s.cg) {
		_ = os.Remove(s.cg)
		return
	}
	if s.dieWithCommand {
		t.kill(s)
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		t.kill(s)
		return
	}
	t.leftovers[s.owner] = append(t.leftovers[s.owner], s)
	t.mu.Unlock()
}

// kill SIGKILLs everything in the scope: the cgroup, or the processes carrying its token.
func (t *tracker) kill(s *scope) {
	if s.cg != "" {
		killCgroup(s.cg)
		removeCgroupTree(s.cg)
		return
	}
	sweepTokens(func(tok string) bool { return tok == s.token })
}

// killOwner kills the leftovers of owner's finished commands.
func (t *tracker) killOwner(owner string) {
	t.mu.Lock()
	list := t.leftovers[owner]
	delete(t.leftovers, owner)
	t.mu.Unlock()
	for _, s := range list {
		t.kill(s)
	}
}

// close kills every leftover and anything else carrying this Manager's token, then lets the watchdog go.
func (t *tracker) close() {
	t.mu.Lock()
	t.closed = true
	var all []*scope
	for _, list := range t.leftovers {
		all = append(all, list...)
	}
	t.leftovers = map[string][]*scope{}
	base, wd := t.cgBase, t.wd
	t.wd = nil
	// Without a single command no process carries our token: skip reading every /proc/*/environ.
	opened := t.seq > 0
	t.mu.Unlock()
	for _, s := range all {
		t.kill(s)
	}
	if base != "" {
		killCgroupTree(base)
	}
	if opened {
		sweepTokens(func(tok string) bool { return strings.HasPrefix(tok, t.prefix) })
	}
	if base != "" {
		removeCgroupTree(base)
	}
	if wd != nil {
		_ = wd.Close()
	}
}

// startWatchdog starts our own binary as the watchdog that cleans up if this process is killed; only
// when the binary can act as one (RunReaperIfRequested ran). Called with t.mu held.
func (t *tracker) startWatchdog() {
	self := reaperSelf.Load()
	if self == nil {
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.log.Warn("execmgr: no watchdog", "err", err)
		return
	}
	base := t.cgBase
	if base == "" {
		base = "-"
	}
	cmd := exec.Command(*self, ReaperArg, base, t.prefix)
	cmd.Stdin = r
	// Its own process group: a signal to the server's group must not take the watchdog with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		t.log.Warn("execmgr: no watchdog", "err", err)
		return
	}
	t.wd = w
	go func() { _ = cmd.Wait() }()
}

// sweepTokens SIGKILLs every process whose ScopeEnv token matches, repeating while new ones appear
// (a process may fork while the sweep runs).
func sweepTokens(match func(string) bool) {
	sweeps.Add(1)
	self := os.Getpid()
	for round := 0; round < 20; round++ {
		killed := 0
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || len(env) == 0 {
				continue
			}
			if tok, ok := envValue(env, ScopeEnv); ok && match(tok) {
				if unix.Kill(pid, unix.SIGKILL) == nil {
					killed++
				}
			}
		}
		if killed == 0 {
			return
		}
	}
}

// envValue finds key in a NUL-separated environment block.
func envValue(env []byte, key string) (string, bool) {
	k := []byte(key + "=")
	for len(env) > 0 {
		line := env
		if i := bytes.IndexByte(env, 0); i >= 0 {
			line, env = env[:i], env[i+1:]
		} else {
			env = nil
		}
		if v, ok := bytes.CutPrefix(line, k); ok {
			return string(v), true
		}
	}
	return "", false
}

// makeCgroupBase creates this Manager's cgroup below the server's own cgroup v2, or returns "" when
// cgroup v2 is not mounted or not writable by us.
func makeCgroupBase(prefix string) string {
	parent := ownCgroupDir()
	if parent == "" {
		return ""
	}
	dir := parent + "/appserver-" + strings.TrimSuffix(strings.ReplaceAll(prefix, ".", "-"), "-")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return ""
	}
	return dir
}

// ownCgroupDir is the directory of this process's cgroup in the cgroup v2 hierarchy, or "".
func ownCgroupDir() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	var rel string
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
		}
	}
	if !found {
		return ""
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 || fields[sep+1] != "cgroup2" {
			continue
		}
		root, mnt := fields[3], fields[4]
		r := strings.TrimPrefix(rel, strings.TrimSuffix(root, "/"))
		if !strings.HasPrefix(r, "/") && r != "" {
			continue
		}
		dir := strings.TrimSuffix(mnt+r, "/")
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
	}
	return ""
}

func cgroupPopulated(dir string) bool {
	b, err := os.ReadFile(dir + "/cgroup.events")
	if err != nil {
		return false
	}
	return bytes.Contains(b, []byte("populated 1"))
}

// killCgroup SIGKILLs every process in dir and its children: cgroup.kill (Linux 5.14), else each pid.
func killCgroup(dir string) {
	if err := os.WriteFile(dir+"/cgroup.kill", []byte("1"), 0); err == nil {
		return
	}
	for round := 0; round < 20; round++ {
		b, err := os.ReadFile(dir + "/cgroup.procs")
		if err != nil {
			return
		}
		pids := strings.Fields(string(b))
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
	}
}

// killCgroupTree kills every cgroup below base (base itself holds no process).
func killCgroupTree(base string) {
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if e.IsDir() {
			killCgroup(base + "/" + e.Name())
		}
	}
}

// removeCgroupTree removes base and its child cgroups once their processes are gone, waiting a
// little for the kernel to finish killing them.
func removeCgroupTree(base string) {
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if e.IsDir() {
			removeCgroupTree(base + "/" + e.Name())
		}
	}
	for i := 0; i < 200; i++ {
		err := os.Remove(base)
		if err == nil || os.IsNotExist(err) || !errorsIsBusy(err) {
			return
		}
		waitPopulated(base)
	}
}

func errorsIsBusy(err error) bool {
	var pe *os.PathError
	if e, ok := err.(*os.PathError); ok {
		pe = e
	}
	return pe != nil && pe.Err == syscall.EBUSY
}

// waitPopulated blocks until cgroup.events changes (inotify), at most 10 ms.
func waitPopulated(dir string) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir+"/cgroup.events", unix.IN_MODIFY); err != nil {
		return
	}
	if !cgroupPopulated(dir) {
		return
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	_, _ = unix.Poll(fds, 10)
}
