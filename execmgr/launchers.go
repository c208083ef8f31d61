package execmgr

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"appserver/sandbox"
	"appserver/sandbox/confine"
)

// launcherFailLimit is how many launcher refusals in a row turn launchers off for a Manager.
const launcherFailLimit = 3

// launcherIdle is how long a launcher with no running command is kept (under 1 MB of anonymous
// memory, its binary's pages shared with the server) before it is ended; the owner's next command
// starts a new one.
const launcherIdle = time.Minute

// launcherKey is one launcher: an owner's commands under one confinement.
type launcherKey struct {
	owner string
	key   sandbox.LaunchKey
}

// launcherEntry is a running launcher and the scope (cgroup) it runs in.
type launcherEntry struct {
	l  *sandbox.Launcher
	sc *scope
	// Guarded by the pool's mu: commands being started or running, and the idle timer that ends
	// the launcher once there are none.
	live int
	idle *time.Timer
}

// launcherPool holds a Manager's launchers: started on an owner's first read-only sandboxed
// command, ended by KillOwner or Close. Any failure to use one falls back to the per-command
// helper; a launcher that cannot be started, or keeps refusing, turns them off for the Manager.
type launcherPool struct {
	log *slog.Logger
	tr  *tracker

	mu     sync.Mutex
	off    bool // NoLauncher, or launchers do not work here
	closed bool
	fails  int // refusals in a row
	byKey  map[launcherKey]*launcherEntry
	idle   time.Duration // launcherIdle; shorter in tests
}

// get returns the launcher for owner and la's confinement, starting it if needed, for one
// command (release it once the command ended); nil when launchers are off.
func (lp *launcherPool) get(owner string, la sandbox.Launch) *launcherEntry {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.off || lp.closed {
		return nil
	}
	k := launcherKey{owner: owner, key: la.Key}
	if e := lp.byKey[k]; e != nil {
		select {
		case <-e.l.Dead():
			lp.drop(e)
			lp.end(e)
		default:
			lp.hold(e)
			return e
		}
	}
	sc := lp.tr.open(owner)
	if sc.cgFD < 0 {
		lp.tr.release(sc)
		return nil
	}
	l, err := sandbox.StartLauncher(la.Self, la.Key, sandbox.LauncherOptions{CgroupFD: sc.cgFD,
		Env: []string{ScopeEnv + "=" + sc.token, "GOMAXPROCS=1"}})
	if err != nil {
		lp.tr.release(sc)
		lp.off = true
		lp.log.Info("execmgr: no sandbox launcher; each sandboxed command starts its own helper", "err", err)
		return nil
	}
	sc.started(l.Pid())
	e := &launcherEntry{l: l, sc: sc}
	lp.byKey[k] = e
	lp.hold(e)
	return e
}

// hold counts one more command of e and stops its idle timer; called with mu held.
func (lp *launcherPool) hold(e *launcherEntry) {
	e.live++
	if e.idle != nil {
		e.idle.Stop()
		e.idle = nil
	}
}

// release counts one command of e less; a launcher left without commands is ended after the
// idle time unless a command comes first.
func (lp *launcherPool) release(e *launcherEntry) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	e.live--
	if e.live > 0 || !lp.holds(e) {
		return
	}
	idle := lp.idle
	if idle <= 0 {
		idle = launcherIdle
	}
	var t *time.Timer
	t = time.AfterFunc(idle, func() {
		lp.mu.Lock()
		expired := e.idle == t && e.live == 0 && lp.holds(e)
		if expired {
			lp.drop(e)
		}
		lp.mu.Unlock()
		if expired {
			lp.end(e)
		}
	})
	e.idle = t
}

// holds reports whether e is still in the pool; called with mu held.
func (lp *launcherPool) holds(e *launcherEntry) bool {
	for _, x := range lp.byKey {
		if x == e {
			return true
		}
	}
	return false
}

// drop takes e out of the pool and stops its idle timer; called with mu held.
func (lp *launcherPool) drop(e *launcherEntry) {
	for k, x := range lp.byKey {
		if x == e {
			delete(lp.byKey, k)
		}
	}
	if e.idle != nil {
		e.idle.Stop()
		e.idle = nil
	}
}

