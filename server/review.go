package server

import (
	"context"
	"errors"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/review"
	"appserver/thread"
)

func (s *Server) addReviewRoutes(r map[string]route) {
	r[protocol.MethodReviewStart] = handle(s.reviewStart)
}

// reviewStart runs a review as a turn of the thread (inline delivery, the only one the schema has)
// and answers with that turn at once.
func (s *Server) reviewStart(ctx context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ReviewStartParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	req, err := review.Resolve(ctx, t.Settings().Cwd, p.Target)
	if err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	req.Diff = review.Diff(ctx, t.Settings().Cwd, p.Target)
	t.Subscribe(c)
	tn, err := t.BeginTask()
	if errors.Is(err, thread.ErrTurnInProgress) {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	turn := tn.PendingTurn()
	turn.RootTurnID = nil // the reference answers null here
	turn.Items = []protocol.ThreadItem{{Value: protocol.ThreadItemUserMessage{
		ID: tn.ID, Content: []protocol.UserInput{{Value: protocol.UserInputText{Text: req.Hint}}},
	}}}
	tn.RunTask(review.Run(req))
	return protocol.ReviewStartResponse{Turn: turn, ReviewThreadID: t.ID}, nil
}
