package execmgr

import (
	"context"
	"fmt"
	"sync"
	"time"

	"appserver/internal/oserr"
)

// DefaultHandleOutputCap bounds each collected stream of a process/* child when the client sets none.
const DefaultHandleOutputCap = 1 << 20

// HandleSpawn is one process/spawn: a child named by a client-chosen handle.
type HandleSpawn struct {
	Handle  string
	Req     SpawnRequest
	Stream  bool          // deliver output as it comes (OnDelta) instead of collecting it for OnExit
	Cap     int           // bytes kept or streamed per stream; 0 = DefaultHandleOutputCap
	Timeout time.Duration // 0 = none; at the deadline the child's group is killed
	// OnDelta receives streamed chunks (capReached marks the chunk that hit the cap).
	OnDelta func(stream Stream, chunk []byte, capReached bool)
	// OnExit reports the end: exit code and, when not streamed, the collected output.
	OnExit func(HandleExit)
}

// HandleExit is how a handle's child ended.
type HandleExit struct {
	ExitCode                           int
	Stdout, Stderr                     string
	StdoutCapReached, StderrCapReached bool
}

// HandleRegistry maps one connection's process handles to live children of a Manager; a handle is
// free again once its child exited, and Close kills whatever still runs.
type HandleRegistry struct {
	m      *Manager
	mu     sync.Mutex
	live   map[string]*Process
	closed bool
}

// NewHandleRegistry makes an empty registry over m.
func NewHandleRegistry(m *Manager) *HandleRegistry {
	return &HandleRegistry{m: m, live: map[string]*Process{}}
}

func noActiveHandle(handle string) error {
	return &RequestError{CodeInvalidRequest, fmt.Sprintf("no active process for process handle %q", handle)}
}

// Spawn starts a child under hs.Handle.
func (r *HandleRegistry) Spawn(ctx context.Context, hs HandleSpawn) error {
	if len(hs.Req.Argv) == 0 || hs.Req.Argv[0] == "" {
		return &RequestError{CodeInvalidRequest, "command must not be empty"}
	}
	limit := hs.Cap
	if limit <= 0 {
		limit = DefaultHandleOutputCap
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	if _, dup := r.live[hs.Handle]; dup {
		r.mu.Unlock()
		return &RequestError{CodeInvalidRequest, fmt.Sprintf("duplicate active process handle: %q", hs.Handle)}
	}
	r.live[hs.Handle] = nil // reserved while spawning
	r.mu.Unlock()

	var (
		omu       sync.Mutex
		collected [3][]byte
		sent      [3]int
		capped    [3]bool
	)
	req := hs.Req
	req.OnOutput = func(s Stream, chunk []byte) {
		omu.Lock()
		defer omu.Unlock()
		i := int(s) % 3
		if capped[i] {
			return
		}
		room := limit - sent[i]
		if len(chunk) >= room {
			chunk, capped[i] = chunk[:room], true
		}
		sent[i] += len(chunk)
		if hs.Stream {
			if hs.OnDelta != nil && (len(chunk) > 0 || capped[i]) {
				hs.OnDelta(s, chunk, capped[i])
			}
			return
		}
		collected[i] = append(collected[i], chunk...)
	}
	p, err := r.m.Spawn(context.WithoutCancel(ctx), req)
	if err == nil && p.SpawnErr() != nil {
		err = p.SpawnErr()
	}
	if err != nil {
		r.mu.Lock()
		delete(r.live, hs.Handle)
		r.mu.Unlock()
		if se, ok := err.(*SpawnError); ok {
			return &RequestError{CodeInternalError, "failed to spawn process: " + oserr.Text(se.Err)}
		}
		return &RequestError{CodeInternalError, "failed to spawn process: " + oserr.Text(err)}
	}
	r.mu.Lock()
	r.live[hs.Handle] = p
	r.mu.Unlock()
	go func() {
		if hs.Timeout > 0 {
			select {
			case <-p.Done():
			case <-time.After(hs.Timeout):
				p.Kill()
			}
		}
		<-p.Done()
		r.mu.Lock()
		if r.live[hs.Handle] == p {
			delete(r.live, hs.Handle)
		}
		r.mu.Unlock()
		omu.Lock()
		ex := HandleExit{ExitCode: p.ExitCode(), Stdout: string(collected[int(Stdout)%3]), Stderr: string(collected[int(Stderr)%3]),
			StdoutCapReached: capped[int(Stdout)%3], StderrCapReached: capped[int(Stderr)%3]}
		omu.Unlock()
		if hs.OnExit != nil {
			hs.OnExit(ex)
		}
	}()
	return nil
}

// Get returns the live child of a handle.
func (r *HandleRegistry) Get(handle string) (*Process, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.live[handle]
	if p == nil {
		return nil, noActiveHandle(handle)
	}
	return p, nil
}

// Close kills every live child; later spawns fail.
func (r *HandleRegistry) Close() {
	r.mu.Lock()
	r.closed = true
	ps := make([]*Process, 0, len(r.live))
	for _, p := range r.live {
		if p != nil {
			ps = append(ps, p)
		}
	}
	r.mu.Unlock()
	for _, p := range ps {
		p.KillNow()
	}
}
