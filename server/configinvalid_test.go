package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
)

// A config.toml that does not load does not stop the server (as the reference): initialize is answered,
// a configWarning follows the answer (before remoteControl/status/changed), config/read and thread/start
// fail with the load error, and once the file is fixed both use it.
func TestInvalidConfigAtStart(t *testing.T) {
	cases := []struct {
		name, file string
		details    string // after "<path>:"
		rng        string
		readErr    string // config/read's message
	}{
		{"syntax", "model = \"m\"\nfoo = [\n", "2:8: ", `{"start":{"line":2,"column":8},"end":{"line":2,"column":8}}`, "failed to read configuration layers: <path>:2:8: "},
		{"wrong type", "model = 5\n", "1:9: invalid type: integer `5`, expected a string", `{"start":{"line":1,"column":9},"end":{"line":1,"column":9}}`,
			"invalid configuration: invalid type: integer `5`, expected a string\nin `model`\n"},
		{"unknown variant", "sandbox_mode = \"bogus\"\n", "1:16: unknown variant `bogus`, expected one of ", `{"start":{"line":1,"column":16},"end":{"line":1,"column":22}}`,
			"invalid configuration: unknown variant `bogus`, expected one of "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := apptest.Start(t, apptest.Options{Raw: true, Config: tc.file, InvalidConfig: true})
			path := filepath.Join(c.Home, "config.toml")
			c.Initialize(false)
			msgs := c.Messages()
			require.GreaterOrEqual(t, len(msgs), 3)
			require.NotNil(t, msgs[0].Result, "the initialize answer comes first")
			w := msgs[1]
			require.Equal(t, "configWarning", w.Method, string(w.Raw))
			var p map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(w.Params, &p))
			require.Len(t, p, 4, "summary, details, path, range: %s", w.Params)
			require.JSONEq(t, `"Invalid configuration; using defaults."`, string(p["summary"]))
			var details string
			require.NoError(t, json.Unmarshal(p["details"], &details))
			require.Contains(t, details, path+":"+tc.details)
			require.JSONEq(t, string(mustJSON(t, path)), string(p["path"]))
			require.JSONEq(t, tc.rng, string(p["range"]))
			require.Equal(t, "remoteControl/status/changed", msgs[2].Method)

			m := c.Request("config/read", map[string]any{})
			require.NotNil(t, m.Error, string(m.Raw))
			require.Equal(t, -32603, m.Error.Code)
			want := tc.readErr
			if i := len("failed to read configuration layers: <path>"); len(want) >= i && want[:i] == "failed to read configuration layers: <path>" {
				want = "failed to read configuration layers: " + path + want[i:]
			}
			require.Contains(t, m.Error.Message, want)
			m = c.Request("thread/start", map[string]any{})
			requireError(t, m, -32600, "failed to load configuration: "+details)

			require.NoError(t, os.WriteFile(path, []byte("model = \"fixed-model\"\n"), 0o600))
			var read struct {
				Config map[string]any `json:"config"`
			}
			c.Result("config/read", map[string]any{}, &read)
			require.Equal(t, "fixed-model", read.Config["model"])
			var st struct {
				Model string `json:"model"`
			}
			c.Result("thread/start", map[string]any{}, &st)
			require.Equal(t, "fixed-model", st.Model)
		})
	}
}

// A valid configuration gives no configWarning.
func TestValidConfigNoWarning(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	for _, m := range c.Messages() {
		if m.Method == "configWarning" {
			require.NotContains(t, string(m.Params), "Invalid configuration")
		}
	}
}

