package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/rollout"
	"appserver/thread"
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

func initialReadState(id string) protocol.ThreadReadState {
	return protocol.ThreadReadState{Revision: "initial:" + id}
}

func (s *Server) threadList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadListParams) (any, error) {
	q := rollout.ListQuery{Cursor: deref(p.Cursor), ModelProviders: p.ModelProviders, SearchTerm: deref(p.SearchTerm)}
	if p.Limit != nil {
		q.Limit = int(*p.Limit)
	}
	if p.SortKey != nil {
		switch *p.SortKey {
		case protocol.ThreadSortKeyCreatedAt:
			q.SortKey = rollout.SortCreatedAt
		case protocol.ThreadSortKeyUpdatedAt, protocol.ThreadSortKeyRecencyAt:
			q.SortKey = rollout.SortUpdatedAt
		default:
			return nil, jsonrpc.InvalidRequest(fmt.Sprintf("unsupported sortKey: %s", *p.SortKey))
		}
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
		q.SourceKinds = append(q.SourceKinds, string(k))
	}
	data, next, err := s.threads.List(q)
	if errors.Is(err, rollout.ErrBadCursor) {
		return nil, jsonrpc.InvalidRequest(fmt.Sprintf("invalid cursor: %s", q.Cursor))
	}
	if err != nil {
		return nil, storeError(err)
	}
	states := make(map[string]protocol.ThreadReadState, len(data))
	for _, th := range data {
		states[th.ID] = initialReadState(th.ID)
	}
	resp := protocol.ThreadListResponse{Data: data, ReadStates: states}
	if next != "" {
		resp.NextCursor = &next
	}
	return resp, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func (s *Server) threadRead(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ThreadReadParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	include := p.IncludeTurns != nil && *p.IncludeTurns
	var info protocol.Thread
	if t, ok := s.threads.Get(p.ThreadID); ok {
		info = t.Info()
		if info.Ephemeral {
			// Without a rollout the reference has no history, preview or read state to show.
			if include {
				return nil, jsonrpc.InvalidRequest("ephemeral threads do not support includeTurns")
			}
			info.Preview = ""
			return protocol.ThreadReadResponse{Thread: info}, nil
		}
		if include {
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
	if include {
		c.notify(protocol.NotifyDeprecationNotice, deprecationHydration())
	}
	rs := initialReadState(p.ThreadID)
	return protocol.ThreadReadResponse{Thread: info, ReadState: &rs}, nil
}

func deprecationHydration() protocol.DeprecationNoticeNotification {
	return protocol.DeprecationNoticeNotification{Summary: "Full-history hydration is deprecated for paginated threads; omit `includeTurns` or set it to `false`, then page with `thread/turns/list` and `thread/items/list`."}
}

func deprecationExcludeTurns() protocol.DeprecationNoticeNotification {
	return protocol.DeprecationNoticeNotification{Summary: "Full-history hydration is deprecated for paginated threads; use `excludeTurns: true`, then page with `thread/turns/list` and `thread/items/list`."}
}

func (s *Server) threadNameSet(_ context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadSetNameParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if t, ok := s.threads.Get(p.ThreadID); !ok {
		if _, err := s.threads.ReadStored(p.ThreadID, false); err != nil {
			return nil, jsonrpc.InvalidRequest("thread not found: " + p.ThreadID)
		}
	} else if t.Info().Ephemeral {
		return nil, jsonrpc.InvalidRequest("ephemeral thread does not support metadata updates: " + p.ThreadID)
	}
	req.Reply(protocol.ThreadSetNameResponse{}, nil)
	t, err := s.threads.SetName(p.ThreadID, p.Name)
	if err != nil {
		s.log.Warn("thread/name/set failed after reply", "error", err)
		return nil, nil
	}
	if t == nil || !t.IsSubscribed(c) {
		name := p.Name
		c.notify(protocol.NotifyThreadNameUpdated, protocol.ThreadNameUpdatedNotification{ThreadID: p.ThreadID, ThreadName: &name})
	}
	return nil, nil
}

func resumeOverrides(model, provider, cwd *string, ap *protocol.AskForApproval, rev *protocol.ApprovalsReviewer, sb *protocol.SandboxMode, base, dev *string) thread.ResumeOverrides {
	return thread.ResumeOverrides{Model: model, ModelProvider: provider, Cwd: cwd, ApprovalPolicy: ap, Reviewer: rev, Sandbox: sb, BaseInstr: base, DeveloperInstr: dev}
}

// sendUsage tells c the thread's accumulated token usage, as the reference does after resume and fork.
func sendUsage(t *thread.Thread, c *connection) {
	if u, turnID, ok := t.TokenUsage(); ok {
		t.EmitTo(c, protocol.NotifyThreadTokenUsageUpdated, protocol.ThreadTokenUsageUpdatedNotification{ThreadID: t.ID, TurnID: turnID, TokenUsage: u})
	}
}

func (s *Server) threadResume(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadResumeParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if lt, ok := s.threads.Get(p.ThreadID); ok && lt.Info().Ephemeral {
		// An ephemeral thread has no rollout to resume from, loaded or not.
		return nil, jsonrpc.InvalidRequest("no rollout found for thread id " + p.ThreadID)
	}
	t, loadedNow, err := s.threads.Resume(ctx, p.ThreadID, deref(p.Path), resumeOverrides(p.Model, p.ModelProvider, p.Cwd,
		p.ApprovalPolicy, p.ApprovalsReviewer, p.Sandbox, p.BaseInstructions, p.DeveloperInstructions))
	if err != nil {
		return nil, storeError(err)
	}
	if loadedNow {
		if err := s.startThreadMCP(ctx, t); err != nil {
			s.threads.Unload(t.ID)
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "error resuming thread: %v", err)
		}
	}
	s.threads.CancelUnload(t.ID)
	exclude := p.ExcludeTurns != nil && *p.ExcludeTurns
	if !exclude {
		c.notify(protocol.NotifyDeprecationNotice, deprecationExcludeTurns())
	}
	t.Subscribe(c)
	if loadedNow {
		t.EmitTo(c, protocol.NotifyThreadStatusChanged, protocol.ThreadStatusChangedNotification{ThreadID: t.ID, Status: t.Info().Status})
	}
	info := t.Info()
	turns := t.TurnsSnapshot()
	if !exclude {
		info.Turns = turns
	}
	st := t.Settings()
	resp := protocol.ThreadResumeResponse{
		Thread: info, Model: st.Model, ModelProvider: st.ModelProvider, Cwd: protocol.AbsolutePathBuf(st.Cwd),
		RuntimeWorkspaceRoots: []protocol.AbsolutePathBuf{protocol.AbsolutePathBuf(st.Cwd)},
		ApprovalPolicy:        st.ApprovalPolicy, ApprovalsReviewer: st.ApprovalsReviewer, Sandbox: st.Sandbox,
		ReasoningEffort: st.Effort, DisabledPluginIds: []string{}, InstructionSources: []protocol.LegacyAppPathString{},
		MultiAgentMode:    &protocol.MultiAgentMode{Name: protocol.MultiAgentModeExplicitRequestOnly},
		CollaborationMode: &protocol.CollaborationMode{Mode: protocol.ModeKindDefault, Settings: protocol.Settings{Model: st.Model, ReasoningEffort: st.Effort}},
	}
	if len(turns) > 0 {
		tc := historyCursor(t.ID, "turns", len(turns))
		ic := historyCursor(t.ID, "itemsByCreatedAtOrdinal", countItems(turns))
		resp.TurnsBackwardsCursor, resp.ItemsBackwardsCursor = &tc, &ic
	}
	req.Reply(resp, nil)
	sendUsage(t, c)
	s.releaseThreadMCP(t)
	// Goals are not supported: a resumed thread never has one, which the reference announces.
	t.EmitTo(c, protocol.NotifyThreadGoalCleared, protocol.ThreadGoalClearedNotification{ThreadID: t.ID})
	return nil, nil
}

func countItems(turns []protocol.Turn) int {
	n := 0
	for _, tu := range turns {
		n += len(tu.Items)
	}
	return n
}

// historyCursor is the opaque cursor of thread/turns/list and thread/items/list: the thread, the scope and the
// index the next page (towards older entries) ends before.
type historyCursorBody struct {
	ThreadID string `json:"requestedThreadId"`
	Index    int    `json:"index"`
	Scope    struct {
		Kind string `json:"kind"`
	} `json:"scope"`
}

func historyCursor(threadID, kind string, index int) string {
	var c historyCursorBody
	c.ThreadID, c.Index, c.Scope.Kind = threadID, index, kind
	b, _ := json.Marshal(c)
	return string(b)
}

func parseHistoryCursor(raw, threadID, kind string) (int, error) {
	var c historyCursorBody
	if err := json.Unmarshal([]byte(raw), &c); err != nil || c.ThreadID != threadID || c.Scope.Kind != kind {
		if n, err := strconv.Atoi(raw); err == nil && n >= 0 {
			return n, nil
		}
		return 0, jsonrpc.InvalidRequest("invalid cursor: " + raw)
	}
	return c.Index, nil
}

func (s *Server) threadFork(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadForkParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	t, err := s.threads.Fork(ctx, thread.ForkOptions{
		ParentID: p.ThreadID, LastTurnID: deref(p.LastTurnID), BeforeTurnID: deref(p.BeforeTurnID),
		Ephemeral: p.Ephemeral != nil && *p.Ephemeral, Originator: c.originator(),
		Overrides: resumeOverrides(p.Model, p.ModelProvider, p.Cwd, p.ApprovalPolicy, p.ApprovalsReviewer, p.Sandbox, p.BaseInstructions, p.DeveloperInstructions),
	})
	if err != nil {
		return nil, storeError(err)
	}
	if err := s.startThreadMCP(ctx, t); err != nil {
		s.threads.Unload(t.ID)
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "error forking thread: %v", err)
	}
	exclude := p.ExcludeTurns != nil && *p.ExcludeTurns
	if !exclude {
		c.notify(protocol.NotifyDeprecationNotice, deprecationExcludeTurns())
	}
	t.Subscribe(c)
	info := t.Info()
	if !exclude {
		info.Turns = t.TurnsSnapshot()
	}
	st := t.Settings()
	req.Reply(protocol.ThreadForkResponse{
		Thread: info, Model: st.Model, ModelProvider: st.ModelProvider, Cwd: protocol.AbsolutePathBuf(st.Cwd),
		RuntimeWorkspaceRoots: []protocol.AbsolutePathBuf{protocol.AbsolutePathBuf(st.Cwd)},
		ApprovalPolicy:        st.ApprovalPolicy, ApprovalsReviewer: st.ApprovalsReviewer, Sandbox: st.Sandbox,
		ReasoningEffort: st.Effort, DisabledPluginIds: []string{}, InstructionSources: []protocol.LegacyAppPathString{},
		MultiAgentMode: &protocol.MultiAgentMode{Name: protocol.MultiAgentModeExplicitRequestOnly},
	}, nil)
	sendUsage(t, c)
	t.EmitTo(c, protocol.NotifyThreadStarted, protocol.ThreadStartedNotification{Thread: t.Info()})
	s.releaseThreadMCP(t)
	return nil, nil
}

func (s *Server) threadArchive(_ context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadArchiveParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	wasLoaded, err := s.threads.Archive(p.ThreadID)
	if err != nil {
		return nil, storeError(err)
	}
	if wasLoaded {
		// The reference announces the unload twice (the thread's shutdown, then the archive itself).
		notLoaded := protocol.ThreadStatusChangedNotification{ThreadID: p.ThreadID, Status: protocol.ThreadStatus{Value: protocol.ThreadStatusNotLoaded{}}}
		c.notify(protocol.NotifyThreadStatusChanged, notLoaded)
		c.notify(protocol.NotifyThreadStatusChanged, notLoaded)
	}
	req.Reply(protocol.ThreadArchiveResponse{}, nil)
	c.notify(protocol.NotifyThreadArchived, protocol.ThreadArchivedNotification{ThreadID: p.ThreadID})
	return nil, nil
}

func (s *Server) threadUnarchive(_ context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadUnarchiveParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	th, err := s.threads.Unarchive(p.ThreadID)
	if err != nil {
		return nil, storeError(err)
	}
	req.Reply(protocol.ThreadUnarchiveResponse{Thread: th}, nil)
	c.notify(protocol.NotifyThreadUnarchived, protocol.ThreadUnarchivedNotification{ThreadID: p.ThreadID})
	return nil, nil
}

func (s *Server) threadDelete(_ context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadDeleteParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if err := s.threads.Delete(p.ThreadID); err != nil {
		return nil, storeError(err)
	}
	req.Reply(protocol.ThreadDeleteResponse{}, nil)
	c.notify(protocol.NotifyThreadDeleted, protocol.ThreadDeletedNotification{ThreadID: p.ThreadID})
	return nil, nil
}

func (s *Server) threadUnsubscribe(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ThreadUnsubscribeParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	return protocol.ThreadUnsubscribeResponse{Status: s.threads.Unsubscribe(p.ThreadID, c)}, nil
}

// pageBounds returns the [lo, hi) window of a newest-first (desc) or oldest-first (asc) page over n entries,
// the cursor being the exclusive end (desc) or the start (asc) index, and the next cursor index (-1: none).
func pageBounds(n, limit int, cursor *int, asc bool) (lo, hi, next int) {
	if limit <= 0 {
		limit = 25
	}
	if asc {
		lo = 0
		if cursor != nil {
			lo = min(max(*cursor, 0), n)
		}
		hi = min(lo+limit, n)
		next = -1
		if hi < n {
			next = hi
		}
		return lo, hi, next
	}
	hi = n
	if cursor != nil {
		hi = min(max(*cursor, 0), n)
	}
	lo = max(hi-limit, 0)
	next = -1
	if lo > 0 {
		next = lo
	}
	return lo, hi, next
}

func (s *Server) threadTurnsList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadTurnsListParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	turns, err := s.threads.Turns(p.ThreadID)
	if err != nil {
		return nil, storeError(err)
	}
	var cur *int
	if p.Cursor != nil && *p.Cursor != "" {
		n, err := parseHistoryCursor(*p.Cursor, p.ThreadID, "turns")
		if err != nil {
			return nil, err
		}
		cur = &n
	}
	asc := p.SortDirection != nil && *p.SortDirection == protocol.SortDirectionAsc
	limit := 0
	if p.Limit != nil {
		limit = int(*p.Limit)
	}
	lo, hi, next := pageBounds(len(turns), limit, cur, asc)
	view := protocol.TurnItemsViewFull
	if p.ItemsView != nil {
		view = *p.ItemsView
	}
	page := make([]protocol.Turn, 0, hi-lo)
	for i := lo; i < hi; i++ {
		tu := turns[i]
		if !asc {
			tu = turns[hi-1-(i-lo)]
		}
		page = append(page, itemsView(tu, view))
	}
	resp := protocol.ThreadTurnsListResponse{Data: page}
	if next >= 0 {
		nc := historyCursor(p.ThreadID, "turns", next)
		resp.NextCursor = &nc
	}
	return resp, nil
}

