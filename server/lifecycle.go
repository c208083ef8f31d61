package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/rollout"
	"appserver/thread"
	"appserver/tools"
)

// addLifecycleRoutes routes the persistence and lifecycle methods (thread/list, resume, fork, archive…).
func (s *Server) addLifecycleRoutes(r map[string]route) {
	r[protocol.MethodThreadList] = handle(s.threadList)
	r[protocol.MethodThreadRead] = handle(s.threadRead)
	r[protocol.MethodThreadResume] = handle(s.threadResume)
	r[protocol.MethodThreadFork] = handle(s.threadFork)
	r[protocol.MethodThreadArchive] = handle(s.threadArchive)
	r[protocol.MethodThreadUnarchive] = handle(s.threadUnarchive)
	r[protocol.MethodThreadDelete] = handle(s.threadDelete)
	r[protocol.MethodThreadNameSet] = handle(s.threadNameSet)
	r[protocol.MethodThreadUnsubscribe] = handle(s.threadUnsubscribe)
	r[protocol.MethodThreadTurnsList] = handle(s.threadTurnsList)
	r[protocol.MethodThreadItemsList] = handle(s.threadItemsList)
	r[protocol.MethodThreadReadStateUpdate] = handle(s.threadReadStateUpdate)
}

func (s *Server) threadReadStateUpdate(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadReadStateUpdateParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	var th protocol.Thread
	if t, ok := s.threads.Get(p.ThreadID); ok {
		th = t.Info()
		if th.Ephemeral {
			return nil, jsonrpc.InvalidRequest("ephemeral thread does not support read state: " + p.ThreadID)
		}
	} else if stored, err := s.threads.ReadStored(p.ThreadID, false); err != nil {
		return nil, jsonrpc.InvalidRequest("thread not found: " + p.ThreadID)
	} else {
		th = stored
	}
	if !thread.ReadStateTracked(&th) {
		return nil, jsonrpc.InvalidRequest("thread read state unavailable")
	}
	var read bool
	switch p.Operation.Value.(type) {
	case protocol.ThreadReadStateOperationRead:
		read = true
	case protocol.ThreadReadStateOperationUnread:
	default:
		return nil, jsonrpc.InvalidRequest("missing field `operation`")
	}
	st, err := s.threads.UpdateReadState(p.ThreadID, p.ExpectedRevision, read)
	if errors.Is(err, thread.ErrReadStateConflict) {
		data, _ := json.Marshal(map[string]any{"reason": "readStateConflict", "readState": st})
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error(), Data: data}
	}
	if err != nil {
		return nil, storeError(err)
	}
	return protocol.ThreadReadStateUpdateResponse{ReadState: st}, nil
}

// storeError maps a lifecycle error to its JSON-RPC form: unknown threads are invalid requests.
func storeError(err error) error {
	if errors.Is(err, thread.ErrNoRollout) {
		return jsonrpc.InvalidRequest(err.Error())
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return err
	}
	return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
}

// ExperimentalAPI reports whether the client opted into the experimental API (thread.ExperimentalSubscriber).
func (c *connection) ExperimentalAPI() bool { return c.experimentalAPI() }

// broadcast sends a notification to every initialized connection (each connection's opt-outs apply), as the
// reference announces archive, unarchive, delete and rename server-wide.
func (s *Server) broadcast(method string, params any) {
	s.mu.Lock()
	conns := make([]*connection, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.notify(method, params)
	}
}

