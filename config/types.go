package config

import "time"

// Defaults for values the configuration may leave unset.
const (
	DefaultModelProvider                = "openai"
	DefaultApprovalPolicy               = "on-request"
	DefaultThreadUnloadDelay            = 1800 * time.Second
	DefaultBackgroundTerminalMaxTimeout = 300000 * time.Millisecond
	DefaultRequestMaxRetries            = 4
	DefaultStreamMaxRetries             = 5
	// DefaultNetworkWaitMaxRetries bounds "Reconnecting... waiting for network": with waits of 5, 10, 20,
	// 40 and 80 s a turn against an unreachable provider fails after about 2.5 minutes.
	DefaultNetworkWaitMaxRetries = 5
	DefaultStreamIdleTimeout     = 300 * time.Second
	DefaultMCPStartupTimeout     = 30 * time.Second
	DefaultMCPToolTimeout        = 60 * time.Second
	DefaultOpenAIBaseURL         = "https://api.openai.com/v1"
	// MaxRetries caps request_max_retries and stream_max_retries.
	MaxRetries = 100
)

// ModelProvider is one `[model_providers.<id>]` entry (or a built-in one)
// with defaults applied.
type ModelProvider struct {
	ID                      string            // the table key, e.g. "openai" or "mock"
	Name                    string            // display name
	BaseURL                 string            // e.g. https://api.openai.com/v1
	EnvKey                  string            // env var holding the API key; "" = none
	EnvKeyInstructions      string            // hint shown when EnvKey is unset
	ExperimentalBearerToken string            // literal bearer token; "" = none
	WireAPI                 string            // "responses" unless configured otherwise
	QueryParams             map[string]string // appended to the request URL
	HTTPHeaders             map[string]string // static extra headers
	EnvHTTPHeaders          map[string]string // header name → env var holding its value
	RequestMaxRetries       int               // HTTP-level retries (default 4, max 100)
	StreamMaxRetries        int               // stream reconnects (default 5, max 100)
	StreamIdleTimeout       time.Duration     // default 300s
	NetworkWaitMaxRetries   int               // waits for an unreachable provider (default 5, max 100)
	RequiresOpenAIAuth      bool              // uses the OpenAI login/API key flow
}

// ApprovalPolicy is `approval_policy`: a named mode or a granular table.
type ApprovalPolicy struct {
	// Mode is "untrusted", "on-request", "never", or "granular" when
	// Granular is set.
	Mode     string
	Granular *GranularApproval
}

// GranularApproval is the `{granular = {...}}` form of approval_policy.
type GranularApproval struct {
	SandboxApproval    bool `json:"sandbox_approval"`
	Rules              bool `json:"rules"`
	MCPElicitations    bool `json:"mcp_elicitations"`
	RequestPermissions bool `json:"request_permissions"`
	SkillApproval      bool `json:"skill_approval"`
}

// SandboxWorkspaceWrite is the `[sandbox_workspace_write]` table.
type SandboxWorkspaceWrite struct {
	WritableRoots       []string
	NetworkAccess       bool
	ExcludeTmpdirEnvVar bool
	ExcludeSlashTmp     bool
}

// MCPServer is one `[mcp_servers.<name>]` entry. Exactly one of Command
// (stdio transport) and URL (streamable HTTP) is set.
type MCPServer struct {
	Name              string
	Command           string
	Args              []string
	Env               map[string]string
	Cwd               string
	URL               string
	BearerTokenEnvVar string
	HTTPHeaders       map[string]string
	EnvHTTPHeaders    map[string]string
	Enabled           bool          // default true
	Required          bool          // startup failure aborts thread start
	StartupTimeout    time.Duration // startup_timeout_sec / _ms, default 30s
	ToolTimeout       time.Duration // tool_timeout_sec, default 60s
	EnabledTools      []string      // nil = all tools
	DisabledTools     []string
}

// Project is a `[projects."<path>"]` entry.
type Project struct {
	TrustLevel string // "trusted", "untrusted" or ""
}

