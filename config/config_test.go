package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "config-test-sys")
	if err != nil {
		panic(err)
	}
	// Never read the machine's /etc/codex/config.toml in tests.
	systemConfigPath = filepath.Join(dir, "config.toml")
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// home creates a CODEX_HOME with the given config.toml content ("" = no file).
func home(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	if content != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFileName), []byte(content), 0o600))
	}
	return dir
}

func load(t *testing.T, content string, overrides ...string) *Config {
	t.Helper()
	c, err := Load(home(t, content), overrides)
	require.NoError(t, err)
	return c
}

func loadErr(t *testing.T, content string, overrides ...string) *Error {
	t.Helper()
	_, err := Load(home(t, content), overrides)
	require.Error(t, err)
	var ce *Error
	require.True(t, errors.As(err, &ce), "want *Error, got %T: %v", err, err)
	return ce
}

func TestDefaultsWithoutFile(t *testing.T) {
	dir := home(t, "")
	c, err := Load(dir, nil)
	require.NoError(t, err)
	require.Equal(t, dir, c.CodexHome)
	require.Equal(t, "", c.Model)
	require.Equal(t, "openai", c.ModelProvider)
	require.Equal(t, ApprovalPolicy{Mode: "on-request"}, c.ApprovalPolicy)
	require.Equal(t, "", c.SandboxMode)
	require.Equal(t, 1800*time.Second, c.ThreadUnloadDelay)
	require.Equal(t, 300*time.Second, c.BackgroundTerminalMaxTimeout)
	require.Zero(t, c.ApprovalTimeout)
	require.Empty(t, c.MCPServers)
	require.Empty(t, c.Features)
	require.Nil(t, c.ShellEnvironmentPolicy)
	p, err := c.Provider()
	require.NoError(t, err)
	require.Equal(t, "openai", p.ID)
	require.True(t, p.RequiresOpenAIAuth)
	require.Equal(t, 4, p.RequestMaxRetries)
	require.Equal(t, 5, p.StreamMaxRetries)
	require.Equal(t, 300*time.Second, p.StreamIdleTimeout)
	require.Contains(t, c.ModelProviders, "ollama")
	require.Contains(t, c.ModelProviders, "lmstudio")
	require.Empty(t, c.Raw())
}