func (s *Server) threadList(ctx context.Context, _ *connection, req *jsonrpc.Request, p *protocol.ThreadListParams) (any, error) {
	q := rollout.ListQuery{Cursor: deref(p.Cursor), ModelProviders: p.ModelProviders, SearchTerm: deref(p.SearchTerm)}
	if p.ModelProviders == nil {
		// Omitted: the configured provider's threads, as the reference; present but empty: every provider.
		q.ModelProviders = []string{s.cfg.ModelProvider}
	}
	if len(p.Originators) > 0 {
		return nil, paramsError("originator filtering is not supported by the local app-server")
	}
	if p.ParentThreadID != nil && p.AncestorThreadID != nil {
		return nil, paramsError("parentThreadId and ancestorThreadId are mutually exclusive")
	}
	if p.AttachedToThreadID != nil && (p.ParentThreadID != nil || p.AncestorThreadID != nil) {
		return nil, paramsError("attachedToThreadId is mutually exclusive with parentThreadId and ancestorThreadId")
	}
	if len(p.ExcludedThreadIds) > 100 {
		return nil, paramsError("excludedThreadIds accepts at most 100 thread ids")
	}
	for _, id := range p.ExcludedThreadIds {
		if err := validateThreadID(id); err != nil {
			return nil, paramsError(fmt.Sprintf("invalid excludedThreadIds entry: %s", id))
		}
	}
	q.Excluded = p.ExcludedThreadIds
	members, err := s.projectFilter(ctx, req, p.ProjectID)
	if err != nil {
		return nil, err
	}
	q.Members = members
	if p.Limit != nil {
		q.Limit = int(*p.Limit)
	}
	if p.SortKey != nil {
		switch *p.SortKey {
		case protocol.ThreadSortKeyCreatedAt:
			q.SortKey = rollout.SortCreatedAt
		case protocol.ThreadSortKeyUpdatedAt, protocol.ThreadSortKeyRecencyAt:
			q.SortKey = rollout.SortUpdatedAt
		case protocol.ThreadSortKeySectionPosition:
			if p.SectionID == nil {
				return nil, jsonrpc.InvalidRequest("section-position sorting requires a section filter")
			}
			q.SortKey = rollout.SortSectionPosition
		default:
			return nil, jsonrpc.InvalidRequest(fmt.Sprintf("unsupported sortKey: %s", *p.SortKey))
		}
	}
	q.ParentThreadID, q.AncestorID = p.ParentThreadID, p.AncestorThreadID
	q.SectionID = deref(p.SectionID)
	if p.AttachedToThreadID != nil {
		// No stored thread has an attachment here: the filter selects none.
		return protocol.ThreadListResponse{Data: []protocol.Thread{}, ReadStates: map[string]protocol.ThreadReadState{}}, nil
	}
	if p.SortDirection != nil {
		q.SortDirection = string(*p.SortDirection)
	}
	if p.Archived != nil {
		q.Archived = *p.Archived
	}
	if p.Cwd != nil {
		q.Cwds = p.Cwd.Values
	}
	for _, k := range p.SourceKinds {
		if err := k.Validate(); err != nil {
			return nil, invalidParams("%v", err)
		}
		q.SourceKinds = append(q.SourceKinds, string(k))
	}
	data, pg, err := s.threads.ListPage(q)
	if errors.Is(err, rollout.ErrBadCursor) {
		return nil, jsonrpc.InvalidRequest(fmt.Sprintf("invalid cursor: %s", q.Cursor))
	}
	if err != nil {
		return nil, storeError(err)
	}
	states := make(map[string]protocol.ThreadReadState, len(data))
	for i := range data {
		s.overlayThreadMeta(ctx, &data[i])
	}
	for _, th := range data {
		if th.Source.SubAgent != nil {
			continue // the reference lists a sub-agent's thread without a read state (other sources' show one)
		}
		if rs := s.threads.ReadState(th.ID, true); rs != nil {
			states[th.ID] = *rs
		}
	}
	resp := protocol.ThreadListResponse{Data: data, ReadStates: states}
	if pg.Next != "" {
		resp.NextCursor = &pg.Next
	}
	if pg.Backwards != "" {
		resp.BackwardsCursor = &pg.Backwards
	}
	return resp, nil
}

func paramsError(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func (s *Server) threadRead(ctx context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ThreadReadParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	include := p.IncludeTurns != nil && *p.IncludeTurns
	var info protocol.Thread
	hasHistory := true // a stored thread has a rollout with history
	if t, ok := s.threads.Get(p.ThreadID); ok {
		info = t.Info()
		nTurns, _ := t.HistoryCounts()
		hasHistory = nTurns > 0 || info.ForkedFromID != nil
		if info.Ephemeral {
			// Without a rollout the reference has no history, preview, fork origin or read state to show
			// (thread/fork and thread/started still name an ephemeral fork's parent).
			if include {
				return nil, jsonrpc.InvalidRequest("ephemeral threads do not support includeTurns")
			}
			info.Preview = ""
			info.ForkedFromID = nil
			return protocol.ThreadReadResponse{Thread: info}, nil
		}
		if include {
			if s.withoutRollout(p.ThreadID) {
				return nil, errListTurnsUnsupported
			}
			info.Turns = t.TurnsSnapshot()
		}
	} else {
		th, err := s.threads.ReadStored(p.ThreadID, include)
		if errors.Is(err, thread.ErrNoRollout) {
			return nil, jsonrpc.InvalidRequest("thread not loaded: " + p.ThreadID)
		}
		if err != nil {
			return nil, storeError(err)
		}
		info = th
	}
	s.overlayThreadMeta(ctx, &info)
	if include && !legacyHistory(&info) {
		c.notify(protocol.NotifyDeprecationNotice, deprecationHydration())
	}
	resp := protocol.ThreadReadResponse{Thread: info}
	if thread.ReadStateTracked(&info) {
		resp.ReadState = s.threads.ReadState(p.ThreadID, hasHistory)
	}
	return resp, nil
}

func deprecationHydration() protocol.DeprecationNoticeNotification {
	return protocol.DeprecationNoticeNotification{Summary: "Full-history hydration is deprecated for paginated threads; omit `includeTurns` or set it to `false`, then page with `thread/turns/list` and `thread/items/list`."}
}

func deprecationExcludeTurns() protocol.DeprecationNoticeNotification {
	return protocol.DeprecationNoticeNotification{Summary: "Full-history hydration is deprecated for paginated threads; use `excludeTurns: true`, then page with `thread/turns/list` and `thread/items/list`."}
}

// excludeTurns reports whether the client set excludeTurns; when it did not, c is sent the deprecation notice
// for full-history hydration, as the reference does on resume and fork.
func excludeTurns(c *connection, flag *bool) bool {
	return excludeTurnsOf(c, flag, false)
}

// excludeTurnsOf is excludeTurns for a thread whose history may be legacy: the notice is about paginated
// threads, and the reference sends none for a legacy one.
func excludeTurnsOf(c *connection, flag *bool, legacy bool) bool {
	exclude := flag != nil && *flag
	if !exclude && !legacy {
		c.notify(protocol.NotifyDeprecationNotice, deprecationExcludeTurns())
	}
	return exclude
}

// legacyHistory reports whether info is a thread with legacy (unpaginated) history.
func legacyHistory(info *protocol.Thread) bool {
	return info.HistoryMode != nil && *info.HistoryMode == protocol.ThreadHistoryModeLegacy
}

// loadConfigError is thread/resume's and thread/fork's error for a configuration that does not load (for
// the thread's cwd): as the reference, the full-history deprecation notice (when turns are not
// excluded) comes first.
func loadConfigError(c *connection, exclude *bool, err error) error {
	excludeTurns(c, exclude)
	return threadConfigError(err)
}

// startOrUnload starts the thread's MCP servers; on failure it unloads the thread and returns the internal error
// "error <doing> thread: …".
func (s *Server) startOrUnload(ctx context.Context, t *thread.Thread, doing string) error {
	if err := s.startThreadMCP(ctx, t); err != nil {
		s.threads.Unload(t.ID)
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "error %s thread: %v", doing, err)
	}
	return nil
}

