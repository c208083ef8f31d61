package server

import (
	"context"
	"sort"

	"appserver/config"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// builtinProviderIDs are the providers every configuration has; modelProvider/list shows only openai
// among them, as the reference does.
var builtinProviderIDs = map[string]bool{"openai": true, "ollama": true, "lmstudio": true}

// addExtraRoutes registers smaller read-only methods the reference answers: configRequirements/read and
// modelProvider/list.
func (s *Server) addExtraRoutes(r map[string]route) {
	r[protocol.MethodConfigRequirementsRead] = handle(s.configRequirementsRead)
	r[protocol.MethodModelProviderList] = handle(s.modelProviderList)
}

// configRequirementsRead reports no managed requirements (appserver reads no requirements.toml or MDM
// policy); independent speed modes are supported, as in the reference.
func (s *Server) configRequirementsRead(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *struct{}) (any, error) {
	return protocol.ConfigRequirementsReadResponse{SupportsIndependentSpeedModes: ptr(true)}, nil
}

// modelProviderList lists the configured providers (sorted by id) followed by the built-in openai one.
func (s *Server) modelProviderList(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.ModelProviderListParams) (any, error) {
	cfg := s.currentConfig()
	ids := make([]string, 0, len(cfg.ModelProviders))
	for id := range cfg.ModelProviders {
		if !builtinProviderIDs[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	data := make([]protocol.ModelProviderSummary, 0, len(ids)+1)
	for _, id := range ids {
		data = append(data, providerSummary(cfg.ModelProviders[id]))
	}
	name := "OpenAI"
	if p, ok := cfg.ModelProviders["openai"]; ok && p.Name != "" {
		name = p.Name
	}
	data = append(data, protocol.ModelProviderSummary{ID: "openai", Name: name, Settings: protocol.ProviderSettings{Value: protocol.ProviderSettingsOpenai{}}})
	def := cfg.ModelProvider
	if def == "" {
		def = "openai"
	}
	return protocol.ModelProviderListResponse{CanChangeDefault: true, Data: data, DefaultProviderID: def}, nil
}

// providerSummary describes a user-configured provider as a custom gateway with its authentication mode.
func providerSummary(p config.ModelProvider) protocol.ModelProviderSummary {
	auth := protocol.GatewayAuth{Value: protocol.GatewayAuthNone{}}
	switch {
	case p.EnvKey != "":
		auth = protocol.GatewayAuth{Value: protocol.GatewayAuthEnvironmentVariable{EnvKey: p.EnvKey}}
	case p.ExperimentalBearerToken != "":
		auth = protocol.GatewayAuth{Value: protocol.GatewayAuthExternallyConfigured{}}
	}
	name := p.Name
	if name == "" {
		name = p.ID
	}
	sum := protocol.ModelProviderSummary{ID: p.ID, Name: name, CanEdit: true,
		Settings: protocol.ProviderSettings{Value: protocol.ProviderSettingsCustomGateway{Auth: auth}}}
	if p.BaseURL != "" {
		sum.BaseURL = ptr(p.BaseURL)
	}
	return sum
}
