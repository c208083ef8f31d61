package execmgr

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"appserver/internal/oserr"
	"appserver/stopwatch"
)

// Unified-exec limits and defaults (PROTOCOL §5.3).
const (
	MinYieldTimeMs                 = 250
	MinEmptyYieldTimeMs            = 5_000
	MaxYieldTimeMs                 = 30_000
	DefaultExecYieldTimeMs         = 10_000
	DefaultWriteYieldTimeMs        = 250
	DefaultMaxBackgroundTimeoutMs  = 300_000
	DefaultMaxOutputTokens         = 10_000
	MaxSessions                    = 64
	WarningSessions                = 60
	DefaultShell                   = "/bin/bash"
	protectedSessions              = 8
	exitWithoutCloseWait           = 50 * time.Millisecond
	writeSettle                    = 100 * time.Millisecond
	maxDeltasPerSession            = 10_000
	stdinClosedMessage             = "stdin is closed for this session; rerun exec_command with tty=true to keep stdin open"
	minSessionID, maxSessionIDExcl = 1000, 100_000
)

// ForcedEnv are the variables unified exec sets on every command, overriding the base environment.
var ForcedEnv = []string{
	"NO_COLOR=1", "TERM=dumb", "LANG=C.UTF-8", "LC_CTYPE=C.UTF-8", "LC_ALL=C.UTF-8", "COLORTERM=",
	"PAGER=cat", "GIT_PAGER=cat", "GH_PAGER=cat", "CODEX_CI=1",
}