// beginShellSnapshot begins the capture of a thread's shell snapshot (tools.ThreadLoaded prepared it) once
// the load request's reply, just queued, is written: the login shell it starts does not compete with the
// load's own work. A client that does not read its output delays the capture (its commands then run as
// they do while a capture is in progress: without the snapshot).
func (c *connection) beginShellSnapshot(t *thread.Thread) {
	if snap := tools.ShellSnapshot(t); snap != nil && !snap.Begun() {
		c.rpc.AfterWritten(snap.Begin)
	}
}

// startResponse is the answer to thread/start (and, converted, thread/fork) for a thread with info and settings st.
func startResponse(info protocol.Thread, st thread.Settings) protocol.ThreadStartResponse {
	return protocol.ThreadStartResponse{
		Thread: info, Model: st.Model, ModelProvider: st.ModelProvider, Cwd: protocol.AbsolutePathBuf(st.Cwd),
		RuntimeWorkspaceRoots: []protocol.AbsolutePathBuf{protocol.AbsolutePathBuf(st.Cwd)},
		ApprovalPolicy:        st.ApprovalPolicy, ApprovalsReviewer: st.ApprovalsReviewer, Sandbox: st.Sandbox,
		ActivePermissionProfile: st.ActivePermissionProfile(), ReasoningEffort: st.Effort, ServiceTier: thread.ReportedServiceTier(st), DisabledPluginIds: []string{}, InstructionSources: []protocol.LegacyAppPathString{},
		MultiAgentMode: &protocol.MultiAgentMode{Name: protocol.MultiAgentModeExplicitRequestOnly},
	}
}

// resumeResponse is the answer to thread/resume: startResponse's fields plus the default collaboration mode.
func resumeResponse(info protocol.Thread, st thread.Settings) protocol.ThreadResumeResponse {
	b := startResponse(info, st)
	return protocol.ThreadResumeResponse{
		Thread: b.Thread, Model: b.Model, ModelProvider: b.ModelProvider, Cwd: b.Cwd,
		RuntimeWorkspaceRoots: b.RuntimeWorkspaceRoots, ApprovalPolicy: b.ApprovalPolicy,
		ApprovalsReviewer: b.ApprovalsReviewer, Sandbox: b.Sandbox, ActivePermissionProfile: b.ActivePermissionProfile,
		ReasoningEffort: b.ReasoningEffort, ServiceTier: b.ServiceTier,
		DisabledPluginIds: b.DisabledPluginIds, InstructionSources: b.InstructionSources, MultiAgentMode: b.MultiAgentMode,
		CollaborationMode: &protocol.CollaborationMode{Mode: protocol.ModeKindDefault, Settings: protocol.Settings{Model: st.Model, ReasoningEffort: st.Effort}},
	}
}

func (s *Server) threadNameSet(_ context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadSetNameParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	name := strings.TrimSpace(p.Name) // the reference stores the trimmed name and refuses a blank one
	if name == "" {
		return nil, jsonrpc.InvalidRequest("thread name must not be empty")
	}
	if t, ok := s.threads.Get(p.ThreadID); !ok {
		if _, err := s.threads.ReadStored(p.ThreadID, false); err != nil {
			return nil, jsonrpc.InvalidRequest("no rollout found for thread id " + p.ThreadID)
		}
	} else if t.Info().Ephemeral {
		return nil, jsonrpc.InvalidRequest("ephemeral thread does not support metadata updates: " + p.ThreadID)
	}
	req.Reply(protocol.ThreadSetNameResponse{}, nil)
	_, err := s.threads.SetName(p.ThreadID, name)
	if err != nil {
		s.log.Warn("thread/name/set failed after reply", "error", err)
		return nil, nil
	}
	s.broadcast(protocol.NotifyThreadNameUpdated, protocol.ThreadNameUpdatedNotification{ThreadID: p.ThreadID, ThreadName: &name})
	return nil, nil
}

func resumeOverrides(model, provider, cwd *string, ap *protocol.AskForApproval, rev *protocol.ApprovalsReviewer, sb *protocol.SandboxMode, base, dev, tier *string, pers *protocol.Personality) thread.ResumeOverrides {
	if cwd != nil && *cwd != "" && !filepath.IsAbs(*cwd) {
		// a relative cwd is the server's working directory's, as thread/start resolves it
		if wd, err := os.Getwd(); err == nil {
			cwd = ptr(filepath.Join(wd, *cwd))
		}
	}
	return thread.ResumeOverrides{Model: model, ModelProvider: provider, Cwd: cwd, ApprovalPolicy: ap, Reviewer: rev, Sandbox: sb, BaseInstr: base, DeveloperInstr: dev,
		ServiceTier: tier, Personality: pers}
}

