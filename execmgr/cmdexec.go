package execmgr

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// JSON-RPC error codes used by command/exec.
const (
	CodeInvalidRequest = -32600
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// command/exec defaults.
const (
	DefaultCommandExecTimeout = 10 * time.Second
	DefaultCommandExecCap     = 1 << 20 // bytes per stream
	TerminatedExitCode        = 137
)

// RequestError is a JSON-RPC error to return for a command/exec request, with the reference's code and text.
type RequestError struct {
	Code    int
	Message string
}

// Error returns the message.
func (e *RequestError) Error() string { return e.Message }

// CommandExecParams mirrors the `command/exec` params.
type CommandExecParams struct {
	Command            []string           `json:"command"`
	ProcessID          *string            `json:"processId,omitempty"`
	Cwd                *string            `json:"cwd,omitempty"`
	Env                map[string]*string `json:"env,omitempty"`
	SandboxPolicy      json.RawMessage    `json:"sandboxPolicy,omitempty"`
	PermissionProfile  *string            `json:"permissionProfile,omitempty"`
	TTY                bool               `json:"tty,omitempty"`
	StreamStdin        bool               `json:"streamStdin,omitempty"`
	StreamStdoutStderr bool               `json:"streamStdoutStderr,omitempty"`
	Size               *Size              `json:"size,omitempty"`
	OutputBytesCap     *uint64            `json:"outputBytesCap,omitempty"`
	DisableOutputCap   bool               `json:"disableOutputCap,omitempty"`
	TimeoutMs          *int64             `json:"timeoutMs,omitempty"`
	DisableTimeout     bool               `json:"disableTimeout,omitempty"`
}

// CommandExecResponse is the final `command/exec` result; stdout/stderr are empty when streamed.
type CommandExecResponse struct {
	ExitCode int    `json:"exitCode"`
	Stdout   Output `json:"stdout"`
	Stderr   Output `json:"stderr"`
}

// CommandExecWriteParams mirrors `command/exec/write`.
type CommandExecWriteParams struct {
	ProcessID   string  `json:"processId"`
	DeltaBase64 *string `json:"deltaBase64,omitempty"`
	CloseStdin  bool    `json:"closeStdin,omitempty"`
}

// CommandExecResizeParams mirrors `command/exec/resize`.
type CommandExecResizeParams struct {
	ProcessID string `json:"processId"`
	Size      Size   `json:"size"`
}

// CommandExecTerminateParams mirrors `command/exec/terminate`.
type CommandExecTerminateParams struct {
	ProcessID string `json:"processId"`
}

// OutputDeltaFunc receives a streamed chunk (`command/exec/outputDelta`); capReached marks the chunk that
// hit the per-stream cap (nothing more is sent for that stream). The chunk must not be retained.
type OutputDeltaFunc func(processID string, stream Stream, chunk []byte, capReached bool)

// ValidateCommandExec checks params the way the reference does and returns a *RequestError.
func ValidateCommandExec(p CommandExecParams) error {
	switch {
	case len(p.Command) == 0:
		return &RequestError{CodeInvalidRequest, "command must not be empty"}
	case (p.TTY || p.StreamStdin || p.StreamStdoutStderr) && p.ProcessID == nil:
		return &RequestError{CodeInvalidRequest, "command/exec tty or streaming requires a client-supplied processId"}
	case p.TimeoutMs != nil && p.DisableTimeout:
		return &RequestError{CodeInvalidParams, "command/exec cannot set both timeoutMs and disableTimeout"}
	case p.OutputBytesCap != nil && p.DisableOutputCap:
		return &RequestError{CodeInvalidParams, "command/exec cannot set both outputBytesCap and disableOutputCap"}
	case p.Size != nil && !p.TTY:
		return &RequestError{CodeInvalidParams, "command/exec size requires tty: true"}
	}
	return nil
}

// CommandExecRequest is one `command/exec` call with the server-side context.
type CommandExecRequest struct {
	Params        CommandExecParams
	Cwd           string                                // server cwd: default and base of a relative Params.Cwd
	Env           []string                              // server environment (nil = this process's); Params.Env merges on top
	WrapArgv      func(argv []string) ([]string, error) // sandbox hook, may be nil
	OnOutputDelta OutputDeltaFunc                       // required when streaming
}

// CommandExecRegistry runs the command/exec processes of one connection, keyed by client processId.
// It is not tied to any stopwatch controller.
type CommandExecRegistry struct {
	m      *Manager
	mu     sync.Mutex
	procs  map[string]*cmdProc
	all    map[*cmdProc]struct{}
	closed bool
}

type cmdProc struct {
	proc        *Process
	streamStdin bool
	terminated  bool
}

// NewCommandExecRegistry returns an empty registry spawning through m.
func NewCommandExecRegistry(m *Manager) *CommandExecRegistry {
	return &CommandExecRegistry{m: m, procs: map[string]*cmdProc{}, all: map[*cmdProc]struct{}{}}
}

func noActive(id string) error {
	return &RequestError{CodeInvalidRequest, fmt.Sprintf("no active command/exec for process id %q", id)}
}

// capture collects one stream up to a cap, or forwards it as deltas.
type capture struct {
	mu      sync.Mutex
	limit   int64 // <0 = unlimited
	n       int64
	buf     Output
	stream  Stream
	id      string
	deltaFn OutputDeltaFunc
	taken   bool // the output went into the response: a reader past the drain timeout changes nothing
}

// take returns the collected output; later writes are dropped.
func (c *capture) take() Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.taken = true
	out := c.buf
	c.buf = Output{}
	return out
}

