package server

import (
	"errors"
	"fmt"

	"appserver/config"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// configWarning is protocol.ConfigWarningNotification as the reference sends it: path and range are left
// out, not null, when there are none.
type configWarning struct {
	Summary string              `json:"summary"`
	Details *string             `json:"details"`
	Path    *string             `json:"path,omitempty"`
	Range   *protocol.TextRange `json:"range,omitempty"`
}

// invalidConfigWarning is the configWarning for a configuration that did not load at start.
func invalidConfigWarning(err error) configWarning {
	details := err.Error()
	w := configWarning{Summary: config.InvalidSummary, Details: &details}
	var ce *config.Error
	if errors.As(err, &ce) && ce.Line > 0 {
		w.Path = &ce.File
		start := protocol.TextPosition{Line: uint64(ce.Line), Column: uint64(max(ce.Column, 1))}
		end := start
		if ce.EndLine > 0 {
			end = protocol.TextPosition{Line: uint64(ce.EndLine), Column: uint64(ce.EndColumn)}
		}
		w.Range = &protocol.TextRange{Start: start, End: end}
	}
	return w
}

// configLoadError is the start-up configuration failure (Options.ConfigError) while it lasts: while it
// does, the configuration is loaded again on each call, and once it loads it replaces the defaults the
// server started with. nil when the configuration is valid.
func (s *Server) configLoadError() error {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	if s.cfgErr == nil {
		return nil
	}
	cfg, err := s.loadConfig()
	if err != nil {
		return err
	}
	s.cfgErr = nil
	s.threads.SetConfig(cfg)
	return nil
}

// startupConfigError is the start-up configuration failure, nil when there is none (any more).
func (s *Server) startupConfigError() error {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	return s.cfgErr
}

// loadConfig reads the configuration from disk as at start (Options.ReloadConfig).
func (s *Server) loadConfig() (*config.Config, error) {
	if s.opts.ReloadConfig != nil {
		return s.opts.ReloadConfig()
	}
	return config.Load(s.cfg.CodexHome, nil)
}

// configReadError is config/read's error for a configuration that does not load.
func configReadError(err error) *jsonrpc.Error {
	var pe *config.LegacyProfileError
	var me *config.Error
	if errors.As(err, &pe) || errors.As(err, &me) && me.Meaning {
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to resolve feature override precedence: %v", err)
	}
	var ce *config.Error
	if errors.As(err, &ce) && !ce.Syntax && ce.Key != "" {
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "invalid configuration: %s\nin `%s`\n", ce.Msg, ce.Key)
	}
	return jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to read configuration layers: %v", err)
}

// threadConfigError is thread/start's error for a configuration that does not load. A wrong value in
// thread/start's own config override is named by its key, as config/read names one.
func threadConfigError(err error) *jsonrpc.Error {
	var ce *config.Error
	if errors.As(err, &ce) && ce.File == config.ObjectOverrideLabel && !ce.Syntax && ce.Key != "" {
		return jsonrpc.InvalidRequest(fmt.Sprintf("failed to load configuration: %s\nin `%s`\n", ce.Msg, ce.Key))
	}
	return jsonrpc.InvalidRequest("failed to load configuration: " + err.Error())
}