// MergeEnv returns base with every "K=V" of overrides replacing or adding K (base order kept).
func MergeEnv(base []string, overrides ...string) []string {
	idx := map[string]int{}
	out := make([]string, 0, len(base)+len(overrides))
	for _, kv := range append(append([]string(nil), base...), overrides...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// Observer receives the life of one unified-exec process (the turn engine's `commandExecution` item).
// Calls for one process are serialized and ordered: Started, then OutputDelta / Interaction, then Exited
// exactly once. Like the reference, output of the StartupWindow (before Started) is not streamed; later
// output is, also while the exec_command call is still collecting it.
type Observer interface {
	// Started reports the spawn: the session id as a string, the display command and the cwd.
	Started(processID, command, cwd string)
	// OutputDelta carries live background output (PTY, or stdout+stderr merged); do not retain the slice.
	OutputDelta(chunk []byte)
	// Interaction reports a non-empty write_stdin, after that call collected its output.
	Interaction(stdin string)
	// Exited reports the exit with the whole transcript (head+tail capped at 1 MiB), even when it
	// happens after the tool call (and the turn) ended.
	Exited(exitCode int, aggregatedOutput string, duration time.Duration)
}

// ObserverFuncs adapts optional functions to Observer; nil fields are skipped.
type ObserverFuncs struct {
	OnStarted     func(processID, command, cwd string)
	OnOutputDelta func(chunk []byte)
	OnInteraction func(stdin string)
	OnExited      func(exitCode int, aggregatedOutput string, duration time.Duration)
}

// Started implements Observer.
func (o ObserverFuncs) Started(id, command, cwd string) {
	if o.OnStarted != nil {
		o.OnStarted(id, command, cwd)
	}
}

// OutputDelta implements Observer.
func (o ObserverFuncs) OutputDelta(chunk []byte) {
	if o.OnOutputDelta != nil {
		o.OnOutputDelta(chunk)
	}
}

// Interaction implements Observer.
func (o ObserverFuncs) Interaction(stdin string) {
	if o.OnInteraction != nil {
		o.OnInteraction(stdin)
	}
}

// Exited implements Observer.
func (o ObserverFuncs) Exited(code int, out string, d time.Duration) {
	if o.OnExited != nil {
		o.OnExited(code, out, d)
	}
}

// ToolError is a tool failure; Msg is exactly the text the model sees.
type ToolError struct {
	Msg string
	// Output is set when the process could not be created: the failed item's aggregatedOutput
	// ("Failed to create unified exec process: <reason>"); the item has no processId and exitCode -1.
	Output string
}

// Error returns the model-facing text.
func (e *ToolError) Error() string { return e.Msg }

// SessionsOptions configures a Sessions table.
type SessionsOptions struct {
	Manager          *Manager      // required: spawns and owns the processes
	Shell            string        // default shell (DefaultShell when "")
	DeterministicIDs bool          // ids 1000, 1001, … instead of random ones (tests)
	MaxPollWait      time.Duration // ceiling of an empty write_stdin poll (DefaultMaxBackgroundTimeoutMs)
	// Owner tags the processes (the thread id): TerminateAll also kills what their commands left running.
	Owner string
}

// Sessions is the unified-exec session table of one thread (`exec_command` / `write_stdin`).
type Sessions struct {
	m       *Manager
	owner   string
	shell   string
	det     bool
	maxPoll time.Duration

	mu       sync.Mutex
	nextID   int
	reserved map[int]bool
	store    map[int]*session
	clock    uint64
}

// NewSessions returns an empty session table.
func NewSessions(opts SessionsOptions) *Sessions {
	s := &Sessions{m: opts.Manager, owner: opts.Owner, shell: opts.Shell, det: opts.DeterministicIDs, maxPoll: opts.MaxPollWait,
		nextID: minSessionID, reserved: map[int]bool{}, store: map[int]*session{}}
	if s.shell == "" {
		s.shell = DefaultShell
	}
	if s.maxPoll <= 0 {
		s.maxPoll = DefaultMaxBackgroundTimeoutMs * time.Millisecond
	}
	return s
}

// ExecCommandRequest is one `exec_command` call.
type ExecCommandRequest struct {
	Args       ExecCommandArgs
	Cwd        string                                        // turn cwd; Args.Workdir is resolved against it
	Env        []string                                      // base environment (nil = this process's); ForcedEnv is applied on top
	Controller *stopwatch.Controller                         // the thread's controller (nil = a private one)
	Observer   Observer                                      // may be nil
	WrapArgv   func(argv []string) ([]string, error)         // sandbox hook, may be nil
	ShellWrap  func(argv, env []string) ([]string, []string) // shell snapshot hook, may be nil (SpawnRequest.ShellWrap)
	ItemID     string                                        // the item that started the session (listed by Terminals)
}

// WriteStdinRequest is one `write_stdin` call.
type WriteStdinRequest struct {
	Args       WriteStdinArgs
	Controller *stopwatch.Controller // nil = a private one
}

// ExecResult is the outcome of an exec_command / write_stdin call.
type ExecResult struct {
	ChunkID            string        // 6 hex digits
	WallTime           time.Duration // whole call, pauses included
	Exited             bool          // the process exited; ExitCode is valid
	ExitCode           int
	SessionID          int    // the session id (also while running); 0 never
	Output             string // output collected during the call, untruncated (head+tail capped at 1 MiB)
	OriginalTokenCount int
	Warning            string // non-empty at >= WarningSessions open sessions: record it as a model warning
	Text               string // the function_call_output text for the model
}

type session struct {
	id      int
	argv    []string
	command string
	cwd     string
	itemID  string
	obs     Observer
	proc    *Process
	pending *HeadTailBuffer // output not yet returned to the model
	agg     *HeadTailBuffer // whole transcript for the item

	emitMu     sync.Mutex
	streaming  bool // deltas flow once the process was announced (after the startup window)
	finished   bool
	terminated bool // ended by Terminate / TerminateAll: the item reports exit code -1, as the reference's
	deltas     int

	callMu   sync.Mutex // one tool call at a time per session
	lastUsed uint64     // guarded by Sessions.mu
}

func (s *session) onOutput(_ Stream, chunk []byte) {
	s.pending.Write(chunk)
	s.agg.Write(chunk)
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	if s.obs != nil && s.streaming && !s.finished && s.deltas < maxDeltasPerSession {
		s.deltas++
		s.obs.OutputDelta(chunk)
	}
}

// finish reports the exit to the observer once.
func (s *session) finish() {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	if s.finished {
		return
	}
	s.finished = true
	if s.obs != nil {
		code := s.proc.ExitCode()
		if s.terminated {
			code = -1
		}
		s.obs.Exited(code, s.agg.String(), s.proc.Duration())
	}
}

// terminate kills the session's process on a client's or the thread's behalf.
func (s *session) terminate() {
	s.emitMu.Lock()
	s.terminated = true
	s.emitMu.Unlock()
	s.proc.Kill()
}

func (x *Sessions) reserve() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	for {
		var id int
		if x.det {
			id = x.nextID
			x.nextID++
			if x.nextID >= maxSessionIDExcl {
				x.nextID = minSessionID
			}
		} else {
			id = minSessionID + mrand.IntN(maxSessionIDExcl-minSessionID)
		}
		if !x.reserved[id] {
			x.reserved[id] = true
			return id
		}
	}
}

func (x *Sessions) release(id int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.reserved, id)
	delete(x.store, id)
}

