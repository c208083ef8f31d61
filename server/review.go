package server

import (
	"context"
	"errors"

	"appserver/jsonrpc"
	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/review"
	"appserver/thread"
	"appserver/tools"
)

func (s *Server) addReviewRoutes(r map[string]route) {
	r[protocol.MethodReviewStart] = handle(s.reviewStart)
}

// reviewStart runs a review as a turn of the thread (inline delivery, the only one the schema has):
// the answer is that turn, sent before the turn's first notification.
func (s *Server) reviewStart(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.ReviewStartParams) (any, error) {
	if p.Delivery != nil && *p.Delivery != protocol.ReviewDeliveryInline {
		// serde's wording for a one-variant enum, checked while decoding, before the thread is looked up
		return nil, invalidParams("unknown variant `%s`, expected `%s`", *p.Delivery, protocol.ReviewDeliveryInline)
	}
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	rq, err := review.Resolve(ctx, t.Settings().Cwd, p.Target)
	if err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	t.Subscribe(c)
	tn, err := t.BeginTask()
	if errors.Is(err, thread.ErrTurnInProgress) {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	turn := tn.PendingTurn()
	turn.RootTurnID = nil // the reference answers null here
	turn.Items = []protocol.ThreadItem{{Value: protocol.ThreadItemUserMessage{
		ID: tn.ID, Content: []protocol.UserInput{{Value: protocol.UserInputText{Text: rq.Hint, TextElements: []protocol.TextElement{}}}},
	}}}
	req.Reply(protocol.ReviewStartResponse{Turn: turn, ReviewThreadID: t.ID}, nil)
	review.Start(tn, rq, review.Options{
		Tools: tools.ForReviewer,
		// The reference warns about a model without metadata before and after enteredReviewMode.
		Announce: func(tc *thread.ToolContext) {
			if mdl := tc.Settings.Model; !knownModel(mdl) {
				t.EmitTo(c, protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &t.ID, Message: unknownModelWarning(mdl)})
			}
		},
	})
	return nil, nil
}

func knownModel(id string) bool {
	_, ok := model.LookupModel(id)
	return ok
}