func TestEveryKeyParsed(t *testing.T) {
	c := load(t, `
model = "gpt-test"
model_provider = "mock"
model_reasoning_effort = "high"
model_reasoning_summary = "detailed"
model_verbosity = "low"
approval_policy = "never"
approval_timeout_ms = 2500
sandbox_mode = "workspace-write"
background_terminal_max_timeout = 1234
thread_unload_delay_secs = 60

[model_providers.mock]
name = "Mock"
base_url = "http://127.0.0.1:1/v1"
env_key = "MOCK_KEY"
env_key_instructions = "set MOCK_KEY"
experimental_bearer_token = "tok"
wire_api = "responses"
query_params = { api-version = "2025" }
http_headers = { X-A = "a" }
env_http_headers = { X-B = "B_ENV" }
request_max_retries = 0
stream_max_retries = 1000
stream_idle_timeout_ms = 1500
network_wait_max_retries = 7
requires_openai_auth = true

[sandbox_workspace_write]
writable_roots = ["/a", "/b"]
network_access = true
exclude_tmpdir_env_var = true
exclude_slash_tmp = true

[mcp_servers.local]
command = "srv"
args = ["--x"]
env = { K = "v" }
cwd = "/w"
required = true
startup_timeout_sec = 2.5
tool_timeout_sec = 9
enabled_tools = ["a"]
disabled_tools = ["b"]

[mcp_servers.remote]
url = "http://h/mcp"
bearer_token_env_var = "TOKEN"
http_headers = { H = "1" }
env_http_headers = { E = "ENV" }
enabled = false
startup_timeout_ms = 700

[features]
unified_exec = true
other = false
a_table = { x = 1 }

[shell_environment_policy]
inherit = "core"
set = { A = "1" }

[projects."/src/p.q"]
trust_level = "trusted"
`)
	require.Equal(t, "gpt-test", c.Model)
	require.Equal(t, "mock", c.ModelProvider)
	require.Equal(t, "high", c.ModelReasoningEffort)
	require.Equal(t, "detailed", c.ModelReasoningSummary)
	require.Equal(t, "low", c.ModelVerbosity)
	require.Equal(t, ApprovalPolicy{Mode: "never"}, c.ApprovalPolicy)
	require.Equal(t, 2500*time.Millisecond, c.ApprovalTimeout)
	require.Equal(t, "workspace-write", c.SandboxMode)
	require.Equal(t, 1234*time.Millisecond, c.BackgroundTerminalMaxTimeout)
	require.Equal(t, time.Minute, c.ThreadUnloadDelay)

	p, err := c.Provider()
	require.NoError(t, err)
	require.Equal(t, ModelProvider{
		ID: "mock", Name: "Mock", BaseURL: "http://127.0.0.1:1/v1", EnvKey: "MOCK_KEY",
		EnvKeyInstructions: "set MOCK_KEY", ExperimentalBearerToken: "tok", WireAPI: "responses",
		QueryParams: map[string]string{"api-version": "2025"}, HTTPHeaders: map[string]string{"X-A": "a"},
		EnvHTTPHeaders: map[string]string{"X-B": "B_ENV"}, RequestMaxRetries: 0, StreamMaxRetries: 100,
		StreamIdleTimeout: 1500 * time.Millisecond, NetworkWaitMaxRetries: 7, RequiresOpenAIAuth: true,
	}, p)

	require.Equal(t, SandboxWorkspaceWrite{WritableRoots: []string{"/a", "/b"}, NetworkAccess: true,
		ExcludeTmpdirEnvVar: true, ExcludeSlashTmp: true}, c.SandboxWorkspaceWrite)

	require.Equal(t, MCPServer{
		Name: "local", Command: "srv", Args: []string{"--x"}, Env: map[string]string{"K": "v"}, Cwd: "/w",
		Enabled: true, Required: true, StartupTimeout: 2500 * time.Millisecond, ToolTimeout: 9 * time.Second,
		EnabledTools: []string{"a"}, DisabledTools: []string{"b"},
	}, c.MCPServers["local"])
	require.Equal(t, MCPServer{
		Name: "remote", URL: "http://h/mcp", BearerTokenEnvVar: "TOKEN", HTTPHeaders: map[string]string{"H": "1"},
		EnvHTTPHeaders: map[string]string{"E": "ENV"}, Enabled: false, StartupTimeout: 700 * time.Millisecond,
		ToolTimeout: 60 * time.Second,
	}, c.MCPServers["remote"])

	require.Equal(t, map[string]bool{"unified_exec": true, "other": false}, c.Features)
	require.True(t, c.FeatureEnabled("unified_exec"))
	require.False(t, c.FeatureEnabled("missing"))
	require.Equal(t, map[string]any{"inherit": "core", "set": map[string]any{"A": "1"}}, c.ShellEnvironmentPolicy)
	require.Equal(t, map[string]Project{"/src/p.q": {TrustLevel: "trusted"}}, c.Projects)
	require.True(t, c.IsTrusted("/src/p.q"))
	require.False(t, c.IsTrusted("/src/other"))
}

func TestMCPDefaults(t *testing.T) {
	c := load(t, "[mcp_servers.s]\ncommand = \"x\"\n")
	s := c.MCPServers["s"]
	require.True(t, s.Enabled)
	require.False(t, s.Required)
	require.Equal(t, 30*time.Second, s.StartupTimeout)
	require.Equal(t, 60*time.Second, s.ToolTimeout)
	require.Nil(t, s.EnabledTools)
}

func TestApprovalPolicy(t *testing.T) {
	for _, mode := range []string{"untrusted", "on-request", "never"} {
		c := load(t, "approval_policy = \""+mode+"\"\n")
		require.Equal(t, ApprovalPolicy{Mode: mode}, c.ApprovalPolicy)
	}
	c := load(t, "approval_policy = { granular = { sandbox_approval = true, rules = false, mcp_elicitations = true, skill_approval = true } }\n")
	require.Equal(t, ApprovalPolicy{Mode: "granular", Granular: &GranularApproval{
		SandboxApproval: true, MCPElicitations: true, SkillApproval: true}}, c.ApprovalPolicy)
}