func clampMs(v *uint64, def, lo, hi uint64) time.Duration {
	ms := def
	if v != nil {
		ms = *v
	}
	ms = min(max(ms, lo), hi)
	return time.Duration(ms) * time.Millisecond
}

func tokensOr(v *uint64) int {
	if v == nil {
		return DefaultMaxOutputTokens
	}
	return int(min(*v, 1<<31))
}

// ExecCommand runs `exec_command`: spawn, collect until exit or the yield deadline (a stopwatch of the
// caller's controller), then either report the exit or keep the process as a session.
// Errors that the model should see are *ToolError; ctx errors are returned as is (the process is kept).
// When the result has Exited, the observer's Exited call came before the return.
func (x *Sessions) ExecCommand(ctx context.Context, req ExecCommandRequest) (ExecResult, error) {
	a := req.Args
	base := req.Env
	if base == nil {
		base = os.Environ()
	}
	shell := x.shell
	if a.Shell != "" {
		shell = resolveShell(a.Shell, base)
	}
	argv := ShellArgv(shell, a.Login, a.Cmd)
	cwd := ResolveDir(req.Cwd, a.Workdir)
	yield := clampMs(a.YieldTimeMs, DefaultExecYieldTimeMs, MinYieldTimeMs, MaxYieldTimeMs)

	id := x.reserve()
	s := &session{id: id, argv: argv, command: ShellJoin(argv), cwd: cwd, itemID: req.ItemID, obs: req.Observer,
		pending: NewHeadTailBuffer(DefaultOutputCap), agg: NewHeadTailBuffer(DefaultOutputCap)}
	p, err := x.m.Spawn(ctx, SpawnRequest{Owner: x.owner, Argv: argv, Cwd: cwd, Env: MergeEnv(base, ForcedEnv...), TTY: a.TTY,
		ShellWrap: req.ShellWrap, WrapArgv: req.WrapArgv, OutputCap: -1, OnOutput: s.onOutput})
	if err != nil {
		x.release(id)
		return ExecResult{}, &ToolError{Msg: "exec_command failed: " + err.Error()}
	}
	if serr := p.SpawnErr(); serr != nil {
		<-p.Done()
		x.release(id)
		return ExecResult{}, createProcessError(serr)
	}
	s.proc = p
	waitStartup(ctx, p, req.Controller)
	// the reference's wall time and yield deadline count from the announcement; later output streams
	start := time.Now()
	s.emitMu.Lock()
	if s.obs != nil {
		s.obs.Started(strconv.Itoa(id), s.command, cwd)
	}
	s.streaming = true
	s.emitMu.Unlock()
	// The call owns the session until it returns; the watcher completes the item only when no call does.
	s.callMu.Lock()
	defer s.callMu.Unlock()
	go func() { // ends when the process is done; Close kills every process
		<-p.Done()
		s.callMu.Lock()
		defer s.callMu.Unlock()
		s.finish()
	}()

	exited, err := collect(ctx, p, yield, req.Controller, s.finish)
	if err != nil {
		if exited {
			s.finish()
			x.release(id)
		} else {
			x.keep(s)
		}
		return ExecResult{}, err
	}
	var warning string
	if !exited {
		warning = x.keep(s)
	}
	return x.respond(s, exited, start, tokensOr(a.MaxOutputTokens), warning), nil
}

