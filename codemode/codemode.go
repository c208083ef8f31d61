// Package codemode offers a turn's tools the way the reference's code-mode models (catalogue
// `tool_mode = "code_mode_only"`) get them: one `additional_tools` input item holding a freeform `exec`
// tool that runs model-written JavaScript (in-process, github.com/dop251/goja) with the other tools on a
// global `tools` object, and a `wait` tool that resumes or stops a script that outlived its yield time.
// Nested calls go through the ordinary tool sets, so their items, approvals and sandbox are the usual ones.
package codemode

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"appserver/thread"
)

// The tool names the model sees.
const (
	ExecTool = "exec"
	WaitTool = "wait"
	// functionsNS is the namespace exec, wait and the direct tools are listed in.
	functionsNS = "functions"
)

// Defaults of the reference: exec yields after 30 s, wait after 10 s; both return at most 10000 tokens.
const (
	defaultExecYield = 30 * time.Second
	defaultWaitYield = 10 * time.Second
	defaultMaxTokens = 10000
)

// Set is the code-mode tool set of one turn: exec and wait (plus the direct tools listed next to them)
// in the additional_tools item, every nested tool reached from JavaScript.
type Set struct {
	// Plain sends exec, wait and the direct tools in the request's `tools` array instead of an
	// additional_tools item (the features.code_mode_only / features.code_mode form).
	Plain bool
	// Undescribed leaves the nested tools out of exec's description (features.code_mode: they are
	// offered as plain tools too).
	Undescribed bool

	st *state
	// async adds the gpt-6.x tools: request_user_input_async, the clock namespace, clock__curr_time.
	async bool
	// noAsyncInput leaves request_user_input_async out of the async tools (a sub-agent's set).
	noAsyncInput bool
	// collab is the `collaboration` namespace (multi-agent v2), offered after clock; nil: none.
	collab thread.ToolSet
	nested []thread.ToolSet
	direct []thread.ToolSet
	tools  []nestedTool // sorted by JS name
}

// New builds a thread's code-mode set for one turn: nested are reached only from exec's JavaScript,
// direct are offered to the model next to exec and wait (request_user_input).
func New(t *thread.Thread, nested, direct []thread.ToolSet) *Set {
	return newSet(stateOf(t), nested, direct)
}

func newSet(st *state, nested, direct []thread.ToolSet) *Set {
	s := &Set{st: st, nested: nested, direct: direct}
	for _, set := range nested {
		for _, raw := range set.Specs() {
			s.tools = append(s.tools, nestedTools(raw)...)
		}
	}
	sort.SliceStable(s.tools, func(i, j int) bool {
		// Namespaced tools (deferred in the reference) come after the plain ones.
		if (s.tools[i].namespace == "") != (s.tools[j].namespace == "") {
			return s.tools[i].namespace == ""
		}
		return s.tools[i].js < s.tools[j].js
	})
	return s
}

// WithAsyncTools returns the set with the reference's gpt-6.x additions: request_user_input_async next to
// request_user_input, a `clock` namespace (sleep) and the nested clock__curr_time.
func (s *Set) WithAsyncTools() *Set {
	out := newSet(s.st, append(append([]thread.ToolSet(nil), s.nested...), clockNested{}), s.direct)
	out.Plain, out.Undescribed, out.async = s.Plain, s.Undescribed, true
	return out
}

// WithoutAsyncInput returns the set without request_user_input_async: the reference gives its sub-agents
// the other gpt-6.x tools but not that one.
func (s *Set) WithoutAsyncInput() *Set {
	out := *s
	out.noAsyncInput = true
	return &out
}

// WithCollaboration returns the set offering collab (a tool set whose one spec is the `collaboration`
// namespace) in the additional_tools item after the clock namespace, its calls routed to it.
func (s *Set) WithCollaboration(collab thread.ToolSet) *Set {
	out := *s
	out.collab = collab
	return &out
}

// Keep returns a copy of the set whose nested tools are the sets keep accepts (a reviewer's tools).
func (s *Set) Keep(keep func(thread.ToolSet) bool) *Set {
	var nested []thread.ToolSet
	for _, n := range s.nested {
		if keep(n) {
			nested = append(nested, n)
		}
	}
	out := newSet(s.st, nested, s.direct)
	out.Plain, out.Undescribed, out.async, out.collab, out.noAsyncInput = s.Plain, s.Undescribed, s.async, s.collab, s.noAsyncInput
	return out
}

// Specs are exec, wait and the direct tools in the plain form, else none (they travel in ToolsItem).
func (s *Set) Specs() []json.RawMessage {
	if !s.Plain {
		return nil
	}
	return s.functions()
}

func (s *Set) functions() []json.RawMessage {
	described := s.tools
	if s.Undescribed {
		described = nil
	}
	fns := []json.RawMessage{execSpec(described), waitSpec()}
	for _, set := range s.direct {
		fns = append(fns, set.Specs()...)
	}
	if s.async && !s.noAsyncInput {
		fns = append(fns, asyncInputSpec())
	}
	return fns
}