// sendUsage tells c the thread's accumulated token usage, as the reference does after resume and fork.
func sendUsage(t *thread.Thread, c *connection) {
	if u, turnID, ok := t.TokenUsage(); ok {
		t.EmitTo(c, protocol.NotifyThreadTokenUsageUpdated, protocol.ThreadTokenUsageUpdatedNotification{ThreadID: t.ID, TurnID: turnID, TokenUsage: u})
	}
}

func (s *Server) threadResume(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadResumeParams) (any, error) {
	if len(p.History) > 0 {
		// The given history is the thread: the reference does not look at threadId then, not even its syntax.
		return s.resumeFromHistory(ctx, c, req, p)
	}
	if err := validateSessionID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if lt, ok := s.threads.Get(p.ThreadID); ok && lt.Info().Ephemeral {
		// An ephemeral thread has no rollout to resume from, loaded or not.
		return nil, jsonrpc.InvalidRequest("no rollout found for thread id " + p.ThreadID)
	}
	// The thread index's background reads (its first build, started by the first resume) wait until the reply
	// is written: they would share the CPU and the garbage collector with it.
	release := func() {}
	if deref(p.Path) == "" {
		if st, err := s.threads.Store(); err == nil {
			release = sync.OnceFunc(st.Busy())
			defer release()
		}
	}
	if _, loaded := s.threads.Get(p.ThreadID); !loaded {
		if err := s.configLoadError(); err != nil {
			return nil, loadConfigError(c, p.ExcludeTurns, err)
		}
	}
	t, loadedNow, err := s.threads.Resume(ctx, p.ThreadID, deref(p.Path), resumeOverrides(p.Model, p.ModelProvider, p.Cwd,
		p.ApprovalPolicy, p.ApprovalsReviewer, p.Sandbox, p.BaseInstructions, p.DeveloperInstructions, p.ServiceTier, p.Personality))
	var cerr *thread.ConfigError
	if errors.As(err, &cerr) {
		return nil, loadConfigError(c, p.ExcludeTurns, cerr.Err)
	}
	if err != nil {
		return nil, storeError(err)
	}
	if loadedNow {
		if err := s.startOrUnload(ctx, t, "resuming"); err != nil {
			return nil, err
		}
	}
	s.threads.CancelUnload(t.ID)
	legacy := legacyHistory(ptr(t.Info()))
	exclude := excludeTurnsOf(c, p.ExcludeTurns, legacy)
	newSubscriber := t.Subscribe(c)
	if loadedNow {
		st := t.Settings()
		for _, w := range []string{t.ModelSwitchWarning(), thread.UnadvertisedTierWarning(st)} {
			if w != "" {
				t.EmitTo(c, protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &t.ID, Message: w})
			}
		}
		t.EmitTo(c, protocol.NotifyThreadStatusChanged, protocol.ThreadStatusChangedNotification{ThreadID: t.ID, Status: t.Info().Status})
	}
	s.loadProject(ctx, t)
	info := t.Info()
	var turns []protocol.Turn
	if !exclude {
		turns = t.TurnsSnapshot()
	}
	resp := resumeResponse(info, t.Settings())
	// The backwards cursors anchor at the newest turn and item, included: paging from them (descending) starts
	// with the newest entry. The reference gives none for a legacy thread.
	if !legacy {
		resp.TurnsBackwardsCursor, resp.ItemsBackwardsCursor = s.backwardsCursors(t)
	}
	req.Reply(withTurns(resp, &resp.Thread, turns))
	c.beginShellSnapshot(t)
	release()
	if loadedNow || newSubscriber {
		// A connection that already follows the thread is not told its usage again (the reference's
		// behaviour); one that (re)subscribes is.
		sendUsage(t, c)
	}
	s.releaseThreadMCP(t)
	// Goals are not supported: a resumed thread never has one, which the reference announces.
	t.EmitTo(c, protocol.NotifyThreadGoalCleared, protocol.ThreadGoalClearedNotification{ThreadID: t.ID})
	return nil, nil
}

// withTurns encodes resp as jsonrpc.Marshal would once *thread holds turns, for Reply. The turns are encoded
// once and spliced in: marshalled as part of resp, every turn's bytes would be re-validated and copied at each
// level of nesting (thread, response), most of a large thread's resume time.
func withTurns(resp any, thread *protocol.Thread, turns []protocol.Turn) (json.RawMessage, error) {
	thread.Turns = nil // encoded as "turns":[]
	head, err := jsonrpc.Marshal(resp)
	if err != nil {
		return nil, err
	}
	if len(turns) == 0 {
		return head, nil
	}
	const empty = `"turns":[]`
	at := bytes.Index(head, []byte(empty))
	if at < 0 || bytes.Count(head, []byte(empty)) != 1 {
		thread.Turns = turns
		return jsonrpc.Marshal(resp)
	}
	// appendTurn writes what json.Marshal would embed (compact, HTML-escaped) for each turn.
	items := 0
	for i := range turns {
		items += len(turns[i].Items)
	}
	split := at + len(empty) - 1
	out := make([]byte, 0, len(head)+len(turns)*256+items*192)
	out = append(out, head[:split]...)
	for i := range turns {
		if i > 0 {
			out = append(out, ',')
		}
		if out, err = appendTurn(out, &turns[i]); err != nil {
			return nil, err
		}
	}
	return append(out, head[split:]...), nil
}

