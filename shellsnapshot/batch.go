package shellsnapshot

import (
	"context"
	"strings"
	"sync"
	"time"
)

// A batch is one capture shared by the snapshots of the same inputs (CODEX_HOME, shell, cwd, environment,
// timeout) that were requested before it started: a capture that starts after a thread was loaded sees
// the login shell as fresh as one of its own would, so a burst of thread loads costs a few login shells,
// not one each. A batch starts once no snapshot has joined it for Settle (at most MaxSettle after it was
// created): a burst of loads is over before its login shell competes with it. At most MaxConcurrent
// batches capture at once; the others wait for a slot, and a request arriving while its inputs' batch is
// already capturing starts the next one.
type batch struct {
	key    string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when body, exports and err are final
	refs   int           // snapshots still using the batch; guarded by batchMu
	joined chan struct{} // a snapshot joined (one pending signal)

	body    []byte
	exports []string
	err     error
}

// Settle is how long a batch waits after the last snapshot joined it before capturing; MaxSettle bounds
// the wait from the batch's creation, under a steady stream of loads.
const (
	Settle    = 100 * time.Millisecond
	MaxSettle = 2 * time.Second
)

// settleAfter arms one of a batch's settle timers, returning its channel and its stop (a variable: tests
// fire them by hand).
var settleAfter = func(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

var (
	slots   = make(chan struct{}, MaxConcurrent)
	batchMu sync.Mutex
	pending = map[string]*batch{} // per key, the batch that has not started capturing yet
)

// join returns the batch a new snapshot of o takes its content from, creating it when none is pending.
func join(o Options) *batch {
	key := strings.Join([]string{o.CodexHome, o.Shell, o.Cwd, o.Timeout.String(), strings.Join(o.Env, "\x00")}, "\x01")
	if o.Env == nil {
		key += "\x01<inherited>"
	}
	batchMu.Lock()
	defer batchMu.Unlock()
	b := pending[key]
	if b == nil {
		ctx, cancel := context.WithCancel(context.Background())
		b = &batch{key: key, ctx: ctx, cancel: cancel, done: make(chan struct{}), joined: make(chan struct{}, 1)}
		pending[key] = b
		go b.run(o)
	}
	b.refs++
	select {
	case b.joined <- struct{}{}:
	default:
	}
	return b
}

// leave drops a snapshot's use of the batch; the last one cancels it and reports true.
func (b *batch) leave() bool {
	batchMu.Lock()
	defer batchMu.Unlock()
	b.refs--
	if b.refs > 0 {
		return false
	}
	if pending[b.key] == b {
		delete(pending, b.key)
	}
	b.cancel()
	return true
}

// run waits for the loads to settle and for a capture slot, stops taking new snapshots and captures.
func (b *batch) run(o Options) {
	defer close(b.done)
	defer b.cancel()
	if err := b.settle(); err != nil {
		b.err = err
		return
	}
	select {
	case slots <- struct{}{}:
	case <-b.ctx.Done():
		b.err = b.ctx.Err()
		return
	}
	defer func() { <-slots }()
	batchMu.Lock()
	if pending[b.key] == b {
		delete(pending, b.key)
	}
	batchMu.Unlock()
	start := time.Now()
	b.body, b.exports, b.err = shoot(b.ctx, o)
	o.Logger.Debug("shell snapshot captured", "thread", o.ThreadID, "took", time.Since(start), "error", b.err)
}

// settle returns once no snapshot has joined b for Settle, MaxSettle after it began at the latest, or with
// b's error when it is cancelled.
func (b *batch) settle() error {
	limit, stopLimit := settleAfter(MaxSettle)
	defer stopLimit()
	quiet, stopQuiet := settleAfter(Settle)
	defer func() { stopQuiet() }()
	for {
		select {
		case <-b.joined:
			stopQuiet()
			quiet, stopQuiet = settleAfter(Settle)
		case <-quiet:
			return nil
		case <-limit:
			return nil
		case <-b.ctx.Done():
			return b.ctx.Err()
		}
	}
}