// end kills a launcher (and so every command it started) and its cgroup.
func (lp *launcherPool) end(e *launcherEntry) {
	e.l.Close()
	lp.tr.kill(e.sc)
}

// failed records that e could not start a command (which the caller starts the per-command
// way): a dead launcher is dropped (the next command starts a new one); refusals in a row turn
// launchers off; a request too large for one message concerns this command only.
func (lp *launcherPool) failed(e *launcherEntry, err error) {
	dead := errors.Is(err, sandbox.ErrLauncherDead)
	lp.mu.Lock()
	var ended []*launcherEntry
	if !dead && !errors.Is(err, sandbox.ErrTooLarge) {
		lp.fails++
		if lp.fails == 1 {
			lp.log.Info("execmgr: the sandbox launcher refused a command; starting it with its own helper", "err", err)
		}
		if lp.fails >= launcherFailLimit && !lp.off {
			lp.off = true
			lp.log.Info("execmgr: sandbox launchers off after repeated refusals", "err", err)
			for _, x := range lp.byKey {
				lp.drop(x)
				ended = append(ended, x)
			}
		}
	}
	if dead && lp.holds(e) {
		lp.drop(e)
		ended = append(ended, e)
	}
	lp.mu.Unlock()
	lp.release(e) // arms the idle timer of a launcher still in the pool
	for _, x := range ended {
		lp.end(x)
	}
}

func (lp *launcherPool) succeeded() {
	lp.mu.Lock()
	lp.fails = 0
	lp.mu.Unlock()
}

// closeOwner ends owner's launchers.
func (lp *launcherPool) closeOwner(owner string) {
	lp.mu.Lock()
	var ended []*launcherEntry
	for k, e := range lp.byKey {
		if k.owner == owner {
			lp.drop(e)
			ended = append(ended, e)
		}
	}
	lp.mu.Unlock()
	for _, e := range ended {
		lp.end(e)
	}
}

// closeAll ends every launcher; later commands start their own helpers.
func (lp *launcherPool) closeAll() {
	lp.mu.Lock()
	lp.closed = true
	ended := make([]*launcherEntry, 0, len(lp.byKey))
	for _, e := range lp.byKey {
		lp.drop(e)
		ended = append(ended, e)
	}
	lp.mu.Unlock()
	for _, e := range ended {
		lp.end(e)
	}
}

// startLaunched starts cmd (a helper argv) by the owner's launcher when it is a read-only
// sandboxed command and the process has a cgroup, which takes the command's leftovers with it when
// it exits; false means start it the per-command way.
func (p *Process) startLaunched(cmd *exec.Cmd) (started, bool) {
	if p.scope.cgFD < 0 {
		return nil, false
	}
	la, ok := sandbox.Launchable(cmd.Args)
	if !ok {
		return nil, false
	}
	e := p.m.ls.get(p.owner, la)
	if e == nil {
		return nil, false
	}
	var stdio [3]*os.File
	for i, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if f, ok := s.(*os.File); ok && f != nil {
			stdio[i] = f
		}
	}
	if stdio[0] == nil {
		null, err := os.Open(os.DevNull)
		if err != nil {
			p.m.ls.release(e)
			return nil, false
		}
		defer null.Close()
		stdio[0] = null
	}
	if stdio[1] == nil || stdio[2] == nil {
		p.m.ls.release(e)
		return nil, false
	}
	attr := cmd.SysProcAttr
	req := confine.LaunchRequest{Argv: la.Argv, Env: cmd.Env, Dir: la.Dir, Setsid: attr.Setsid, Setctty: attr.Setctty, Setpgid: attr.Setpgid}
	c, err := e.l.Spawn(req, stdio, p.scope.cgFD)
	if err != nil {
		p.m.ls.failed(e, err)
		return nil, false
	}
	p.m.ls.succeeded()
	p.scope.dieWithCommand = true
	return launchedChild{c: c, release: func() { p.m.ls.release(e) }}, true
}
