package server

import (
	"context"

	"appserver/jsonrpc"
	"appserver/thread"
)

// beforeThreadStart runs after a thread is created and before thread/start is answered; an error fails
// thread/start (the thread is unloaded). MCP servers marked `required` are awaited here.
func (s *Server) beforeThreadStart(_ context.Context, _ *thread.Thread) error {
	return nil
}

// afterThreadStart runs after thread/start's response and thread/started (MCP startup statuses).
func (s *Server) afterThreadStart(_ *thread.Thread, _ *connection) {}

// extraTools are tool sets beyond exec and apply_patch offered on each turn (MCP servers).
func (s *Server) extraTools(_ *thread.Thread, _ thread.Settings) []thread.ToolSet { return nil }

func (s *Server) addMCPRoutes(_ map[string]route) {}

var _ = jsonrpc.InvalidRequest