// Unknown config.toml keys are reported as the reference does: a configWarning (details null, no path
// or range) after the initialize answer, and a warning on each new thread after thread/started.
func TestUnknownConfigKeysWarned(t *testing.T) {
	c := apptest.Start(t, apptest.Options{Config: "foo_unknown = 1\nbar = 2\n[features]\nxyz = true\n", WarnUnknownKeys: true})
	path := filepath.Join(c.Home, "config.toml")
	want := "Codex is ignoring 3 unrecognized configuration settings. Check for typos or deprecated settings.\n" +
		"  user (" + path + "): `bar` is ignored.\n  user (" + path + "): `features.xyz` is ignored.\n  user (" + path + "): `foo_unknown` is ignored."
	c.Initialize(false)
	msgs := c.Messages()
	require.NotNil(t, msgs[0].Result)
	require.Equal(t, "configWarning", msgs[1].Method)
	require.JSONEq(t, `{"summary":`+string(mustJSON(t, want))+`,"details":null}`, string(msgs[1].Params))
	require.Equal(t, "remoteControl/status/changed", msgs[2].Method)

	id := c.StartThread(nil)
	w := c.WaitNotification("warning", nil)
	require.JSONEq(t, `{"threadId":`+string(mustJSON(t, id))+`,"message":`+string(mustJSON(t, want))+`}`, string(w.Params))
}

// A permissions profile without filesystem entries is warned about as the reference (0.169.0) does: a
// configWarning after the initialize answer, and a warning on each new thread after thread/started.
func TestEmptyPermissionProfileWarned(t *testing.T) {
	c := apptest.Start(t, apptest.Options{Config: "default_permissions = \"p\"\n[permissions.p]\n"})
	want := "Permissions profile `p` does not define any recognized filesystem entries for this version of Codex. " +
		"Filesystem access will remain restricted. Upgrade Codex if this profile expects filesystem permissions."
	c.Initialize(false)
	msgs := c.Messages()
	require.NotNil(t, msgs[0].Result)
	require.Equal(t, "configWarning", msgs[1].Method, string(msgs[1].Raw))
	require.JSONEq(t, `{"summary":`+string(mustJSON(t, want))+`,"details":null}`, string(msgs[1].Params))
	require.Equal(t, "remoteControl/status/changed", msgs[2].Method)

	id := c.StartThread(nil)
	w := c.WaitNotification("warning", nil)
	require.JSONEq(t, `{"threadId":`+string(mustJSON(t, id))+`,"message":`+string(mustJSON(t, want))+`}`, string(w.Params))
}

