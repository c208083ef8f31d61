package config

import (
	"fmt"
	"math"
	"os"
	"sort"
	"time"
)

// convError is a problem with the value at path in the effective tree; the
// caller attributes it to the layer that supplied the value.
type convError struct {
	path []string
	msg  string
	key  []string // the key the error names when not path (a flattened map's entry is named by its map)
	// spanless is set for an error the reference reports without a position (its text then ends with
	// "in `key`").
	spanless bool
}

func (e *convError) Error() string { return joinKey(e.path) + ": " + e.msg }

// describe names a value's TOML type for error messages.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("string %q", x)
	case int64:
		return fmt.Sprintf("integer `%d`", x)
	case float64:
		return fmt.Sprintf("float `%v`", x)
	case bool:
		return fmt.Sprintf("boolean `%v`", x)
	case []any:
		return "array"
	case tree:
		return "table"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// reader extracts typed values from a table, recording the first error.
type reader struct {
	err *convError
}

func (r *reader) fail(path []string, v any, want string) {
	if r.err == nil {
		r.err = &convError{path: append([]string{}, path...), msg: fmt.Sprintf("invalid type: %s, expected %s", serdeDescribe(v), want)}
	}
}

func (r *reader) failMsg(path []string, msg string) {
	if r.err == nil {
		r.err = &convError{path: append([]string{}, path...), msg: msg}
	}
}

// failMsgNamed is failMsg for a value at path that the error names by key.
func (r *reader) failMsgNamed(path, key []string, msg string) {
	if r.err == nil {
		r.err = &convError{path: append([]string{}, path...), msg: msg, key: append([]string{}, key...)}
	}
}

// failSeq records an array's error read as a struct (seqStruct.check), named by the array's key.
func (r *reader) failSeq(path []string, e *seqError) {
	if r.err == nil {
		r.err = &convError{path: append(append([]string{}, path...), e.at...), msg: e.msg, key: append([]string{}, path...), spanless: e.spanless}
	}
}

func child(path []string, k string) []string {
	return append(path[:len(path):len(path)], k)
}

func (r *reader) str(t tree, path []string, k string, def string) string {
	v, ok := t[k]
	if !ok {
		return def
	}
	s, ok := v.(string)
	if !ok {
		r.fail(child(path, k), v, "a string")
		return def
	}
	return s
}

func (r *reader) boolean(t tree, path []string, k string, def bool) bool {
	v, ok := t[k]
	if !ok {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		r.fail(child(path, k), v, "a boolean")
		return def
	}
	return b
}

// integer reads a u64 as serde does: a negative integer is an invalid value, anything but an integer
// (a whole float included) an invalid type.
func (r *reader) integer(t tree, path []string, k string, def int64) int64 {
	v, ok := t[k]
	if !ok {
		return def
	}
	if msg := checkValue("u64", v); msg != "" {
		r.failMsg(child(path, k), msg)
		return def
	}
	return v.(int64)
}

// number reads seconds given as a number (integer or float), as the reference's duration fields do: a
// negative one cannot become a Duration (the error names negPath), anything else is not an f64.
func (r *reader) number(t tree, path []string, k string, negPath []string) (float64, bool) {
	v, ok := t[k]
	if !ok {
		return 0, false
	}
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		r.fail(child(path, k), v, "f64") // serde's words for a value that is not a number
		return 0, false
	}
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		msg := "cannot convert float seconds to Duration: value is negative"
		if !(f < 0) {
			msg = "cannot convert float seconds to Duration: value is either too big or NaN"
		}
		r.failMsg(negPath, msg)
		return 0, false
	}
	return f, true
}

func (r *reader) strings(t tree, path []string, k string) []string {
	v, ok := t[k]
	if !ok {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		r.fail(child(path, k), v, "a sequence")
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			r.fail(child(child(path, k), fmt.Sprint(i)), e, "a string")
			return nil
		}
		out = append(out, s)
	}
	return out
}

func (r *reader) table(t tree, path []string, k string) tree {
	v, ok := t[k]
	if !ok {
		return nil
	}
	m, ok := v.(tree)
	if !ok {
		r.fail(child(path, k), v, "a map")
		return nil
	}
	return m
}

func (r *reader) stringMap(t tree, path []string, k string) map[string]string {
	m := r.table(t, path, k)
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for mk, mv := range m {
		s, ok := mv.(string)
		if !ok {
			r.fail(child(child(path, k), mk), mv, "a string")
			return nil
		}
		out[mk] = s
	}
	return out
}

