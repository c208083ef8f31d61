package thread

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"appserver/config"
	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/rollout"
	"appserver/stopwatch"
)

// PauseListener is told, in the background and in order, when a thread's pause state changes (the MCP
// layer forwards it to servers that advertise the capability); when a paused thread closes it is told
// paused:false before the thread's closers run. An error is logged: the local state stands.
type PauseListener func(ctx context.Context, t *Thread, paused bool) error

// Deps are the collaborators a Manager needs.
type Deps struct {
	Config *config.Config
	Logger *slog.Logger
	// Tools builds the tool set offered to the model on one turn.
	Tools ToolProvider
	// AwaitTools runs before the tools of each model request of a turn are built (nil: nothing); it may
	// wait, bounded and until ctx ends, for tools still being set up (the first request's MCP servers).
	AwaitTools func(ctx context.Context, t *Thread)
	// InstallationID is sent in model request metadata.
	InstallationID func() string
	// Version is the cliVersion written into threads and rollouts.
	Version string
	// UserAgent renders the user-agent header of model requests for an originator.
	UserAgent func(originator string) string
	// Clock times approval waits and idle unloads (nil: the real clock); tests pass a fake one.
	Clock stopwatch.Clock
	// HTTPClient is used for model requests (nil: default).
	ModelOptions model.Options
	// SkillsPrompt renders the skills offered to the model for a working directory ("" = none); a new
	// thread's context gets it as one developer message after the initial context.
	SkillsPrompt func(cwd string) string
	// Broadcast sends a notification to every connection, subscribed or not (nil: to the thread's
	// subscribers only). The server-wide thread notifications (ServerWide) go through it.
	Broadcast func(method string, params any)
	// OnLoad runs when a thread becomes loaded (started, resumed, forked), before it is visible; what it
	// attaches is released by the thread's OnClose hooks.
	OnLoad func(t *Thread)
}

// Manager owns the loaded threads.
type Manager struct {
	deps Deps
	log  *slog.Logger

	mu       sync.Mutex
	threads  map[string]*Thread
	clients  map[string]*model.Client
	onPause  PauseListener
	onTurn   TurnEndListener
	closed   bool
	rootCtx  context.Context
	shutdown context.CancelFunc

	// store indexes CODEX_HOME's rollouts; opened on first use (storeMu serialises the opening).
	storeMu sync.Mutex
	store   *rollout.Store
	// refHist mirrors paginated turns into the reference's history database, if CODEX_HOME has one.
	refHist *rollout.RefHistory
	// touches is read-held by each ended turn's index update until it is written (touchLater): Store
	// takes it for writing, so whoever reads the index sees every turn that ended before the read.
	touches sync.RWMutex
	// cfg is the current configuration (deps.Config until SetConfig swaps it after a config write).
	cfg atomic.Pointer[config.Config]
	// pendingContext holds what a new thread's first turn records and adds to the thread's history.
	pendingContext map[string]pendingStart
	// unloadTimers unload a thread whose last subscriber left, after config.ThreadUnloadDelay.
	unloadTimers map[string]*unloadTimer
}

// NewManager creates a Manager; Close ends every thread.
func NewManager(deps Deps) *Manager {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.UserAgent == nil {
		deps.UserAgent = func(o string) string { return o }
	}
	if deps.InstallationID == nil {
		deps.InstallationID = func() string { return "" }
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{deps: deps, log: deps.Logger, threads: map[string]*Thread{}, clients: map[string]*model.Client{}, rootCtx: ctx, shutdown: cancel,
		pendingContext: map[string]pendingStart{}, unloadTimers: map[string]*unloadTimer{}}
	m.cfg.Store(deps.Config)
	return m
}

// SetPauseListener installs the seam told about out-of-band pause transitions.
func (m *Manager) SetPauseListener(l PauseListener) {
	m.mu.Lock()
	m.onPause = l
	m.mu.Unlock()
}

func (m *Manager) notifyPause(ctx context.Context, t *Thread, paused bool) error {
	m.mu.Lock()
	l := m.onPause
	m.mu.Unlock()
	if l == nil {
		return nil
	}
	return l(ctx, t, paused)
}

// TurnEndListener is told, after turn/completed went out, that a thread's turn ended with status; the
// thread is idle then (unless someone started another turn meanwhile). It runs on the turn's goroutine.
type TurnEndListener func(t *Thread, status protocol.TurnStatus)

// SetTurnEndListener installs the seam told about every turn's end (the server drains thread queues).
func (m *Manager) SetTurnEndListener(l TurnEndListener) {
	m.mu.Lock()
	m.onTurn = l
	m.mu.Unlock()
}

func (m *Manager) notifyTurnEnd(t *Thread, status protocol.TurnStatus) {
	m.mu.Lock()
	l := m.onTurn
	m.mu.Unlock()
	if l != nil {
		l(t, status)
	}
}

// Config returns the current server-wide configuration.
func (m *Manager) Config() *config.Config { return m.cfg.Load() }

// SetConfig swaps the configuration new threads and turns use (after a config write) and drops the cached
// model clients so provider changes take effect; running turns keep the client they hold.
func (m *Manager) SetConfig(cfg *config.Config) {
	m.cfg.Store(cfg)
	m.mu.Lock()
	m.clients = map[string]*model.Client{}
	m.mu.Unlock()
}

// Get returns a loaded thread.
func (m *Manager) Get(id string) (*Thread, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[id]
	return t, ok
}

// Loaded lists the ids of loaded threads.
func (m *Manager) Loaded() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, 0, len(m.threads))
	for id := range m.threads {
		ids = append(ids, id)
	}
	return ids
}