// itemsView trims a turn's items to the requested view.
func itemsView(tu protocol.Turn, view protocol.TurnItemsView) protocol.Turn {
	switch view {
	case protocol.TurnItemsViewNotLoaded:
		tu.Items = []protocol.ThreadItem{}
	case protocol.TurnItemsViewSummary:
		var last []protocol.ThreadItem
		for _, it := range tu.Items {
			if _, ok := it.Value.(protocol.ThreadItemAgentMessage); ok {
				last = []protocol.ThreadItem{it}
			}
		}
		tu.Items = append([]protocol.ThreadItem{}, last...)
	}
	tu.ItemsView = &view
	return tu
}

func (s *Server) threadItemsList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadItemsListParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
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
	var cur *int
	if len(p.Cursor) > 0 && string(p.Cursor) != "null" {
		var raw string
		if json.Unmarshal(p.Cursor, &raw) != nil {
			raw = string(p.Cursor)
		}
		n, err := parseHistoryCursor(raw, p.ThreadID, "items")
		if err != nil {
			return nil, err
		}
		cur = &n
	}
	asc := p.SortDirection != nil && *p.SortDirection == protocol.SortDirectionAsc
	limit := 0
	if p.Limit != nil {
		limit = int(*p.Limit)
	}
	lo, hi, next := pageBounds(len(entries), limit, cur, asc)
	page := make([]protocol.ThreadItemEntry, 0, hi-lo)
	for i := lo; i < hi; i++ {
		if asc {
			page = append(page, entries[i])
		} else {
			page = append(page, entries[hi-1-(i-lo)])
		}
	}
	resp := protocol.ThreadItemsListResponse{Data: page}
	if next >= 0 {
		nc := historyCursor(p.ThreadID, "items", next)
		resp.NextCursor = &nc
	}
	return resp, nil
}