func (r *reader) oneOf(t tree, path []string, k string, allowed ...string) string {
	s := r.str(t, path, k, "")
	if s == "" {
		if _, ok := t[k]; !ok {
			return ""
		}
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	r.failMsg(child(path, k), fmt.Sprintf("unknown variant `%s`, expected one of %s", s, quoteList(allowed)))
	return ""
}

func quoteList(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += ", "
		}
		out += "`" + x + "`"
	}
	return out
}

// sortedKeys returns the keys of t in order, for deterministic errors.
func sortedKeys(t tree) []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// build converts the effective tree into a typed Config (without layers).
func build(eff tree) (*Config, *convError) {
	r := &reader{}
	checkTopKeyTypes(r, eff)
	var root []string
	c := &Config{
		Model:                 r.str(eff, root, "model", ""),
		ModelProvider:         r.str(eff, root, "model_provider", DefaultModelProvider),
		ModelReasoningEffort:  r.str(eff, root, "model_reasoning_effort", ""),
		ModelReasoningSummary: r.oneOf(eff, root, "model_reasoning_summary", "auto", "concise", "detailed", "none"),
		ModelVerbosity:        r.oneOf(eff, root, "model_verbosity", "low", "medium", "high"),
		ServiceTier:           r.str(eff, root, "service_tier", ""),
		Personality:           r.oneOf(eff, root, "personality", "none", "friendly", "pragmatic"),
		DeveloperInstructions: r.str(eff, root, "developer_instructions", ""),
		SandboxMode:           r.oneOf(eff, root, "sandbox_mode", "read-only", "workspace-write", "danger-full-access"),
		ApprovalTimeout:       time.Duration(r.integer(eff, root, "approval_timeout_ms", 0)) * time.Millisecond,
		BackgroundTerminalMaxTimeout: time.Duration(r.integer(eff, root, "background_terminal_max_timeout",
			DefaultBackgroundTerminalMaxTimeout.Milliseconds())) * time.Millisecond,
		ThreadUnloadDelay: time.Duration(r.integer(eff, root, "thread_unload_delay_secs",
			int64(DefaultThreadUnloadDelay/time.Second))) * time.Second,
	}
	c.ApprovalPolicy = readApproval(r, eff)
	if sww := r.table(eff, root, "sandbox_workspace_write"); sww != nil {
		p := []string{"sandbox_workspace_write"}
		c.SandboxWorkspaceWrite = SandboxWorkspaceWrite{
			WritableRoots:       r.strings(sww, p, "writable_roots"),
			NetworkAccess:       r.boolean(sww, p, "network_access", false),
			ExcludeTmpdirEnvVar: r.boolean(sww, p, "exclude_tmpdir_env_var", false),
			ExcludeSlashTmp:     r.boolean(sww, p, "exclude_slash_tmp", false),
		}
	}
	c.ShellEnvironmentPolicy = r.table(eff, root, "shell_environment_policy")
	c.Features = map[string]bool{}
	for k, v := range r.table(eff, root, "features") {
		if b, ok := v.(bool); ok {
			c.Features[k] = b
		}
	}
	c.Projects = map[string]Project{}
	projects := r.table(eff, root, "projects")
	for _, k := range sortedKeys(projects) {
		p := []string{"projects", k}
		pt, ok := projects[k].(tree)
		if !ok {
			r.fail(p, projects[k], "a table")
			continue
		}
		c.Projects[k] = Project{TrustLevel: r.str(pt, p, "trust_level", "")}
	}
	c.ModelProviders = builtinProviders(r.str(eff, root, "openai_base_url", ""))
	providers := r.table(eff, root, "model_providers")
	for _, id := range sortedKeys(providers) {
		if _, builtin := c.ModelProviders[id]; builtin {
			continue
		}
		p := []string{"model_providers", id}
		pt, ok := providers[id].(tree)
		if !ok {
			r.fail(p, providers[id], "a table")
			continue
		}
		c.ModelProviders[id] = readProvider(r, p, id, pt)
	}
	c.MCPServers = map[string]MCPServer{}
	servers := r.table(eff, root, "mcp_servers")
	for _, name := range sortedKeys(servers) {
		p := []string{"mcp_servers", name}
		st, ok := servers[name].(tree)
		if !ok {
			r.fail(p, servers[name], "a table")
			continue
		}
		c.MCPServers[name] = readMCPServer(r, p, name, st)
	}
	if r.err != nil {
		return nil, r.err
	}
	return c, nil
}

