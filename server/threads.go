package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"appserver/config"
	"appserver/jsonrpc"
	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/tools"
)

func (s *Server) addThreadRoutes(r map[string]route) {
	r[protocol.MethodThreadStart] = handle(s.threadStart)
	r[protocol.MethodTurnStart] = handle(s.turnStart)
	r[protocol.MethodTurnInterrupt] = handle(s.turnInterrupt)
	r[protocol.MethodTurnSteer] = handle(s.turnSteer)
	r[protocol.MethodThreadLoadedList] = handle(s.threadLoadedList)
	r[protocol.MethodThreadIncrementElicitation] = handle(s.incrementElicitation)
	r[protocol.MethodThreadDecrementElicitation] = handle(s.decrementElicitation)
	r[protocol.MethodModelList] = handle(s.modelList)
	r[protocol.MethodConfigRead] = handle(s.configRead)
}

// loadedThread validates the id and returns the loaded thread or "thread not found: <id>".
func (s *Server) loadedThread(id string) (*thread.Thread, error) {
	if err := validateThreadID(id); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	t, ok := s.threads.Get(id)
	if !ok {
		return nil, jsonrpc.InvalidRequest("thread not found: " + id)
	}
	return t, nil
}

func (s *Server) threadStart(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadStartParams) (any, error) {
	if err := s.configLoadError(); err != nil {
		return nil, threadConfigError(err)
	}
	if err := s.checkProject(ctx, p.ProjectID); err != nil {
		return nil, err
	}
	if err := tools.ValidateDynamic(p.DynamicTools); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "%v", err)
	}
	if _, err := s.permissionProfile(p.Permissions, p.Sandbox != nil, "sandbox"); err != nil {
		return nil, err
	}
	t, err := s.threads.Start(ctx, thread.StartOptions{Params: *p, Originator: c.originator(), Source: s.opts.SessionSource})
	var cerr *thread.ConfigError
	if errors.As(err, &cerr) {
		return nil, threadConfigError(cerr.Err)
	}
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "error creating thread: %v", err)
	}
	if err := s.beforeThreadStart(ctx, t); err != nil {
		s.threads.Unload(t.ID)
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "error creating thread: %v", err)
	}
	req.Claim(threadLane(t.ID))
	t.Subscribe(c)
	st := t.Settings()
	if p.Cwd != nil && isWritable(st.Sandbox) {
		if err := config.AppendProjectTrust(s.cfg.CodexHome, st.Cwd); err != nil {
			s.log.Warn("could not record project trust", "error", err)
		}
	}
	s.joinProject(ctx, t, p.ProjectID)
	info := t.Info()
	req.Reply(startResponse(info, st), nil)
	c.beginShellSnapshot(t)
	t.Emit(protocol.NotifyThreadStarted, protocol.ThreadStartedNotification{Thread: info}) // every connection, as the reference
	if w := s.unknownW(); w != "" {
		t.Emit(protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &info.ID, Message: w})
	}
	for _, w := range s.currentConfig().PermissionWarnings() {
		t.Emit(protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &info.ID, Message: w})
	}
	if w := thread.UnadvertisedTierWarning(st); w != "" {
		t.Emit(protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &info.ID, Message: w})
	}
	s.afterThreadStart(t, c)
	return nil, nil
}

func isWritable(p protocol.SandboxPolicy) bool {
	switch p.Value.(type) {
	case protocol.SandboxPolicyWorkspaceWrite, protocol.SandboxPolicyDangerFullAccess:
		return true
	}
	return false
}

func (c *connection) originator() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clientInfo.Name
}

// unknownModelWarning is the reference's warning for a turn on a model without catalogue metadata.
func unknownModelWarning(mdl string) string { return model.UnknownModelWarning(mdl) }

func (s *Server) turnStart(_ context.Context, c *connection, req *jsonrpc.Request, p *protocol.TurnStartParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	t.Subscribe(c)
	if active := t.ActiveTurn(); active != nil {
		if kind := active.NotSteerable(); kind != "" {
			// The reference's internal error, in its debug wording (a review takes no input while it runs).
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: "failed to submit turn input: ActiveTurnNotSteerable { turn_kind: " + strings.ToUpper(string(kind[:1])) + string(kind[1:]) + " }"}
		}
	}
	var tier *string
	if p.ServiceTier != nil {
		tier = ptr(thread.NormalizeServiceTier(*p.ServiceTier))
	}
	t.ApplyOverrides(thread.TurnOverrides{
		Cwd: p.Cwd, ApprovalPolicy: p.ApprovalPolicy, Sandbox: thread.NormalizeSandbox(p.SandboxPolicy), Model: p.Model, Effort: p.Effort, Summary: p.Summary,
		Collaboration: p.CollaborationMode, ServiceTier: tier, Personality: p.Personality,
	})
	mdl := t.Settings().Model
	release := c.Hold() // the warning and (when the writer is quick) the answer go out together
	defer release()
	// The reference warns when a turn starts, not when turn/start folds input into the running one.
	if _, known := model.LookupModel(mdl); !known && t.ActiveTurn() == nil {
		t.EmitTo(c, protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &t.ID,
			Message: unknownModelWarning(mdl)})
	}
	tn, folded := t.BeginTurn(p.Input, thread.TurnOptions{OutputSchema: p.OutputSchema, ClientUserMessageID: p.ClientUserMessageID,
		ServiceTierForTurn: p.ServiceTierForTurn})
	req.Reply(protocol.TurnStartResponse{Turn: tn.PendingTurn()}, nil)
	release()
	if folded {
		tn.RestartStream()
	} else {
		tn.Run()
	}
	return nil, nil
}

