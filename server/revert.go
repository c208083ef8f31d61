package server

import (
	"context"
	"errors"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

func (s *Server) addRevertRoutes(r map[string]route) {
	r[protocol.MethodThreadRevert] = handle(s.threadRevert)
}

// threadRevert drops a turn and every later one, answers with the thread (turns empty, backwards
// cursors at the newest kept turn and item) and then announces thread/reverted.
func (s *Server) threadRevert(_ context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadRevertParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	if t.ActiveTurn() == nil {
		// the reference reloads the thread to revert it (whether or not the turn exists): its
		// subscribers see it unloaded and idle again first
		for _, st := range []protocol.ThreadStatus{{Value: protocol.ThreadStatusNotLoaded{}}, {Value: protocol.ThreadStatusIdle{}}} {
			t.Emit(protocol.NotifyThreadStatusChanged, protocol.ThreadStatusChangedNotification{ThreadID: t.ID, Status: st})
		}
	}
	if err := t.Revert(p.BeforeTurnID); err != nil {
		if errors.Is(err, thread.ErrTurnNotFound) || errors.Is(err, thread.ErrTurnInProgress) {
			return nil, jsonrpc.InvalidRequest(err.Error())
		}
		return nil, err
	}
	t.Subscribe(c)
	resp := protocol.ThreadRevertResponse{Thread: t.Info()}
	resp.TurnsBackwardsCursor, resp.ItemsBackwardsCursor = s.backwardsCursors(t)
	req.Reply(resp, nil)
	t.Emit(protocol.NotifyThreadReverted, protocol.ThreadRevertedNotification{ThreadID: t.ID})
	return nil, nil
}
