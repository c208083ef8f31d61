package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"appserver/config"
	"appserver/configedit"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// addConfigWriteRoutes registers config/value/write and config/batchWrite.
func (s *Server) addConfigWriteRoutes(r map[string]route) {
	r[protocol.MethodConfigValueWrite] = handle(s.configValueWrite)
	r[protocol.MethodConfigBatchWrite] = handle(s.configBatchWrite)
	r[protocol.MethodModelProviderConfigWrite] = handle(s.modelProviderConfigWrite)
}

// userConfigFile is $CODEX_HOME/config.toml as an editable file, validated as the user layer.
func (s *Server) userConfigFile() *configedit.File {
	home := s.cfg.CodexHome
	path := filepath.Join(home, config.ConfigFileName)
	return &configedit.File{
		Path:     path,
		Version:  func(b []byte) (string, error) { return config.FileVersion(path, b) },
		Validate: func(b []byte) error { return writeValidationError(config.Validate(home, path, b)) },
	}
}

// writeValidationError words a written value the configuration refuses as the reference's write path
// does: serde's message then "in `<key>`", without the file position its load errors carry (and for
// approval_policy serde's own list of variants, the deprecated on-failure included).
func writeValidationError(err error) error {
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Syntax || ce.Key == "" {
		return err
	}
	msg := strings.TrimPrefix(ce.Msg, "invalid value for `"+ce.Key+"`: ")
	if ce.Key == "approval_policy" && strings.HasPrefix(msg, "unknown variant `") {
		if i := strings.Index(msg, ", expected"); i > 0 {
			msg = msg[:i] + ", expected one of `untrusted`, `on-failure`, `on-request`, `granular`, `never`"
		}
	}
	return errors.New(msg + "\nin `" + ce.Key + "`")
}

// configWriteError renders a refused write as the reference does: -32600 with data.config_write_error_code.
func configWriteError(err error) error {
	var we *configedit.Error
	if errors.As(err, &we) {
		data, _ := json.Marshal(map[string]string{"config_write_error_code": string(we.Code)})
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: we.Msg, Data: data}
	}
	return jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to write config: %v", err)
}