// Unload closes a loaded thread and forgets it.
func (m *Manager) Unload(id string) bool {
	m.mu.Lock()
	t, ok := m.threads[id]
	delete(m.threads, id)
	delete(m.pendingContext, id)
	if tm := m.unloadTimers[id]; tm != nil {
		tm.Stop()
		delete(m.unloadTimers, id)
	}
	m.mu.Unlock()
	if ok {
		t.close()
		m.storeMu.Lock()
		rh := m.refHist
		m.storeMu.Unlock()
		rh.Forget(id)
	}
	return ok
}

// Close ends every thread, interrupting running turns.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	for id, tm := range m.unloadTimers {
		tm.Stop()
		delete(m.unloadTimers, id)
	}
	threads := make([]*Thread, 0, len(m.threads))
	for _, t := range m.threads {
		threads = append(threads, t)
	}
	m.threads = map[string]*Thread{}
	m.mu.Unlock()
	m.shutdown()
	var wg sync.WaitGroup
	for _, t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.close()
		}()
	}
	wg.Wait()
	m.readStates().closeLog()
	m.waitTouches()
	m.storeMu.Lock()
	if m.refHist != nil {
		m.refHist.Close()
	}
	m.storeMu.Unlock()
}

// modelClient returns the client of a provider as cfg defines it. Clients are shared between threads
// whose effective provider settings are identical, so a thread whose `config` override changes the
// provider (base_url, headers, retries…) gets its own client.
func (m *Manager) modelClient(cfg *config.Config, providerID string) (*model.Client, error) {
	p, ok := cfg.ModelProviders[providerID]
	if !ok {
		return nil, fmt.Errorf("Model provider `%s` not found", providerID)
	}
	mp := ModelProvider(p)
	key, err := json.Marshal(mp)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.clients[string(key)]; ok {
		return c, nil
	}
	c := model.NewClient(mp, m.deps.ModelOptions)
	m.clients[string(key)] = c
	return c, nil
}

// ModelProvider converts a configured provider into the model package's form.
func ModelProvider(p config.ModelProvider) model.Provider {
	req, str, nw := int64(p.RequestMaxRetries), int64(p.StreamMaxRetries), int64(p.NetworkWaitMaxRetries)
	idle := p.StreamIdleTimeout.Milliseconds()
	return model.Provider{
		ID: p.ID, Name: p.Name, BaseURL: p.BaseURL, EnvKey: p.EnvKey, EnvKeyInstructions: p.EnvKeyInstructions,
		ExperimentalBearerToken: p.ExperimentalBearerToken, WireAPI: p.WireAPI, QueryParams: p.QueryParams,
		HTTPHeaders: p.HTTPHeaders, EnvHTTPHeaders: p.EnvHTTPHeaders,
		RequestMaxRetries: &req, StreamMaxRetries: &str, StreamIdleTimeoutMs: &idle, RequiresOpenAIAuth: p.RequiresOpenAIAuth,
		NetworkWaitMaxRetries: &nw,
	}
}

// StartOptions are what thread/start and its connection contribute.
type StartOptions struct {
	Params     protocol.ThreadStartParams
	Originator string
	Source     string
}

