package thread

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// toolRun executes the tool calls of one model response (one stream attempt) in parallel. Like the
// reference, each call starts as soon as its output item completes in the stream, while the response
// may still stream other items; wait collects the outputs in call order once the response is over.
type toolRun struct {
	tn   *Turn
	tc   *ToolContext
	sets []ToolSet
	wg   sync.WaitGroup

	mu      sync.Mutex
	calls   []ToolCall
	started []time.Time
	outputs []json.RawMessage // nil until the call finished (before any interruption)
}

func (tn *Turn) newToolRun(s Settings, sets []ToolSet) *toolRun {
	return &toolRun{tn: tn, sets: sets, tc: &ToolContext{Thread: tn.thread, Turn: tn, Settings: s, Log: tn.thread.log}}
}

// start launches one call.
func (r *toolRun) start(call ToolCall) {
	r.mu.Lock()
	i := len(r.calls)
	r.calls = append(r.calls, call)
	r.started = append(r.started, time.Now())
	r.outputs = append(r.outputs, nil)
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		out := dispatchTool(r.tn.ctx, r.tc, r.sets, call)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.tn.ctx.Err() == nil {
			r.outputs[i] = out
		}
	}()
}

// roundEnded tells the sets that implement RoundEnder that the response is done.
func (r *toolRun) roundEnded() {
	for _, set := range r.sets {
		if re, ok := set.(RoundEnder); ok {
			re.RoundEnded(r.tc)
		}
	}
}

// count is the number of calls started.
func (r *toolRun) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// abortAll returns an "aborted by user" output for every started call, in call order: what the
// history gets when the turn is interrupted while the response still streams (the reference drops the
// outputs of calls it had started then, finished or not).
func (r *toolRun) abortAll() []json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := make([]json.RawMessage, len(r.calls))
	for i, call := range r.calls {
		res[i] = abortedOutput(call, time.Since(r.started[i]))
	}
	return res
}

// wait returns the outputs in call order once every call finished; ok is false when the turn was
// interrupted meanwhile. The tools then finish on their own and, as in the reference, every call that
// had not finished before the interruption gets an "aborted by user" output. When a tool itself ended
// the turn, the other calls get a grace period to finish first (their items complete before the turn
// does).
func (r *toolRun) wait() ([]json.RawMessage, bool) {
	ctx := r.tn.ctx
	all := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(all)
	}()
	select {
	case <-all:
		if ctx.Err() == nil {
			r.mu.Lock()
			defer r.mu.Unlock()
			var res []json.RawMessage
			for _, out := range r.outputs {
				res = append(res, outputItems(out)...)
			}
			return res, true
		}
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), errToolCancelled) {
			select {
			case <-all:
			case <-time.After(toolCancelGrace):
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var res []json.RawMessage
	for i, call := range r.calls {
		if r.outputs[i] == nil {
			res = append(res, abortedOutput(call, time.Since(r.started[i])))
			continue
		}
		res = append(res, outputItems(r.outputs[i])...)
	}
	return res, false
}

// toolCancelGrace bounds how long a turn ended by one of its tools waits for its other tool calls.
const toolCancelGrace = 2 * time.Second
