package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"appserver/handshake"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/sandbox"
)

// UserAgentVersion is the version token in userAgent and cliVersion (see handshake.UserAgentVersion).
const UserAgentVersion = handshake.UserAgentVersion

func (s *Server) initialize(_ context.Context, c *connection, req *jsonrpc.Request) (any, error) {
	if c.isInitialized() {
		return nil, jsonrpc.InvalidRequest("Already initialized")
	}
	spec, _ := protocol.LookupClientRequest(protocol.MethodInitialize)
	raw, err := decodeParams(spec, req.Params)
	if err != nil {
		return nil, err
	}
	p := raw.(*protocol.InitializeParams)
	c.adoptInitialize(p)
	req.Reply(handshake.Response(p.ClientInfo, s.cfg.CodexHome), nil)
	s.afterInitialize(c)
	return nil, nil
}

// adoptInitialize records what the client's initialize said on the connection.
func (c *connection) adoptInitialize(p *protocol.InitializeParams) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.initialized = true
	c.clientInfo = p.ClientInfo
	c.optOut = map[string]bool{}
	if caps := p.Capabilities; caps != nil {
		c.experimental = caps.ExperimentalAPI != nil && *caps.ExperimentalAPI
		for _, m := range caps.OptOutNotificationMethods {
			c.optOut[m] = true
		}
	}
}

// afterInitialize sends the notifications that follow the answer to initialize.
func (s *Server) afterInitialize(c *connection) {
	if err := s.startupConfigError(); err != nil {
		c.notify(protocol.NotifyConfigWarning, invalidConfigWarning(err))
	}
	if w := s.opts.ProjectWarning; w != "" {
		c.notify(protocol.NotifyConfigWarning, configWarning{Summary: w})
	}
	if w := s.unknownW(); w != "" {
		c.notify(protocol.NotifyConfigWarning, configWarning{Summary: w})
	}
	if s.startupConfigError() == nil {
		for _, w := range s.currentConfig().PermissionWarnings() {
			c.notify(protocol.NotifyConfigWarning, configWarning{Summary: w})
		}
	}
	c.notify(protocol.NotifyRemoteControlStatusChanged, map[string]any{
		"status":         "disabled",
		"serverName":     hostname(),
		"installationId": s.installationID(),
		"environmentId":  nil,
	})
	if ok, reason := sandbox.Available(); !ok {
		details := "Commands under read-only or workspace-write are refused rather than run unsandboxed; use danger-full-access to run them without a sandbox."
		c.notify(protocol.NotifyConfigWarning, protocol.ConfigWarningNotification{
			Summary: "Sandboxing is unavailable on this machine: " + reason, Details: &details,
		})
	}
}

// installationID returns the id stored in $CODEX_HOME/installation_id, creating it on first use.
func (s *Server) installationID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.install != "" {
		return s.install
	}
	path := filepath.Join(s.cfg.CodexHome, "installation_id")
	if b, err := os.ReadFile(path); err == nil {
		if id, err := uuid.Parse(strings.TrimSpace(string(b))); err == nil {
			s.install = id.String()
			return s.install
		}
	}
	s.install = uuid.NewString()
	if err := os.WriteFile(path, []byte(s.install), 0o644); err != nil {
		s.log.Warn("could not persist installation id", "path", path, "error", err)
	}
	return s.install
}
