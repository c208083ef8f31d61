package server

import (
	"context"
	"encoding/json"

	"appserver/config"
	"appserver/jsonrpc"
	"appserver/model"
	protocol "appserver/protocol/v2"
)

func (s *Server) modelList(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ModelListParams) (any, error) {
	if p.ModelProvider != nil {
		if _, ok := s.currentConfig().ModelProviders[*p.ModelProvider]; !ok {
			return nil, providerNotConfigured(*p.ModelProvider)
		}
	}
	includeHidden := p.IncludeHidden != nil && *p.IncludeHidden
	var all []protocol.Model
	catalog := model.Catalog()
	if _, ok := model.LookupModel(s.currentConfig().Model); ok {
		for i := range catalog { // the configured model is the default
			catalog[i].IsDefault = catalog[i].ID == s.currentConfig().Model || catalog[i].Model == s.currentConfig().Model
		}
	}
	for _, m := range catalog {
		if m.Hidden && !includeHidden {
			continue
		}
		var pm protocol.Model
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &pm); err != nil {
			return nil, err
		}
		all = append(all, pm)
	}
	all = append(all, s.providerModels(ctx, p, catalog)...)
	limit := p.Limit
	if limit != nil && *limit == 0 { // the reference serves at least one model per page
		limit = ptr(uint32(1))
	}
	page, next, err := paginate(all, p.Cursor, limit, "models")
	if err != nil {
		return nil, err
	}
	return protocol.ModelListResponse{Data: page, NextCursor: next}, nil
}

// providerNotConfigured is the reference's refusal of a model provider id the configuration lacks:
// -32600 with data {type: "modelProviderNotConfigured", modelProvider}.
func providerNotConfigured(id string) *jsonrpc.Error {
	data, _ := json.Marshal(struct {
		Type          string `json:"type"`
		ModelProvider string `json:"modelProvider"`
	}{"modelProviderNotConfigured", id})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Data: data,
		Message: "This chat uses model provider \u201c" + id + "\u201d, which is no longer configured. Restore this provider\u2019s configuration to continue."}
}

// providerModels adds what a built-in local provider's GET /models reports (Ollama, LM Studio; when it
// answers within a second) and the catalogue lacks. Other providers are not asked: like the reference,
// model/list (which clients call at startup) makes no request to a configured provider.
func (s *Server) providerModels(ctx context.Context, p *protocol.ModelListParams, catalog []model.CatalogModel) []protocol.Model {
	providerID := s.currentConfig().ModelProvider
	if p.ModelProvider != nil && *p.ModelProvider != "" {
		providerID = *p.ModelProvider
	}
	if providerID != model.ProviderOllama && providerID != model.ProviderLMStudio {
		return nil
	}
	client, err := s.threads.ModelClient(providerID)
	if err != nil {
		return nil
	}
	ids, err := client.ListModels(ctx)
	if err != nil {
		s.log.Debug("provider model listing failed", "provider", providerID, "error", err)
		return nil
	}
	known := map[string]bool{}
	for _, m := range catalog {
		known[m.ID] = true
	}
	var out []protocol.Model
	for _, id := range ids {
		if known[id] {
			continue
		}
		known[id] = true
		out = append(out, protocol.Model{
			ID: id, Model: id, DisplayName: id, Description: "Served by the " + providerID + " provider.",
			DefaultReasoningEffort:    "medium",
			SupportedReasoningEfforts: []protocol.ReasoningEffortOption{{ReasoningEffort: "medium", Description: "Default"}},
			IsDefault:                 id == s.currentConfig().Model,
		})
	}
	return out
}

func (s *Server) configRead(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ConfigReadParams) (any, error) {
	cwd := ""
	if p.Cwd != nil {
		cwd = *p.Cwd
	}
	var cfg *config.Config
	if err := s.configLoadError(); err != nil {
		if s.opts.ReloadConfigAt == nil {
			return nil, configReadError(err)
		}
		// The reference reads the configuration afresh, the overrides' relative paths against the cwd
		// asked for (else CODEX_HOME): a start-up failure on the process directory's may read here.
		base := cwd
		if base == "" {
			base = s.currentConfig().CodexHome
		}
		if cfg, err = s.opts.ReloadConfigAt(base); err != nil {
			return nil, configReadError(err)
		}
	} else {
		cfg = s.currentConfig()
	}
	res, err := cfg.ReadResponse(p.IncludeLayers != nil && *p.IncludeLayers, cwd)
	if err != nil {
		return nil, configReadError(err) // a project's .codex/config.toml
	}
	return res, nil
}