// Cursor scopes of thread/turns/list and thread/items/list, as the reference names them.
const (
	scopeTurns = "turns"
	scopeItems = "itemsByCreatedAtOrdinal"
)

// historyCursorBody is the cursor of thread/turns/list and thread/items/list, shaped like the reference's: the
// thread, the scope, an anchor position in the thread's chronological history (rolloutOrdinal; here the entry's
// index) and whether the anchor itself belongs to the next page (includeAnchor).
type historyCursorBody struct {
	ThreadID      string `json:"requestedThreadId"`
	Ordinal       *int   `json:"rolloutOrdinal"`
	IncludeAnchor bool   `json:"includeAnchor"`
	Scope         struct {
		Kind string `json:"kind"`
	} `json:"scope"`
}

// historyAnchor is a decoded history cursor.
type historyAnchor struct {
	pos     int
	include bool
}

func historyCursor(threadID, kind string, pos int, include bool) string {
	c := historyCursorBody{ThreadID: threadID, Ordinal: &pos, IncludeAnchor: include}
	c.Scope.Kind = kind
	b, _ := json.Marshal(c)
	return string(b)
}

func parseHistoryCursor(raw, threadID, kind string) (historyAnchor, error) {
	var c historyCursorBody
	if err := json.Unmarshal([]byte(raw), &c); err != nil || c.ThreadID != threadID || c.Scope.Kind != kind ||
		c.Ordinal == nil || *c.Ordinal < 0 {
		return historyAnchor{}, jsonrpc.InvalidRequest("invalid cursor: " + raw)
	}
	return historyAnchor{pos: *c.Ordinal, include: c.IncludeAnchor}, nil
}

// resumeFromHistory serves thread/resume with `history`: like the reference, it starts a new thread (the
// thread id is not used) whose model history is the given items, announced with thread/status/changed (idle)
// but no thread/started.
func (s *Server) resumeFromHistory(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadResumeParams) (any, error) {
	sp := protocol.ThreadStartParams{Cwd: p.Cwd, Model: p.Model, ModelProvider: p.ModelProvider, ApprovalPolicy: p.ApprovalPolicy,
		ApprovalsReviewer: p.ApprovalsReviewer, Sandbox: p.Sandbox, BaseInstructions: p.BaseInstructions,
		DeveloperInstructions: p.DeveloperInstructions, Config: p.Config}
	t, err := s.threads.StartFromHistory(ctx, thread.StartOptions{Params: sp, Originator: c.originator()}, p.History)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "error resuming thread: %v", err)
	}
	if err := s.startOrUnload(ctx, t, "resuming"); err != nil {
		return nil, err
	}
	excludeTurns(c, p.ExcludeTurns) // the turns are the given history: nothing to hydrate either way
	t.Subscribe(c)
	info := t.Info()
	t.EmitTo(c, protocol.NotifyThreadStatusChanged, protocol.ThreadStatusChangedNotification{ThreadID: t.ID, Status: info.Status})
	req.Reply(resumeResponse(info, t.Settings()), nil)
	c.beginShellSnapshot(t)
	s.releaseThreadMCP(t)
	t.EmitTo(c, protocol.NotifyThreadGoalCleared, protocol.ThreadGoalClearedNotification{ThreadID: t.ID})
	return nil, nil
}

func (s *Server) threadFork(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadForkParams) (any, error) {
	if err := validateSessionID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if s.withoutRollout(p.ThreadID) {
		// The reference writes a started thread's rollout with its first turn: until then there is nothing to
		// fork from.
		return nil, jsonrpc.InvalidRequest("no rollout found for thread id " + p.ThreadID)
	}
	if err := s.configLoadError(); err != nil {
		return nil, loadConfigError(c, p.ExcludeTurns, err)
	}
	legacy := s.threads.Legacy(p.ThreadID)
	t, err := s.threads.Fork(ctx, thread.ForkOptions{
		ParentID: p.ThreadID, LastTurnID: deref(p.LastTurnID), BeforeTurnID: deref(p.BeforeTurnID),
		Ephemeral: p.Ephemeral != nil && *p.Ephemeral, ExcludeTurns: p.ExcludeTurns != nil && *p.ExcludeTurns,
		Originator: c.originator(), Source: s.opts.SessionSource, ThreadSource: p.ThreadSource,
		Overrides: resumeOverrides(p.Model, p.ModelProvider, p.Cwd, p.ApprovalPolicy, p.ApprovalsReviewer, p.Sandbox, p.BaseInstructions, p.DeveloperInstructions, p.ServiceTier, nil),
	})
	var cerr *thread.ConfigError
	switch {
	case errors.As(err, &cerr):
		return nil, loadConfigError(c, p.ExcludeTurns, cerr.Err)
	case errors.Is(err, thread.ErrEphemeralForkWithTurns):
		return nil, jsonrpc.InvalidRequest(err.Error())
	case errors.Is(err, thread.ErrTurnNotFound):
		// The reference looks for the turn after it sent the hydration deprecation notice.
		excludeTurnsOf(c, p.ExcludeTurns, legacy)
		return nil, jsonrpc.InvalidRequest(err.Error())
	case err != nil:
		return nil, storeError(err)
	}
	if err := s.startOrUnload(ctx, t, "forking"); err != nil {
		return nil, err
	}
	req.Claim(threadLane(t.ID))
	s.inheritProject(ctx, p.ThreadID, t)
	exclude := excludeTurnsOf(c, p.ExcludeTurns, legacy)
	t.Subscribe(c)
	info := t.Info()
	if !exclude {
		info.Turns = t.TurnsSnapshot()
	}
	req.Reply(protocol.ThreadForkResponse(startResponse(info, t.Settings())), nil)
	c.beginShellSnapshot(t)
	sendUsage(t, c)
	t.Emit(protocol.NotifyThreadStarted, protocol.ThreadStartedNotification{Thread: t.Info()}) // every connection
	s.releaseThreadMCP(t)
	return nil, nil
}

