package server

import (
	"context"
	"os"
	"path/filepath"

	"appserver/hooks"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// addHooksRoutes registers hooks/list.
func (s *Server) addHooksRoutes(r map[string]route) {
	r[protocol.MethodHooksList] = handle(s.hooksList)
}

// hooksList lists, per cwd, the hooks of the user layer plus those of the cwd's .codex folder when the
// project is trusted (untrusted projects contribute none, as in the reference).
func (s *Server) hooksList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.HooksListParams) (any, error) {
	cfg := s.currentConfig()
	resp := protocol.HooksListResponse{}
	for _, cwd := range requestCwds(p.Cwds) {
		layers := []hooks.Layer{{Source: "user", Dir: cfg.CodexHome}}
		if dot := filepath.Join(cwd, ".codex"); cfg.IsTrusted(cwd) && dot != cfg.CodexHome {
			if st, err := os.Stat(dot); err == nil && st.IsDir() {
				layers = append(layers, hooks.Layer{Source: "project", Dir: dot})
			}
		}
		res := hooks.Discover(layers)
		e := protocol.HooksListEntry{Cwd: cwd, Warnings: res.Warnings}
		for _, h := range res.Hooks {
			e.Hooks = append(e.Hooks, protocol.HookMetadata{Value: protocol.HookMetadataCommand{
				Key: h.Key, EventName: protocol.HookEventName(h.Event), Command: h.Command, Async: ptr(h.Async), Matcher: h.Matcher,
				TimeoutSec: h.TimeoutSec, StatusMessage: h.StatusMessage, SourcePath: h.SourcePath, Source: protocol.HookSource(h.Source),
				DisplayOrder: h.DisplayOrder, Enabled: h.Enabled, CurrentHash: h.CurrentHash, TrustStatus: protocol.HookTrustStatus(h.TrustStatus),
			}})
		}
		for _, pr := range res.Errors {
			e.Errors = append(e.Errors, protocol.HookErrorInfo{Path: pr.Path, Message: pr.Message})
		}
		resp.Data = append(resp.Data, e)
	}
	return resp, nil
}
