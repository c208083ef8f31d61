package thread

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"appserver/config"
	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/rollout"
	"appserver/stopwatch"
	"appserver/threadindex"
)

// ErrNoRollout reports a thread id with no rollout on disk; its text is the reference's.
var ErrNoRollout = errors.New("no rollout found for thread id")

// noRollout wraps ErrNoRollout with the id, as the reference words it.
func noRollout(id string) error { return fmt.Errorf("%w %s", ErrNoRollout, id) }

// ErrEphemeralForkWithTurns refuses an ephemeral fork of a paginated thread that would return its turns; its
// text is the reference's.
var ErrEphemeralForkWithTurns = errors.New("ephemeral paginated thread/fork requires `excludeTurns: true`")

func (m *Manager) lookupStored(id string) (rollout.Summary, error) {
	st, err := m.Store()
	if err != nil {
		return rollout.Summary{}, err
	}
	sum, err := st.Get(id)
	if errors.Is(err, rollout.ErrNotFound) {
		return rollout.Summary{}, noRollout(id)
	}
	return sum, err
}

// sessionSource is the protocol form of a rollout's session source: a plain name ("vscode" when empty) or
// the JSON of an object source, whose custom and sub-agent forms keep their details.
func sessionSource(src string) protocol.SessionSource {
	name, custom, sub := rollout.ProtocolSource(src)
	if custom != nil {
		return protocol.SessionSource{Custom: custom}
	}
	if sub == nil {
		return protocol.SessionSource{Name: firstNonEmpty(name, "vscode")}
	}
	var sa protocol.SubAgentSource
	if json.Unmarshal(sub, &sa) != nil {
		return protocol.SessionSource{Name: protocol.SessionSourceUnknown}
	}
	return protocol.SessionSource{SubAgent: &sa}
}

// historyMode is the protocol form of a session_meta history_mode: legacy unless paginated (see rollout.Paginated).
func historyMode(mode string) *protocol.ThreadHistoryMode {
	if rollout.Paginated(mode) {
		return ptr(protocol.ThreadHistoryModePaginated)
	}
	return ptr(protocol.ThreadHistoryModeLegacy)
}

// Legacy reports whether the thread's history is legacy (its rollout is not paginated), loaded or stored; an
// unknown thread is not.
func (m *Manager) Legacy(id string) bool {
	if t, ok := m.Get(id); ok {
		hm := t.Info().HistoryMode
		return hm != nil && *hm == protocol.ThreadHistoryModeLegacy
	}
	sum, err := m.lookupStored(id)
	return err == nil && !rollout.Paginated(sum.HistoryMode)
}

// ThreadFromSummary renders an index entry as a protocol Thread with the given status and no turns.
func ThreadFromSummary(sum rollout.Summary, status protocol.ThreadStatus) protocol.Thread {
	th := protocol.Thread{
		ID: sum.ID, SessionID: sum.ID, Preview: sum.Preview, ModelProvider: sum.ModelProvider,
		CreatedAt: sum.CreatedAt, UpdatedAt: sum.UpdatedAt, RecencyAt: ptr(firstNonZero(sum.RecencyAt, sum.UpdatedAt)), Status: status,
		Path: ptr(rollout.PlainPath(sum.Path)), Cwd: protocol.AbsolutePathBuf(sum.Cwd), CliVersion: sum.CLIVersion,
		Source:      sessionSource(sum.Source),
		HistoryMode: historyMode(sum.HistoryMode), Turns: []protocol.Turn{},
	}
	if sum.ParentThreadID != "" {
		th.ParentThreadID = ptr(sum.ParentThreadID)
	}
	spawnFields(&th)
	if sum.Section != nil {
		th.Section = SectionOf(*sum.Section)
		th.SectionEnteredAt = ptr(sum.SectionEnteredAtMs / 1000)
	}
	if sum.Originator != "" {
		th.Originator = ptr(sum.Originator)
	}
	if sum.Model != "" {
		th.Model = ptr(sum.Model)
	}
	if sum.ReasoningEffort != "" {
		th.ReasoningEffort = ptr(protocol.ReasoningEffort(sum.ReasoningEffort))
	}
	if sum.Name != "" {
		th.Name = ptr(sum.Name)
	}
	if sum.ForkedFromID != "" {
		th.ForkedFromID = ptr(sum.ForkedFromID)
	}
	if sum.ThreadSource != "" {
		th.ThreadSource = ptr(sum.ThreadSource)
	}
	if g := rollout.GitInfo(sum.GitInfo); g != nil {
		var gi protocol.GitInfo
		if b, err := json.Marshal(g); err == nil && json.Unmarshal(b, &gi) == nil {
			th.GitInfo = &gi
		}
	}
	return th
}

func notLoaded() protocol.ThreadStatus {
	return protocol.ThreadStatus{Value: protocol.ThreadStatusNotLoaded{}}
}

// List returns a page of thread/list: stored threads from the index, loaded ones with their live status.
func (m *Manager) List(q rollout.ListQuery) ([]protocol.Thread, string, error) {
	out, p, err := m.ListPage(q)
	return out, p.Next, err
}

