package tools

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"appserver/codemode"
	"appserver/config"
	"appserver/execmgr"
	"appserver/execpolicy"
	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/sandbox"
	"appserver/thread"
)

// Deps are what the tool sets need from the server.
type Deps struct {
	Config *config.Config
	Exec   *execmgr.Manager
	Logger *slog.Logger
	// SandboxSelf is the binary re-executed as the sandbox helper ("" = os.Executable()).
	SandboxSelf string
	// MultiAgent returns the sub-agent tools of a turn (nil: none), offered after view_image as the
	// reference places its multi_agent_v1 namespace.
	MultiAgent func(t *thread.Thread, s thread.Settings) thread.ToolSet
	// Collaboration returns the `collaboration` namespace a code-mode turn offers in its additional_tools
	// item after clock (nil: none).
	Collaboration func(t *thread.Thread, s thread.Settings) thread.ToolSet
	// Extra tool sets added to every turn (MCP, tests).
	Extra func(t *thread.Thread, s thread.Settings) []thread.ToolSet
}

// Provider returns the thread.ToolProvider that builds each turn's tools.
func Provider(d Deps) thread.ToolProvider {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return func(t *thread.Thread, s thread.Settings) []thread.ToolSet {
		st := state(t, &d)
		sw := switchesOf(s.EffectiveConfig(d.Config), s.Model)
		if sw.codeMode {
			return codeModeSets(t, s, &d, st, sw)
		}
		sets := normalSets(t, s, &d, st, sw)
		if sw.codeModeAlongside {
			cm := codemode.New(t, sets, nil)
			cm.Plain, cm.Undescribed = true, true
			sets = append([]thread.ToolSet{cm}, sets...)
		}
		return sets
	}
}

// normalSets are the tools in the plain tools array (no code mode).
func normalSets(t *thread.Thread, s thread.Settings, d *Deps, st *threadState, sw toolSwitches) []thread.ToolSet {
	var sets, extra []thread.ToolSet
	if d.Extra != nil {
		extra = d.Extra(t, s)
	}
	// The MCP tools take the reference's places: the resource functions after the command tools, the servers'
	// namespaces after the sub-agent tools.
	var mcpResources, mcpNamespaces thread.ToolSet
	for i, e := range extra {
		if m, ok := e.(*mcpSet); ok {
			mcpResources, mcpNamespaces = m.split()
			extra = append(extra[:i:i], extra[i+1:]...)
			break
		}
	}
	if sw.commands {
		sets = append(sets, &execSet{deps: d, st: st})
	}
	if mcpResources != nil {
		sets = append(sets, mcpResources)
	}
	if sw.updatePlan {
		sets = append(sets, planSet{})
	}
	if sw.requestUserInput {
		sets = append(sets, userInputSet{})
	}
	if sw.applyPatch {
		sets = append(sets, &patchSet{deps: d, st: st})
	}
	if sw.viewImage {
		sets = append(sets, viewImageSet{})
	}
	if d.MultiAgent != nil {
		if ma := d.MultiAgent(t, s); ma != nil {
			sets = append(sets, ma)
		}
	}
	if mcpNamespaces != nil {
		sets = append(sets, mcpNamespaces)
	}
	if sw.goals {
		sets = append(sets, goalSet{})
	}
	if len(s.DynamicTools) > 0 {
		sets = append(sets, dynamicSet{specs: s.DynamicTools})
	}
	searchAt := len(sets)
	if sw.webSearch == "cached" || sw.webSearch == "live" {
		sets = append(sets, webSearchSet{live: sw.webSearch == "live", images: sw.searchImages})
	}
	sets = append(sets, extra...)
	sets = append(sets, diffSet{})
	// tool_search follows the dynamic tools, as the reference places it.
	search := deferTools(sets, s, false)
	return append(sets[:searchAt], append([]thread.ToolSet{search}, sets[searchAt:]...)...)
}