func TestProviderBuiltinsAndUnknown(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	e := loadErr(t, "model_provider = \"nope\"\n")
	require.Equal(t, "Model provider `nope` not found", e.Error())
	c := load(t, "[model_providers.openai]\nbase_url = \"http://ignored\"\n")
	require.Equal(t, DefaultOpenAIBaseURL, c.ModelProviders["openai"].BaseURL, "built-ins are not overridable")

	c = load(t, "openai_base_url = \"http://proxy/v1\"\n")
	require.Equal(t, "http://proxy/v1", c.ModelProviders["openai"].BaseURL)
	t.Setenv("OPENAI_BASE_URL", "http://env/v1")
	c = load(t, "")
	require.Equal(t, "http://env/v1", c.ModelProviders["openai"].BaseURL)
}

// The legacy top-level `profile` key is refused wherever it is set, with the reference's message; a
// `-c` one is an override error (the server does not start). [profiles.<name>] tables alone are fine.
func TestLegacyProfileRefused(t *testing.T) {
	const msg = "legacy `profile = \"p1\"` config is no longer supported; use `--profile p1` with `p1.config.toml` instead"
	const profiles = "[profiles.p1]\nmodel = \"from-p1\"\n"
	for _, tc := range []struct {
		name, file string
		overrides  []string
		override   bool
	}{
		{"file", "profile = \"p1\"\n" + profiles, nil, false},
		{"file, missing profile", "profile = \"p1\"\n", nil, false},
		{"-c", profiles, []string{"profile=p1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(home(t, tc.file), tc.overrides)
			var pe *LegacyProfileError
			require.ErrorAs(t, err, &pe)
			require.EqualError(t, err, msg)
			require.Equal(t, tc.override, IsOverrideError(err))
		})
	}
	c := load(t, profiles)
	require.Empty(t, c.Model, "an unselected profile changes nothing")
	_, err := c.WithOverrides(map[string]any{"profile": "p1"})
	require.EqualError(t, err, msg)
	require.False(t, IsOverrideError(err))
	load(t, "[profiles.bad]\nmodel = 5\n")
}

func TestOverrides(t *testing.T) {
	c := load(t, "model = \"file\"\n[model_providers.mock]\nname = \"M\"\nbase_url = \"http://file\"\n",
		"model=plain string",
		"model_provider=mock",
		"model_providers.mock.base_url=\"http://x\"",
		"approval_timeout_ms=42",
		"features.unified_exec=true",
		"sandbox_workspace_write.writable_roots=[\"/r1\", \"/r2\"]",
		`projects."/a.b".trust_level=trusted`,
		"mcp_servers.s={command = \"c\", args = [\"1\"]}",
	)
	require.Equal(t, "plain string", c.Model)
	p, err := c.Provider()
	require.NoError(t, err)
	require.Equal(t, "http://x", p.BaseURL)
	require.Equal(t, "M", p.Name, "sibling keys of an overridden dotted key survive")
	require.Equal(t, 42*time.Millisecond, c.ApprovalTimeout)
	require.True(t, c.Features["unified_exec"])
	require.Equal(t, []string{"/r1", "/r2"}, c.SandboxWorkspaceWrite.WritableRoots)
	require.Equal(t, "trusted", c.Projects["/a.b"].TrustLevel)
	require.Equal(t, []string{"1"}, c.MCPServers["s"].Args)

	require.Equal(t, int64(42), c.Raw()["approval_timeout_ms"])
	require.Equal(t, "7", load(t, "", `model="7"`).Model)

	e := loadErr(t, "", "model=5")
	require.Equal(t, "-c override", e.File)
	require.Equal(t, "model", e.Key)
	require.Contains(t, e.Error(), "expected a string")

	for _, bad := range []string{"no-equals", "=v", "a..b=1", `"unterminated=1`} {
		e := loadErr(t, "", bad)
		require.Equal(t, "-c override", e.File, bad)
	}
}