// A trusted project's .codex/config.toml that does not load fails config/read as the reference.
func TestInvalidProjectConfigRead(t *testing.T) {
	base := t.TempDir()
	home, work := filepath.Join(base, "codex_home"), filepath.Join(base, "work")
	require.NoError(t, os.MkdirAll(filepath.Join(work, ".codex"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(work, ".codex", "config.toml"), []byte("model = 5\n"), 0o600))
	c := apptest.Start(t, apptest.Options{Home: home, Config: "[projects." + string(mustJSON(t, work)) + "]\ntrust_level = \"trusted\"\n"})
	c.Initialize(false)
	requireError(t, c.Request("config/read", map[string]any{"cwd": work}), -32603, "invalid configuration: invalid type: integer `5`, expected a string\nin `model`\n")
}

// thread/start loads the trusted project's .codex/config.toml for its cwd, as the reference: its values
// apply, and one that does not load fails thread/start with -32600 (a wrong value located in the file; a
// syntax error in the reference's "Error parsing project config file" shape). An untrusted project's
// file is not read for the thread, malformed or not.
func TestThreadStartProjectConfig(t *testing.T) {
	base := t.TempDir()
	home, work, other := filepath.Join(base, "codex_home"), filepath.Join(base, "work"), filepath.Join(base, "other")
	file := filepath.Join(work, ".codex", "config.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(other, ".codex"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, ".codex", "config.toml"), []byte("model = 3\nfoo = [\n"), 0o600))
	c := apptest.Start(t, apptest.Options{Home: home, Config: "[projects." + string(mustJSON(t, work)) + "]\ntrust_level = \"trusted\"\n"})
	c.Initialize(false)
	var st struct {
		Model string `json:"model"`
	}

	require.NoError(t, os.WriteFile(file, []byte("model = \"proj-model\"\n"), 0o600))
	c.Result("thread/start", map[string]any{"cwd": work}, &st)
	require.Equal(t, "proj-model", st.Model, "the trusted project's value applies")
	c.Result("thread/start", map[string]any{"cwd": other}, &st)
	require.Equal(t, "mock-model", st.Model, "an untrusted project's (malformed) file is not read")

	require.NoError(t, os.WriteFile(file, []byte("model = 3\n"), 0o600))
	requireError(t, c.Request("thread/start", map[string]any{"cwd": work}), -32600,
		"failed to load configuration: "+file+":1:9: invalid type: integer `3`, expected a string")

	require.NoError(t, os.WriteFile(file, []byte("model = \"x\"\nfoo = [\n"), 0o600))
	requireErrorMatch(t, c.Request("thread/start", map[string]any{"cwd": work}), -32600,
		`^failed to load configuration: Error parsing project config file `+regexp.QuoteMeta(file)+
			`: TOML parse error at line 2, column 8\n  \|\n2 \| foo = \[\n  \|        \^\n.+\n$`)
	requireErrorMatch(t, c.Request("config/read", map[string]any{"cwd": work}), -32603,
		`^failed to read configuration layers: Error parsing project config file `+regexp.QuoteMeta(file)+`: TOML parse error at line 2, column 8\n`)
}

// A wrong value in thread/start's own config override fails with -32600 naming the key, as the reference.
func TestThreadStartConfigOverrideError(t *testing.T) {
	c := apptest.Start(t, apptest.Options{Config: "[profiles.p1]\nmodel = \"from-p1\"\n"})
	c.Initialize(false)
	requireError(t, c.Request("thread/start", map[string]any{"config": map[string]any{"model": 3}}), -32600,
		"failed to load configuration: invalid type: integer `3`, expected a string\nin `model`\n")
	requireError(t, c.Request("thread/start", map[string]any{"config": map[string]any{"profile": "p1"}}), -32600,
		"failed to load configuration: "+legacyProfileMsg)
}

const legacyProfileMsg = "legacy `profile = \"p1\"` config is no longer supported; use `--profile p1` with `p1.config.toml` instead"

// The legacy top-level `profile` key makes the configuration invalid, as in the reference: the start-up
// warning carries the refusal (no path or range), config/read fails with it as a feature-precedence
// error, and thread/start as a configuration that does not load.
func TestLegacyProfileInvalid(t *testing.T) {
	c := apptest.Start(t, apptest.Options{Config: "profile = \"p1\"\n[profiles.p1]\nmodel = \"from-p1\"\n", InvalidConfig: true})
	c.Initialize(false)
	msgs := c.Messages()
	require.GreaterOrEqual(t, len(msgs), 2)
	require.Equal(t, "configWarning", msgs[1].Method, string(msgs[1].Raw))
	require.JSONEq(t, `{"summary":"Invalid configuration; using defaults.","details":`+string(mustJSON(t, legacyProfileMsg))+`}`, string(msgs[1].Params))
	requireError(t, c.Request("config/read", map[string]any{}), -32603, "failed to resolve feature override precedence: "+legacyProfileMsg)
	requireError(t, c.Request("thread/start", map[string]any{}), -32600, "failed to load configuration: "+legacyProfileMsg)
}

// Values the reference refuses on their meaning make the configuration invalid as it reports them
// (codex-cli 0.169.0): a start-up warning with the refusal and no path or range, config/read failing with
// it as a feature-precedence error, thread/start as a configuration that does not load; and a
// thread/start `config` that sets one fails the same way.
func TestConfigRefusedOnMeaning(t *testing.T) {
	cases := []struct{ file, msg string }{
		{"model_provider = \"x\"\n", "Model provider `x` not found"},
		{"default_permissions = \"foo\"\n", "default_permissions requires a `[permissions]` table"},
		{"experimental_thread_store_endpoint = \"http://x\"\n", "`experimental_thread_store_endpoint` is no longer supported; remove it from config.toml"},
		{"model_instructions_file = \"/nonexistent/file\"\n", "failed to read model instructions file /nonexistent/file: No such file or directory (os error 2)"},
		{"experimental_compact_prompt_file = \"/nonexistent/file\"\n", "failed to read experimental compact prompt file /nonexistent/file: No such file or directory (os error 2)"},
		{"model_catalog_json = \"/nonexistent/file\"\n", "No such file or directory (os error 2)"},
	}
	for _, tc := range cases {
		t.Run(tc.msg, func(t *testing.T) {
			c := apptest.Start(t, apptest.Options{Raw: true, Config: "model = \"m\"\n" + tc.file, InvalidConfig: true})
			c.Initialize(false)
			msgs := c.Messages()
			require.GreaterOrEqual(t, len(msgs), 2)
			require.Equal(t, "configWarning", msgs[1].Method, string(msgs[1].Raw))
			require.JSONEq(t, `{"summary":"Invalid configuration; using defaults.","details":`+string(mustJSON(t, tc.msg))+`}`, string(msgs[1].Params))
			requireError(t, c.Request("config/read", map[string]any{}), -32603, "failed to resolve feature override precedence: "+tc.msg)
			requireError(t, c.Request("thread/start", map[string]any{}), -32600, "failed to load configuration: "+tc.msg)
		})
	}
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	for _, o := range []struct {
		config map[string]any
		msg    string
	}{
		{map[string]any{"model_provider": "x"}, "Model provider `x` not found"},
		{map[string]any{"model_catalog_json": "/nonexistent/file"}, "No such file or directory (os error 2)"},
		{map[string]any{"experimental_thread_store": map[string]any{"a": 1}}, "missing field `type`\nin `experimental_thread_store`\n"},
		{map[string]any{"mcp_enterprise_managed_auth.a": 1}, "unknown field `a`, expected `idp`\nin `mcp_enterprise_managed_auth`\n"},
	} {
		requireError(t, c.Request("thread/start", map[string]any{"config": o.config}), -32600, "failed to load configuration: "+o.msg)
	}
	requireError(t, c.Request("thread/start", map[string]any{"modelProvider": "x"}), -32600, "failed to load configuration: Model provider `x` not found")
}

// thread/resume and thread/fork of a stored thread fail as the reference when the configuration does not
// load (config.toml, or the trusted project's config for the thread's cwd): the full-history deprecation
// notice, then -32600 "failed to load configuration: …". Resuming elsewhere (cwd) avoids a bad project.
func TestResumeForkInvalidConfig(t *testing.T) {
	for _, mode := range []string{"user", "project"} {
		t.Run(mode, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "codex_home")
			work := filepath.Join(filepath.Dir(home), "work")
			file := filepath.Join(work, ".codex", "config.toml")
			require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
			require.NoError(t, os.WriteFile(file, []byte("model_verbosity = \"low\"\n"), 0o600))
			trust := "[projects." + string(mustJSON(t, work)) + "]\ntrust_level = \"trusted\"\n"
			c := apptest.Start(t, apptest.Options{Home: home, Config: trust})
			c.Initialize(false)
			tid := c.StartThread(nil)
			c.StartTurn(tid, "hi")
			c.WaitTurnCompleted()
			c.Close()

			opts := apptest.Options{Model: c.Model, Home: home, Config: trust}
			var details string
			switch mode {
			case "user":
				opts.Config, opts.InvalidConfig = "model_verbosity = 3\n"+trust, true
				details = filepath.Join(home, "config.toml") + ":"
			case "project":
				require.NoError(t, os.WriteFile(file, []byte("model = 3\n"), 0o600))
				details = file + ":1:9: invalid type: integer `3`, expected a string"
			}
			c2 := apptest.Start(t, opts)
			c2.Initialize(false)
			for _, method := range []string{"thread/resume", "thread/fork"} {
				mark := c2.Mark()
				m := c2.Request(method, map[string]any{"threadId": tid})
				require.NotNil(t, m.Error, string(m.Raw))
				require.Equal(t, -32600, m.Error.Code)
				require.Contains(t, m.Error.Message, "failed to load configuration: "+details)
				var methods []string
				for _, n := range c2.Since(mark) {
					if n.IsNotification() {
						methods = append(methods, n.Method)
					}
				}
				require.Equal(t, []string{"deprecationNotice"}, methods, method)
			}
			if mode == "project" {
				var st struct {
					Cwd string `json:"cwd"`
				}
				c2.Result("thread/resume", map[string]any{"threadId": tid, "cwd": home, "excludeTurns": true}, &st)
				require.Equal(t, home, st.Cwd)
			}
		})
	}
}
