package server

import (
	"context"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// addGoalRoutes routes thread/goal/get|set|clear and collaborationMode/list (the turn parameters a
// client reads before it starts a turn).
func (s *Server) addGoalRoutes(r map[string]route) {
	r[protocol.MethodThreadGoalGet] = handle(s.goalGet)
	r[protocol.MethodThreadGoalSet] = handle(s.goalSet)
	r[protocol.MethodThreadGoalClear] = handle(s.goalClear)
}

func (s *Server) goalGet(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadGoalGetParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	resp := protocol.ThreadGoalGetResponse{}
	if g, ok := t.Goal(); ok {
		resp.Goal = &g
	}
	return resp, nil
}

func (s *Server) goalSet(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadGoalSetParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	if _, ok := t.Goal(); !ok && p.Objective == nil {
		return nil, jsonrpc.InvalidRequest("objective is required when the thread has no goal")
	}
	if p.TokenBudget != nil && *p.TokenBudget <= 0 {
		return nil, jsonrpc.InvalidRequest("tokenBudget must be positive")
	}
	// A new objective starts a new goal; otherwise the current one is updated.
	g, err := t.SetGoal(thread.GoalChange{Objective: p.Objective, Status: p.Status, TokenBudget: p.TokenBudget, Replace: p.Objective != nil}, nil)
	if err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	return protocol.ThreadGoalSetResponse{Goal: g}, nil
}

func (s *Server) goalClear(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadGoalClearParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	return protocol.ThreadGoalClearResponse{Cleared: t.ClearGoal()}, nil
}