// ListPage is List with the page's cursors; the page's Threads are the index summaries of the same threads.
func (m *Manager) ListPage(q rollout.ListQuery) ([]protocol.Thread, rollout.Page, error) {
	st, err := m.Store()
	if err != nil {
		return nil, rollout.Page{}, err
	}
	pg, err := st.ListPage(q)
	if err != nil {
		return nil, rollout.Page{}, err
	}
	page := pg.Threads
	out := make([]protocol.Thread, 0, len(page))
	for _, sum := range page {
		th := ThreadFromSummary(sum, notLoaded())
		th.ForkedFromID = nil // the reference's listing does not carry it
		th.ThreadSource = nil // nor the thread source (thread/read and thread/resume do)
		if t, ok := m.Get(sum.ID); ok && !sum.Archived {
			info := t.Info()
			th.Status = info.Status
			th.Environments = info.Environments
			if info.Name != nil {
				th.Name = info.Name
			}
			if th.Preview == "" {
				th.Preview = info.Preview
			}
		}
		out = append(out, th)
	}
	return out, pg, nil
}

// ReadStored reads a thread that is not loaded from its rollout (status notLoaded); turns are included on
// request.
func (m *Manager) ReadStored(id string, includeTurns bool) (protocol.Thread, error) {
	sum, err := m.lookupStored(id)
	if err != nil {
		return protocol.Thread{}, err
	}
	th := ThreadFromSummary(sum, notLoaded())
	if includeTurns {
		st, _ := m.Store()
		rt, err := st.ReadThread(id)
		if err != nil {
			return protocol.Thread{}, err
		}
		th.Turns = ConvertTurns(rt.Turns)
		// As the reference, a full read of an imported session shows its transcript's times.
		if first, last, ok := rollout.ImportedSpan(th.CreatedAt, rt.Turns); ok {
			th.CreatedAt, th.UpdatedAt, th.RecencyAt = first, last, ptr(last)
		}
	}
	return th, nil
}

