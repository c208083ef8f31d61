package execmgr

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"appserver/sandbox"
	"appserver/sandbox/confine"
)

// launcherFailLimit is how many launcher refusals in a row pause launchers for a Manager.
const launcherFailLimit = 3

// launcherIdle is how long a launcher with no running command is kept (under 1 MB of anonymous
// memory, its binary's pages shared with the server) before it is ended; the owner's next command
// starts a new one.
const launcherIdle = time.Minute

// launcherRetry is the first pause of launchers after a failure that may pass (a launcher that
// could not be started, or refusals in a row); each further failure before a command was launched
// again doubles it, up to launcherRetryMax.
const (
	launcherRetry    = time.Minute
	launcherRetryMax = 32 * time.Minute
)

// launcherRetireSlack is how long after the kill grace a launcher whose owner was killed is kept
// for the commands it still runs, at most: they were SIGKILLed at the end of their grace, so it
// only bounds a launcher that does not report their end (docs/sandbox.md "Never wedging").
const launcherRetireSlack = 30 * time.Second

// launcherStartWait bounds how long a command waits for the start of its owner's launcher by
// another command (a start is bounded by 30 s itself) before it starts the per-command way.
const launcherStartWait = 30 * time.Second

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
	// retire ends a launcher whose owner was killed once its commands ended, at the latest when it
	// fires (see closeOwner); nil for a launcher in the pool.
	retire *time.Timer
}

// launcherStart is a launcher being started (outside the pool's lock); other commands of its key
// wait for done.
type launcherStart struct {
	done chan struct{}
	// cancel ends the start (its owner's launchers were closed, or the Manager was).
	cancel context.CancelFunc
	// Guarded by the pool's mu.
	waiters   int  // commands waiting for it
	cancelled bool // its owner's launchers were closed meanwhile: the launcher is ended at once
}

// launcherPool holds a Manager's launchers: started on an owner's first read-only sandboxed
// command, ended by KillOwner or Close. Any failure to use one falls back to the per-command
// helper. A launcher start never holds the pool's lock: other keys never wait for it, and
// commands of its key wait for it (bounded). A failure to start that does not pass (no
// namespaces) turns launchers off for the Manager; one that may pass, or refusals in a row, pause
// them (launcherRetry, doubling).
type launcherPool struct {
	log *slog.Logger
	tr  *tracker
	// start is sandbox.StartLauncher, now time.Now and startWait launcherStartWait; tests replace
	// them.
	start     func(ctx context.Context, self string, key sandbox.LaunchKey, opts sandbox.LauncherOptions) (*sandbox.Launcher, error)
	now       func() time.Time
	startWait time.Duration
	grace     time.Duration // the Manager's kill grace

	mu       sync.Mutex
	off      bool // NoLauncher, or launchers cannot work here
	closed   bool
	fails    int           // refusals in a row
	retryAt  time.Time     // launchers are paused until then
	backoff  time.Duration // the next pause; 0 means launcherRetry
	byKey    map[launcherKey]*launcherEntry
	starting map[launcherKey]*launcherStart
	retiring map[*launcherEntry]struct{} // out of the pool, ended once their commands ended
	idle     time.Duration               // launcherIdle; shorter in tests
}

func newLauncherPool(log *slog.Logger, tr *tracker, off bool, grace time.Duration) *launcherPool {
	return &launcherPool{log: log, tr: tr, off: off, start: sandbox.StartLauncher, now: time.Now, grace: grace,
		startWait: launcherStartWait, byKey: map[launcherKey]*launcherEntry{}, starting: map[launcherKey]*launcherStart{},
		retiring: map[*launcherEntry]struct{}{}}
}

