package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// roundTrip renders v as JSON and decodes it generically, as a client sees it.
func roundTrip(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(data, &out))
	return out
}

func TestReadResponseOrigins(t *testing.T) {
	dir := home(t, "model = \"file\"\nmodel_provider = \"mock\"\nunknown_x = 3\n[model_providers.mock]\nname = \"M\"\nbase_url = \"http://file\"\n[mcp_servers.s]\ncommand = \"c\"\nargs = [\"a\", \"b\"]\n")
	c, err := Load(dir, []string{"model=flag", `model_providers.mock.base_url="http://x"`})
	require.NoError(t, err)
	res, err := c.ReadResponse(false, "")
	require.NoError(t, err)
	out := roundTrip(t, res)
	require.NotContains(t, out, "layers")

	cfg := out["config"].(map[string]any)
	require.Equal(t, "flag", cfg["model"])
	require.Equal(t, "mock", cfg["model_provider"])
	require.NotContains(t, cfg, "unknown_x", "unknown top-level keys are dropped from config")
	require.Contains(t, cfg, "review_model")
	require.Nil(t, cfg["review_model"])
	require.Equal(t, float64(300000), cfg["background_terminal_max_timeout"])
	prov := cfg["model_providers"].(map[string]any)["mock"].(map[string]any)
	require.Equal(t, "http://x", prov["base_url"])
	require.Equal(t, "M", prov["name"])
	require.Contains(t, prov, "env_key")
	require.Equal(t, false, prov["requires_openai_auth"])
	srv := cfg["mcp_servers"].(map[string]any)["s"].(map[string]any)
	require.Equal(t, true, srv["enabled"])

	userFile := filepath.Join(dir, ConfigFileName)
	origins := out["origins"].(map[string]any)
	user := map[string]any{"type": "user", "file": userFile, "profile": nil}
	flags := map[string]any{"type": "sessionFlags"}
	for key, want := range map[string]map[string]any{
		"model":                         flags,
		"model_providers.mock.base_url": flags,
		"model_providers.mock.name":     user,
		"model_provider":                user,
		"unknown_x":                     user,
		"mcp_servers.s.args.0":          user,
		"mcp_servers.s.args.1":          user,
	} {
		require.Contains(t, origins, key)
		o := origins[key].(map[string]any)
		require.Equal(t, want, o["name"], key)
		require.Regexp(t, `^sha256:[0-9a-f]{64}$`, o["version"])
	}
	require.Len(t, origins, 8)
	require.NotEqual(t, origins["model"].(map[string]any)["version"], origins["model_provider"].(map[string]any)["version"])
}

func TestReadResponseLayers(t *testing.T) {
	dir := home(t, "model = \"file\"\nmodel_verbosity = \"low\"\n")
	c, err := Load(dir, []string{"model=flag"})
	require.NoError(t, err)
	res, err := c.ReadResponse(true, "")
	require.NoError(t, err)
	out := roundTrip(t, res)
	layers := out["layers"].([]any)
	require.Len(t, layers, 3)
	names := make([]any, len(layers))
	for i, l := range layers {
		names[i] = l.(map[string]any)["name"]
	}
	userFile := filepath.Join(dir, ConfigFileName)
	require.Equal(t, []any{
		map[string]any{"type": "sessionFlags"},
		map[string]any{"type": "user", "file": userFile, "profile": nil},
		map[string]any{"type": "system", "file": systemConfigPath},
	}, names)
	require.Equal(t, map[string]any{"model": "flag"}, layers[0].(map[string]any)["config"])
	require.Equal(t, map[string]any{"model": "file", "model_verbosity": "low"}, layers[1].(map[string]any)["config"])
	require.Equal(t, map[string]any{}, layers[2].(map[string]any)["config"])
	require.Equal(t, "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", layers[2].(map[string]any)["version"])
	for _, l := range layers {
		require.NotContains(t, l, "disabledReason")
	}
	origins := out["origins"].(map[string]any)
	require.Equal(t, map[string]any{"type": "user", "file": userFile, "profile": nil}, origins["model_verbosity"].(map[string]any)["name"])
	require.Equal(t, "low", out["config"].(map[string]any)["model_verbosity"])
}