func readApproval(r *reader, eff tree) ApprovalPolicy {
	v, ok := eff["approval_policy"]
	if !ok {
		return ApprovalPolicy{Mode: DefaultApprovalPolicy}
	}
	path := []string{"approval_policy"}
	switch x := v.(type) {
	case string:
		switch x {
		case "untrusted", "on-request", "never":
			return ApprovalPolicy{Mode: x}
		}
		r.failMsg(path, fmt.Sprintf("invalid value for `approval_policy`: unknown variant `%s`, expected one of `untrusted`, `on-request`, `never`, or a `granular` table", x))
	case tree:
		g, ok := x["granular"].(tree)
		if gv, has := x["granular"]; has && !ok {
			r.fail(path, gv, "struct GranularApprovalConfig")
			break
		}
		if !ok || len(x) != 1 {
			r.failMsg(path, "invalid value for `approval_policy`: a table must be exactly `{ granular = { ... } }`")
			break
		}
		gp := child(path, "granular")
		for _, req := range []string{"sandbox_approval", "rules", "mcp_elicitations"} {
			if _, ok := g[req]; !ok {
				r.failMsg(path, fmt.Sprintf("missing field `%s`", req))
			}
		}
		return ApprovalPolicy{Mode: "granular", Granular: &GranularApproval{
			SandboxApproval:    r.boolean(g, gp, "sandbox_approval", false),
			Rules:              r.boolean(g, gp, "rules", false),
			MCPElicitations:    r.boolean(g, gp, "mcp_elicitations", false),
			RequestPermissions: r.boolean(g, gp, "request_permissions", false),
			SkillApproval:      r.boolean(g, gp, "skill_approval", false),
		}}
	default:
		r.fail(path, v, "a string or a `granular` table")
	}
	return ApprovalPolicy{Mode: DefaultApprovalPolicy}
}

func retries(r *reader, t tree, path []string, k string, def int64) int {
	n := r.integer(t, path, k, def)
	if n > MaxRetries {
		n = MaxRetries
	}
	return int(n)
}

// providerFields are the types of a model provider's fields the reference checks (codex-cli 0.169.0's
// words); readProvider reads the ones appserver uses.
var providerFields = fieldsCheck(map[string]keyType{
	"name": {want: "a string"}, "base_url": {want: "a string"}, "env_key": {want: "a string"},
	"env_key_instructions": {want: "a string"}, "experimental_bearer_token": {want: "a string"},
	"model_catalog_url": {want: "a string"}, "project_id": {want: "a string"}, "location": {want: "a string"},
	"credential_file": {want: "path string"}, "auth": {want: "struct ModelProviderAuthInfo"},
	"aws": {want: "struct ModelProviderAwsAuthInfo"}, "capabilities": {want: "struct ModelProviderCapabilities"},
	"request_max_retries": {want: "u64"}, "stream_max_retries": {want: "u64"},
	"stream_idle_timeout_ms": {want: "u64"}, "websocket_connect_timeout_ms": {want: "u64"},
	"requires_openai_auth": {want: "a boolean"}, "supports_websockets": {want: "a boolean"},
	"supports_standalone_web_search": {want: "a boolean"}, "wire_api": {want: "a string"},
	"query_params": {want: "a map"}, "http_headers": {want: "a map"}, "env_http_headers": {want: "a map"},
})

func readProvider(r *reader, p []string, id string, t tree) ModelProvider {
	providerFields(r, p, t)
	return ModelProvider{
		ID:                      id,
		Name:                    r.str(t, p, "name", id),
		BaseURL:                 r.str(t, p, "base_url", ""),
		EnvKey:                  r.str(t, p, "env_key", ""),
		EnvKeyInstructions:      r.str(t, p, "env_key_instructions", ""),
		ExperimentalBearerToken: r.str(t, p, "experimental_bearer_token", ""),
		WireAPI:                 r.wireAPI(t, p),
		QueryParams:             r.stringMap(t, p, "query_params"),
		HTTPHeaders:             r.stringMap(t, p, "http_headers"),
		EnvHTTPHeaders:          r.stringMap(t, p, "env_http_headers"),
		RequestMaxRetries:       retries(r, t, p, "request_max_retries", DefaultRequestMaxRetries),
		StreamMaxRetries:        retries(r, t, p, "stream_max_retries", DefaultStreamMaxRetries),
		NetworkWaitMaxRetries:   retries(r, t, p, "network_wait_max_retries", DefaultNetworkWaitMaxRetries),
		StreamIdleTimeout: time.Duration(r.integer(t, p, "stream_idle_timeout_ms",
			DefaultStreamIdleTimeout.Milliseconds())) * time.Millisecond,
		RequiresOpenAIAuth: r.boolean(t, p, "requires_openai_auth", false),
	}
}

