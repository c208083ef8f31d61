package server

import (
	"context"
	"errors"

	"appserver/collaboration"
	"appserver/features"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// addSettingsRoutes registers the settings reads a client makes at startup: feature flags, permission
// profiles, provider capabilities and collaboration modes, plus the runtime feature enablement.
func (s *Server) addSettingsRoutes(r map[string]route) {
	r[protocol.MethodExperimentalFeatureList] = handle(s.experimentalFeatureList)
	r[protocol.MethodExperimentalFeatureEnablementSet] = handle(s.experimentalFeatureEnablementSet)
	r[protocol.MethodPermissionProfileList] = handle(s.permissionProfileList)
	r[protocol.MethodModelProviderCapabilitiesRead] = handle(s.modelProviderCapabilitiesRead)
	r[protocol.MethodCollaborationModeList] = handle(s.collaborationModeList)
}

func (s *Server) experimentalFeatureList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ExperimentalFeatureListParams) (any, error) {
	entries := s.features.List(s.currentConfig().Features)
	limit := 0
	if p.Limit != nil {
		limit = int(*p.Limit)
	}
	page, next, err := features.Page(entries, deref(p.Cursor), limit)
	if errors.Is(err, features.ErrInvalidCursor) {
		return nil, jsonrpc.InvalidRequest("invalid cursor: " + deref(p.Cursor))
	}
	resp := protocol.ExperimentalFeatureListResponse{Data: make([]protocol.ExperimentalFeature, 0, len(page))}
	for _, e := range page {
		f := protocol.ExperimentalFeature{Name: e.Name, Stage: protocol.ExperimentalFeatureStage(e.Stage), Enabled: e.Enabled, DefaultEnabled: e.Default}
		if e.Stage == features.StageBeta {
			f.DisplayName, f.Description, f.Announcement = ptr(e.DisplayName), ptr(e.Description), ptr(e.Announcement)
		}
		resp.Data = append(resp.Data, f)
	}
	if next != "" {
		resp.NextCursor = &next
	}
	return resp, nil
}

// experimentalFeatureEnablementSet records the runtime-toggleable flags for this process (the config file
// is not written, as in the reference) and echoes the accepted ones.
func (s *Server) experimentalFeatureEnablementSet(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ExperimentalFeatureEnablementSetParams) (any, error) {
	return protocol.ExperimentalFeatureEnablementSetResponse{Enablement: s.features.Set(p.Enablement)}, nil
}

// builtinPermissionProfiles are the profiles every configuration offers, in the reference's order.
var builtinPermissionProfiles = []string{":read-only", ":workspace", ":danger-full-access"}

func (s *Server) permissionProfileList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.PermissionProfileListParams) (any, error) {
	all := make([]protocol.PermissionProfileSummary, 0, len(builtinPermissionProfiles))
	for _, id := range builtinPermissionProfiles {
		all = append(all, protocol.PermissionProfileSummary{ID: id, Allowed: true})
	}
	limit := 0
	if p.Limit != nil {
		limit = int(*p.Limit)
	}
	page, next, err := features.Page(all, deref(p.Cursor), limit)
	if err != nil {
		return nil, jsonrpc.InvalidRequest("invalid cursor: " + deref(p.Cursor))
	}
	resp := protocol.PermissionProfileListResponse{Data: page}
	if next != "" {
		resp.NextCursor = &next
	}
	return resp, nil
}

// modelProviderCapabilitiesRead reports what the selected provider's Responses endpoint offers; every
// Responses-API provider supports image generation and web search, as the reference reports.
func (s *Server) modelProviderCapabilitiesRead(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.ModelProviderCapabilitiesReadParams) (any, error) {
	p, err := s.currentConfig().Provider()
	responses := err != nil || p.WireAPI == "" || p.WireAPI == "responses"
	return protocol.ModelProviderCapabilitiesReadResponse{ImageGeneration: responses, WebSearch: responses}, nil
}

func (s *Server) collaborationModeList(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.CollaborationModeListParams) (any, error) {
	modes := collaboration.Builtin()
	resp := protocol.CollaborationModeListResponse{Data: make([]protocol.CollaborationModeMask, 0, len(modes))}
	for _, m := range modes {
		mask := protocol.CollaborationModeMask{Name: m.Name, Mode: ptr(protocol.ModeKind(m.Kind))}
		if m.Model != "" {
			mask.Model = ptr(m.Model)
		}
		if m.ReasoningEffort != "" {
			mask.ReasoningEffort = ptr(protocol.ReasoningEffort(m.ReasoningEffort))
		}
		resp.Data = append(resp.Data, mask)
	}
	return resp, nil
}