// ConfigError is a new thread's configuration that does not load: its config override, or a trusted
// project's .codex/config.toml for its cwd.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Start creates a new thread from thread/start params; a configuration that does not load is a
// *ConfigError.
func (m *Manager) Start(ctx context.Context, opts StartOptions) (*Thread, error) {
	p := opts.Params
	cfg := m.Config()
	var mcpOverrides map[string]config.MCPServer // the MCP servers of a `config` override, if it set any
	if len(p.Config) > 0 {
		over := map[string]any{}
		for k, v := range p.Config {
			var val any
			if err := json.Unmarshal(v, &val); err != nil {
				return nil, fmt.Errorf("invalid config override %s: %w", k, err)
			}
			over[k] = val
		}
		c, err := cfg.WithOverrides(over)
		if err != nil {
			return nil, &ConfigError{Err: err}
		}
		cfg = c
		for k := range over {
			if k == "mcp_servers" || strings.HasPrefix(k, "mcp_servers.") {
				mcpOverrides = cfg.MCPServers
			}
		}
	}
	cwd, err := resolveCwd(p.Cwd)
	if err != nil {
		return nil, err
	}
	// The trusted project's .codex/config.toml layers for the thread's cwd apply (and must load).
	if cfg, err = cfg.ForCwd(cwd); err != nil {
		return nil, &ConfigError{Err: err}
	}
	s := Settings{
		Model:         firstNonEmpty(deref(p.Model), cfg.Model, model.DefaultModel),
		ModelProvider: firstNonEmpty(deref(p.ModelProvider), cfg.ModelProvider, config.DefaultModelProvider),
		Cwd:           cwd,
		ApprovalPolicy: func() protocol.AskForApproval {
			if p.ApprovalPolicy != nil {
				return *p.ApprovalPolicy
			}
			return ApprovalFromConfig(cfg.ApprovalPolicy)
		}(),
		ApprovalsReviewer: protocol.ApprovalsReviewerUser,
		BaseInstructions:  deref(p.BaseInstructions),
		Config:            cfg,
		Mode:              protocol.ModeKindDefault,
		DynamicTools:      p.DynamicTools,
	}
	if p.ApprovalsReviewer != nil {
		s.ApprovalsReviewer = *p.ApprovalsReviewer
	}
	s.ServiceTier, s.Personality = tierAndPersonality(p.ServiceTier, p.Personality, cfg)
	s.DeveloperInstructions = cfg.DeveloperInstructions
	if p.DeveloperInstructions != nil {
		s.DeveloperInstructions = *p.DeveloperInstructions // the client's, even empty, replaces the configuration's
	}
	mode := cfg.SandboxMode
	switch dp := cfg.DefaultPermissions(); {
	case p.Permissions != nil:
		// The caller checked the id (config.CheckPermissionProfile): a built-in profile.
		s.PermissionProfile = *p.Permissions
		mode, _ = config.BuiltinProfileMode(*p.Permissions)
	case p.Sandbox != nil:
		mode = string(*p.Sandbox)
	case dp != "":
		if m, ok := config.BuiltinProfileMode(dp); ok {
			s.PermissionProfile, mode = dp, m
		}
	case mode == "":
		// No sandbox chosen anywhere: the reference reports the default as the built-in profile it is.
		s.PermissionProfile = config.BuiltinProfileFor(mode)
	}
	s.Sandbox = SandboxFromMode(mode, cfg.SandboxWorkspaceWrite)
	if e := cfg.ModelReasoningEffort; e != "" {
		eff := protocol.ReasoningEffort(e)
		s.Effort = &eff
	}
	if _, ok := cfg.ModelProviders[s.ModelProvider]; !ok {
		// The reference applies modelProvider to the configuration, which then does not load.
		return nil, &ConfigError{Err: fmt.Errorf("Model provider `%s` not found", s.ModelProvider)}
	}
	if _, err := m.modelClient(cfg, s.ModelProvider); err != nil {
		return nil, err
	}
	ephemeral := p.Ephemeral != nil && *p.Ephemeral
	id := uuid.Must(uuid.NewV7()).String()
	now := time.Now()
	t := m.newThread(id, s)
	t.mcpOverrides = mcpOverrides
	t.meta = protocol.Thread{
		ID: id, SessionID: id, Preview: "", Ephemeral: ephemeral,
		ModelProvider: s.ModelProvider, CreatedAt: now.Unix(), UpdatedAt: now.Unix(), RecencyAt: ptr(now.Unix()),
		Cwd: protocol.AbsolutePathBuf(cwd), CliVersion: m.deps.Version, Originator: ptr(opts.Originator),
		Source:               protocol.SessionSource{Name: firstNonEmpty(opts.Source, "vscode")},
		HistoryMode:          ptr(protocol.ThreadHistoryModePaginated),
		Model:                ptr(s.Model),
		Environments:         []protocol.ThreadEnvironment{{EnvironmentID: "local", Cwd: protocol.LegacyAppPathString(cwd), RuntimeWorkspaceRoots: []protocol.LegacyAppPathString{protocol.LegacyAppPathString(cwd)}}},
		CanAcceptDirectInput: ptr(true),
		Turns:                []protocol.Turn{},
		ThreadSource:         p.ThreadSource,
	}
	t.meta.ReasoningEffort = s.Effort
	gi, gitRaw := gitInfo(ctx, cwd)
	t.meta.GitInfo = gi
	if !ephemeral {
		var dyn json.RawMessage
		if len(p.DynamicTools) > 0 {
			dyn, _ = json.Marshal(p.DynamicTools)
		}
		rec, err := m.createRollout(rollout.SessionMeta{
			ID: id, Timestamp: rollout.FormatTimestamp(now), Cwd: cwd, Originator: opts.Originator,
			CLIVersion: m.deps.Version, Source: rollout.StringSource(firstNonEmpty(opts.Source, "vscode")),
			ThreadSource: deref(p.ThreadSource), ModelProvider: s.ModelProvider, DynamicTools: dyn, Git: gitRaw,
		}, s, now)
		if err != nil {
			return nil, err
		}
		t.recorder = rec
		path := rec.Path()
		t.meta.Path = &path
	}
	// The initial context joins the history (and the rollout) at the first turn that records a start, as
	// the reference's does: a review's hand-off before it comes first.
	initial := m.freshContext(s, t.role())
	t.permissions, t.filesystem = permissionsText(s), filesystemText(s)
	if err := m.register(t); err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.pendingContext[id] = initial
	m.mu.Unlock()
	return t, nil
}