func (s *Server) threadArchive(_ context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadArchiveParams) (any, error) {
	if err := validateSessionID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	wasLoaded, err := s.threads.Archive(p.ThreadID)
	if err != nil {
		return nil, storeError(err)
	}
	if wasLoaded {
		// The reference announces the unload once (in about 1 run of 20 a race makes it twice).
		c.notify(protocol.NotifyThreadStatusChanged, protocol.ThreadStatusChangedNotification{ThreadID: p.ThreadID, Status: protocol.ThreadStatus{Value: protocol.ThreadStatusNotLoaded{}}})
	}
	req.Reply(protocol.ThreadArchiveResponse{}, nil)
	s.broadcast(protocol.NotifyThreadArchived, protocol.ThreadArchivedNotification{ThreadID: p.ThreadID})
	return nil, nil
}

func (s *Server) threadUnarchive(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadUnarchiveParams) (any, error) {
	if err := validateSessionID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	th, err := s.threads.Unarchive(p.ThreadID)
	if err != nil {
		return nil, storeError(err)
	}
	s.overlayProject(ctx, &th)
	req.Reply(protocol.ThreadUnarchiveResponse{Thread: th}, nil)
	s.broadcast(protocol.NotifyThreadUnarchived, protocol.ThreadUnarchivedNotification{ThreadID: p.ThreadID})
	return nil, nil
}

func (s *Server) threadDelete(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadDeleteParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if err := s.threads.Delete(p.ThreadID); err != nil {
		return nil, storeError(err)
	}
	s.forgetThreadOrg(ctx, p.ThreadID)
	req.Reply(protocol.ThreadDeleteResponse{}, nil)
	s.broadcast(protocol.NotifyThreadDeleted, protocol.ThreadDeletedNotification{ThreadID: p.ThreadID})
	return nil, nil
}

func (s *Server) threadUnsubscribe(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ThreadUnsubscribeParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	return protocol.ThreadUnsubscribeResponse{Status: s.threads.Unsubscribe(p.ThreadID, c)}, nil
}

// historyPage selects the indexes of one page over n chronological entries: newest first (desc) or oldest
// first (asc), starting at the anchor when given. It returns the indexes in page order, the next page's cursor
// anchor (the last entry, excluded; nil when nothing follows) and the backwards anchor (the first entry,
// included; nil for an empty page).
func historyPage(n, limit int, a *historyAnchor, asc bool) (idx []int, next, back *historyAnchor) {
	if limit <= 0 {
		limit = 25
	}
	if asc {
		lo := 0
		if a != nil {
			lo = a.pos + 1
			if a.include {
				lo = a.pos
			}
		}
		for i := max(lo, 0); i < n && len(idx) < limit; i++ {
			idx = append(idx, i)
		}
		if len(idx) > 0 && idx[len(idx)-1] < n-1 {
			next = &historyAnchor{pos: idx[len(idx)-1]}
		}
	} else {
		hi := n - 1
		if a != nil {
			hi = a.pos - 1
			if a.include {
				hi = a.pos
			}
		}
		for i := min(hi, n-1); i >= 0 && len(idx) < limit; i-- {
			idx = append(idx, i)
		}
		if len(idx) > 0 && idx[len(idx)-1] > 0 {
			next = &historyAnchor{pos: idx[len(idx)-1]}
		}
	}
	if len(idx) > 0 {
		back = &historyAnchor{pos: idx[0], include: true}
	}
	return idx, next, back
}

// backwardsCursors are thread/resume's and thread/revert's history cursors: anchored at the newest turn and
// item (their rollout ordinals), included, so that paging from them (descending) starts with the newest entry.
func (s *Server) backwardsCursors(t *thread.Thread) (turns, items *string) {
	nTurns, nItems := t.HistoryCounts()
	if nTurns == 0 {
		return nil, nil
	}
	lastTurn, lastItem := s.threads.HistoryOrdinals(t.ID).Last()
	if lastTurn < 0 {
		lastTurn, lastItem = int64(nTurns-1), int64(nItems-1) // nothing written yet
	}
	turns = cursorString(t.ID, scopeTurns, &historyAnchor{pos: int(lastTurn), include: true})
	if nItems > 0 && lastItem >= 0 {
		items = cursorString(t.ID, scopeItems, &historyAnchor{pos: int(lastItem), include: true})
	}
	return turns, items
}

func cursorString(threadID, kind string, a *historyAnchor) *string {
	if a == nil {
		return nil
	}
	c := historyCursor(threadID, kind, a.pos, a.include)
	return &c
}