func TestMalformedTOML(t *testing.T) {
	dir := home(t, "model = \"a\"\nfoo = [\n")
	_, err := Load(dir, nil)
	require.Error(t, err)
	var ce *Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, filepath.Join(dir, ConfigFileName), ce.File)
	require.Equal(t, 2, ce.Line)
	require.Positive(t, ce.Column)
	require.Contains(t, err.Error(), filepath.Join(dir, ConfigFileName)+":2:")

	e := loadErr(t, "a = 1\na = 2\n")
	require.Equal(t, 2, e.Line)
}

func TestWrongTypes(t *testing.T) {
	cases := []struct {
		name, file, key string
		line            int
		msg             string
	}{
		{"string", "# c\nmodel = 5\n", "model", 2, "integer `5`, expected a string"},
		{"nested", "[model_providers.m]\nname = \"x\"\nrequest_max_retries = \"many\"\n", "model_providers.m.request_max_retries", 3, "invalid type: string \"many\", expected u64"},
		{"negative", "thread_unload_delay_secs = -1\n", "thread_unload_delay_secs", 1, "invalid value: integer `-1`, expected u64"},
		{"bool", "[sandbox_workspace_write]\nnetwork_access = \"yes\"\n", "sandbox_workspace_write.network_access", 2, "expected a boolean"},
		{"array elem", "[mcp_servers.s]\ncommand = \"c\"\nargs = [\"a\", 1]\n", "mcp_servers.s.args.1", 3, "expected a string"},
		{"string map", "[mcp_servers.s]\ncommand = \"c\"\nenv = { A = 1 }\n", "mcp_servers.s.env.A", 3, "expected a string"},
		{"table", "mcp_servers = 3\n", "mcp_servers", 1, "invalid type: integer `3`, expected a map"},
		{"mcp transport", "[mcp_servers.s]\nargs = []\n", "mcp_servers.s", 1, "needs either `command`"},
		{"mcp both", "[mcp_servers.s]\ncommand = \"c\"\nurl = \"u\"\n", "mcp_servers.s", 1, "both"},
		{"enum", "sandbox_mode = \"everything\"\n", "sandbox_mode", 1, "unknown variant `everything`"},
		{"verbosity", "model_verbosity = \"loud\"\n", "model_verbosity", 1, "unknown variant"},
		{"approval", "approval_policy = \"on-failure\"\n", "approval_policy", 1, "unknown variant `on-failure`"},
		{"approval type", "approval_policy = 1\n", "approval_policy", 1, "invalid type: unit variant, expected string only"},
		{"granular missing", "approval_policy = { granular = { rules = true } }\n", "approval_policy", 1, "missing field `sandbox_approval`"},
		{"granular type", "approval_policy = { granular = 1 }\n", "approval_policy", 1, "invalid type: integer `1`, expected struct GranularApprovalConfig"},
		{"approval table", "[approval_policy]\nother = 1\n", "approval_policy", 1, "granular"},
		{"project", "[projects]\n\"/p\" = 1\n", "projects./p", 2, "invalid type: integer `1`, expected struct ProjectConfig"},
		{"startup", "[mcp_servers.s]\ncommand = \"c\"\nstartup_timeout_sec = \"x\"\n", "mcp_servers.s.startup_timeout_sec", 3, "expected f64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := loadErr(t, tc.file)
			require.Equal(t, tc.key, e.Key)
			require.Equal(t, tc.line, e.Line)
			require.Contains(t, e.File, ConfigFileName)
			require.Contains(t, e.Error(), tc.msg)
		})
	}
}

func TestUnknownKeysTolerated(t *testing.T) {
	c := load(t, "model = \"m\"\nfuture_key = 1\n[future_table]\nx = \"y\"\n[mcp_servers.s]\ncommand = \"c\"\nfuture = true\n")
	require.Equal(t, "m", c.Model)
	raw := c.Raw()
	require.Equal(t, int64(1), raw["future_key"])
	require.Equal(t, map[string]any{"x": "y"}, raw["future_table"])
}