// pendingStart is what a new thread's first turn adds to its history: its initial context, built then (so
// that its `<tools>` note names the deferred namespaces of that moment, as the reference's), and the items
// that follow it.
type pendingStart struct {
	// initial builds the initial context with the `<tools>` note ("" = none); nil: none (a fork that copies
	// its parent's history into items).
	initial func(toolsNotice string) []json.RawMessage
	items   []json.RawMessage
}

// freshContext is a pending initial context built from s at the first turn.
func (m *Manager) freshContext(s Settings, role agentRole) pendingStart {
	return pendingStart{initial: func(notice string) []json.RawMessage { return m.initialContext(s, role, notice) }}
}

// initialContext is the context a thread's history starts with: instructions, skills, permissions, mode,
// the deferred tools' note, agent role, environment.
func (m *Manager) initialContext(s Settings, role agentRole, toolsNotice string) []json.RawMessage {
	skills := ""
	if m.deps.SkillsPrompt != nil {
		skills = m.deps.SkillsPrompt(s.Cwd)
	}
	return initialContext(s, role, skills, toolsNotice)
}

// register makes a thread loaded (closing it when the server is shutting down).
func (m *Manager) register(t *Thread) error {
	if m.deps.OnLoad != nil {
		m.deps.OnLoad(t)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		t.close()
		return fmt.Errorf("server is shutting down")
	}
	m.threads[t.ID] = t
	m.mu.Unlock()
	return nil
}

// createRollout creates a thread's rollout with the reference's session_meta and indexes it.
func (m *Manager) createRollout(meta rollout.SessionMeta, s Settings, now time.Time) (*rollout.Recorder, error) {
	if meta.SessionID == "" {
		meta.SessionID = meta.ID // a sub-agent's names its root's session
	}
	meta.RuntimeWorkspaceRoots = []string{meta.Cwd}
	if meta.BaseInstructions == nil {
		meta.BaseInstructions = &rollout.BaseInstructions{Text: s.instructions()}
	}
	if meta.HistoryMode == "" {
		meta.HistoryMode = rollout.HistoryModePaginated
	}
	rec, err := rollout.Create(m.Config().CodexHome, meta, now)
	if err != nil {
		return nil, fmt.Errorf("create rollout: %w", err)
	}
	// An index not opened yet finds the new file when it opens: thread/start never waits for a full scan.
	if st := m.openStore(); st != nil {
		sum := rollout.Summary{ID: meta.ID, Path: rec.Path(), Cwd: meta.Cwd, CreatedAt: now.Unix(), CreatedAtMs: now.UnixMilli(),
			ModelProvider: meta.ModelProvider, Model: s.Model, Source: rollout.SourceString(meta.Source), CLIVersion: meta.CLIVersion,
			Originator: meta.Originator, ForkedFromID: meta.ForkedFromID, ThreadSource: meta.ThreadSource,
			ParentThreadID: meta.ParentThreadID}
		if s.Effort != nil {
			sum.ReasoningEffort = string(*s.Effort)
		}
		if err := st.Upsert(sum); err != nil {
			m.log.Warn("rollout index upsert failed", "error", err)
		}
	}
	return rec, nil
}