func TestReadResponseProjectLayers(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, ".git"), 0o755))
	sub := filepath.Join(root, "sub")
	for _, d := range []string{filepath.Join(root, ".codex"), filepath.Join(sub, ".codex")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, ".codex", ConfigFileName), []byte("model = \"root\"\nmodel_verbosity = \"high\"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(sub, ".codex", ConfigFileName), []byte("model = \"sub\"\n"), 0o600))

	// Untrusted: listed but disabled, not applied.
	dir := home(t, "model = \"user\"\n")
	c, err := Load(dir, nil)
	require.NoError(t, err)
	res, err := c.ReadResponse(true, sub)
	require.NoError(t, err)
	out := roundTrip(t, res)
	require.Equal(t, "user", out["config"].(map[string]any)["model"])
	layers := out["layers"].([]any)
	require.Len(t, layers, 4)
	first := layers[0].(map[string]any)
	require.Equal(t, map[string]any{"type": "project", "dotCodexFolder": filepath.Join(sub, ".codex")}, first["name"])
	// The hint names the project root (the reference's wording), not the cwd below it.
	require.Contains(t, first["disabledReason"], "add "+root+" as a trusted project in "+filepath.Join(dir, ConfigFileName))
	// An untrusted project's malformed file is not read: listed, disabled, empty.
	require.NoError(t, os.WriteFile(filepath.Join(sub, ".codex", ConfigFileName), []byte("foo = [\n"), 0o600))
	res, err = c.ReadResponse(true, sub)
	require.NoError(t, err)
	require.Contains(t, roundTrip(t, res)["layers"].([]any)[0], "disabledReason")
	require.NoError(t, os.WriteFile(filepath.Join(sub, ".codex", ConfigFileName), []byte("model = \"sub\"\n"), 0o600))

	// Trusted: applied, deeper directories win.
	require.NoError(t, AppendProjectTrust(dir, root))
	c, err = Load(dir, []string{"model_reasoning_effort=low"})
	require.NoError(t, err)
	res, err = c.ReadResponse(true, sub)
	require.NoError(t, err)
	out = roundTrip(t, res)
	cfg := out["config"].(map[string]any)
	require.Equal(t, "sub", cfg["model"])
	require.Equal(t, "high", cfg["model_verbosity"])
	origins := out["origins"].(map[string]any)
	require.Equal(t, map[string]any{"type": "project", "dotCodexFolder": filepath.Join(root, ".codex")}, origins["model_verbosity"].(map[string]any)["name"])
	require.Equal(t, "sessionFlags", out["layers"].([]any)[0].(map[string]any)["name"].(map[string]any)["type"])

	pc, err := c.ForCwd(sub)
	require.NoError(t, err)
	require.Equal(t, "sub", pc.Model)
	require.Equal(t, "user", c.Model, "receiver unchanged")

	// A malformed project file is an error naming it, in the reference's shape (the parser's own
	// message at the end): no position apart from the text.
	file := filepath.Join(sub, ".codex", ConfigFileName)
	require.NoError(t, os.WriteFile(file, []byte("model = \"x\"\nfoo = [\n"), 0o600))
	_, err = c.ReadResponse(false, sub)
	var ce *Error
	require.ErrorAs(t, err, &ce)
	require.True(t, ce.Syntax)
	require.Zero(t, ce.Line)
	require.Regexp(t, `^Error parsing project config file `+regexp.QuoteMeta(file)+`: TOML parse error at line 2, column 8\n  \|\n2 \| foo = \[\n  \|        \^\n.+\n$`, err.Error())
	// A value of the wrong type is located in the file.
	require.NoError(t, os.WriteFile(file, []byte("model = 3\n"), 0o600))
	_, err = c.ReadResponse(false, sub)
	require.EqualError(t, err, file+":1:9: invalid type: integer `3`, expected a string")
}

func TestReadResponseMatchesSchema(t *testing.T) {
	// A copy of the reference's schema/v2/ConfigReadResponse.json, so the test runs on any machine.
	f, err := os.Open("testdata/ConfigReadResponse.json")
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	comp := jsonschema.NewCompiler()
	require.NoError(t, comp.AddResource("ConfigReadResponse.json", doc))
	sch, err := comp.Compile("ConfigReadResponse.json")
	require.NoError(t, err)

	dir := home(t, `model = "m"
approval_policy = { granular = { sandbox_approval = true, rules = true, mcp_elicitations = false } }
sandbox_mode = "workspace-write"
model_reasoning_summary = "auto"
[sandbox_workspace_write]
network_access = true
[mcp_servers.s]
command = "c"
[features]
unified_exec = true
`)
	c, err := Load(dir, []string{"model_verbosity=low"})
	require.NoError(t, err)
	for _, layers := range []bool{false, true} {
		res, err := c.ReadResponse(layers, "")
		require.NoError(t, err)
		data, err := json.Marshal(res)
		require.NoError(t, err)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		require.NoError(t, err)
		require.NoError(t, sch.Validate(inst), string(data))
	}
}