func TestRawIsACopy(t *testing.T) {
	c := load(t, "[features]\nx = true\n")
	raw := c.Raw()
	raw["features"].(map[string]any)["x"] = false
	require.Equal(t, true, c.Raw()["features"].(map[string]any)["x"])
}

// TestScalarReadsWhatRawHolds: Scalar is Raw's value at a path when that is no table or array.
func TestScalarReadsWhatRawHolds(t *testing.T) {
	c := load(t, "model_context_window = 1000\nweb_search = \"live\"\n[tools.update_plan]\nenabled = true\n[t]\na = [1]\n")
	require.Equal(t, int64(1000), c.Scalar("model_context_window"))
	require.Equal(t, "live", c.Scalar("web_search"))
	require.Equal(t, true, c.Scalar("tools", "update_plan", "enabled"))
	require.Nil(t, c.Scalar("tools", "update_plan"))
	require.Nil(t, c.Scalar("t", "a"))
	require.Nil(t, c.Scalar("absent"))
	require.Nil(t, c.Scalar("web_search", "deeper"))
	var none *Config
	require.Nil(t, none.Scalar("x"))
}

func TestSystemLayer(t *testing.T) {
	require.NoError(t, os.WriteFile(systemConfigPath, []byte("model = \"sys\"\nmodel_verbosity = \"high\"\n"), 0o600))
	t.Cleanup(func() { _ = os.Remove(systemConfigPath) })
	c := load(t, "model = \"user\"\n")
	require.Equal(t, "user", c.Model)
	require.Equal(t, "high", c.ModelVerbosity)

	require.NoError(t, os.WriteFile(systemConfigPath, []byte("model = [\n"), 0o600))
	_, err := Load(home(t, ""), nil)
	require.ErrorContains(t, err, systemConfigPath+":1:")
}

func TestWithOverrides(t *testing.T) {
	base := load(t, "model = \"file\"\n[model_providers.mock]\nname = \"M\"\nbase_url = \"http://file\"\n")
	c, err := base.WithOverrides(map[string]any{
		"model":                         "thread-model",
		"model_providers.mock.base_url": "http://dotted",
		"sandbox_workspace_write":       map[string]any{"network_access": true, "writable_roots": []any{"/w"}},
		"approval_timeout_ms":           float64(1500),
		"model_verbosity":               nil,
		"features":                      map[string]any{"unified_exec": true},
	})
	require.NoError(t, err)
	require.Equal(t, "thread-model", c.Model)
	require.Equal(t, "http://dotted", c.ModelProviders["mock"].BaseURL)
	require.Equal(t, "M", c.ModelProviders["mock"].Name)
	require.True(t, c.SandboxWorkspaceWrite.NetworkAccess)
	require.Equal(t, []string{"/w"}, c.SandboxWorkspaceWrite.WritableRoots)
	require.Equal(t, 1500*time.Millisecond, c.ApprovalTimeout)
	require.Equal(t, "", c.ModelVerbosity)
	require.True(t, c.Features["unified_exec"])
	require.Equal(t, base.CodexHome, c.CodexHome)

	require.Equal(t, "file", base.Model, "receiver unchanged")
	require.Equal(t, "http://file", base.ModelProviders["mock"].BaseURL)

	same, err := base.WithOverrides(nil)
	require.NoError(t, err)
	require.Equal(t, "file", same.Model)

	_, err = base.WithOverrides(map[string]any{"model": 3.0})
	var ce *Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "config override", ce.File)
	require.Equal(t, "model", ce.Key)

	_, err = base.WithOverrides(map[string]any{"thread_unload_delay_secs": 1.5})
	require.ErrorContains(t, err, "thread_unload_delay_secs")
}