// ToolsItem is the additional_tools input item (its id is the thread's, stable across turns); nil in
// the plain form.
func (s *Set) ToolsItem() json.RawMessage {
	if s.Plain {
		return nil
	}
	fns := s.functions()
	item := struct {
		Type  string `json:"type"`
		ID    string `json:"id"`
		Role  string `json:"role"`
		Tools []any  `json:"tools"`
	}{"additional_tools", s.st.itemID, "developer", []any{namespace{Type: "namespace", Name: functionsNS, Description: "", Tools: fns}}}
	if s.async {
		item.Tools = append(item.Tools, clockNamespace())
	}
	if s.collab != nil {
		for _, spec := range s.collab.Specs() {
			item.Tools = append(item.Tools, spec)
		}
	}
	b, _ := json.Marshal(item)
	return b
}

type namespace struct {
	Type        string            `json:"type"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Tools       []json.RawMessage `json:"tools"`
}

// Call runs exec and wait, and the direct tools (called bare or in the functions namespace).
func (s *Set) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if s.async && call.Namespace == clockNS && call.Name == sleepTool && call.Type == "function_call" {
		return sleep(ctx, tc, call), true
	}
	if s.collab != nil && call.Namespace != "" && call.Namespace != functionsNS {
		if out, ok := s.collab.Call(ctx, tc, call); ok {
			return out, true
		}
	}
	if call.Namespace != "" && call.Namespace != functionsNS {
		if strings.HasPrefix(call.Namespace, "mcp__") {
			// A top-level call of an MCP server's tool by namespace runs as outside code mode (the reference,
			// on gpt-6-sol); its flat `mcp__<server>__<tool>` name is unsupported there too.
			for _, set := range s.nested {
				if out, ok := set.Call(ctx, tc, call); ok {
					return out, true
				}
			}
		}
		return nil, false
	}
	switch {
	case s.async && !s.noAsyncInput && call.Name == asyncInput && call.Type == "function_call":
		return askAsync(tc, call), true
	case call.Name == ExecTool && call.Type == "custom_tool_call":
		return s.exec(ctx, tc, call), true
	case call.Name == WaitTool && call.Type == "function_call":
		return s.wait(ctx, call), true
	}
	bare := call
	bare.Namespace = ""
	for _, set := range s.direct {
		if out, ok := set.Call(ctx, tc, bare); ok {
			return out, true
		}
	}
	if call.Namespace == "" {
		// A top-level call of a nested tool (exec_command, …) runs as it would outside code mode: the
		// reference answers it although the model was offered only exec.
		for _, set := range s.nested {
			if out, ok := set.Call(ctx, tc, call); ok {
				return out, true
			}
		}
	}
	return nil, false
}

// state is a thread's code-mode state: the additional_tools item id, the live cells and the values
// scripts stored.
type state struct {
	itemID string

	mu     sync.Mutex
	next   int
	cells  map[string]*cell
	stored map[string]string // key → JSON
	// replaced: a script exceeded the memory cap; the next exec or wait answers replacedText.
	replaced bool
}

type stateKey struct{}

func stateOf(t *thread.Thread) *state {
	return t.AttachOnce(stateKey{}, func() any {
		id := t.RecordedToolsItemID()
		if id == "" {
			id = "at_" + uuid.Must(uuid.NewV7()).String()
		}
		st := &state{itemID: id, cells: map[string]*cell{}, stored: map[string]string{}}
		t.OnClose(st.terminateAll)
		return st
	}).(*state)
}

func (st *state) terminateAll() {
	st.mu.Lock()
	cells := make([]*cell, 0, len(st.cells))
	for _, c := range st.cells {
		cells = append(cells, c)
	}
	st.cells = map[string]*cell{}
	st.mu.Unlock()
	for _, c := range cells {
		c.terminate()
	}
}

func (st *state) cell(id string) *cell {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cells[strings.TrimSpace(id)]
}

func (st *state) drop(c *cell) {
	st.mu.Lock()
	if st.cells[c.id] == c {
		delete(st.cells, c.id)
	}
	st.mu.Unlock()
}

// lose drops the thread's cells (stopping them without waiting) and stored values after culprit
// exceeded the memory cap; the next exec or wait call says so.
func (st *state) lose(culprit *cell) {
	st.mu.Lock()
	cells := st.cells
	st.cells = map[string]*cell{}
	st.stored = map[string]string{}
	st.replaced = true
	st.mu.Unlock()
	for _, c := range cells {
		if c != culprit && c.lost.CompareAndSwap(false, true) {
			c.vm.Interrupt(memorySignal)
			c.cancel()
		}
	}
}

// takeReplaced reports (once) that the thread's state was lost to the memory cap.
func (st *state) takeReplaced() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	r := st.replaced
	st.replaced = false
	return r
}