func (c *capture) write(chunk []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taken {
		return
	}
	reached := false
	if c.limit >= 0 {
		room := c.limit - c.n
		if room <= 0 {
			return
		}
		if int64(len(chunk)) >= room {
			chunk, reached = chunk[:room], true
		}
	}
	c.n += int64(len(chunk))
	if c.deltaFn != nil {
		c.deltaFn(c.id, c.stream, chunk, reached)
		return
	}
	c.buf.write(chunk)
}

// Exec validates and runs a command to completion (exit, timeout → 124, terminate → 137). Deltas are all
// delivered before it returns. Failures are *RequestError (spawn failure: -32603).
func (r *CommandExecRegistry) Exec(ctx context.Context, req CommandExecRequest) (CommandExecResponse, error) {
	p := req.Params
	if err := ValidateCommandExec(p); err != nil {
		return CommandExecResponse{}, err
	}
	stream := p.StreamStdoutStderr || p.TTY
	stdin := p.StreamStdin || p.TTY
	limit := int64(DefaultCommandExecCap)
	if p.OutputBytesCap != nil {
		limit = int64(min(*p.OutputBytesCap, 1<<62))
	}
	if p.DisableOutputCap {
		limit = -1
	}
	id := ""
	if p.ProcessID != nil {
		id = *p.ProcessID
	}
	caps := [2]*capture{{limit: limit, stream: Stdout, id: id}, {limit: limit, stream: Stderr, id: id}}
	if stream {
		if req.OnOutputDelta == nil {
			return CommandExecResponse{}, &RequestError{CodeInternalError, "command/exec streaming has no output sink"}
		}
		caps[0].deltaFn, caps[1].deltaFn = req.OnOutputDelta, req.OnOutputDelta
	}
	cwd := req.Cwd
	if p.Cwd != nil {
		cwd = ResolveDir(cwd, *p.Cwd)
	}
	env := req.Env
	if env == nil {
		env = os.Environ()
	}
	env = applyEnvOverrides(env, p.Env)
	size := Size{}
	if p.Size != nil {
		size = *p.Size
	}

	cp := &cmdProc{streamStdin: stdin}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return CommandExecResponse{}, &RequestError{CodeInternalError, "command/exec connection is closed"}
	}
	if id != "" {
		if _, dup := r.procs[id]; dup {
			r.mu.Unlock()
			return CommandExecResponse{}, &RequestError{CodeInvalidRequest, fmt.Sprintf("duplicate active command/exec process id: %q", id)}
		}
		r.procs[id] = cp // reserve the id before spawning
	}
	r.all[cp] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		if id != "" && r.procs[id] == cp {
			delete(r.procs, id)
		}
		delete(r.all, cp)
		r.mu.Unlock()
	}()

	proc, err := r.m.Spawn(ctx, SpawnRequest{Argv: p.Command, Cwd: cwd, Env: env, TTY: p.TTY, Size: size,
		Stdin: stdin, WrapArgv: req.WrapArgv, OutputCap: -1,
		OnOutput: func(s Stream, chunk []byte) { caps[s].write(chunk) }})
	if err != nil {
		return CommandExecResponse{}, &RequestError{CodeInternalError, "failed to spawn command: " + err.Error()}
	}
	if serr := proc.SpawnErr(); serr != nil {
		<-proc.Done()
		return CommandExecResponse{}, &RequestError{CodeInternalError, serr.Error()}
	}
	r.mu.Lock()
	cp.proc = proc
	closed := r.closed
	r.mu.Unlock()
	if closed {
		proc.KillNow()
	}

	var timeout <-chan struct{}
	if !p.DisableTimeout {
		d := DefaultCommandExecTimeout
		if p.TimeoutMs != nil {
			d = time.Duration(max(*p.TimeoutMs, 0)) * time.Millisecond
		}
		fired := make(chan struct{})
		t := r.m.clock.AfterFunc(d, func() { close(fired) })
		defer t.Stop()
		timeout = fired
	}
	timedOut, err := awaitExit(ctx, proc, timeout)
	if err != nil {
		proc.KillNow()
		<-proc.Done()
		return CommandExecResponse{}, err
	}
	res := CommandExecResponse{ExitCode: proc.ExitCode()}
	if timedOut {
		res.ExitCode = TimeoutExitCode
	} else if r.wasTerminated(cp) {
		res.ExitCode = TerminatedExitCode
	}
	if !stream {
		res.Stdout, res.Stderr = caps[0].take(), caps[1].take()
	}
	return res, nil
}