func TestLayerVersionIsSortedCompactJSON(t *testing.T) {
	l := &layer{raw: tree{"b": int64(1), "a": tree{"y": "<&>", "x": []any{true}}}}
	sum := sha256.Sum256([]byte(`{"a":{"x":[true],"y":"<&>"},"b":1}`))
	require.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), l.version())
}

func TestFeatureDefaults(t *testing.T) {
	c := load(t, "")
	require.True(t, c.FeatureEnabled("unified_exec"), "unified exec is on unless turned off")
	require.False(t, c.FeatureEnabled("no_such_feature"))
	res, err := c.ReadResponse(false, "")
	require.NoError(t, err)
	// config/read reports the reference's defaults, not the features appserver consults
	want := map[string]any{
		"api_key_cyber_access_programs": true, "api_key_model_discovery": true, "auth_elicitation": true,
		"background_paginated_rollout_migration": false, "codex_apps_mcp_2026_07_28": false,
		"daybreak_program_propagation": false, "mcp_2026_07_28": false, "mcp_connection_sharing": false,
		"mcp_lazy_stdio_startup": false, "memories": false, "mentions_v2": true, "remote_control": false,
		"remote_plugin": true, "tool_suggest": true, "windows_sandbox_service": false,
	}
	require.Equal(t, want, res.Config["features"])

	off := load(t, "[features]\nunified_exec = false\nother = true\nmemories = true\n")
	require.False(t, off.FeatureEnabled("unified_exec"))
	res, err = off.ReadResponse(false, "")
	require.NoError(t, err)
	want["unified_exec"], want["other"], want["memories"], want["network_proxy"] = false, true, true, nil
	require.Equal(t, want, res.Config["features"], "a [features] table adds its entries and a null network_proxy")
}

// config/read reports our own approval_timeout_ms only when it is set (the reference has no such key).
func TestReadReportsOwnKeyOnlyWhenSet(t *testing.T) {
	res, err := load(t, "").ReadResponse(false, "")
	require.NoError(t, err)
	require.NotContains(t, res.Config, "approval_timeout_ms")
	res, err = load(t, "approval_timeout_ms = 250\n").ReadResponse(false, "")
	require.NoError(t, err)
	require.EqualValues(t, 250, res.Config["approval_timeout_ms"])
}

// TestForCwdWithoutProjectSharesTheConfig: a cwd with no project layer gets the Config itself (every
// thread started outside a project used to hold its own recomposed copy); a project's layer, trusted or
// not, gets a new one, and the shared Config is left as it was.
func TestForCwdWithoutProjectSharesTheConfig(t *testing.T) {
	dir := home(t, "model = \"user\"\n")
	c, err := Load(dir, nil)
	require.NoError(t, err)
	plain := t.TempDir()
	got, err := c.ForCwd(plain)
	require.NoError(t, err)
	require.Same(t, c, got)

	proj := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(proj, ".git"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(proj, ".codex"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(proj, ".codex", ConfigFileName), []byte("model = \"proj\"\n"), 0o600))
	got, err = c.ForCwd(proj)
	require.NoError(t, err)
	require.NotSame(t, c, got)
	require.Equal(t, "user", got.Model, "untrusted: not applied")
	require.NoError(t, AppendProjectTrust(dir, proj))
	c, err = Load(dir, nil)
	require.NoError(t, err)
	got, err = c.ForCwd(proj)
	require.NoError(t, err)
	require.NotSame(t, c, got)
	require.Equal(t, "proj", got.Model)
	require.Equal(t, "user", c.Model)
	back, err := got.ForCwd(plain)
	require.NoError(t, err)
	require.NotSame(t, got, back, "a Config with project layers recomposes without them")
	require.Equal(t, "user", back.Model)
}
