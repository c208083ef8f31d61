package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"

	"appserver/config"
	"appserver/configedit"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// addConfigWriteRoutes registers config/value/write and config/batchWrite.
func (s *Server) addConfigWriteRoutes(r map[string]route) {
	r[protocol.MethodConfigValueWrite] = handle(s.configValueWrite)
	r[protocol.MethodConfigBatchWrite] = handle(s.configBatchWrite)
}

// userConfigFile is $CODEX_HOME/config.toml as an editable file, validated as the user layer.
func (s *Server) userConfigFile() *configedit.File {
	home := s.cfg.CodexHome
	path := filepath.Join(home, config.ConfigFileName)
	return &configedit.File{
		Path:     path,
		Version:  func(b []byte) (string, error) { return config.FileVersion(path, b) },
		Validate: func(b []byte) error { return config.Validate(home, path, b) },
	}
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
	s.reloadAfterWrite()
	return protocol.ConfigWriteResponse{Status: protocol.WriteStatusOk, Version: version, FilePath: f.Path}, nil
}

// reloadAfterWrite re-reads the configuration so new threads, turns and reads see a write at once.
func (s *Server) reloadAfterWrite() {
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
		return
	}
	s.threads.SetConfig(cfg)
}

func (s *Server) configValueWrite(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ConfigValueWriteParams) (any, error) {
	return s.writeUserConfig(p.FilePath, p.ExpectedVersion, []protocol.ConfigEdit{{KeyPath: p.KeyPath, MergeStrategy: p.MergeStrategy, Value: p.Value}})
}

func (s *Server) configBatchWrite(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ConfigBatchWriteParams) (any, error) {
	return s.writeUserConfig(p.FilePath, p.ExpectedVersion, p.Edits)
}
