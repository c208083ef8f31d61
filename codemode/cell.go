package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/google/uuid"

	"appserver/thread"
)

// cellStatus is where a script stands.
type cellStatus int

const (
	cellRunning cellStatus = iota
	cellCompleted
	cellFailed
	cellTerminated
)

// exitSignal is the interrupt value of exit(); terminateSignal that of wait's terminate and turn ends.
type signal string

const (
	exitSignal      signal = "exit"
	terminateSignal signal = "terminate"
)

// maxCallStack bounds a script's JavaScript call depth.
const maxCallStack = 4096

// terminateGrace bounds how long a stop waits for the script's loop to notice it (an interrupted engine
// stops at its next instruction, so this only matters for a bug).
const terminateGrace = 5 * time.Second

// cell is one exec script: a goja runtime driven by its own goroutine (the loop), which alone touches
// the runtime; nested tool calls and timers post their results to it as jobs.
type cell struct {
	id      string
	set     *Set
	tc      *thread.ToolContext
	vm      *goja.Runtime
	jobs    chan func() error
	ctx     context.Context // ends when the cell stops: cancels its nested calls
	cancel  context.CancelFunc
	done    chan struct{} // closed when the loop returned
	yielded chan int      // yield_control(): the output count at the yield (as taken+len(items)), 1-buffered

	// Loop-only state.
	timers    map[int64]*time.Timer
	nextTimer int64
	lines     int // the source's line count

	callID string // the exec call that started the cell

	mu      sync.Mutex
	items   []json.RawMessage // output not yet returned to the model
	taken   int               // output items returned so far
	notes   []string          // notify() texts not yet returned
	status  cellStatus
	errText string
}

// exec starts a script and waits for its end or its yield time.
func (s *Set) exec(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) json.RawMessage {
	started := time.Now()
	src, yield, maxTokens, perr := parsePragma(call.Input)
	st := s.st
	st.mu.Lock()
	st.next++
	id := strconv.Itoa(st.next)
	st.mu.Unlock()
	if perr != "" {
		return thread.CustomOutputRaw(call.CallID, render(cellFailed, "", time.Since(started), []json.RawMessage{textItem("Script error:\n" + perr)}, maxTokens))
	}
	// The cell may outlive the call (and the turn): it stops on wait's terminate, on an interruption
	// while exec waits for it, or when the thread closes.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &cell{id: id, callID: call.CallID, set: s, tc: tc, vm: goja.New(), jobs: make(chan func() error), ctx: cctx, cancel: cancel,
		done: make(chan struct{}), yielded: make(chan int, 1), timers: map[int64]*time.Timer{}}
	st.mu.Lock()
	st.cells[id] = c
	st.mu.Unlock()
	go c.run(src)
	status, items := c.await(ctx, yield)
	return c.withNotes(thread.CustomOutputRaw(call.CallID, render(status, id, time.Since(started), items, maxTokens)))
}

// withNotes appends the pending notify() texts to an exec or wait output, each a custom_tool_call_output
// of the exec call named "exec", as the reference injects them (see thread.ToolSet.Call).
func (c *cell) withNotes(out json.RawMessage) json.RawMessage {
	c.mu.Lock()
	notes := c.notes
	c.notes = nil
	c.mu.Unlock()
	if len(notes) == 0 {
		return out
	}
	items := []json.RawMessage{out}
	for _, n := range notes {
		b, _ := json.Marshal(struct {
			Type   string `json:"type"`
			ID     string `json:"id"`
			CallID string `json:"call_id"`
			Name   string `json:"name"`
			Output string `json:"output"`
		}{"custom_tool_call_output", "ctco_" + uuid.Must(uuid.NewV7()).String(), c.callID, ExecTool, n})
		items = append(items, b)
	}
	b, _ := json.Marshal(items)
	return b
}