// get returns the launcher for owner and la's confinement, starting it if needed, for one
// command (release it once the command ended); nil when launchers are off or paused, or when the
// start of this key by another command did not end in time or ctx ended while waiting for it or
// during its own start (the launcher being started is then killed).
func (lp *launcherPool) get(ctx context.Context, owner string, la sandbox.Launch) *launcherEntry {
	k := launcherKey{owner: owner, key: la.Key}
	lp.mu.Lock()
	for {
		if lp.off || lp.closed || lp.now().Before(lp.retryAt) {
			lp.mu.Unlock()
			return nil
		}
		if e := lp.byKey[k]; e != nil {
			select {
			case <-e.l.Dead():
				lp.drop(e)
				lp.mu.Unlock()
				lp.end(e)
				lp.mu.Lock()
				continue
			default:
				lp.hold(e)
				lp.mu.Unlock()
				return e
			}
		}
		st := lp.starting[k]
		if st == nil {
			break
		}
		st.waiters++
		lp.mu.Unlock()
		ok := lp.await(ctx, st)
		lp.mu.Lock()
		st.waiters--
		if !ok {
			lp.mu.Unlock()
			return nil
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st := &launcherStart{done: make(chan struct{}), cancel: cancel}
	lp.starting[k] = st
	lp.mu.Unlock()

	e, err := lp.startEntry(sctx, owner, la)

	lp.mu.Lock()
	delete(lp.starting, k)
	close(st.done)
	switch {
	case err != nil && sctx.Err() != nil:
		// Not a failure: ctx ended, or KillOwner or Close ended the start.
		lp.log.Debug("execmgr: sandbox launcher start cancelled", "err", err)
	case err != nil:
		if sandbox.LauncherPermanent(err) {
			lp.off = true
			lp.log.Info("execmgr: no sandbox launcher; each sandboxed command starts its own helper", "err", err)
		} else {
			lp.pause("execmgr: a sandbox launcher could not be started; sandboxed commands start their own helpers for a while", err)
		}
	case e == nil:
	case lp.closed || lp.off || st.cancelled:
		lp.mu.Unlock()
		lp.end(e)
		return nil
	default:
		lp.byKey[k] = e
		lp.hold(e)
	}
	lp.mu.Unlock()
	return e
}

// await waits until st ended; false when ctx ended first or it took longer than startWait.
func (lp *launcherPool) await(ctx context.Context, st *launcherStart) bool {
	t := time.NewTimer(lp.startWait)
	defer t.Stop()
	select {
	case <-st.done:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// startEntry starts a launcher for owner and la's confinement in a scope of its own; nil without
// an error when the scope has no cgroup.
func (lp *launcherPool) startEntry(ctx context.Context, owner string, la sandbox.Launch) (*launcherEntry, error) {
	sc := lp.tr.open(owner)
	if sc.cgFD < 0 {
		lp.tr.release(sc)
		return nil, nil
	}
	l, err := lp.start(ctx, la.Self, la.Key, sandbox.LauncherOptions{CgroupFD: sc.cgFD,
		Env: []string{ScopeEnv + "=" + sc.token, "GOMAXPROCS=1"}})
	if err != nil {
		lp.tr.release(sc)
		return nil, err
	}
	sc.started(l.Pid())
	return &launcherEntry{l: l, sc: sc}, nil
}

// pause stops using launchers for the current back-off and doubles it; called with mu held.
func (lp *launcherPool) pause(msg string, err error) {
	d := lp.backoff
	if d <= 0 {
		d = launcherRetry
	}
	lp.retryAt = lp.now().Add(d)
	lp.backoff = min(2*d, launcherRetryMax)
	lp.log.Info(msg, "err", err, "retry_in", d)
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
// idle time unless a command comes first, or at once when its owner was killed (retiring).
func (lp *launcherPool) release(e *launcherEntry) {
	lp.mu.Lock()
	e.live--
	_, retired := lp.retiring[e]
	if e.live == 0 && retired {
		lp.unretire(e)
		lp.mu.Unlock()
		lp.end(e)
		return
	}
	defer lp.mu.Unlock()
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
// way): a dead launcher is dropped (the next command starts a new one); refusals in a row pause
// launchers (running commands go on, idle launchers end as usual); a request too large for one
// message concerns this command only.
func (lp *launcherPool) failed(e *launcherEntry, err error) {
	dead := errors.Is(err, sandbox.ErrLauncherDead)
	lp.mu.Lock()
	if !dead && !errors.Is(err, sandbox.ErrTooLarge) {
		lp.fails++
		if lp.fails == 1 {
			lp.log.Info("execmgr: the sandbox launcher refused a command; starting it with its own helper", "err", err)
		}
		if lp.fails >= launcherFailLimit {
			lp.fails = 0
			lp.pause("execmgr: sandbox launchers paused after repeated refusals", err)
		}
	}
	ended := dead && lp.holds(e)
	if ended {
		lp.drop(e)
	}
	lp.mu.Unlock()
	lp.release(e) // arms the idle timer of a launcher still in the pool
	if ended {
		lp.end(e)
	}
}

// succeeded records that a launcher started a command: refusals and back-off start over.
func (lp *launcherPool) succeeded() {
	lp.mu.Lock()
	lp.fails = 0
	lp.backoff = 0
	lp.mu.Unlock()
}

// closeOwner takes owner's launchers out of the pool (its next command starts a new one) and
// cancels their starts. A launcher without commands is ended at once; one whose commands still run
// (KillOwner gives them their SIGTERM grace) is ended once they ended, at the latest
// launcherRetireSlack after the grace. It never waits for them.
func (lp *launcherPool) closeOwner(owner string) {
	lp.mu.Lock()
	for k, st := range lp.starting {
		if k.owner == owner {
			st.cancelled = true
			st.cancel()
		}
	}
	var ended []*launcherEntry
	for k, e := range lp.byKey {
		if k.owner != owner {
			continue
		}
		lp.drop(e)
		if e.live == 0 {
			ended = append(ended, e)
			continue
		}
		lp.retiring[e] = struct{}{}
		e.retire = time.AfterFunc(lp.grace+launcherRetireSlack, func() {
			lp.mu.Lock()
			_, ok := lp.retiring[e]
			if ok {
				lp.unretire(e)
			}
			lp.mu.Unlock()
			if ok {
				lp.end(e)
			}
		})
	}
	lp.mu.Unlock()
	for _, e := range ended {
		lp.end(e)
	}
}

// unretire takes e out of the retiring launchers (the caller ends it); called with mu held.
func (lp *launcherPool) unretire(e *launcherEntry) {
	delete(lp.retiring, e)
	if e.retire != nil {
		e.retire.Stop()
		e.retire = nil
	}
}

// closeAll ends every launcher, retiring ones too, and cancels the starts in progress; later
// commands start their own helpers.
func (lp *launcherPool) closeAll() {
	lp.mu.Lock()
	lp.closed = true
	for _, st := range lp.starting {
		st.cancel()
	}
	ended := make([]*launcherEntry, 0, len(lp.byKey)+len(lp.retiring))
	for _, e := range lp.byKey {
		lp.drop(e)
		ended = append(ended, e)
	}
	for e := range lp.retiring {
		lp.unretire(e)
		ended = append(ended, e)
	}
	lp.mu.Unlock()
	for _, e := range ended {
		lp.end(e)
	}
}

// startLaunched starts cmd (a helper argv) by the owner's launcher when it is a read-only
// sandboxed command and the process has a cgroup, which takes the command's leftovers with it when
// it exits; false (without an error) means start it the per-command way. The launcher's start is
// waited for, bounded and no longer than ctx. An error is a *sandbox.SpawnAbandoned: ctx ended
// after the request was sent, and the command must not be started another way.
func (p *Process) startLaunched(ctx context.Context, cmd *exec.Cmd) (started, bool, error) {
	if p.scope.cgFD < 0 {
		return nil, false, nil
	}
	la, ok := sandbox.Launchable(cmd.Args)
	if !ok {
		return nil, false, nil
	}
	for retried := false; ; retried = true {
		e := p.m.ls.get(ctx, p.owner, la)
		if e == nil {
			return nil, false, nil
		}
		c, launched, notSent, err := p.spawnBy(ctx, e, cmd, la)
		// A launcher found dead before it got the request (killed, or ended while idle, and not yet
		// noticed) is replaced once: the command did not start there.
		if notSent && !retried {
			continue
		}
		return c, launched, err
	}
}

// spawnBy asks launcher e to start cmd, as startLaunched describes; notSent reports a launcher
// that had ended before it got the request (dropped from the pool already).
func (p *Process) spawnBy(ctx context.Context, e *launcherEntry, cmd *exec.Cmd, la sandbox.Launch) (c started, launched, notSent bool, err error) {
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
			return nil, false, false, nil
		}
		defer null.Close()
		stdio[0] = null
	}
	if stdio[1] == nil || stdio[2] == nil {
		p.m.ls.release(e)
		return nil, false, false, nil
	}
	attr := cmd.SysProcAttr
	req := confine.LaunchRequest{Argv: la.Argv, Env: cmd.Env, Dir: la.Dir, Setsid: attr.Setsid, Setctty: attr.Setctty, Setpgid: attr.Setpgid}
	lc, err := e.l.Spawn(ctx, req, stdio, p.scope.cgFD)
	var ab *sandbox.SpawnAbandoned
	switch {
	case errors.As(err, &ab):
		p.m.ls.release(e) // not the launcher's failure
		return nil, false, false, err
	case err != nil && ctx.Err() != nil:
		p.m.ls.release(e) // ctx ended before the request was sent: the per-command way
		return nil, false, false, nil
	case err != nil:
		p.m.ls.failed(e, err)
		return nil, false, errors.Is(err, sandbox.ErrNotSent), nil
	}
	p.m.ls.succeeded()
	p.scope.dieWithCommand = true
	return launchedChild{c: lc, release: func() { p.m.ls.release(e) }}, true, false, nil
}
