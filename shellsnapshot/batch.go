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
// not one each. At most MaxConcurrent batches capture at once; the others wait for a slot, and a request
// arriving while its inputs' batch is already capturing starts the next one.
type batch struct {
	key    string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when body, exports and err are final
	refs   int           // snapshots still using the batch; guarded by batchMu

	body    []byte
	exports []string
	err     error
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
		b = &batch{key: key, ctx: ctx, cancel: cancel, done: make(chan struct{})}
		pending[key] = b
		go b.run(o)
	}
	b.refs++
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

// run waits for a capture slot, stops taking new snapshots and captures.
func (b *batch) run(o Options) {
	defer close(b.done)
	defer b.cancel()
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