// WriteStdin runs `write_stdin`: optionally write chars (then settle 100 ms) and collect like ExecCommand.
func (x *Sessions) WriteStdin(ctx context.Context, req WriteStdinRequest) (ExecResult, error) {
	start := time.Now()
	a := req.Args
	x.mu.Lock()
	s := x.store[a.SessionID]
	if s != nil {
		x.clock++
		s.lastUsed = x.clock
	}
	x.mu.Unlock()
	if s == nil {
		return ExecResult{}, &ToolError{Msg: fmt.Sprintf("write_stdin failed: Unknown process id %d", a.SessionID)}
	}
	s.callMu.Lock()
	defer s.callMu.Unlock()
	var yield time.Duration
	if a.Chars != "" {
		yield = clampMs(a.YieldTimeMs, DefaultWriteYieldTimeMs, MinYieldTimeMs, MaxYieldTimeMs)
		if !s.proc.TTY() {
			return ExecResult{}, &ToolError{Msg: "write_stdin failed: " + stdinClosedMessage}
		}
		if err := s.proc.WriteStdin(ctx, []byte(a.Chars)); err != nil {
			if ctx.Err() != nil {
				return ExecResult{}, ctx.Err()
			}
			select {
			case <-s.proc.Exited(): // the child is gone: report its exit below
			default:
				return ExecResult{}, &ToolError{Msg: "write_stdin failed: " + err.Error()}
			}
		}
	} else {
		yield = clampMs(a.YieldTimeMs, DefaultWriteYieldTimeMs, MinEmptyYieldTimeMs, uint64(x.maxPoll/time.Millisecond))
	}
	if a.Chars != "" {
		t := time.NewTimer(writeSettle)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ExecResult{}, ctx.Err()
		}
	}
	var onEnd func() // a write's interaction is announced after collection, before the exit
	if a.Chars == "" {
		onEnd = s.finish
	}
	exited, err := collect(ctx, s.proc, yield, req.Controller, onEnd)
	if a.Chars != "" {
		s.emitMu.Lock()
		if s.obs != nil && !s.finished {
			s.obs.Interaction(a.Chars)
		}
		s.emitMu.Unlock()
	}
	if err != nil {
		return ExecResult{}, err
	}
	return x.respond(s, exited, start, tokensOr(a.MaxOutputTokens), ""), nil
}

// collect waits for exit+output close (exit alone: until no output arrived for 50 ms) or the yield stopwatch. A process
// that ends while the stopwatch is paused is reported through onEnd (may be nil) at once, as the
// reference completes the item then, while the call's result is held until the pause ends.
func collect(ctx context.Context, p *Process, yield time.Duration, ctrl *stopwatch.Controller, onEnd func()) (bool, error) {
	held := func(sw *stopwatch.Stopwatch) error {
		if onEnd != nil && sw.Paused() {
			onEnd()
		}
		return holdWhilePaused(ctx, sw)
	}
	if ctrl == nil {
		ctrl = stopwatch.NewController()
	}
	sw, release := ctrl.NewStopwatch(yield)
	defer release()
	exitedCh := p.Exited()
	var grace <-chan time.Time
	var graceTimer *time.Timer
	var seenSeq uint64
	for {
		select {
		case <-p.Done():
			return true, held(sw)
		case <-exitedCh:
			exitedCh = nil
			seenSeq = p.OutputSeq()
			graceTimer = time.NewTimer(exitWithoutCloseWait)
			defer graceTimer.Stop()
			grace = graceTimer.C
		case <-grace:
			// The grace is for a pipe held open by a background child, not for output still being
			// drained: while chunks keep arriving or wait unread in the pipe, wait on (the yield
			// deadline still bounds it).
			if seq := p.OutputSeq(); seq != seenSeq || p.Unread() {
				seenSeq = seq
				graceTimer.Reset(exitWithoutCloseWait)
				continue
			}
			return true, held(sw)
		case <-sw.Done():
			select {
			case <-p.Exited():
				return true, nil
			default:
				return false, nil
			}
		case <-ctx.Done():
			select {
			case <-p.Exited():
				return true, ctx.Err()
			default:
				return false, ctx.Err()
			}
		}
	}
}

