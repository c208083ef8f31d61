package server

import (
	"context"
	"fmt"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// addMCPExtraRoutes routes mcpServer/oauth/login and mcpServer/event/stream/start|stop.
func (s *Server) addMCPExtraRoutes(r map[string]route) {
	r[protocol.MethodMcpServerOauthLogin] = handle(s.mcpOauthLogin)
	r[protocol.MethodMcpServerEventStreamStart] = handle(s.mcpEventStreamStart)
	r[protocol.MethodMcpServerEventStreamStop] = handle(s.mcpEventStreamStop)
}

// mcpOauthLogin answers with the reference's errors for an unknown server and for a stdio server. For a
// streamable HTTP server appserver does not run the OAuth flow (discovery, registration, browser
// callback) and says so.
func (s *Server) mcpOauthLogin(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.McpServerOauthLoginParams) (any, error) {
	srv, ok := s.mcpServers()[p.Name]
	if !ok {
		return nil, jsonrpc.InvalidRequest(fmt.Sprintf("No MCP server named '%s' found.", p.Name))
	}
	if srv.URL == "" {
		return nil, jsonrpc.InvalidRequest("OAuth login is only supported for streamable HTTP servers.")
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to login to MCP server '%s': OAuth login is not supported by appserver (use bearer_token_env_var or http_headers)", p.Name)
}

// mcpEventStreamStart: event subscriptions exist only for hosted (ChatGPT) apps, which appserver has
// none of, so every start is refused with the reference's message.
func (s *Server) mcpEventStreamStart(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.McpServerEventStreamStartParams) (any, error) {
	return nil, jsonrpc.InvalidRequest("MCP event subscriptions are only supported for hosted apps")
}

// mcpEventStreamStop succeeds for any id, as the reference does: with no subscription, there is nothing
// to stop.
func (s *Server) mcpEventStreamStop(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.McpServerEventStreamStopParams) (any, error) {
	return protocol.McpServerEventStreamStopResponse{}, nil
}