// builtinProviders returns the providers every configuration has. The
// OpenAI base URL comes from openai_base_url, else $OPENAI_BASE_URL.
func builtinProviders(openaiBaseURL string) map[string]ModelProvider {
	if openaiBaseURL == "" {
		openaiBaseURL = os.Getenv("OPENAI_BASE_URL")
	}
	if openaiBaseURL == "" {
		openaiBaseURL = DefaultOpenAIBaseURL
	}
	mk := func(id, name, url string, openaiAuth bool) ModelProvider {
		return ModelProvider{
			ID: id, Name: name, BaseURL: url, WireAPI: "responses",
			RequestMaxRetries: DefaultRequestMaxRetries, StreamMaxRetries: DefaultStreamMaxRetries,
			NetworkWaitMaxRetries: DefaultNetworkWaitMaxRetries,
			StreamIdleTimeout:     DefaultStreamIdleTimeout, RequiresOpenAIAuth: openaiAuth,
		}
	}
	return map[string]ModelProvider{
		"openai":   mk("openai", "OpenAI", openaiBaseURL, true),
		"ollama":   mk("ollama", "gpt-oss", "http://localhost:11434/v1", false),
		"lmstudio": mk("lmstudio", "gpt-oss", "http://localhost:1234/v1", false),
	}
}

func readMCPServer(r *reader, p []string, name string, t tree) MCPServer {
	s := MCPServer{
		Name:              name,
		Command:           r.str(t, p, "command", ""),
		Args:              r.strings(t, p, "args"),
		Env:               r.stringMap(t, p, "env"),
		Cwd:               r.str(t, p, "cwd", ""),
		URL:               r.str(t, p, "url", ""),
		BearerTokenEnvVar: r.str(t, p, "bearer_token_env_var", ""),
		HTTPHeaders:       r.stringMap(t, p, "http_headers"),
		EnvHTTPHeaders:    r.stringMap(t, p, "env_http_headers"),
		Enabled:           r.boolean(t, p, "enabled", true),
		Required:          r.boolean(t, p, "required", false),
		StartupTimeout:    DefaultMCPStartupTimeout,
		ToolTimeout:       DefaultMCPToolTimeout,
		EnabledTools:      r.strings(t, p, "enabled_tools"),
		DisabledTools:     r.strings(t, p, "disabled_tools"),
	}
	// The reference names the server for a negative startup_timeout_sec, the key for tool_timeout_sec.
	startupMs := r.integer(t, p, "startup_timeout_ms", -1)
	if secs, ok := r.number(t, p, "startup_timeout_sec", p); ok {
		s.StartupTimeout = time.Duration(secs * float64(time.Second))
	} else if startupMs >= 0 {
		s.StartupTimeout = time.Duration(startupMs) * time.Millisecond
	}
	if secs, ok := r.number(t, p, "tool_timeout_sec", child(p, "tool_timeout_sec")); ok {
		s.ToolTimeout = time.Duration(secs * float64(time.Second))
	}
	switch {
	case s.Command == "" && s.URL == "":
		r.failMsg(p, fmt.Sprintf("MCP server `%s` needs either `command` (stdio) or `url` (streamable HTTP)", name))
	case s.Command != "" && s.URL != "":
		r.failMsg(p, fmt.Sprintf("MCP server `%s` sets both `command` and `url`; choose one transport", name))
	}
	return s
}

// wireAPI reads a provider's wire_api: codex-cli 0.169.0 knows only `responses`.
func (r *reader) wireAPI(t tree, path []string) string {
	w := r.str(t, path, "wire_api", "responses")
	if w != "responses" && r.err == nil {
		r.failMsg(child(path, "wire_api"), "unknown variant `"+w+"`, expected `responses`")
	}
	return w
}