func firstNonZero(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

// Turns returns every turn of a thread, loaded or stored.
func (m *Manager) Turns(id string) ([]protocol.Turn, error) {
	if t, ok := m.Get(id); ok {
		return t.TurnsSnapshot(), nil
	}
	th, err := m.ReadStored(id, true)
	if err != nil {
		return nil, err
	}
	return th.Turns, nil
}

// storedTurnsKey holds, in Thread.attached, the []rollout.Turn read at load time and not yet converted.
type storedTurnsKey struct{}

// materializeTurnsLocked converts the turns read from the rollout, if still pending, and puts them before the
// turns run since the load (t.mu held).
func (t *Thread) materializeTurnsLocked() {
	raw, ok := t.attached[storedTurnsKey{}].([]rollout.Turn)
	if !ok {
		return
	}
	delete(t.attached, storedTurnsKey{})
	t.turns = append(ConvertTurns(raw), t.turns...)
}

// HistoryCounts returns how many turns (the running one included) and items the thread has, without
// converting stored turns.
func (t *Thread) HistoryCounts() (turns, items int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if raw, ok := t.attached[storedTurnsKey{}].([]rollout.Turn); ok {
		for _, rt := range raw {
			turns++
			items += len(rt.Items)
		}
	}
	for _, tu := range t.turns {
		turns++
		items += len(tu.Items)
	}
	if t.active != nil {
		turns++
		items += len(t.active.snapshot(true).Items)
	}
	return turns, items
}

// lastTurnIDLocked returns the id of the newest finished turn, "" if none (t.mu held).
func (t *Thread) lastTurnIDLocked() string {
	if len(t.turns) > 0 {
		return t.turns[len(t.turns)-1].ID
	}
	if raw, ok := t.attached[storedTurnsKey{}].([]rollout.Turn); ok && len(raw) > 0 {
		return raw[len(raw)-1].ID
	}
	return ""
}

// TokenUsage returns the thread's accumulated usage for thread/tokenUsage/updated after a resume or fork, and
// the id of the turn it belongs to; ok is false before any usage.
func (t *Thread) TokenUsage() (usage protocol.ThreadTokenUsage, turnID string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	last := t.lastTurnIDLocked()
	if t.total.TotalTokens == 0 && t.total.InputTokens == 0 || last == "" {
		return protocol.ThreadTokenUsage{}, "", false
	}
	return t.lastUsage(), last, true
}

// lastUsage reads the usage attached by loadStored or the turn loop (t.mu held).
func (t *Thread) lastUsage() protocol.ThreadTokenUsage {
	u := protocol.ThreadTokenUsage{Total: t.total, Last: t.total}
	if v, ok := t.attached[lastUsageKey{}].(protocol.ThreadTokenUsage); ok {
		u.Last = v.Last
		u.ModelContextWindow = v.ModelContextWindow
	}
	if u.Total.CacheWriteInputTokens == nil {
		u.Total.CacheWriteInputTokens = ptr(int64(0))
	}
	if u.Last.CacheWriteInputTokens == nil {
		u.Last.CacheWriteInputTokens = ptr(int64(0))
	}
	return u
}

type lastUsageKey struct{}

func breakdown(u rollout.TokenUsage) protocol.TokenUsageBreakdown {
	return protocol.TokenUsageBreakdown{TotalTokens: u.TotalTokens, InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens,
		CacheWriteInputTokens: ptr(u.CacheWriteInputTokens), OutputTokens: u.OutputTokens, ReasoningOutputTokens: u.ReasoningOutputTokens}
}

// ResumeOverrides are the settings thread/resume and thread/fork may override.
type ResumeOverrides struct {
	Model          *string
	ModelProvider  *string
	Cwd            *string
	ApprovalPolicy *protocol.AskForApproval
	Reviewer       *protocol.ApprovalsReviewer
	Sandbox        *protocol.SandboxMode
	BaseInstr      *string
	DeveloperInstr *string
	// ServiceTier and Personality replace the ones the rollout recorded.
	ServiceTier *string
	Personality *protocol.Personality
}

// Resume loads a stored thread (or returns the loaded one, loaded=false): its model history, turns, settings
// and usage come from the rollout, and later turns append to the same file. path overrides the lookup by id.
func (m *Manager) Resume(ctx context.Context, id, path string, o ResumeOverrides) (t *Thread, loadedNow bool, err error) {
	if t, ok := m.Get(id); ok {
		return t, false, nil
	}
	if path == "" {
		st, err := m.Store()
		if err != nil {
			return nil, false, err
		}
		// The index's background reads (its first build) wait while the thread is read.
		defer st.Busy()()
		// Locate, not Find: the index need not read the rollout's metadata first, the file is read once here.
		p, err := st.Locate(id)
		if err != nil {
			return nil, false, noRollout(id)
		}
		path = p
	} else if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && !rollout.IsCompressed(path) {
		// The reference reports a compressed rollout under its plain name.
		if _, err := os.Stat(path + rollout.CompressedSuffix); err == nil {
			path += rollout.CompressedSuffix
		}
	}
	// Later turns append to the file: a compressed rollout is first written back as a plain one, as the
	// reference does.
	path, err = rollout.Materialize(path)
	if err != nil {
		return nil, false, fmt.Errorf("read rollout: %w", err)
	}
	th, err := rollout.ReadFile(path)
	if errors.Is(err, rollout.ErrNoSessionMeta) {
		return nil, false, &rollout.SessionMetaError{Path: path} // the reference's words
	}
	if err != nil {
		return nil, false, fmt.Errorf("read rollout: %w", err)
	}
	if th.Meta.ID != "" && th.Meta.ID != id {
		return nil, false, fmt.Errorf("rollout %s belongs to thread %s", path, th.Meta.ID)
	}
	rec, err := rollout.OpenAppend(path)
	if err != nil {
		return nil, false, fmt.Errorf("open rollout: %w", err)
	}
	t, err = m.loadStored(id, th, rec, o)
	if err != nil {
		_ = rec.Close()
		return nil, false, err
	}
	if err := m.register(t); err != nil {
		return nil, false, err
	}
	// Another request may have loaded the same thread meanwhile: keep the first.
	return t, true, nil
}

// ModelSwitchWarning is the reference's warning for a thread resumed onto another model than the one its rollout
// recorded ("" when there is nothing to warn about).
func (t *Thread) ModelSwitchWarning() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.storedModel == "" || t.storedModel == t.settings.Model {
		return ""
	}
	return "This session was recorded with model `" + t.storedModel + "` but is resuming with `" + t.settings.Model +
		"`. Consider switching back to `" + t.storedModel + "` as it may affect Codex performance."
}