// wait resumes (or stops) a cell.
func (s *Set) wait(ctx context.Context, call thread.ToolCall) json.RawMessage {
	started := time.Now()
	var args struct {
		CellID      string   `json:"cell_id"`
		YieldTimeMs *float64 `json:"yield_time_ms"`
		MaxTokens   *float64 `json:"max_tokens"`
		Terminate   bool     `json:"terminate"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return thread.FunctionOutput(call.CallID, "failed to parse function arguments: "+err.Error())
	}
	maxTokens := defaultMaxTokens
	if args.MaxTokens != nil && *args.MaxTokens > 0 {
		maxTokens = int(*args.MaxTokens)
	}
	yield := defaultWaitYield
	if args.YieldTimeMs != nil && *args.YieldTimeMs >= 0 {
		yield = time.Duration(*args.YieldTimeMs) * time.Millisecond
	}
	c := s.st.cell(args.CellID)
	if c == nil {
		return thread.FunctionOutputRaw(call.CallID, render(cellFailed, "", time.Since(started),
			[]json.RawMessage{textItem(fmt.Sprintf("Script error:\nexec cell %s not found", args.CellID))}, maxTokens))
	}
	if args.Terminate {
		c.terminate()
		s.st.drop(c.id)
		return c.withNotes(thread.FunctionOutputRaw(call.CallID, render(cellTerminated, c.id, time.Since(started), c.take(), maxTokens)))
	}
	status, items := c.await(ctx, yield)
	return c.withNotes(thread.FunctionOutputRaw(call.CallID, render(status, c.id, time.Since(started), items, maxTokens)))
}

// await waits up to yield for the cell to end (or yield_control), then takes its new output; a caller
// whose context ends (the turn interrupted) stops the cell. A yield_control() is answered as the
// script stood when it yielded (running, with the output made before it), even if the script went on
// and ended before this caller ran.
func (c *cell) await(ctx context.Context, yield time.Duration) (cellStatus, []json.RawMessage) {
	timer := time.NewTimer(yield)
	defer timer.Stop()
	select {
	case <-c.done:
	case mark := <-c.yielded:
		return cellRunning, c.takeUpTo(mark)
	case <-timer.C:
	case <-ctx.Done():
		c.terminate()
		return c.settle()
	}
	select {
	case mark := <-c.yielded: // the script yielded before it ended or the time ran out
		return cellRunning, c.takeUpTo(mark)
	default:
	}
	return c.settle()
}

// settle takes the output not yet returned with the cell's status, releasing a cell that stopped.
func (c *cell) settle() (cellStatus, []json.RawMessage) {
	c.mu.Lock()
	status := c.status
	c.mu.Unlock()
	if status != cellRunning {
		c.set.st.drop(c.id)
	}
	return status, c.take()
}

// take returns the output not yet returned.
func (c *cell) take() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	items := c.items
	c.items = nil
	c.taken += len(items)
	return items
}

// takeUpTo returns the output not yet returned that was made before the mark (a count of all output).
func (c *cell) takeUpTo(mark int) []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(max(mark-c.taken, 0), len(c.items))
	items := slices.Clone(c.items[:n])
	c.items = slices.Clone(c.items[n:])
	c.taken += n
	return items
}

// terminate stops the script (if it still runs) and waits, bounded, for its loop to end.
func (c *cell) terminate() {
	c.cancel()
	c.vm.Interrupt(terminateSignal)
	select {
	case <-c.done:
	case <-time.After(terminateGrace):
	}
}

func (c *cell) finish(status cellStatus, errText string) {
	c.mu.Lock()
	if c.status == cellRunning {
		c.status = status
		if errText != "" {
			c.items = append(c.items, textItem("Script error:\n"+errText))
		}
	}
	c.mu.Unlock()
}

// post hands a job to the loop (dropped once the cell stopped).
func (c *cell) post(job func() error) {
	select {
	case c.jobs <- job:
	case <-c.done:
	}
}

// run is the loop: it runs the script, then the jobs, until the script's promise settles or the cell
// is stopped.
func (c *cell) run(src string) {
	defer close(c.done)
	defer c.cancel()
	defer func() {
		for _, t := range c.timers {
			t.Stop()
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			c.finish(cellFailed, fmt.Sprintf("internal error: %v", p))
		}
	}()
	// Runaway recursion fails as a RangeError instead of growing the Go stack without bound.
	c.vm.SetMaxCallStackSize(maxCallStack)
	c.install()
	c.lines = strings.Count(src, "\n") + 1
	// The source is the body of an async function, so top-level await works; it starts on line 1.
	prog, err := goja.Compile("exec_main.mjs", wrapperPrefix+src+"\n})()", true)
	if err != nil {
		c.finish(cellFailed, syntaxText(err))
		return
	}
	v, err := c.vm.RunProgram(prog)
	if err != nil {
		c.fail(err)
		return
	}
	p, ok := v.Export().(*goja.Promise)
	if !ok {
		c.finish(cellCompleted, "")
		return
	}
	for {
		switch p.State() {
		case goja.PromiseStateFulfilled:
			c.finish(cellCompleted, "")
			return
		case goja.PromiseStateRejected:
			c.finish(cellFailed, errorText(p.Result(), c.lines))
			return
		}
		select {
		case job := <-c.jobs:
			if err := job(); err != nil {
				c.fail(err)
				return
			}
		case <-c.ctx.Done():
			c.finish(cellTerminated, "")
			return
		}
	}
}

// fail ends the cell for an error out of the engine: an interruption (exit, terminate) or a throw.
func (c *cell) fail(err error) {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if ie.Value() == exitSignal {
			c.finish(cellCompleted, "")
		} else {
			c.finish(cellTerminated, "")
		}
		return
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		c.finish(cellFailed, "RangeError: Maximum call stack size exceeded")
		return
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		c.finish(cellFailed, errorText(ex.Value(), c.lines))
		return
	}
	c.finish(cellFailed, err.Error())
}

// syntaxText is a compile error as the model reads it: the message without the engine's position prefix.
func syntaxText(err error) string {
	var se *goja.CompilerSyntaxError
	if errors.As(err, &se) {
		msg := syntaxPos().ReplaceAllString(se.Message, "")
		if i := strings.Index(msg, " (and "); i > 0 {
			msg = msg[:i]
		}
		return "SyntaxError: " + msg
	}
	return err.Error()
}

var (
	syntaxPos = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^exec_main\.mjs: Line \d+:\d+ `) })
	framePos  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`exec_main\.mjs:(\d+):(\d+)(\(\d+\))?`) })
)