// holdWhilePaused keeps a finished call from returning while its stopwatch is paused (the thread waits on
// a human); it returns when resumed or with ctx's error.
func holdWhilePaused(ctx context.Context, sw *stopwatch.Stopwatch) error {
	for {
		changed := sw.Changed()
		if !sw.Paused() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// respond drains the pending output and formats the model text; an exited session is released.
func (x *Sessions) respond(s *session, exited bool, start time.Time, maxTokens int, warning string) ExecResult {
	if exited {
		s.finish()
		x.release(s.id)
	}
	kept, produced := s.pending.DrainTotal()
	out := string(kept)
	// The count is of what the command produced, not of the 1 MiB kept of it.
	r := ExecResult{ChunkID: chunkID(), WallTime: time.Since(start), Exited: exited, SessionID: s.id,
		Output: out, OriginalTokenCount: ApproxTokens(int(produced)), Warning: warning}
	var b strings.Builder
	fmt.Fprintf(&b, "Chunk ID: %s\nWall time: %.4f seconds\n", r.ChunkID, r.WallTime.Seconds())
	if exited {
		r.ExitCode = s.proc.ExitCode()
		fmt.Fprintf(&b, "Process exited with code %d\n", r.ExitCode)
	} else {
		fmt.Fprintf(&b, "Process running with session ID %d\n", s.id)
	}
	fmt.Fprintf(&b, "Original token count: %d\nOutput:\n%s", r.OriginalTokenCount, FormatModelOutput(out, maxTokens))
	r.Text = b.String()
	return r
}

// keep stores a live session (pruning one if the table is full) and returns the warning text, if any.
func (x *Sessions) keep(s *session) string {
	x.mu.Lock()
	x.clock++
	s.lastUsed = x.clock
	var victim *session
	if _, ok := x.store[s.id]; !ok {
		if len(x.store) >= MaxSessions {
			victim = x.pruneLocked()
		}
		x.store[s.id] = s
	}
	n := len(x.store)
	x.mu.Unlock()
	if victim != nil {
		victim.proc.Kill()
	}
	if n >= WarningSessions {
		return fmt.Sprintf("The maximum number of unified exec processes you can keep open is %d and you currently have %d processes open. Reuse older processes or close them to prevent automatic pruning of old processes", WarningSessions, n)
	}
	return ""
}

// pruneLocked removes the least recently used exited session outside the 8 most recent, else the least
// recently used live one; the caller terminates it.
func (x *Sessions) pruneLocked() *session {
	all := make([]*session, 0, len(x.store))
	for _, s := range x.store {
		all = append(all, s)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].lastUsed < all[j].lastUsed })
	candidates := all[:max(len(all)-protectedSessions, 0)]
	if len(candidates) == 0 {
		return nil
	}
	victim := candidates[0]
	for _, s := range candidates {
		select {
		case <-s.proc.Exited():
			victim = s
		default:
			continue
		}
		break
	}
	delete(x.store, victim.id)
	delete(x.reserved, victim.id)
	return victim
}

// SessionIDs returns the ids of the stored sessions, in no particular order.
func (x *Sessions) SessionIDs() []int {
	x.mu.Lock()
	defer x.mu.Unlock()
	ids := make([]int, 0, len(x.store))
	for id := range x.store {
		ids = append(ids, id)
	}
	return ids
}

// Terminal is one stored session, as thread/backgroundTerminals/list shows it.
type Terminal struct {
	ID      int
	ItemID  string
	Command string
	Cwd     string
	Pid     int
}

// Terminals returns the stored sessions whose process still runs, ordered by id.
func (x *Sessions) Terminals() []Terminal {
	x.mu.Lock()
	out := make([]Terminal, 0, len(x.store))
	for id, s := range x.store {
		if s.proc == nil || s.proc.isDone() {
			continue
		}
		out = append(out, Terminal{ID: id, ItemID: s.itemID, Command: s.command, Cwd: s.cwd, Pid: s.proc.Pid()})
	}
	x.mu.Unlock()
	slices.SortFunc(out, func(a, b Terminal) int { return a.ID - b.ID })
	return out
}

// Terminate kills one stored session's process group and forgets it; false if the id is unknown.
func (x *Sessions) Terminate(id int) bool {
	x.mu.Lock()
	s := x.store[id]
	delete(x.store, id)
	delete(x.reserved, id)
	x.mu.Unlock()
	if s == nil {
		return false
	}
	s.terminate()
	return true
}

// TerminateAll kills every stored session (thread end / background-terminal cleanup) and, with an
// Owner, everything the owner's commands left running.
func (x *Sessions) TerminateAll() {
	if x.owner != "" {
		defer x.m.KillOwner(x.owner)
	}
	x.mu.Lock()
	victims := make([]*session, 0, len(x.store))
	for id, s := range x.store {
		victims = append(victims, s)
		delete(x.reserved, id)
	}
	clear(x.store)
	x.mu.Unlock()
	for _, s := range victims {
		s.terminate()
	}
}

// createProcessError is the reference's failure text when the command could not be started.
func createProcessError(serr error) *ToolError {
	var se *SpawnError
	reason := serr.Error()
	if errors.As(serr, &se) {
		reason = oserr.Text(se.Err)
	}
	out := "Failed to create unified exec process: " + reason
	return &ToolError{
		Msg:    fmt.Sprintf("exec_command failed: CreateProcess { message: %q }", fmt.Sprintf("Rejected(%q)", out)),
		Output: out,
	}
}

// resolveShell resolves a model-chosen shell: a bare name through PATH to an absolute path; a shell that
// cannot be found falls back to /bin/sh, as the reference does.
func resolveShell(shell string, env []string) string {
	path, err := lookPath(shell, env, "")
	if err != nil {
		return "/bin/sh"
	}
	if strings.Contains(shell, "/") {
		if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "/bin/sh"
		}
		return path
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

func chunkID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
