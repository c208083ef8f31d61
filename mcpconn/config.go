// Package mcpconn manages client connections to MCP servers for one owner (a thread, or the global
// status list): startup, tool discovery, tool calls under a pausable timeout, server-originated
// elicitations, resources, and shutdown that leaves no server process behind.
package mcpconn

import "time"

// Default timeouts applied when a ServerConfig leaves them at zero.
const (
	DefaultStartupTimeout = 30 * time.Second
	DefaultToolTimeout    = 60 * time.Second
)

// Version is the clientInfo.version announced to MCP servers.
var Version = "0.169.0"

// ServerConfig describes one `[mcp_servers.<name>]` entry. Exactly one of Command (stdio) or URL
// (streamable HTTP) is set.
type ServerConfig struct {
	Name string
	// Stdio transport.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// Streamable HTTP transport.
	URL               string
	BearerTokenEnvVar string
	HTTPHeaders       map[string]string
	// EnvHTTPHeaders maps a header name to the environment variable holding its value.
	EnvHTTPHeaders map[string]string
	// Enabled must be true for the server to be started (config.toml defaults it to true).
	Enabled  bool
	Required bool
	// StartupTimeout bounds initialize + tools/list (DefaultStartupTimeout when zero).
	StartupTimeout time.Duration
	// ToolTimeout bounds each tools/call, excluding paused time (DefaultToolTimeout when zero).
	ToolTimeout time.Duration
	// EnabledTools, when non-nil, is an allow list; DisabledTools is applied after it.
	EnabledTools  []string
	DisabledTools []string
}

func (c ServerConfig) startupTimeout() time.Duration {
	if c.StartupTimeout > 0 {
		return c.StartupTimeout
	}
	return DefaultStartupTimeout
}

func (c ServerConfig) toolTimeout() time.Duration {
	if c.ToolTimeout > 0 {
		return c.ToolTimeout
	}
	return DefaultToolTimeout
}

// toolAllowed applies the enabled_tools / disabled_tools filters to an MCP tool name.
func (c ServerConfig) toolAllowed(name string) bool {
	if c.EnabledTools != nil && !contains(c.EnabledTools, name) {
		return false
	}
	return !contains(c.DisabledTools, name)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