// loadStored builds a loaded Thread from a rollout read back.
func (m *Manager) loadStored(id string, th *rollout.Thread, rec *rollout.Recorder, o ResumeOverrides) (*Thread, error) {
	var tc struct {
		Cwd            string          `json:"cwd"`
		ApprovalPolicy string          `json:"approval_policy"`
		Reviewer       string          `json:"approvals_reviewer"`
		SandboxPolicy  json.RawMessage `json:"sandbox_policy"`
		Model          string          `json:"model"`
		Effort         string          `json:"effort"`
		Summary        string          `json:"summary"`
		MultiAgent     string          `json:"multi_agent_version"`
	}
	if len(th.LastTurnContext) > 0 {
		_ = json.Unmarshal(th.LastTurnContext, &tc)
	}
	recModel, recEffort, recSummary := firstNonEmpty(th.Model, tc.Model), firstNonEmpty(th.ReasoningEffort, tc.Effort), tc.Summary
	if ts := th.Settings; ts != nil {
		// The last recorded settings are the thread's latest (changes after its last turn included); the
		// reference's turn_context does not hold the reasoning summary setting.
		recModel = firstNonEmpty(ts.Model, recModel)
		recEffort, recSummary = ts.ReasoningEffort, ts.ReasoningSummary
	}
	cwd := firstNonEmpty(deref(o.Cwd), tc.Cwd, th.Meta.Cwd)
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	// The trusted project's .codex/config.toml layers for the thread's cwd apply (and must load).
	cfg, err := m.Config().ForCwd(cwd)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	s := Settings{
		Model:             firstNonEmpty(deref(o.Model), recModel, cfg.Model),
		ModelProvider:     firstNonEmpty(deref(o.ModelProvider), th.Meta.ModelProvider, cfg.ModelProvider, config.DefaultModelProvider),
		Cwd:               cwd,
		ApprovalPolicy:    ApprovalFromConfig(cfg.ApprovalPolicy),
		ApprovalsReviewer: protocol.ApprovalsReviewerUser,
		Sandbox:           SandboxFromMode(cfg.SandboxMode, cfg.SandboxWorkspaceWrite),
	}
	if tc.ApprovalPolicy != "" && tc.ApprovalPolicy != "granular" {
		s.ApprovalPolicy = protocol.AskForApproval{Name: tc.ApprovalPolicy}
	}
	if o.ApprovalPolicy != nil {
		s.ApprovalPolicy = *o.ApprovalPolicy
	}
	if tc.Reviewer != "" {
		s.ApprovalsReviewer = protocol.ApprovalsReviewer(tc.Reviewer)
	}
	if o.Reviewer != nil {
		s.ApprovalsReviewer = *o.Reviewer
	}
	// Like the reference, a resume restores a read-only or full-access sandbox, but a workspace-write thread
	// gets config.toml's sandbox.
	if sb := sandboxFromCore(tc.SandboxPolicy); sb != nil {
		if _, ww := sb.Value.(protocol.SandboxPolicyWorkspaceWrite); !ww {
			s.Sandbox = *sb
		}
	}
	if o.Sandbox != nil {
		s.Sandbox = SandboxFromMode(string(*o.Sandbox), cfg.SandboxWorkspaceWrite)
	}
	if o.Model != nil && *o.Model != recModel {
		recEffort = "" // another model starts from config.toml's effort (its own default), as in the reference
	}
	if e := firstNonEmpty(recEffort, cfg.ModelReasoningEffort); e != "" {
		eff := protocol.ReasoningEffort(e)
		s.Effort = &eff
	}
	if recSummary != "" {
		s.Summary = ptr(protocol.ReasoningSummary(recSummary))
	}
	if th.Settings != nil {
		// The last recorded settings hold the thread's tier and personality (none recorded: none set).
		if th.Settings.ServiceTier != "" {
			s.ServiceTier = ptr(th.Settings.ServiceTier)
		}
		if th.Settings.Personality != "" {
			s.Personality = ptr(protocol.Personality(th.Settings.Personality))
		}
	} else {
		s.ServiceTier, s.Personality = tierAndPersonality(nil, nil, cfg)
	}
	if o.ServiceTier != nil {
		s.ServiceTier = ptr(NormalizeServiceTier(*o.ServiceTier))
	}
	if o.Personality != nil {
		s.Personality = o.Personality
	}
	if th.Meta.BaseInstructions != nil && !isDefaultInstructions(th.Meta.BaseInstructions.Text) {
		s.BaseInstructions = th.Meta.BaseInstructions.Text
	}
	if o.BaseInstr != nil {
		s.BaseInstructions = *o.BaseInstr
	}
	s.DeveloperInstructions = cfg.DeveloperInstructions
	if o.DeveloperInstr != nil {
		s.DeveloperInstructions = *o.DeveloperInstr // the client's, even empty, replaces the configuration's
	}
	s.Mode = protocol.ModeKindDefault
	if len(th.Meta.DynamicTools) > 0 {
		// The client's dynamic tools stay offered to a resumed thread, as the reference keeps them.
		_ = json.Unmarshal(th.Meta.DynamicTools, &s.DynamicTools)
	}
	if _, err := m.modelClient(cfg, s.ModelProvider); err != nil {
		return nil, err
	}
	t := m.newThread(id, s)
	t.storedModel = recModel
	// Requests keep the session's base instructions first; what the model was told since (a replacement, the
	// permissions) comes from the history, so the next turn tells it only what changed.
	if th.Meta.BaseInstructions != nil && th.Meta.BaseInstructions.Text != "" && o.BaseInstr == nil {
		t.base = th.Meta.BaseInstructions.Text
	}
	t.told, t.permissions = toldFromHistory(th.ResponseItems, t.base)
	created := th.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	updated := created
	if info, err := os.Stat(th.Path); err == nil {
		updated = info.ModTime()
	}
	src := rollout.SourceString(th.Meta.Source)
	if raw := bytes.TrimSpace(th.Meta.Source); len(raw) > 0 && raw[0] == '{' {
		src = string(raw) // an object source (a sub-agent's) keeps its details
	}
	path := th.Path
	if rec != nil {
		path = rec.Path()
	}
	t.meta = protocol.Thread{
		ID: id, SessionID: id, Preview: th.Preview, ModelProvider: s.ModelProvider,
		CreatedAt: created.Unix(), UpdatedAt: updated.Unix(), RecencyAt: ptr(updated.Unix()),
		Cwd: protocol.AbsolutePathBuf(s.Cwd), CliVersion: firstNonEmpty(th.Meta.CLIVersion, m.deps.Version),
		Source: sessionSource(src), HistoryMode: historyMode(th.Meta.HistoryMode), Model: ptr(s.Model),
		Environments:         []protocol.ThreadEnvironment{{EnvironmentID: "local", Cwd: protocol.LegacyAppPathString(s.Cwd), RuntimeWorkspaceRoots: []protocol.LegacyAppPathString{protocol.LegacyAppPathString(s.Cwd)}}},
		CanAcceptDirectInput: ptr(true), Turns: []protocol.Turn{}, ReasoningEffort: s.Effort,
	}
	spawnFields(&t.meta)
	if _, last, ok := rollout.ImportedSpan(created.Unix(), th.Turns); ok {
		t.meta.RecencyAt = ptr(last) // an imported session's recency is its transcript's end, as in the reference
	}
	if g := rollout.GitInfo(th.Meta.Git); g != nil {
		var gi protocol.GitInfo
		if b, err := json.Marshal(g); err == nil && json.Unmarshal(b, &gi) == nil {
			t.meta.GitInfo = &gi
		}
	}
	if rec != nil {
		t.meta.Path = &path
	} else {
		t.meta.Ephemeral = true
	}
	if th.Meta.Originator != "" {
		t.meta.Originator = ptr(th.Meta.Originator)
	}
	if th.Meta.ForkedFromID != "" {
		t.meta.ForkedFromID = ptr(th.Meta.ForkedFromID)
	}
	if th.Meta.ThreadSource != "" {
		t.meta.ThreadSource = ptr(th.Meta.ThreadSource)
	}
	name := th.Name
	if st, err := m.Store(); err == nil {
		if n := st.Name(id); n != "" {
			name = n
		}
	}
	if name != "" {
		t.meta.Name = ptr(name)
	}
	for _, it := range th.ResponseItems {
		// The recorded additional_tools item leaves the history: requests lead with the turn's own, under
		// the recorded id.
		if id, ok := toolsItemID(it); ok {
			t.toolsItemID = id
			continue
		}
		t.history = append(t.history, it)
	}
	t.collabChild = collabChildSource(t.meta.Source)
	// The multi-agent version was fixed when the thread started (the rollout's, else its recorded model's).
	switch tc.MultiAgent {
	case "v2":
		t.multiAgentV2 = true
	case "":
		t.multiAgentV2 = recModel != "" && model.MultiAgentV2(recModel)
	default:
		t.multiAgentV2 = false
	}
	if t.attached == nil {
		t.attached = map[any]any{}
	}
	if len(th.Turns) > 0 {
		// Turns are converted to protocol form on first use (thread/read, turns/list…): a resume with
		// excludeTurns never pays for it.
		t.attached[storedTurnsKey{}] = th.Turns
		t.interrupted = th.Turns[len(th.Turns)-1].Status == rollout.TurnInterrupted
	}
	if th.TokenUsage != nil {
		t.total = breakdown(th.TokenUsage.TotalTokenUsage)
		t.attached[lastUsageKey{}] = protocol.ThreadTokenUsage{
			Total: t.total, Last: breakdown(th.TokenUsage.LastTokenUsage), ModelContextWindow: th.TokenUsage.ModelContextWindow}
	}
	t.recorder = rec
	// A rollout of another program without the reference's world_state (an older reference's) records nothing
	// of what was told: the reference sends it all again.
	told := th.WorldState || th.Meta.CLIVersion == m.deps.Version || strings.Contains(th.Meta.CLIVersion, "+appserver")
	if was, ok := toldContext(th.LastTurnContext, s); ok && told {
		t.permissions, t.filesystem, t.toldModel, t.cwdChanged = was.permissions, was.filesystem, was.model, was.cwdMoved
	} else {
		// Nothing tells what the model was told last: its next turn starts with the whole initial context
		// again, as the reference's does.
		t.permissions, t.filesystem = permissionsText(s), filesystemText(s)
		m.mu.Lock()
		m.pendingContext[id] = m.freshContext(s, t.role())
		m.mu.Unlock()
	}
	return t, nil
}