func (r *CommandExecRegistry) wasTerminated(cp *cmdProc) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return cp.terminated
}

// applyEnvOverrides sets or (nil value) unsets variables, in sorted key order.
func applyEnvOverrides(env []string, over map[string]*string) []string {
	if len(over) == 0 {
		return env
	}
	keys := make([]string, 0, len(over))
	for k := range over {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sets []string
	unset := map[string]bool{}
	for _, k := range keys {
		if v := over[k]; v != nil {
			sets = append(sets, k+"="+*v)
		} else {
			unset[k] = true
		}
	}
	merged := MergeEnv(env, sets...)
	out := merged[:0]
	for _, kv := range merged {
		k, _, _ := strings.Cut(kv, "=")
		if !unset[k] {
			out = append(out, kv)
		}
	}
	return out
}

func (r *CommandExecRegistry) lookup(id string) (*cmdProc, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cp := r.procs[id]
	if cp == nil || cp.proc == nil {
		return nil, noActive(id)
	}
	return cp, nil
}

// Write implements `command/exec/write`: write decoded bytes, then close stdin if asked.
func (r *CommandExecRegistry) Write(ctx context.Context, p CommandExecWriteParams) error {
	cp, err := r.lookup(p.ProcessID)
	if err != nil {
		return err
	}
	if !cp.streamStdin {
		return &RequestError{CodeInvalidRequest, "stdin streaming is not enabled for this command/exec"}
	}
	if p.DeltaBase64 != nil && *p.DeltaBase64 != "" {
		data, err := base64.StdEncoding.DecodeString(*p.DeltaBase64)
		if err != nil {
			return &RequestError{CodeInvalidParams, "invalid deltaBase64: " + err.Error()}
		}
		if err := cp.proc.WriteStdin(ctx, data); err != nil {
			return &RequestError{CodeInternalError, "failed to write stdin: " + err.Error()}
		}
	}
	if p.CloseStdin {
		if err := cp.proc.CloseStdin(); err != nil && !errors.Is(err, ErrStdinClosed) {
			return &RequestError{CodeInternalError, "failed to close stdin: " + err.Error()}
		}
	}
	return nil
}

// Resize implements `command/exec/resize`.
func (r *CommandExecRegistry) Resize(p CommandExecResizeParams) error {
	cp, err := r.lookup(p.ProcessID)
	if err != nil {
		return err
	}
	if err := cp.proc.Resize(p.Size); err != nil {
		return &RequestError{CodeInvalidRequest, "failed to resize PTY: " + err.Error()}
	}
	return nil
}

// Terminate implements `command/exec/terminate`: SIGKILL to the group; the pending Exec reports 137.
func (r *CommandExecRegistry) Terminate(p CommandExecTerminateParams) error {
	cp, err := r.lookup(p.ProcessID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	cp.terminated = true
	r.mu.Unlock()
	cp.proc.KillNow()
	return nil
}

// Close kills every process of the connection (SIGKILL to each group); later Exec calls fail.
func (r *CommandExecRegistry) Close() {
	r.mu.Lock()
	r.closed = true
	var procs []*Process
	for cp := range r.all {
		if cp.proc != nil {
			procs = append(procs, cp.proc)
		}
	}
	r.mu.Unlock()
	for _, p := range procs {
		p.KillNow()
	}
}