// withoutRollout reports whether id is a loaded thread the reference has no rollout for yet: started, not
// ephemeral, no turn so far (a fork's rollout is written when it is created).
func (s *Server) withoutRollout(id string) bool {
	t, ok := s.threads.Get(id)
	if !ok {
		return false
	}
	info := t.Info()
	nTurns, _ := t.HistoryCounts()
	return !info.Ephemeral && nTurns == 0 && info.ForkedFromID == nil
}

// errListTurnsUnsupported is the reference's answer when turns are asked of a thread without a rollout.
var errListTurnsUnsupported = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "list_turns is not supported yet"}

func (s *Server) threadTurnsList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadTurnsListParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if s.withoutRollout(p.ThreadID) {
		return nil, errListTurnsUnsupported
	}
	turns, err := s.threads.Turns(p.ThreadID)
	if err != nil {
		return nil, storeError(err)
	}
	legacy := s.threads.Legacy(p.ThreadID)
	asc := p.SortDirection != nil && *p.SortDirection == protocol.SortDirectionAsc
	var ords []int64
	if !legacy {
		ho := s.threads.HistoryOrdinals(p.ThreadID)
		ords = turnOrdinals(turns, ho)
	}
	var anchor *historyAnchor
	if p.Cursor != nil && *p.Cursor != "" {
		var a historyAnchor
		if legacy {
			a, err = parseTurnCursor(*p.Cursor, turns)
		} else if a, err = parseHistoryCursor(*p.Cursor, p.ThreadID, scopeTurns); err == nil {
			a = anchorAtOrdinal(ords, a, asc)
		}
		if err != nil {
			return nil, err
		}
		anchor = &a
	}
	limit := 0
	if p.Limit != nil {
		limit = int(*p.Limit)
	}
	idx, next, back := historyPage(len(turns), limit, anchor, asc)
	view := protocol.TurnItemsViewSummary
	if p.ItemsView != nil {
		view = *p.ItemsView
	}
	page := make([]protocol.Turn, 0, len(idx))
	for _, i := range idx {
		page = append(page, itemsView(turns[i], view))
	}
	if legacy {
		return protocol.ThreadTurnsListResponse{Data: page, NextCursor: turnCursor(turns, next),
			BackwardsCursor: turnCursor(turns, back)}, nil
	}
	return protocol.ThreadTurnsListResponse{Data: page, NextCursor: ordinalCursor(p.ThreadID, scopeTurns, ords, next),
		BackwardsCursor: ordinalCursor(p.ThreadID, scopeTurns, ords, back)}, nil
}

// turnOrdinals returns the rollout ordinal of each turn (see thread.HistoryOrdinals); a turn not written
// yet gets one past the previous turn's.
func turnOrdinals(turns []protocol.Turn, ho thread.HistoryOrdinals) []int64 {
	ords := make([]int64, len(turns))
	for i := range turns {
		o, ok := ho.Turn(turns[i].ID)
		if !ok || (i > 0 && o <= ords[i-1]) {
			o = 0
			if i > 0 {
				o = ords[i-1] + 1
			}
		}
		ords[i] = o
	}
	return ords
}

// anchorAtOrdinal turns a cursor's anchor, a rollout ordinal, into the position in entries whose ordinals
// are ords (ascending) at which a page in the given direction starts (included).
func anchorAtOrdinal(ords []int64, a historyAnchor, asc bool) historyAnchor {
	o := int64(a.pos)
	if asc {
		i := sort.Search(len(ords), func(i int) bool { return ords[i] > o || (a.include && ords[i] == o) })
		return historyAnchor{pos: i, include: true}
	}
	i := sort.Search(len(ords), func(i int) bool { return ords[i] > o || (!a.include && ords[i] == o) })
	return historyAnchor{pos: i - 1, include: true}
}

// ordinalCursor is cursorString with the anchor's position given as its entry's rollout ordinal.
func ordinalCursor(threadID, kind string, ords []int64, a *historyAnchor) *string {
	if a == nil || a.pos < 0 || a.pos >= len(ords) {
		return cursorString(threadID, kind, a)
	}
	return cursorString(threadID, kind, &historyAnchor{pos: int(ords[a.pos]), include: a.include})
}

// turnCursorBody is thread/turns/list's cursor for a legacy thread, shaped like the reference's: the anchor
// turn's id and whether the anchor itself belongs to the next page.
type turnCursorBody struct {
	TurnID        string `json:"turnId"`
	IncludeAnchor bool   `json:"includeAnchor"`
}

func turnCursor(turns []protocol.Turn, a *historyAnchor) *string {
	if a == nil {
		return nil
	}
	b, _ := json.Marshal(turnCursorBody{TurnID: turns[a.pos].ID, IncludeAnchor: a.include})
	c := string(b)
	return &c
}

func parseTurnCursor(raw string, turns []protocol.Turn) (historyAnchor, error) {
	var c turnCursorBody
	if err := json.Unmarshal([]byte(raw), &c); err == nil && c.TurnID != "" {
		for i := range turns {
			if turns[i].ID == c.TurnID {
				return historyAnchor{pos: i, include: c.IncludeAnchor}, nil
			}
		}
	}
	return historyAnchor{}, jsonrpc.InvalidRequest("invalid cursor: " + raw)
}

