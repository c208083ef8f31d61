package server

import (
	"context"
	"errors"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

func (s *Server) addCompactionRoutes(r map[string]route) {
	r[protocol.MethodThreadCompactStart] = handle(s.threadCompactStart)
}

// threadCompactStart answers at once; the compaction runs as a turn with one contextCompaction item.
func (s *Server) threadCompactStart(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ThreadCompactStartParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	t.Subscribe(c)
	if err := t.Compact(); errors.Is(err, thread.ErrTurnInProgress) {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	return protocol.ThreadCompactStartResponse{}, nil
}
