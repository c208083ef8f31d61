package server

import (
	"context"
	"encoding/json"
	"path/filepath"

	"appserver/config"

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
	profile, err := s.permissionProfile(p.Permissions, p.SandboxPolicy != nil, "sandboxPolicy")
	if err != nil {
		return nil, err
	}
	if len(p.Environments) > 0 {
		return nil, jsonrpc.InvalidRequest("environments are not supported by appserver's thread/settings/update")
	}
	o := thread.TurnOverrides{
		ApprovalPolicy: p.ApprovalPolicy, Sandbox: thread.NormalizeSandbox(p.SandboxPolicy), PermissionProfile: p.Permissions, Model: p.Model, Effort: p.Effort, Summary: p.Summary,
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
	if profile != nil {
		o.Sandbox = profile
	}
	t.ApplyOverrides(o)
	return protocol.ThreadSettingsUpdateResponse{}, nil
}

// permissionProfile resolves a request's `permissions` (a built-in permission profile id) into the sandbox
// policy it selects, nil when there is none; the errors are the reference's: with the request's own sandbox
// field (named field) set too, or for an id its configuration does not define.
func (s *Server) permissionProfile(id *string, withSandbox bool, field string) (*protocol.SandboxPolicy, error) {
	if id == nil {
		return nil, nil
	}
	if withSandbox {
		return nil, jsonrpc.InvalidRequest("`permissions` cannot be combined with `" + field + "`")
	}
	cfg := s.currentConfig()
	if err := cfg.CheckPermissionProfile(*id); err != nil {
		return nil, jsonrpc.InvalidRequest("failed to load configuration: " + err.Error())
	}
	mode, _ := config.BuiltinProfileMode(*id)
	policy := thread.SandboxFromMode(mode, cfg.SandboxWorkspaceWrite)
	return &policy, nil
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