func (s *Server) turnInterrupt(_ context.Context, _ *connection, req *jsonrpc.Request, p *protocol.TurnInterruptParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	active := t.ActiveTurn()
	if active == nil {
		return nil, jsonrpc.InvalidRequest(thread.ErrNoActiveTurnToInterrupt.Error())
	}
	if p.TurnID != active.PublicID() {
		// The reference's wording (unlike turn/steer's, without backticks).
		return nil, jsonrpc.InvalidRequest(fmt.Sprintf("expected active turn id %s but found %s", p.TurnID, active.PublicID()))
	}
	t.AnnounceInterrupt(active.ID)
	req.Reply(protocol.TurnInterruptResponse{}, nil)
	if err := t.Interrupt(active.ID); err != nil {
		s.log.Debug("interrupt raced with turn end", "error", err)
	}
	return nil, nil
}

func (s *Server) turnSteer(_ context.Context, _ *connection, req *jsonrpc.Request, p *protocol.TurnSteerParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	tn, err := t.Steer(p.Input, p.ExpectedTurnID, p.ClientUserMessageID)
	var ns *thread.NotSteerableError
	if errors.As(err, &ns) {
		// The reference details the refusal in the error's data, as a turn error.
		data, _ := json.Marshal(protocol.TurnError{Message: ns.Error(), CodexErrorInfo: &protocol.CodexErrorInfo{
			ActiveTurnNotSteerable: &protocol.CodexErrorInfoActiveTurnNotSteerable{TurnKind: ns.Kind}}})
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: ns.Error(), Data: data}
	}
	if err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	req.Reply(protocol.TurnSteerResponse{TurnID: tn.ID}, nil)
	// Like the reference, the in-flight model request is abandoned and re-sent with the input at once.
	tn.RestartStream()
	return nil, nil
}

func (s *Server) threadLoadedList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadLoadedListParams) (any, error) {
	ids := s.threads.Loaded()
	sort.Strings(ids)
	// The cursor is the last id of the previous page (ids are served in order): a page starts after it.
	start := 0
	if p.Cursor != nil {
		if _, err := uuid.Parse(*p.Cursor); err != nil {
			return nil, jsonrpc.InvalidRequest("invalid cursor: " + *p.Cursor)
		}
		start = sort.SearchStrings(ids, *p.Cursor)
		if start < len(ids) && ids[start] == *p.Cursor {
			start++
		}
	}
	end := len(ids)
	if p.Limit != nil && start+int(max(*p.Limit, 1)) < end {
		end = start + int(max(*p.Limit, 1))
	}
	var next *string
	if end < len(ids) {
		next = &ids[end-1]
	}
	return protocol.ThreadLoadedListResponse{Data: ids[start:end], NextCursor: next}, nil
}

// paginate applies the reference's index cursors ("1", "2", …) to a list of what (as its errors name
// it): a cursor that is not a number, or lies beyond the list, is refused.
func paginate[T any](all []T, cursor *string, limit *uint32, what string) ([]T, *string, error) {
	start := 0
	if cursor != nil {
		n, err := strconv.ParseUint(*cursor, 10, 64)
		if err != nil {
			return nil, nil, jsonrpc.InvalidRequest("invalid cursor: " + *cursor)
		}
		if n > uint64(len(all)) {
			return nil, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "cursor %d exceeds total %s %d", n, what, len(all))
		}
		start = int(n)
	}
	end := len(all)
	if limit != nil && *limit > 0 && start+int(*limit) < end {
		end = start + int(*limit)
	}
	var next *string
	if end < len(all) {
		n := fmt.Sprint(end)
		next = &n
	}
	return all[start:end], next, nil
}

func (s *Server) incrementElicitation(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ThreadIncrementElicitationParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	count, paused := t.IncrementElicitation()
	c.holdElicitation(t)
	return protocol.ThreadIncrementElicitationResponse{Count: count, Paused: paused}, nil
}

func (s *Server) decrementElicitation(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ThreadDecrementElicitationParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	count, paused, err := t.DecrementElicitation()
	if errors.Is(err, thread.ErrElicitationAtZero) {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to resume thread: %v", err)
	}
	c.dropElicitation(t)
	return protocol.ThreadDecrementElicitationResponse{Count: count, Paused: paused}, nil
}

func ptr[T any](v T) *T { return &v }