// Store returns the rollout index of CODEX_HOME, opening it on first use. It first waits for the index
// updates of turns that already ended (see touchLater).
func (m *Manager) Store() (*rollout.Store, error) {
	m.waitTouches()
	m.storeMu.Lock()
	defer m.storeMu.Unlock()
	if m.store != nil {
		return m.store, nil
	}
	st, err := rollout.Open(m.Config().CodexHome)
	if err != nil {
		return nil, fmt.Errorf("open rollout index: %w", err)
	}
	m.store = st
	return st, nil
}

// openStore returns the rollout index if it is already open, else nil.
func (m *Manager) openStore() *rollout.Store {
	m.storeMu.Lock()
	defer m.storeMu.Unlock()
	return m.store
}

// refHistory returns the manager's mirror into the reference's history database, created on first use.
func (m *Manager) refHistory() *rollout.RefHistory {
	m.storeMu.Lock()
	defer m.storeMu.Unlock()
	if m.refHist == nil {
		m.refHist = rollout.NewRefHistory(m.Config().CodexHome)
	}
	return m.refHist
}

// takePendingContext returns (once) what a new thread's first turn records; ok is false when there is none.
func (m *Manager) takePendingContext(id string) (p pendingStart, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok = m.pendingContext[id]
	delete(m.pendingContext, id)
	return p, ok
}

// touchLater refreshes the index entries of a thread whose turn ended: the reference's history mirror
// now (it projects the rollout as it stands at the turn's end; projected later, while the thread goes on,
// the reference read a turn without its answer), our own index on a goroutine of its own, so its SQLite
// write is not between the turn's last event and its turn/completed. That update counts as pending from
// this call on: Store waits for it, so a thread/list sent on turn/completed still sees the turn. Call it
// before turn/completed is emitted.
func (m *Manager) touchLater(t *Thread) {
	t.mu.Lock()
	rec := t.recorder
	t.mu.Unlock()
	if rec == nil {
		return
	}
	// The turn's end may still be held (holdOutput): the projection and the index read the file.
	if err := rec.Flush(); err != nil {
		t.log.Warn("rollout append failed", "error", err)
	}
	path := rec.Path()
	// keyed by the file's segment id: a reverted thread's later files are projected apart, as the reference does
	m.refHistory().Project(m.rootCtx, rollout.SegmentID(path), path)
	m.touches.RLock()
	var hold func()
	if h := touchHook; h != nil {
		hold = h()
	} else if m.openStore() == nil {
		// No index to update (none is open until a client lists threads, and Store opens it only once
		// the pending updates are done): no goroutine to start and wake a thread for.
		m.touches.RUnlock()
		return
	}
	go func() {
		defer m.touches.RUnlock()
		if hold != nil {
			hold()
		}
		m.touchIndex(t)
	}()
}

// waitTouches returns once every index update pending when it was called is written.
func (m *Manager) waitTouches() {
	if h := touchWaitHook; h != nil {
		h()
	}
	m.touches.Lock()
	m.touches.Unlock() //nolint:staticcheck // an empty critical section: waiting is the point
}

// touchHook and touchWaitHook, when set (by tests, before any turn), run when a deferred index update is
// registered (what it returns runs on the update's goroutine before the update) and at the start of
// each wait for the updates.
var (
	touchHook     func() (hold func())
	touchWaitHook func()
)

// SetTouchHooksForTest installs touchHook and touchWaitHook; nil removes them.
func SetTouchHooksForTest(update func() (hold func()), wait func()) {
	touchHook, touchWaitHook = update, wait
}