// Config is the effective, typed configuration. Fields not listed here
// remain available through Raw.
type Config struct {
	// CodexHome is the directory holding config.toml.
	CodexHome string
	// Model is the model slug; "" means the caller's default.
	Model string
	// ModelProvider is the selected provider id (default "openai").
	ModelProvider         string
	ModelReasoningEffort  string // "" = model default
	ModelReasoningSummary string // "" = model default
	ModelVerbosity        string // "" = model default
	// ServiceTier is service_tier, the speed tier new threads ask for ("" = none).
	ServiceTier string
	// Personality is personality ("none", "friendly", "pragmatic"; "" = unset).
	Personality string
	// DeveloperInstructions is developer_instructions, the developer message a thread sends the model unless
	// the client gives its own ("" = none).
	DeveloperInstructions string
	// ModelProviders holds the built-in providers (openai, ollama,
	// lmstudio) plus configured ones; built-ins cannot be overridden.
	ModelProviders map[string]ModelProvider
	// ApprovalPolicy defaults to on-request.
	ApprovalPolicy ApprovalPolicy
	// ApprovalTimeout bounds how long an approval request waits; 0 = no
	// limit (approval_timeout_ms, our extension).
	ApprovalTimeout time.Duration
	// SandboxMode is "read-only", "workspace-write", "danger-full-access",
	// or "" when unset (the caller picks the default).
	SandboxMode           string
	SandboxWorkspaceWrite SandboxWorkspaceWrite
	// IgnoreRules is exec's --ignore-rules: the command prefixes saved in $CODEX_HOME/rules are not read.
	IgnoreRules bool
	MCPServers  map[string]MCPServer
	// Features holds the boolean `[features]` flags (non-booleans are
	// ignored here and kept in Raw).
	Features map[string]bool
	// BackgroundTerminalMaxTimeout is background_terminal_max_timeout (ms
	// in the file); default 300s.
	BackgroundTerminalMaxTimeout time.Duration
	// ShellEnvironmentPolicy is the raw `[shell_environment_policy]` table,
	// nil when unset.
	ShellEnvironmentPolicy map[string]any
	// Projects is keyed by the project path as written in the file.
	Projects map[string]Project
	// ThreadUnloadDelay is how long an idle thread stays loaded
	// (thread_unload_delay_secs; default 1800s).
	ThreadUnloadDelay time.Duration

	layers    []*layer // lowest precedence first
	effective tree
	// pathBase is the directory relative paths given by the layers without a file (`-c` overrides, a
	// thread's config object) resolve against: "" for the process directory, a thread's cwd, or CODEX_HOME
	// for config/read without a cwd (as the reference resolves them).
	pathBase string
}

// Provider returns the selected model provider, or an error naming the
// unknown id.
func (c *Config) Provider() (ModelProvider, error) {
	p, ok := c.ModelProviders[c.ModelProvider]
	if !ok {
		return ModelProvider{}, &Error{Key: "model_provider", Msg: "Model provider `" + c.ModelProvider + "` not found"}
	}
	return p, nil
}

// DefaultFeatures are the `[features]` flags appserver knows, with their values when unset.
var DefaultFeatures = map[string]bool{
	"unified_exec": true, // read and reported; like the reference, false does not change the tools offered
}

// FeatureEnabled reports whether `[features] <name>` is on, falling back to DefaultFeatures.
func (c *Config) FeatureEnabled(name string) bool {
	if v, ok := c.Features[name]; ok {
		return v
	}
	return DefaultFeatures[name]
}

// Raw returns a deep copy of the effective merged configuration as a
// generic map with snake_case keys, unknown keys included.
func (c *Config) Raw() map[string]any {
	return deepCopy(c.effective)
}

// Scalar returns the value at path (snake_case keys, as in Raw) of the effective merged configuration
// when it is neither a table nor an array, without Raw's copy; nil when absent.
func (c *Config) Scalar(path ...string) any {
	if c == nil {
		return nil
	}
	var cur any = c.effective
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	switch cur.(type) {
	case map[string]any, []any:
		return nil
	}
	return cur
}