// wrapperPrefix is what run puts before the source on its first line.
const wrapperPrefix = "(async () => {"

// errorText renders a thrown value: an Error's name, message and the script's own frames (positions
// in the model's source), any other value as its string.
func errorText(v goja.Value, lines int) string {
	if v == nil {
		return "undefined"
	}
	o, ok := v.(*goja.Object)
	if !ok {
		return v.String()
	}
	st := o.Get("stack")
	if st == nil || goja.IsUndefined(st) {
		return v.String()
	}
	out := []string{v.String()}
	for _, l := range strings.Split(st.String(), "\n")[1:] {
		m := framePos().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		if line > lines {
			continue // the wrapper's own call
		}
		if line == 1 {
			col -= len(wrapperPrefix)
		}
		out = append(out, fmt.Sprintf("    at exec_main.mjs:%d:%d", line, col))
	}
	return strings.Join(out, "\n")
}

// parsePragma splits an optional first-line `// @exec: {…}` off the source.
func parsePragma(input string) (src string, yield time.Duration, maxTokens int, errText string) {
	src, yield, maxTokens = input, defaultExecYield, defaultMaxTokens
	first, rest, _ := strings.Cut(input, "\n")
	trimmed := strings.TrimSpace(first)
	if !strings.HasPrefix(trimmed, "// @exec:") {
		return
	}
	var p struct {
		YieldTimeMs     *float64 `json:"yield_time_ms"`
		MaxOutputTokens *float64 `json:"max_output_tokens"`
	}
	dec := json.NewDecoder(strings.NewReader(strings.TrimPrefix(trimmed, "// @exec:")))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return "", 0, maxTokens, "invalid exec pragma: " + err.Error()
	}
	if p.YieldTimeMs != nil && *p.YieldTimeMs >= 0 {
		yield = time.Duration(*p.YieldTimeMs) * time.Millisecond
	}
	if p.MaxOutputTokens != nil && *p.MaxOutputTokens > 0 {
		maxTokens = int(*p.MaxOutputTokens)
	}
	// The pragma line stays as an empty line, so error positions keep the model's line numbers.
	return "\n" + strings.TrimSuffix(rest, "\r"), yield, maxTokens, ""
}

// render is an exec or wait output: a header ("Script completed" …, wall time) alone as a string, or
// followed by the output items as a content list.
func render(status cellStatus, id string, wall time.Duration, items []json.RawMessage, maxTokens int) json.RawMessage {
	head := map[cellStatus]string{cellCompleted: "Script completed", cellFailed: "Script failed", cellTerminated: "Script terminated"}[status]
	if status == cellRunning {
		head = "Script running with cell ID " + id
	}
	header := fmt.Sprintf("%s\nWall time %.1f seconds\nOutput:\n", head, wall.Seconds())
	if len(items) == 0 {
		b, _ := json.Marshal(header)
		return b
	}
	out := append([]json.RawMessage{textItem(header)}, truncate(items, maxTokens)...)
	b, _ := json.Marshal(out)
	return b
}

// truncate keeps the text items within roughly maxTokens tokens (4 bytes a token), cutting the item
// that crosses the budget and dropping the texts after it.
func truncate(items []json.RawMessage, maxTokens int) []json.RawMessage {
	budget := maxTokens * 4
	out := make([]json.RawMessage, 0, len(items))
	for _, raw := range items {
		var it struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &it) != nil || it.Type != "input_text" {
			out = append(out, raw)
			continue
		}
		if budget <= 0 {
			continue
		}
		if len(it.Text) > budget {
			out = append(out, textItem(it.Text[:budget]+fmt.Sprintf("\n…%d tokens truncated…", (len(it.Text)-budget)/4)))
			budget = 0
			continue
		}
		budget -= len(it.Text)
		out = append(out, raw)
	}
	return out
}

func textItem(text string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"input_text", text})
	return b
}

func imageItem(url string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type     string `json:"type"`
		ImageURL string `json:"image_url"`
	}{"input_image", url})
	return b
}