// touchIndex refreshes our index entry of a thread whose rollout was appended to (a turn ended).
func (m *Manager) touchIndex(t *Thread) {
	st := m.openStore()
	if st == nil {
		return
	}
	if _, err := st.Touch(t.ID); err != nil {
		m.log.Warn("rollout index touch failed", "thread", t.ID, "error", err)
	}
}

func (m *Manager) newThread(id string, s Settings) *Thread {
	ctx, cancel := context.WithCancel(m.rootCtx)
	return &Thread{
		ID: id, mgr: m, log: m.log.With("thread", id), settings: s, base: s.instructions(), told: s.instructions(),
		multiAgentV2: model.MultiAgentV2(s.Model), namesModel: model.HasMultiAgentVersion(s.Model),
		subscribers: map[Subscriber]struct{}{}, subWait: make(chan struct{}),
		flags: map[protocol.ThreadActiveFlag]int{}, controller: stopwatch.NewController(),
		ctx: ctx, cancel: cancel,
	}
}

// record appends to the rollout, logging (not failing) on error.
func (t *Thread) record(f func(*rollout.Recorder) error) {
	t.mu.Lock()
	rec := t.recorder
	t.mu.Unlock()
	if rec == nil {
		return
	}
	if err := f(rec); err != nil {
		t.log.Warn("rollout append failed", "error", err)
	}
}

// ApprovalFromConfig converts config.toml's approval_policy into the wire form.
func ApprovalFromConfig(a config.ApprovalPolicy) protocol.AskForApproval {
	if a.Granular != nil {
		return protocol.AskForApproval{Granular: &protocol.AskForApprovalGranular{
			SandboxApproval: a.Granular.SandboxApproval, Rules: a.Granular.Rules, McpElicitations: a.Granular.MCPElicitations,
			RequestPermissions: ptr(a.Granular.RequestPermissions), SkillApproval: ptr(a.Granular.SkillApproval),
		}}
	}
	if a.Mode == "" {
		return protocol.AskForApproval{Name: config.DefaultApprovalPolicy}
	}
	return protocol.AskForApproval{Name: a.Mode}
}

// SandboxFromMode converts a sandbox mode name (thread/start or config.toml) into a policy.
func SandboxFromMode(mode string, ww config.SandboxWorkspaceWrite) protocol.SandboxPolicy {
	switch mode {
	case "danger-full-access":
		return protocol.SandboxPolicy{Value: protocol.SandboxPolicyDangerFullAccess{}}
	case "workspace-write":
		roots := make([]protocol.AbsolutePathBuf, 0, len(ww.WritableRoots))
		for _, r := range ww.WritableRoots {
			roots = append(roots, protocol.AbsolutePathBuf(r))
		}
		return protocol.SandboxPolicy{Value: protocol.SandboxPolicyWorkspaceWrite{
			WritableRoots: roots, NetworkAccess: ptr(ww.NetworkAccess),
			ExcludeTmpdirEnvVar: ptr(ww.ExcludeTmpdirEnvVar), ExcludeSlashTmp: ptr(ww.ExcludeSlashTmp),
		}}
	}
	return protocol.SandboxPolicy{Value: protocol.SandboxPolicyReadOnly{NetworkAccess: ptr(false)}}
}

func resolveCwd(p *string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if p == nil || *p == "" {
		return wd, nil
	}
	if filepath.IsAbs(*p) {
		return filepath.Clean(*p), nil
	}
	return filepath.Join(wd, *p), nil
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// NormalizeSandbox fills a client's sandbox policy with the defaults the reference reports for its absent
// fields (no network, no extra writable roots, /tmp and $TMPDIR writable); nil stays nil.
func NormalizeSandbox(p *protocol.SandboxPolicy) *protocol.SandboxPolicy {
	if p == nil {
		return nil
	}
	f := false
	switch v := p.Value.(type) {
	case protocol.SandboxPolicyReadOnly:
		if v.NetworkAccess == nil {
			v.NetworkAccess = &f
		}
		return &protocol.SandboxPolicy{Value: v}
	case protocol.SandboxPolicyWorkspaceWrite:
		if v.WritableRoots == nil {
			v.WritableRoots = []protocol.AbsolutePathBuf{}
		}
		for _, b := range []**bool{&v.NetworkAccess, &v.ExcludeTmpdirEnvVar, &v.ExcludeSlashTmp} {
			if *b == nil {
				*b = ptr(false)
			}
		}
		return &protocol.SandboxPolicy{Value: v}
	}
	return p
}