// decodeEditValue decodes a JSON value keeping integers integral; null means delete.
func decodeEditValue(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// toEdits converts wire edits, refusing the legacy `profile` selector as the reference does.
func toEdits(in []protocol.ConfigEdit) ([]configedit.Edit, error) {
	out := make([]configedit.Edit, 0, len(in))
	for _, e := range in {
		path, err := configedit.SplitKeyPath(e.KeyPath)
		if err != nil {
			return nil, err
		}
		if path[0] == "profile" && len(path) == 1 {
			return nil, &configedit.Error{Code: configedit.CodeValidation, Msg: "`profile` is a legacy config selector and can no longer be written; use `--profile <name>` with `<name>.config.toml` instead"}
		}
		v, err := decodeEditValue(e.Value)
		if err != nil {
			return nil, &configedit.Error{Code: configedit.CodeValidation, Msg: err.Error()}
		}
		out = append(out, configedit.Edit{Path: path, Value: v, Strategy: configedit.Strategy(e.MergeStrategy)})
	}
	return out, nil
}

// writeUserConfig applies edits to the user config and makes the running server use the result.
func (s *Server) writeUserConfig(filePath, expectedVersion *string, edits []protocol.ConfigEdit) (any, error) {
	f := s.userConfigFile()
	if err := configedit.CheckTarget(deref(filePath), f.Path); err != nil {
		return nil, configWriteError(err)
	}
	ce, err := toEdits(edits)
	if err != nil {
		return nil, configWriteError(err)
	}
	version, err := f.Write(deref(expectedVersion), ce)
	if err != nil {
		return nil, configWriteError(err)
	}
	cfg := s.reloadAfterWrite()
	resp := protocol.ConfigWriteResponse{Status: protocol.WriteStatusOk, Version: version, FilePath: f.Path}
	if over := overridden(cfg, ce); over != nil {
		resp.Status, resp.OverriddenMetadata = protocol.WriteStatusOkOverridden, over
	}
	return resp, nil
}

// overridden reports the first edited key whose effective value comes from a layer above the user config
// (session flags, a profile, a project), as config/read's origins tell.
func overridden(cfg *config.Config, edits []configedit.Edit) *protocol.OverriddenMetadata {
	if cfg == nil {
		return nil
	}
	res, err := cfg.ReadResponse(false, "")
	if err != nil {
		return nil
	}
	for _, e := range edits {
		key := strings.Join(e.Path, ".")
		origin, ok := res.Origins[key]
		if !ok || origin.Name.Type == config.SourceUser && origin.Name.Profile == nil {
			continue
		}
		var effective any = res.Config
		for _, p := range e.Path {
			m, _ := effective.(map[string]any)
			effective = m[p]
		}
		value, _ := json.Marshal(effective)
		layer, _ := json.Marshal(config.LayerMetadata{Name: origin.Name, Version: origin.Version})
		var meta protocol.ConfigLayerMetadata
		if json.Unmarshal(layer, &meta) != nil {
			continue
		}
		msg := "Overridden by session flags"
		switch origin.Name.Type {
		case config.SourceProject:
			msg = "Overridden by project config"
		case config.SourceUser:
			msg = "Overridden by profile"
		}
		return &protocol.OverriddenMetadata{Message: msg, OverridingLayer: meta, EffectiveValue: value}
	}
	return nil
}

// reloadAfterWrite re-reads the configuration so new threads, turns and reads see a write at once; it
// returns the new configuration (nil when it could not be loaded).
func (s *Server) reloadAfterWrite() *config.Config {
	if s.skills != nil {
		s.skills.Invalidate()
	}
	load := s.opts.ReloadConfig
	if load == nil {
		home := s.cfg.CodexHome
		load = func() (*config.Config, error) { return config.Load(home, nil) }
	}
	cfg, err := load()
	if err != nil {
		s.log.Warn("reloading configuration after a write", "error", err)
		return nil
	}
	s.threads.SetConfig(cfg)
	return cfg
}

func (s *Server) configValueWrite(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ConfigValueWriteParams) (any, error) {
	return s.writeUserConfig(p.FilePath, p.ExpectedVersion, []protocol.ConfigEdit{{KeyPath: p.KeyPath, MergeStrategy: p.MergeStrategy, Value: p.Value}})
}

func (s *Server) configBatchWrite(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ConfigBatchWriteParams) (any, error) {
	return s.writeUserConfig(p.FilePath, p.ExpectedVersion, p.Edits)
}

// modelProviderConfigWrite creates (from a name and base URL) or edits (by providerId) a custom gateway
// provider in the user config and returns its summary.
func (s *Server) modelProviderConfigWrite(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ModelProviderConfigWriteParams) (any, error) {
	gw, ok := p.Settings.Value.(protocol.ProviderSettingsPatchCustomGateway)
	if !ok {
		return nil, jsonrpc.InvalidRequest("modelProvider/config/write supports only customGateway settings in appserver")
	}
	cfg := s.currentConfig()
	fields := map[string]any{}
	if gw.Name != nil {
		fields["name"] = *gw.Name
	}
	if gw.BaseURL != nil {
		fields["base_url"] = *gw.BaseURL
	}
	if gw.EnvKey != nil {
		fields["env_key"] = *gw.EnvKey
	}
	id := deref(gw.ProviderID)
	if id != "" {
		if _, ok := cfg.ModelProviders[id]; !ok || builtinProviderIDs[id] {
			return nil, configWriteError(&configedit.Error{Code: "configPathNotFound", Msg: "Unknown provider ID."})
		}
	} else {
		if strings.TrimSpace(deref(gw.Name)) == "" {
			return nil, configWriteError(&configedit.Error{Code: configedit.CodeValidation, Msg: "Enter a provider name."})
		}
		if strings.TrimSpace(deref(gw.BaseURL)) == "" {
			return nil, configWriteError(&configedit.Error{Code: configedit.CodeValidation, Msg: "A base URL is required to create a custom provider."})
		}
		id = providerSlug(*gw.Name)
		for n := 2; cfg.ModelProviders[id].ID != ""; n++ {
			id = fmt.Sprintf("%s-%d", providerSlug(*gw.Name), n)
		}
		fields["wire_api"] = "responses"
	}
	value, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	if _, err := s.writeUserConfig(nil, nil, []protocol.ConfigEdit{{KeyPath: "model_providers." + quoteKey(id), MergeStrategy: protocol.MergeStrategyUpsert, Value: value}}); err != nil {
		return nil, err
	}
	prov, ok := s.currentConfig().ModelProviders[id]
	if !ok {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "provider %s missing after write", id)
	}
	return protocol.ModelProviderConfigWriteResponse{Provider: providerSummary(prov)}, nil
}

var nonSlug = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9]+`) })

// providerSlug derives a provider id from its display name ("My GW" → "my-gw").
func providerSlug(name string) string {
	s := strings.Trim(nonSlug().ReplaceAllString(strings.ToLower(name), "-"), "-")
	if s == "" {
		return "custom"
	}
	return s
}