// itemsView trims a turn's items to the requested view.
func itemsView(tu protocol.Turn, view protocol.TurnItemsView) protocol.Turn {
	switch view {
	case protocol.TurnItemsViewNotLoaded:
		tu.Items = []protocol.ThreadItem{}
	case protocol.TurnItemsViewSummary:
		// The display summary: the turn's first user message and its last agent message.
		var user, agent *protocol.ThreadItem
		for i, it := range tu.Items {
			switch it.Value.(type) {
			case protocol.ThreadItemUserMessage:
				if user == nil {
					user = &tu.Items[i]
				}
			case protocol.ThreadItemAgentMessage:
				agent = &tu.Items[i]
			}
		}
		items := []protocol.ThreadItem{}
		for _, it := range []*protocol.ThreadItem{user, agent} {
			if it != nil {
				items = append(items, *it)
			}
		}
		tu.Items = items
	}
	tu.ItemsView = &view
	return tu
}

func (s *Server) threadItemsList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadItemsListParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if s.withoutRollout(p.ThreadID) || s.threads.Legacy(p.ThreadID) {
		// The reference pages items only from a paginated rollout.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: protocol.MethodThreadItemsList + " is not supported yet"}
	}
	turns, err := s.threads.Turns(p.ThreadID)
	if err != nil {
		return nil, storeError(err)
	}
	var entries []protocol.ThreadItemEntry
	for _, tu := range turns {
		if p.TurnID != nil && *p.TurnID != tu.ID {
			continue
		}
		for _, it := range tu.Items {
			e := protocol.ThreadItemEntry{Item: it, TurnID: tu.ID}
			var ts struct {
				StartedAtMs   *int64 `json:"startedAtMs"`
				CompletedAtMs *int64 `json:"completedAtMs"`
			}
			if b, err := json.Marshal(it); err == nil && json.Unmarshal(b, &ts) == nil {
				e.StartedAtMs, e.CompletedAtMs = ts.StartedAtMs, ts.CompletedAtMs
			}
			entries = append(entries, e)
		}
	}
	// Items default to oldest first, unlike turns.
	asc := p.SortDirection == nil || *p.SortDirection == protocol.SortDirectionAsc
	ords := itemOrdinals(entries, s.threads.HistoryOrdinals(p.ThreadID))
	var anchor *historyAnchor
	if len(p.Cursor) > 0 && string(p.Cursor) != "null" {
		a, err := itemsAnchor(p, entries, ords, asc)
		if err != nil {
			return nil, err
		}
		anchor = &a
	}
	limit := 0
	if p.Limit != nil {
		limit = int(*p.Limit)
	}
	idx, next, back := historyPage(len(entries), limit, anchor, asc)
	page := make([]protocol.ThreadItemEntry, 0, len(idx))
	for _, i := range idx {
		page = append(page, entries[i])
	}
	return protocol.ThreadItemsListResponse{Data: page, NextCursor: ordinalCursor(p.ThreadID, scopeItems, ords, next),
		BackwardsCursor: ordinalCursor(p.ThreadID, scopeItems, ords, back)}, nil
}

// itemOrdinals returns the rollout ordinal of each entry (see thread.HistoryOrdinals); an item not written
// yet gets one past the previous entry's.
func itemOrdinals(entries []protocol.ThreadItemEntry, ho thread.HistoryOrdinals) []int64 {
	ords := make([]int64, len(entries))
	for i := range entries {
		o, ok := ho.Item(entries[i].TurnID, itemID(entries[i].Item))
		if !ok || (i > 0 && o <= ords[i-1]) {
			o = 0
			if i > 0 {
				o = ords[i-1] + 1
			}
		}
		ords[i] = o
	}
	return ords
}

// itemsAnchor decodes thread/items/list's cursor: a string cursor from an earlier page (its anchor a rollout
// ordinal, placed among ords for the direction), or an exclusive {type:"item", itemId} anchor inside the
// requested turn.
func itemsAnchor(p *protocol.ThreadItemsListParams, entries []protocol.ThreadItemEntry, ords []int64, asc bool) (historyAnchor, error) {
	var raw string
	if json.Unmarshal(p.Cursor, &raw) == nil {
		a, err := parseHistoryCursor(raw, p.ThreadID, scopeItems)
		if err != nil {
			return a, err
		}
		return anchorAtOrdinal(ords, a, asc), nil
	}
	var obj struct {
		Type   string `json:"type"`
		ItemID string `json:"itemId"`
	}
	if err := json.Unmarshal(p.Cursor, &obj); err != nil || obj.Type != "item" || obj.ItemID == "" {
		return historyAnchor{}, jsonrpc.InvalidRequest("invalid cursor: " + string(p.Cursor))
	}
	if p.TurnID == nil || *p.TurnID == "" {
		return historyAnchor{}, jsonrpc.InvalidRequest("an item cursor requires turnId")
	}
	for i, e := range entries {
		if itemID(e.Item) == obj.ItemID {
			return historyAnchor{pos: i}, nil
		}
	}
	return historyAnchor{}, jsonrpc.InvalidRequest("item not found in turn: " + obj.ItemID)
}

// itemID reads a thread item's id.
func itemID(it protocol.ThreadItem) string {
	var v struct {
		ID string `json:"id"`
	}
	if b, err := json.Marshal(it); err == nil {
		_ = json.Unmarshal(b, &v)
	}
	return v.ID
}