// ForkOptions are thread/fork's parameters.
type ForkOptions struct {
	ParentID     string
	LastTurnID   string
	BeforeTurnID string
	Ephemeral    bool
	ExcludeTurns bool // the client asked for no turns in the answer; an ephemeral fork requires it
	Originator   string
	Source       string  // the session source the fork's rollout records ("vscode" when empty)
	ThreadSource *string // the client's analytics classification of the fork (thread/fork's threadSource)
	Overrides    ResumeOverrides
}

// Fork copies a thread's history (up to a turn) into a new loaded thread whose rollout references the parent's
// first bytes, as the reference records forks; the parent's name is copied.
func (m *Manager) Fork(ctx context.Context, o ForkOptions) (*Thread, error) {
	st, err := m.Store()
	if err != nil {
		return nil, err
	}
	parentPath, _, err := st.Find(o.ParentID)
	var metaErr *rollout.SessionMetaError
	if errors.As(err, &metaErr) {
		return nil, err
	}
	if err != nil {
		return nil, noRollout(o.ParentID)
	}
	parent, err := rollout.ReadMeta(parentPath)
	if err != nil {
		return nil, fmt.Errorf("read rollout: %w", err)
	}
	// A configuration that does not load for the fork's cwd fails it before anything is written.
	if _, err := m.Config().ForCwd(firstNonEmpty(deref(o.Overrides.Cwd), parent.Session.Cwd)); err != nil {
		return nil, &ConfigError{Err: err}
	}
	if o.Ephemeral && !o.ExcludeTurns && rollout.Paginated(parent.Session.HistoryMode) {
		return nil, ErrEphemeralForkWithTurns // a legacy (unpaginated) parent may be forked with its turns
	}
	before := o.BeforeTurnID
	if o.LastTurnID != "" {
		turns, err := m.Turns(o.ParentID)
		if err != nil {
			return nil, err
		}
		found := false
		for i, tu := range turns {
			if tu.ID == o.LastTurnID {
				found = true
				if i+1 < len(turns) {
					before = turns[i+1].ID
				}
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: %s", ErrTurnNotFound, o.LastTurnID)
		}
	}
	// The fork references the parent's current file by its segment id (a reverted parent continues in a
	// newer file); a turn of an older file is cut in that file.
	hb, err := rollout.ForkBase(parentPath, rollout.SegmentID(parentPath), before)
	if err != nil && before != "" {
		if hb, err = rollout.RevertBase(m.Config().CodexHome, parentPath, before); err == nil {
			parentPath, err = rollout.FindSegment(m.Config().CodexHome, hb.ThreadID)
		}
	}
	if err != nil {
		if before != "" {
			return nil, fmt.Errorf("%w: %s", ErrTurnNotFound, before)
		}
		return nil, err
	}
	var running *Turn
	if pt, ok := m.Get(o.ParentID); ok && before == "" {
		pt.mu.Lock()
		running = pt.active
		pt.mu.Unlock()
	}
	id := uuid.Must(uuid.NewV7()).String()
	now := time.Now()
	meta := rollout.SessionMeta{
		ID: id, ForkedFromID: o.ParentID, Timestamp: rollout.FormatTimestamp(now), Cwd: firstNonEmpty(deref(o.Overrides.Cwd), parent.Session.Cwd),
		Originator: firstNonEmpty(o.Originator, parent.Session.Originator), CLIVersion: m.deps.Version,
		Source: rollout.StringSource(firstNonEmpty(o.Source, "vscode")), ModelProvider: firstNonEmpty(deref(o.Overrides.ModelProvider), parent.Session.ModelProvider),
		HistoryBase: &hb, ForkedFromOrdinalExclusive: &hb.EndOrdinalExclusive, ThreadSource: deref(o.ThreadSource),
	}
	fresh := m.forkSettings()
	var th *rollout.Thread
	var rec *rollout.Recorder
	if o.Ephemeral {
		th, err = readForkPrefix(parentPath, hb.EndByteOffset)
		if err != nil {
			return nil, err
		}
		th.Meta.ForkedFromID = o.ParentID
		th.Meta.ID = id
		th.Path = ""
		if running != nil {
			for i := range th.Turns {
				if th.Turns[i].ID == running.ID {
					th.Turns[i].Status = rollout.TurnInterrupted
				}
			}
		}
	} else {
		s := Settings{Model: firstNonEmpty(deref(o.Overrides.Model), fresh.Model), BaseInstructions: deref(o.Overrides.BaseInstr)}
		if o.Overrides.BaseInstr == nil && parent.Session.BaseInstructions != nil {
			meta.BaseInstructions = parent.Session.BaseInstructions // the fork keeps its parent's base instructions
		}
		if fresh.ReasoningEffort != "" {
			s.Effort = ptr(protocol.ReasoningEffort(fresh.ReasoningEffort))
		}
		legacy := !rollout.Paginated(parent.Session.HistoryMode)
		if legacy {
			// As the reference, a legacy parent's fork is legacy too: its history is copied, not referenced.
			meta.HistoryBase, meta.ForkedFromOrdinalExclusive, meta.HistoryMode = nil, nil, "legacy"
		}
		rec, err = m.createRollout(meta, s, now)
		if err != nil {
			return nil, err
		}
		if legacy {
			if err := copyForkPrefix(rec, parentPath, hb.EndByteOffset); err != nil {
				_ = rec.Close()
				return nil, fmt.Errorf("copy fork history: %w", err)
			}
		}
		if running != nil {
			// The parent's turn is still going: the fork records it as interrupted, as the reference does.
			if err := rec.AppendEvent(rollout.TurnAborted{TurnID: running.ID, RootTurnID: running.ID, Reason: "interrupted",
				StartedAt: running.started().Unix(), CompletedAt: now.Unix(), DurationMs: ptr(now.Sub(running.started()).Milliseconds())}); err != nil {
				_ = rec.Close()
				return nil, fmt.Errorf("record fork interruption: %w", err)
			}
		}
		th, err = rollout.ReadFile(rec.Path())
		if err != nil {
			_ = rec.Close()
			return nil, fmt.Errorf("read fork: %w", err)
		}
	}
	// Like the reference, a fork starts on config.toml's model, effort, service tier and personality, not the
	// parent's (its approval policy and sandbox are restored as a resume's).
	th.Model, th.ReasoningEffort, th.Settings = fresh.Model, fresh.ReasoningEffort, &fresh
	t, err := m.loadStored(id, th, rec, o.Overrides)
	if err != nil {
		if rec != nil {
			_ = rec.Close()
		}
		return nil, err
	}
	t.meta.CreatedAt, t.meta.UpdatedAt, t.meta.RecencyAt = now.Unix(), now.Unix(), ptr(now.Unix())
	t.meta.ForkedFromID = ptr(o.ParentID)
	t.meta.ThreadSource = o.ThreadSource // a fork's own classification (none when not given), never its parent's
	name := st.Name(o.ParentID)
	if pt, ok := m.Get(o.ParentID); ok {
		if n := pt.Info().Name; n != nil {
			name = *n
		}
	}
	if name != "" {
		t.meta.Name = ptr(name)
		if rec != nil {
			if err := st.SetName(id, name); err != nil {
				m.log.Warn("copy thread name to fork", "error", err)
			}
		}
	}
	if rec != nil {
		if _, err := st.Reindex(rec.Path()); err != nil {
			m.log.Warn("rollout reindex failed", "error", err)
		}
	}
	if err := m.register(t); err != nil {
		return nil, err
	}
	return t, nil
}

// forkSettings returns the model settings a fork starts with: config.toml's, as a new thread's.
func (m *Manager) forkSettings() rollout.ThreadSettings {
	cfg := m.Config()
	ts := rollout.ThreadSettings{Model: firstNonEmpty(cfg.Model, model.DefaultModel), ReasoningEffort: cfg.ModelReasoningEffort}
	tier, p := tierAndPersonality(nil, nil, cfg)
	ts.ServiceTier = deref(tier)
	if p != nil {
		ts.Personality = string(*p)
	}
	return ts
}

// copyForkPrefix records the parent's first n bytes (all when n <= 0) again in a legacy fork's rollout.
func copyForkPrefix(rec *rollout.Recorder, parentPath string, n int64) error {
	src, err := rollout.OpenRolloutFile(parentPath)
	if err != nil {
		return fmt.Errorf("read rollout: %w", err)
	}
	defer src.Close()
	var r io.Reader = src
	if n > 0 {
		r = io.LimitReader(src, n)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return rec.AppendCopies(data)
}

// readForkPrefix reads the history of an ephemeral fork: the parent's first n bytes (all when n <= 0), copied to a
// scratch rollout and read back.
func readForkPrefix(parentPath string, n int64) (*rollout.Thread, error) {
	dir, err := os.MkdirTemp("", "appserver-fork-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src, err := rollout.OpenRolloutFile(parentPath)
	if err != nil {
		return nil, fmt.Errorf("read rollout: %w", err)
	}
	defer src.Close()
	dst := filepath.Join(dir, filepath.Base(rollout.PlainPath(parentPath)))
	f, err := os.Create(dst)
	if err != nil {
		return nil, err
	}
	var r io.Reader = src
	if n > 0 {
		r = io.LimitReader(src, n)
	}
	_, cerr := io.Copy(f, r)
	if err := errors.Join(cerr, f.Close()); err != nil {
		return nil, err
	}
	return rollout.ReadFile(dst)
}

// Archive unloads a thread (reporting whether it was loaded) and moves its rollout to archived_sessions.
func (m *Manager) Archive(id string) (wasLoaded bool, err error) {
	st, err := m.Store()
	if err != nil {
		return false, err
	}
	if _, _, err := st.Find(id); err != nil {
		return false, noRollout(id)
	}
	wasLoaded = m.Unload(id)
	if err := st.Archive(id); err != nil {
		return wasLoaded, err
	}
	return wasLoaded, nil
}

// Unarchive moves an archived rollout back under sessions/ and returns the thread (notLoaded).
func (m *Manager) Unarchive(id string) (protocol.Thread, error) {
	st, err := m.Store()
	if err != nil {
		return protocol.Thread{}, err
	}
	sum, err := st.Unarchive(id)
	if errors.Is(err, rollout.ErrNotFound) {
		return protocol.Thread{}, noRollout(id)
	}
	if err != nil {
		return protocol.Thread{}, err
	}
	sum.Name = st.Name(id)
	return ThreadFromSummary(sum, notLoaded()), nil
}

// Delete unloads a thread and removes its rollout.
func (m *Manager) Delete(id string) error {
	st, err := m.Store()
	if err != nil {
		return err
	}
	if _, _, err := st.Find(id); err != nil {
		if t, ok := m.Get(id); ok && t.Info().Ephemeral {
			m.Unload(id)
			return nil
		}
		return noRollout(id)
	}
	if t, ok := m.Get(id); ok {
		// Like the reference, the thread's subscribers see it unloaded before thread/deleted.
		t.emit(protocol.NotifyThreadStatusChanged, protocol.ThreadStatusChangedNotification{ThreadID: id, Status: notLoaded()})
	}
	m.Unload(id)
	if err := st.Delete(id); err != nil {
		return err
	}
	m.forgetReadState(id)
	return nil
}

// SetName names a thread, loaded or stored: the name goes to session_index.jsonl (the caller announces it).
// It returns the loaded thread, if any.
func (m *Manager) SetName(id, name string) (*Thread, error) {
	t, loaded := m.Get(id)
	persisted := true
	if loaded {
		t.mu.Lock()
		persisted = t.recorder != nil
		t.meta.Name = ptr(name)
		t.mu.Unlock()
	}
	if persisted {
		st, err := m.Store()
		if err != nil {
			return nil, err
		}
		if err := st.SetName(id, name); err != nil {
			if errors.Is(err, rollout.ErrNotFound) {
				return nil, noRollout(id)
			}
			return nil, err
		}
	}
	if loaded {
		return t, nil
	}
	return nil, nil
}

// Unsubscribe removes s from a loaded thread's audience. When the last subscriber leaves, the thread is unloaded
// after config.ThreadUnloadDelay unless someone subscribes again (s is then told thread/status/changed
// notLoaded and thread/closed).
func (m *Manager) Unsubscribe(id string, s Subscriber) protocol.ThreadUnsubscribeStatus {
	t, ok := m.Get(id)
	if !ok {
		return protocol.ThreadUnsubscribeStatusNotLoaded
	}
	was, remaining := t.Unsubscribe(s)
	if !was {
		return protocol.ThreadUnsubscribeStatusNotSubscribed
	}
	if remaining == 0 {
		m.scheduleUnload(t, s)
	}
	return protocol.ThreadUnsubscribeStatusUnsubscribed
}

// CancelUnload stops a pending idle unload (a client subscribed again).
func (m *Manager) CancelUnload(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tm := m.unloadTimers[id]; tm != nil {
		tm.Stop()
		delete(m.unloadTimers, id)
	}
}

func (m *Manager) scheduleUnload(t *Thread, last Subscriber) {
	d := m.Config().ThreadUnloadDelay
	if d <= 0 {
		d = config.DefaultThreadUnloadDelay
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if old := m.unloadTimers[t.ID]; old != nil {
		old.Stop()
	}
	tm := &unloadTimer{}
	m.unloadTimers[t.ID] = tm
	clock := m.deps.Clock
	if clock == nil {
		clock = stopwatch.RealClock()
	}
	tm.timer = clock.AfterFunc(d, func() { m.unloadIdle(t, tm, last) })
}

// unloadTimer is one scheduled idle unload; its identity tells a fired timer whether it is still current.
type unloadTimer struct{ timer stopwatch.Timer }

// Stop cancels the unload.
func (u *unloadTimer) Stop() {
	if u.timer != nil {
		u.timer.Stop()
	}
}

// unloadIdle runs when an unload timer fires: the thread is unloaded if it still has no subscriber and no
// running turn (a running turn postpones the unload by another delay).
func (m *Manager) unloadIdle(t *Thread, tm *unloadTimer, last Subscriber) {
	m.mu.Lock()
	if m.closed || m.unloadTimers[t.ID] != tm || m.threads[t.ID] != t {
		m.mu.Unlock()
		return
	}
	delete(m.unloadTimers, t.ID)
	m.mu.Unlock()
	t.mu.Lock()
	subs, busy := len(t.subscribers), t.active != nil
	t.mu.Unlock()
	if subs > 0 {
		return
	}
	if busy {
		m.scheduleUnload(t, last)
		return
	}
	m.Unload(t.ID)
	if m.deps.Broadcast != nil {
		m.deps.Broadcast(protocol.NotifyThreadStatusChanged, protocol.ThreadStatusChangedNotification{ThreadID: t.ID, Status: notLoaded()})
	} else {
		last.Notify(protocol.NotifyThreadStatusChanged, protocol.ThreadStatusChangedNotification{ThreadID: t.ID, Status: notLoaded()})
	}
	last.Notify(protocol.NotifyThreadClosed, protocol.ThreadClosedNotification{ThreadID: t.ID})
}

// StartFromHistory creates a new thread, as thread/start does, whose model history continues with the given
// response items (thread/resume with `history`: the reference then ignores the thread id and starts afresh).
// The items are recorded with the initial context at the first turn; the preview is the first user text.
func (m *Manager) StartFromHistory(ctx context.Context, opts StartOptions, history []protocol.ResponseItem) (*Thread, error) {
	raw := make([]json.RawMessage, 0, len(history))
	for _, it := range history {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, fmt.Errorf("invalid history item: %w", err)
		}
		raw = append(raw, b)
	}
	t, err := m.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	if t.meta.Preview == "" {
		t.meta.Preview = rollout.PreviewFromResponseItems(raw)
	}
	t.mu.Unlock()
	// the imported items follow the initial context, in the history when the first turn starts
	m.mu.Lock()
	p, pending := m.pendingContext[t.ID]
	if pending {
		p.items = append(p.items, raw...)
		m.pendingContext[t.ID] = p
	}
	m.mu.Unlock()
	if !pending {
		t.appendHistory(raw...)
	}
	return t, nil
}

// SectionOf renders an index section in the protocol's shape.
func SectionOf(s threadindex.Section) *protocol.ThreadSection {
	out := &protocol.ThreadSection{ID: s.ID, Name: s.Name}
	if s.Appearance != "" {
		var a protocol.ThreadSectionAppearance
		if json.Unmarshal([]byte(s.Appearance), &a) == nil {
			out.Appearance = &a
		}
	}
	return out
}