// codeModeSets are a code-mode model's tools: request_user_input next to exec and wait, every other
// tool nested in exec's JavaScript (the reference's tool_mode "code_mode_only").
func codeModeSets(t *thread.Thread, s thread.Settings, d *Deps, st *threadState, sw toolSwitches) []thread.ToolSet {
	var nested, direct []thread.ToolSet
	if sw.commands {
		nested = append(nested, &execSet{deps: d, st: st})
	}
	if sw.updatePlan {
		nested = append(nested, planSet{})
	}
	if sw.requestUserInput {
		direct = append(direct, userInputSet{})
	}
	if sw.applyPatch {
		nested = append(nested, &patchSet{deps: d, st: st})
	}
	if sw.viewImage {
		nested = append(nested, viewImageSet{})
	}
	if sw.goals {
		nested = append(nested, goalSet{})
	}
	if len(s.DynamicTools) > 0 {
		nested = append(nested, dynamicSet{specs: s.DynamicTools, nested: true})
	}
	if d.Extra != nil {
		nested = append(nested, d.Extra(t, s)...)
	}
	if !offersResourceTools(nested) {
		nested = append(nested, noServerResources{})
	}
	search := deferTools(nested, s, true)
	cm := codemode.New(t, nested, direct)
	cm.Plain = sw.codeModePlain
	if !cm.Plain && model.AsyncTools(s.Model) {
		cm = cm.WithAsyncTools()
		if t.Info().Source.SubAgent != nil {
			cm = cm.WithoutAsyncInput() // as the reference's sub-agents
		}
	}
	if !cm.Plain && d.Collaboration != nil {
		if c := d.Collaboration(t, s); c != nil {
			cm = cm.WithCollaboration(c)
		}
	}
	// Code mode offers no tool_search, yet a tool_search_call is answered as on the other models.
	sets := []thread.ToolSet{cm, search}
	if sw.webSearch == "cached" || sw.webSearch == "live" {
		sets = append(sets, webSearchSet{live: sw.webSearch == "live", images: sw.searchImages})
	}
	return append(sets, diffSet{})
}

type stateKey struct{}

// threadState is the per-thread state of the tools: the unified-exec sessions and the approvals granted
// for the session.
type threadState struct {
	sessions  *execmgr.Sessions
	approvals *approvalCache
	codexHome string // where approved prefixes are saved
}

func state(t *thread.Thread, d *Deps) *threadState {
	return t.AttachOnce(stateKey{}, func() any {
		st := &threadState{
			sessions: execmgr.NewSessions(execmgr.SessionsOptions{Manager: d.Exec, MaxPollWait: d.Config.BackgroundTerminalMaxTimeout,
				Owner: t.ID}),
			approvals: newApprovalCache(),
			codexHome: d.Config.CodexHome,
		}
		// The prefixes saved by earlier "don't ask again" approvals (the reference's rules files).
		var prefixes [][]string
		var err error
		if !d.Config.IgnoreRules {
			prefixes, err = execpolicy.AllowedPrefixes(d.Config.CodexHome)
		}
		if err != nil {
			slog.Warn("could not read the command rules", "error", err)
		}
		for _, p := range prefixes {
			st.approvals.approvePrefix(p)
		}
		t.OnClose(st.sessions.TerminateAll)
		return st
	}).(*threadState)
}

// BackgroundTerminals returns a thread's unified-exec sessions (nil before its first exec_command).
func BackgroundTerminals(t *thread.Thread) *execmgr.Sessions {
	if st, ok := t.Attached(stateKey{}).(*threadState); ok {
		return st.sessions
	}
	return nil
}

var (
	selfOnce sync.Once
	selfPath string
)

func (d *Deps) self() string {
	if d.SandboxSelf != "" {
		return d.SandboxSelf
	}
	selfOnce.Do(func() {
		p, err := os.Executable()
		if err == nil {
			selfPath = p
		}
	})
	return selfPath
}

// SandboxWrapper returns the argv hook that runs a command in dir under the sandbox policy of cwd (the
// turn's cwd: the workspace), or nil when the policy does not restrict anything. A dir outside the
// workspace gains no write access by being the command's working directory.
func SandboxWrapper(self string, policy protocol.SandboxPolicy, cwd, dir string) (func(argv []string) ([]string, error), error) {
	raw, err := json.Marshal(policy)
	if err != nil {
		return nil, err
	}
	var p sandbox.Policy
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("sandbox policy: %w", err)
	}
	if !p.Sandboxed() {
		return nil, nil
	}
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("sandbox helper: %w", err)
		}
	}
	if ok, reason := sandbox.Available(); !ok {
		return nil, fmt.Errorf("sandbox unavailable: %s", reason)
	}
	return func(argv []string) ([]string, error) {
		return sandbox.WrapArgvIn(self, p, cwd, dir, argv)
	}, nil
}

// ForReviewer keeps the tool sets a reviewer sub-agent gets from its thread's: the reference's reviewer
// works without goals, web search and the thread's dynamic (client-run) tools.
func ForReviewer(sets []thread.ToolSet) []thread.ToolSet {
	var out []thread.ToolSet
	for _, s := range sets {
		if cm, ok := s.(*codemode.Set); ok {
			out = append(out, cm.Keep(func(n thread.ToolSet) bool { return len(ForReviewer([]thread.ToolSet{n})) == 1 }))
			continue
		}
		switch v := s.(type) {
		case goalSet, webSearchSet, dynamicSet:
			continue
		case searchSet:
			// Without the dynamic tools its search finds the others only.
			s = v.withoutDynamic()
		}
		out = append(out, s)
	}
	return out
}