func TestSplitKey(t *testing.T) {
	cases := map[string][]string{
		"a":                 {"a"},
		"a.b.c":             {"a", "b", "c"},
		` a . b `:           {"a", "b"},
		`p."/x.y".t`:        {"p", "/x.y", "t"},
		`p.'/x.y'.t`:        {"p", "/x.y", "t"},
		`p."q\"uote"`:       {"p", `q"uote`},
		`"".x`:              {"", "x"},
		`model_providers.m`: {"model_providers", "m"},
	}
	for in, want := range cases {
		got, err := splitKey(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "a.", ".a", "a..b", `"open`, `"bad\q"`} {
		_, err := splitKey(bad)
		require.Error(t, err, bad)
	}
}

func TestCodexHome(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "home")
	t.Setenv("CODEX_HOME", dir)
	got, err := CodexHome()
	require.NoError(t, err)
	require.Equal(t, dir, got)
	require.DirExists(t, dir)

	fake := t.TempDir()
	t.Setenv("CODEX_HOME", "")
	t.Setenv("HOME", fake)
	got, err = CodexHome()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(fake, ".codex"), got)
	require.DirExists(t, got)

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	t.Setenv("CODEX_HOME", file)
	_, err = CodexHome()
	require.Error(t, err)
}

func TestAppendProjectTrust(t *testing.T) {
	dir := home(t, "model = \"m\"") // no trailing newline
	cwd := filepath.Join(t.TempDir(), `we"ird\dir`)
	require.NoError(t, AppendProjectTrust(dir, cwd))
	require.NoError(t, AppendProjectTrust(dir, cwd))
	require.NoError(t, AppendProjectTrust(dir, cwd+"/"))

	data, err := os.ReadFile(filepath.Join(dir, ConfigFileName))
	require.NoError(t, err)
	c, err := Load(dir, nil)
	require.NoError(t, err, string(data))
	require.Equal(t, "m", c.Model)
	require.Equal(t, map[string]Project{cwd: {TrustLevel: "trusted"}}, c.Projects)
	require.True(t, c.IsTrusted(cwd))
	require.Equal(t, 1, countOf(string(data), "[projects."))

	// An existing entry (even untrusted) is respected.
	dir2 := home(t, "[projects.\"/p\"]\ntrust_level = \"untrusted\"\n")
	require.NoError(t, AppendProjectTrust(dir2, "/p"))
	c, err = Load(dir2, nil)
	require.NoError(t, err)
	require.Equal(t, "untrusted", c.TrustLevel("/p"))

	// Missing file is created.
	dir3 := t.TempDir()
	require.NoError(t, AppendProjectTrust(dir3, "/q"))
	c, err = Load(dir3, nil)
	require.NoError(t, err)
	require.True(t, c.IsTrusted("/q"))

	// Malformed file is reported and not touched.
	dir4 := home(t, "x = [\n")
	require.Error(t, AppendProjectTrust(dir4, "/q"))
	data, err = os.ReadFile(filepath.Join(dir4, ConfigFileName))
	require.NoError(t, err)
	require.Equal(t, "x = [\n", string(data))
}

func countOf(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}

func TestTrustFromProjectRoot(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, ".git"), 0o755))
	sub := filepath.Join(root, "a", "b")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	c := load(t, "[projects."+tomlQuote(root)+"]\ntrust_level = \"trusted\"\n")
	require.True(t, c.IsTrusted(sub))
	require.True(t, c.IsTrusted(root))
	require.False(t, c.IsTrusted(t.TempDir()))
}

func TestErrorFormat(t *testing.T) {
	require.Equal(t, "f:3:4: boom", (&Error{File: "f", Line: 3, Column: 4, Key: "k", Msg: "boom"}).Error())
	require.Equal(t, "f: boom (key `k`)", (&Error{File: "f", Key: "k", Msg: "boom"}).Error())
	require.Equal(t, "bad `k` value", (&Error{Key: "k", Msg: "bad `k` value"}).Error())
	require.Equal(t, "f: x", (&Error{File: "f", Msg: "x"}).Error())
}

func TestVersionMatchesReferenceHash(t *testing.T) {
	// The reference reports this version for an empty layer: sha256("{}").
	l := &layer{raw: tree{}}
	require.Equal(t, "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", l.version())
}
