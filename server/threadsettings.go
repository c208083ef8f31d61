package server

import (
	"context"
	"encoding/json"
	"path/filepath"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// addThreadSettingsRoutes routes thread/settings/update and turn/settings/update.
func (s *Server) addThreadSettingsRoutes(r map[string]route) {
	r[protocol.MethodThreadSettingsUpdate] = handle(s.threadSettingsUpdate)
	r[protocol.MethodTurnSettingsUpdate] = handle(s.turnSettingsUpdate)
}

// threadSettingsUpdate changes a loaded thread's settings for its next turns; like the reference it answers {}
// and announces the new settings with thread/settings/updated only when something changed.
func (s *Server) threadSettingsUpdate(_ context.Context, _ *connection, req *jsonrpc.Request, p *protocol.ThreadSettingsUpdateParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	if p.Permissions != nil {
		// The reference resolves a named permission profile from config.toml's [permissions] table; we have
		// no permission profiles, which the reference reports this way on a home without that table.
		return nil, jsonrpc.InvalidRequest("failed to load configuration: default_permissions requires a `[permissions]` table")
	}
	if len(p.Environments) > 0 {
		return nil, jsonrpc.InvalidRequest("environments are not supported by appserver's thread/settings/update")
	}
	o := thread.TurnOverrides{
		ApprovalPolicy: p.ApprovalPolicy, Sandbox: p.SandboxPolicy, Model: p.Model, Effort: p.Effort, Summary: p.Summary,
		Collaboration: p.CollaborationMode, ApprovalsReviewer: p.ApprovalsReviewer, Personality: p.Personality,
		DisabledPluginIDs: p.DisabledPluginIds, MultiAgentMode: p.MultiAgentMode,
	}
	if p.Cwd != nil && *p.Cwd != "" {
		cwd := *p.Cwd
		if !filepath.IsAbs(cwd) {
			// Relative to the thread's current directory, as the reference resolves it.
			cwd = filepath.Join(t.Settings().Cwd, cwd)
		}
		o.Cwd = &cwd
	}
	if p.ServiceTier != nil {
		o.ServiceTier = ptr(thread.NormalizeServiceTier(*p.ServiceTier))
	} else {
		// A null serviceTier clears the tier: the thread then asks for standard speed, which the reference reports
		// as "default"; an absent one leaves it.
		var raw struct {
			ServiceTier json.RawMessage `json:"serviceTier"`
		}
		if json.Unmarshal(req.Params, &raw) == nil && string(raw.ServiceTier) == "null" {
			o.ServiceTier = ptr(thread.ServiceTierDefault)
		}
	}
	t.ApplyOverrides(o)
	return protocol.ThreadSettingsUpdateResponse{}, nil
}

// turnSettingsUpdate changes the settings of a running turn's next model request. The reference gates it
// behind the step_model_switching feature, which we do not implement; it answers as the reference does with the
// feature off.
func (s *Server) turnSettingsUpdate(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.TurnSettingsUpdateParams) (any, error) {
	if _, err := s.loadedThread(p.ThreadID); err != nil {
		return nil, err
	}
	return nil, jsonrpc.InvalidRequest("turn settings updates require the step_model_switching feature")
}
