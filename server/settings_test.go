package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

func startSettings(t *testing.T, cfg string) *apptest.Client {
	c := apptest.Start(t, apptest.Options{Config: cfg})
	c.Initialize(true)
	return c
}

func requireRPCError(t *testing.T, m apptest.Message, code int, msg string) {
	t.Helper()
	require.NotNil(t, m.Error, "expected an error, got %s", m.Raw)
	require.Equal(t, code, m.Error.Code)
	require.Equal(t, msg, m.Error.Message)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

func TestStartupReads(t *testing.T) {
	c := startSettings(t, "")
	var modes struct {
		Data []map[string]any `json:"data"`
	}
	c.Result("collaborationMode/list", map[string]any{}, &modes)
	require.Len(t, modes.Data, 2)
	require.Equal(t, "plan", modes.Data[0]["mode"])
	require.Equal(t, "medium", modes.Data[0]["reasoning_effort"])
	require.Nil(t, modes.Data[1]["reasoning_effort"])

	var gov map[string]bool
	c.Result("account/bedrock/checkGovCloudRequirements", map[string]any{}, &gov)
	require.Equal(t, map[string]bool{"isGovCloud": false, "shouldWarn": false}, gov)

	var profiles struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		NextCursor *string `json:"nextCursor"`
	}
	c.Result("permissionProfile/list", map[string]any{}, &profiles)
	require.Len(t, profiles.Data, 3)
	require.Equal(t, ":read-only", profiles.Data[0].ID)
	require.Nil(t, profiles.NextCursor)

	var caps map[string]bool
	c.Result("modelProvider/capabilities/read", map[string]any{}, &caps)
	require.Equal(t, map[string]bool{"imageGeneration": true, "webSearch": true}, caps)

	var installed map[string][]any
	c.Result("plugin/installed", map[string]any{"cwds": []string{c.Work}}, &installed)
	require.Empty(t, installed["marketplaces"])
}

func TestExperimentalFeatures(t *testing.T) {
	c := startSettings(t, "[features]\nshell_tool = false\nmemories = true\n")
	type feature struct {
		Name           string `json:"name"`
		Enabled        bool   `json:"enabled"`
		DefaultEnabled bool   `json:"defaultEnabled"`
	}
	var page struct {
		Data       []feature `json:"data"`
		NextCursor *string   `json:"nextCursor"`
	}
	c.Result("experimentalFeature/list", map[string]any{"limit": 2}, &page)
	require.Len(t, page.Data, 2)
	require.Equal(t, "2", *page.NextCursor)

	requireRPCError(t, c.Request("experimentalFeature/list", map[string]any{"cursor": "zz"}), -32600, "invalid cursor: zz")

	var set struct {
		Enablement map[string]bool `json:"enablement"`
	}
	c.Result("experimentalFeature/enablement/set", map[string]any{"enablement": map[string]bool{"remote_control": true, "memories": false, "unknown_x": true, "unified_exec": false}}, &set)
	require.Equal(t, map[string]bool{"remote_control": true, "memories": false}, set.Enablement, "only runtime-toggleable features are accepted")

	c.Result("experimentalFeature/list", map[string]any{}, &page)
	byName := map[string]feature{}
	for _, f := range page.Data {
		byName[f.Name] = f
	}
	require.False(t, byName["shell_tool"].Enabled, "config file turns it off")
	require.True(t, byName["shell_tool"].DefaultEnabled)
	require.True(t, byName["memories"].Enabled, "config file outranks the runtime setting")
	require.True(t, byName["remote_control"].Enabled, "runtime setting outranks the default")
}

type skillsResp struct {
	Data []struct {
		Cwd    string `json:"cwd"`
		Skills []struct {
			Name             string          `json:"name"`
			Scope            string          `json:"scope"`
			Enabled          bool            `json:"enabled"`
			Path             string          `json:"path"`
			ShortDescription *string         `json:"shortDescription"`
			Interface        json.RawMessage `json:"interface"`
		} `json:"skills"`
		Errors []struct {
			Path    string `json:"path"`
			Message string `json:"message"`
		} `json:"errors"`
	} `json:"data"`
}

func TestSkills(t *testing.T) {
	c := startSettings(t, "")
	repo := filepath.Join(c.Work, "repo")
	sub := filepath.Join(repo, "sub")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	writeFile(t, filepath.Join(c.Home, "skills", "foo", "SKILL.md"), "---\nname: foo\ndescription: Foo user skill\n---\nbody\n")
	writeFile(t, filepath.Join(c.Home, "skills", "foo", "agents", "openai.yaml"), "interface:\n  display_name: Foo\n  default_prompt: use foo\n")
	writeFile(t, filepath.Join(sub, ".codex", "skills", "bar", "SKILL.md"), "---\nname: bar\ndescription: Bar\nmetadata:\n  short-description: short bar\n---\n")
	writeFile(t, filepath.Join(repo, ".agents", "skills", "baz", "SKILL.md"), "---\nname: baz\ndescription: \"Baz: quoted\"\n---\n")
	writeFile(t, filepath.Join(repo, ".codex", "skills", "ignored", "SKILL.md"), "---\nname: ignored\ndescription: only the cwd's .codex counts\n---\n")
	writeFile(t, filepath.Join(sub, ".agents", "skills", "broken", "SKILL.md"), "no front matter\n")

	var res skillsResp
	c.Result("skills/list", map[string]any{"cwds": []string{sub, c.Work}}, &res)
	require.Len(t, res.Data, 2)
	got := res.Data[0]
	require.Equal(t, sub, got.Cwd)
	var names []string
	for _, s := range got.Skills {
		names = append(names, s.Scope+":"+s.Name)
	}
	require.Equal(t, []string{"repo:bar", "repo:baz", "user:foo"}, names)
	require.Equal(t, "short bar", *got.Skills[0].ShortDescription)
	require.Nil(t, got.Skills[0].Interface, "no openai.yaml: no interface key")
	require.JSONEq(t, `{"displayName":"Foo","shortDescription":null,"iconSmall":null,"iconLarge":null,"iconSmallUrl":null,"iconLargeUrl":null,"brandColor":null,"defaultPrompt":"use foo"}`, string(got.Skills[2].Interface))
	require.Len(t, got.Errors, 1)
	require.Equal(t, "missing YAML frontmatter delimited by ---", got.Errors[0].Message)
	require.Len(t, res.Data[1].Skills, 1, "outside the repo only user skills")

	// Disable by name and by path; the rules land in config.toml and the next listing reflects them.
	var w map[string]bool
	c.Result("skills/config/write", map[string]any{"name": "baz", "enabled": false}, &w)
	require.Equal(t, map[string]bool{"effectiveEnabled": false}, w)
	c.Result("skills/config/write", map[string]any{"path": got.Skills[0].Path, "enabled": false}, nil)
	c.Result("skills/config/write", map[string]any{"name": "baz", "enabled": true}, nil)
	c.Result("skills/list", map[string]any{"cwds": []string{sub}}, &res)
	enabled := map[string]bool{}
	for _, s := range res.Data[0].Skills {
		enabled[s.Name] = s.Enabled
	}
	require.Equal(t, map[string]bool{"bar": false, "baz": true, "foo": true}, enabled)
	text, err := os.ReadFile(filepath.Join(c.Home, "config.toml"))
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(text), "[[skills.config]]"), "the name rule was updated in place")

	requireRPCError(t, c.Request("skills/config/write", map[string]any{"enabled": false}), -32602, "skills/config/write requires exactly one of path or name")
	requireRPCError(t, c.Request("skills/config/write", map[string]any{"enabled": false, "name": "a", "path": "/x"}), -32602, "skills/config/write requires exactly one of path or name")

	// Extra roots are scanned; forceReload picks up new files.
	extra := filepath.Join(c.Work, "extra")
	writeFile(t, filepath.Join(extra, "ex", "SKILL.md"), "---\nname: ex\ndescription: extra\n---\n")
	c.Result("skills/extraRoots/set", map[string]any{"extraRoots": []string{extra}}, nil)
	writeFile(t, filepath.Join(c.Home, "skills", "late", "SKILL.md"), "---\nname: late\ndescription: added later\n---\n")
	c.Result("skills/list", map[string]any{"cwds": []string{c.Work}}, &res)
	names = nil
	for _, s := range res.Data[0].Skills {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"ex", "foo", "late"}, names)
	writeFile(t, filepath.Join(c.Home, "skills", "later", "SKILL.md"), "---\nname: later\ndescription: cached until forceReload\n---\n")
	c.Result("skills/list", map[string]any{"cwds": []string{c.Work}}, &res)
	require.Len(t, res.Data[0].Skills, 3, "cached")
	c.Result("skills/list", map[string]any{"cwds": []string{c.Work}, "forceReload": true}, &res)
	require.Len(t, res.Data[0].Skills, 4)
}

func TestHooksList(t *testing.T) {
	c := startSettings(t, "\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"echo hi\"\ntimeout = 10\nstatusMessage = \"checking\"\n")
	writeFile(t, filepath.Join(c.Home, "hooks.json"), `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"true"}]}],"SessionStart":[{"hooks":[{"type":"prompt","prompt":"p"}]}]}}`)
	var res struct {
		Data []struct {
			Cwd      string           `json:"cwd"`
			Hooks    []map[string]any `json:"hooks"`
			Warnings []string         `json:"warnings"`
			Errors   []any            `json:"errors"`
		} `json:"data"`
	}
	c.Result("hooks/list", map[string]any{"cwds": []string{c.Work}, "threadId": nil}, &res)
	require.Len(t, res.Data, 1)
	e := res.Data[0]
	require.Len(t, e.Hooks, 2)
	jsonPath := filepath.Join(c.Home, "hooks.json")
	tomlPath := filepath.Join(c.Home, "config.toml")
	require.Equal(t, jsonPath+":stop:0:0", e.Hooks[0]["key"])
	require.Equal(t, float64(600), e.Hooks[0]["timeoutSec"])
	require.Equal(t, tomlPath+":pre_tool_use:0:0", e.Hooks[1]["key"])
	require.Equal(t, "preToolUse", e.Hooks[1]["eventName"])
	require.Equal(t, "Bash", e.Hooks[1]["matcher"])
	require.Equal(t, float64(10), e.Hooks[1]["timeoutSec"])
	require.Equal(t, float64(1), e.Hooks[1]["displayOrder"])
	require.Equal(t, "untrusted", e.Hooks[1]["trustStatus"])
	require.Equal(t, []string{
		"loading hooks from both " + jsonPath + " and " + tomlPath + "; prefer a single representation for this layer",
		"skipping prompt hook in " + jsonPath + ": prompt hooks are not supported yet",
	}, e.Warnings)

	writeFile(t, jsonPath, `{"hooks": 5}`)
	c.Result("hooks/list", map[string]any{"cwds": []string{c.Work}}, &res)
	require.Len(t, res.Data[0].Errors, 1, "a malformed hooks.json is reported, not fatal")
}

type writeResp struct {
	Status   string `json:"status"`
	Version  string `json:"version"`
	FilePath string `json:"filePath"`
}

func TestConfigWrites(t *testing.T) {
	c := startSettings(t, "# keep this comment\n")
	cfgPath := filepath.Join(c.Home, "config.toml")
	before, err := os.ReadFile(cfgPath)
	require.NoError(t, err)

	var read struct {
		Config  map[string]any `json:"config"`
		Origins map[string]struct {
			Version string `json:"version"`
		} `json:"origins"`
	}
	c.Result("config/read", map[string]any{}, &read)
	v0 := read.Origins["model"].Version

	var w writeResp
	c.Result("config/value/write", map[string]any{"keyPath": "model", "value": "gpt-x", "mergeStrategy": "replace", "expectedVersion": v0}, &w)
	require.Equal(t, "ok", w.Status)
	require.Equal(t, cfgPath, w.FilePath)
	require.NotEqual(t, v0, w.Version)
	after, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	require.Equal(t, strings.Replace(string(before), `model = "mock-model"`, `model = "gpt-x"`, 1), string(after), "only the value changed")

	// The running server sees the write, with the version it returned.
	c.Result("config/read", map[string]any{}, &read)
	require.Equal(t, "gpt-x", read.Config["model"])
	require.Equal(t, w.Version, read.Origins["model"].Version)

	conflict := c.Request("config/value/write", map[string]any{"keyPath": "model", "value": "y", "mergeStrategy": "replace", "expectedVersion": v0})
	requireRPCError(t, conflict, -32600, "Configuration was modified since last read. Fetch latest version and retry.")
	require.JSONEq(t, `{"config_write_error_code":"configVersionConflict"}`, string(conflict.Error.Data))

	var b writeResp
	c.Result("config/batchWrite", map[string]any{"edits": []any{
		map[string]any{"keyPath": "tui", "value": map[string]any{"a": 1, "b": map[string]any{"c": "d"}}, "mergeStrategy": "replace"},
		map[string]any{"keyPath": "features.memories", "value": true, "mergeStrategy": "upsert"},
	}, "expectedVersion": w.Version, "reloadUserConfig": true}, &b)
	text, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(text), "# keep this comment\n") || strings.Contains(string(text), "# keep this comment\n"))
	require.Contains(t, string(text), "\n[tui]\na = 1\n\n[tui.b]\nc = \"d\"\n")
	require.Contains(t, string(text), "\n[features]\nmemories = true\n")

	bad := []struct {
		params map[string]any
		code   string
		msg    string
	}{
		{map[string]any{"keyPath": "", "value": 1, "mergeStrategy": "replace"}, "configValidationError", "keyPath must not be empty"},
		{map[string]any{"keyPath": "model.x", "value": 5, "mergeStrategy": "replace"}, "configValidationError", "cannot set value on non-table parent"},
		{map[string]any{"keyPath": "profile", "value": "p", "mergeStrategy": "replace"}, "configValidationError", "`profile` is a legacy config selector and can no longer be written; use `--profile <name>` with `<name>.config.toml` instead"},
		{map[string]any{"keyPath": "model", "value": nil, "mergeStrategy": "replace", "filePath": filepath.Join(c.Work, "other.toml")}, "configLayerReadonly", "Only writes to the user config are allowed"},
	}
	for _, tc := range bad {
		m := c.Request("config/value/write", tc.params)
		requireRPCError(t, m, -32600, tc.msg)
		require.JSONEq(t, `{"config_write_error_code":"`+tc.code+`"}`, string(m.Error.Data))
	}
	m := c.Request("config/value/write", map[string]any{"keyPath": "sandbox_mode", "value": "weird", "mergeStrategy": "replace"})
	require.NotNil(t, m.Error)
	require.True(t, strings.HasPrefix(m.Error.Message, "Invalid configuration: "), m.Error.Message)
	// the write path words it as serde then the key, with no file position (scenario config_rw)
	for _, tc := range []struct {
		key   string
		value any
		msg   string
	}{
		{"model", 5, "Invalid configuration: invalid type: integer `5`, expected a string\nin `model`\n"},
		{"approval_policy", "sometimes", "Invalid configuration: unknown variant `sometimes`, expected one of `untrusted`, `on-failure`, `on-request`, `granular`, `never`\nin `approval_policy`\n"},
	} {
		m := c.Request("config/value/write", map[string]any{"keyPath": tc.key, "value": tc.value, "mergeStrategy": "replace"})
		requireRPCError(t, m, -32600, tc.msg)
		require.JSONEq(t, `{"config_write_error_code":"configValidationError"}`, string(m.Error.Data))
	}
	unchanged, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	require.Equal(t, string(text), string(unchanged), "refused writes leave the file alone")

	// Deleting with null.
	c.Result("config/value/write", map[string]any{"keyPath": "tui", "value": nil, "mergeStrategy": "replace"}, nil)
	text, err = os.ReadFile(cfgPath)
	require.NoError(t, err)
	require.NotContains(t, string(text), "[tui")
}

func TestModelProviderConfigWrite(t *testing.T) {
	c := startSettings(t, "")
	var res struct {
		Provider map[string]any `json:"provider"`
	}
	c.Result("modelProvider/config/write", map[string]any{"settings": map[string]any{"type": "customGateway", "name": "My GW", "baseUrl": "http://localhost:1234/v1", "envKey": "MY_KEY"}}, &res)
	require.Equal(t, "my-gw", res.Provider["id"])
	require.Equal(t, "http://localhost:1234/v1", res.Provider["baseUrl"])
	c.Result("modelProvider/config/write", map[string]any{"settings": map[string]any{"type": "customGateway", "providerId": "my-gw", "name": "Renamed"}}, &res)
	require.Equal(t, "Renamed", res.Provider["name"])
	var list struct {
		Data []map[string]any `json:"data"`
	}
	c.Result("modelProvider/list", map[string]any{}, &list)
	ids := []any{}
	for _, p := range list.Data {
		ids = append(ids, p["id"])
	}
	require.Equal(t, []any{"mock", "my-gw", "openai"}, ids)
	text, err := os.ReadFile(filepath.Join(c.Home, "config.toml"))
	require.NoError(t, err)
	require.Contains(t, string(text), "[model_providers.my-gw]\nbase_url = \"http://localhost:1234/v1\"\nenv_key = \"MY_KEY\"\nname = \"Renamed\"\nwire_api = \"responses\"\n")

	m := c.Request("modelProvider/config/write", map[string]any{"settings": map[string]any{"type": "customGateway", "providerId": "nope", "name": "X"}})
	requireRPCError(t, m, -32600, "Unknown provider ID.")
	require.JSONEq(t, `{"config_write_error_code":"configPathNotFound"}`, string(m.Error.Data))
	requireRPCError(t, c.Request("modelProvider/config/write", map[string]any{"settings": map[string]any{"type": "customGateway"}}), -32600, "Enter a provider name.")
	requireRPCError(t, c.Request("modelProvider/config/write", map[string]any{"settings": map[string]any{"type": "customGateway", "name": "n"}}), -32600, "A base URL is required to create a custom provider.")
}

// TestAccountReadIgnoresEnvKey: as in the reference, OPENAI_API_KEY in the environment alone is no account.
func TestAccountReadIgnoresEnvKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-env")
	c := apptest.Start(t, apptest.Options{Raw: true, Config: "model = \"gpt-5\"\n"})
	c.Initialize(true)
	var acct map[string]any
	c.Result("account/read", map[string]any{}, &acct)
	require.Equal(t, true, acct["requiresOpenaiAuth"])
	require.Nil(t, acct["account"])
}

func TestAccountAPIKeyLogin(t *testing.T) {
	c := apptest.Start(t, apptest.Options{Raw: true, Config: "model = \"gpt-5\"\n"})
	t.Setenv("OPENAI_API_KEY", "")
	c.Initialize(true)
	var acct map[string]any
	c.Result("account/read", map[string]any{}, &acct)
	require.Equal(t, true, acct["requiresOpenaiAuth"])
	require.Nil(t, acct["account"])

	requireRPCError(t, c.Request("account/rateLimits/read", nil), -32600, "codex account authentication required to read rate limits")

	mark := c.Mark()
	var login map[string]any
	c.Result("account/login/start", map[string]any{"type": "apiKey", "apiKey": "sk-test-123"}, &login)
	require.Equal(t, map[string]any{"type": "apiKey"}, login)
	done := c.WaitNotification("account/login/completed", nil)
	require.JSONEq(t, `{"loginId":null,"success":true,"error":null,"onboardingEntrypoint":null}`, string(done.Params))
	upd := c.WaitNotification("account/updated", nil)
	require.JSONEq(t, `{"authMode":"apikey","planType":null}`, string(upd.Params))
	require.Equal(t, []string{"account/login/completed", "account/updated"}, apptest.NotificationMethods(c.Since(mark)))

	st, err := os.Stat(filepath.Join(c.Home, "auth.json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	data, err := os.ReadFile(filepath.Join(c.Home, "auth.json"))
	require.NoError(t, err)
	require.JSONEq(t, `{"auth_mode":"apikey","OPENAI_API_KEY":"sk-test-123"}`, string(data))

	c.Result("account/read", map[string]any{}, &acct)
	require.Equal(t, map[string]any{"type": "apiKey"}, acct["account"])
	requireRPCError(t, c.Request("account/rateLimits/read", nil), -32600, "chatgpt authentication required to read rate limits")
	requireRPCError(t, c.Request("account/usage/read", map[string]any{}), -32600, "chatgpt authentication required to read token usage")

	requireRPCError(t, c.Request("account/login/cancel", map[string]any{"loginId": "x"}), -32600, "invalid login id: x")
	var cancel map[string]string
	c.Result("account/login/cancel", map[string]any{"loginId": "00000000-0000-0000-0000-000000000000"}, &cancel)
	require.Equal(t, "notFound", cancel["status"])

	c.Result("account/logout", nil, nil)
	upd = c.WaitNotification("account/updated", nil)
	require.JSONEq(t, `{"authMode":null,"planType":null}`, string(upd.Params))
	_, err = os.Stat(filepath.Join(c.Home, "auth.json"))
	require.True(t, os.IsNotExist(err))
	c.Result("account/read", map[string]any{}, &acct)
	require.Nil(t, acct["account"])
}

func TestAccountReadsForNonOpenAIProvider(t *testing.T) {
	c := startSettings(t, "")
	var acct map[string]any
	c.Result("account/read", map[string]any{}, &acct)
	require.Equal(t, false, acct["requiresOpenaiAuth"])
	var sessions map[string]any
	c.Result("accountSession/list", map[string]any{}, &sessions)
	require.JSONEq(t, `{"activeSessionId":null,"sessions":[]}`, toJSON(t, sessions))
	var gw map[string]any
	c.Result("account/gatewayOAuth/read", map[string]any{}, &gw)
	require.Equal(t, "mock", gw["providerId"])
	requireRPCError(t, c.Request("account/gatewayOAuth/login", map[string]any{}), -32600, "The selected provider does not use gateway OAuth")
	requireRPCError(t, c.Request("accountSession/switch", map[string]any{"accountId": "a", "sessionId": "s"}), -32600, "Workspace switching requires a managed ChatGPT login")
}

func TestPluginsOffline(t *testing.T) {
	c := startSettings(t, "")
	var list map[string]any
	c.Result("plugin/list", map[string]any{}, &list)
	require.JSONEq(t, `{"marketplaces":[],"marketplaceLoadErrors":[],"featuredPluginIds":[]}`, toJSON(t, list))
	var apps map[string]any
	c.Result("app/read", map[string]any{"appIds": []string{"a", "b"}}, &apps)
	require.JSONEq(t, `{"apps":[],"missingAppIds":["a","b"]}`, toJSON(t, apps))
	requireRPCError(t, c.Request("plugin/read", map[string]any{"pluginName": "p"}), -32600, "plugin/read requires exactly one of marketplacePath or remoteMarketplaceName")
	requireRPCError(t, c.Request("plugin/read", map[string]any{"pluginName": "p", "remoteMarketplaceName": "r"}), -32600, "read remote plugin details: chatgpt authentication required for remote plugin catalog")
	missing := filepath.Join(c.Work, "nope.json")
	requireRPCError(t, c.Request("plugin/install", map[string]any{"pluginName": "p", "marketplacePath": missing}), -32600, "marketplace file `"+missing+"` does not exist")
	requireRPCError(t, c.Request("marketplace/add", map[string]any{"source": "x"}), -32600, "invalid marketplace source format; expected owner/repo, a git URL, or a local marketplace path")
	requireRPCError(t, c.Request("marketplace/add", map[string]any{"source": c.Work}), -32600, "invalid marketplace file `"+c.Work+"`: marketplace root does not contain a supported manifest")
	requireRPCError(t, c.Request("marketplace/remove", map[string]any{"marketplaceName": "x"}), -32600, "marketplace `x` is not configured or installed")
	requireRPCError(t, c.Request("plugin/share/list", map[string]any{}), -32600, "list remote plugin shares: chatgpt authentication required for remote plugin catalog")
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// Enabled skills are offered to the model in a new thread's context; disabled ones are not.
func TestSkillsOfferedToModel(t *testing.T) {
	c := startSettings(t, "\n[[skills.config]]\nname = \"off\"\nenabled = false\n")
	writeFile(t, filepath.Join(c.Home, "skills", "on", "SKILL.md"), "---\nname: on\ndescription: turns things on\n---\n")
	writeFile(t, filepath.Join(c.Home, "skills", "off", "SKILL.md"), "---\nname: off\ndescription: disabled skill\n---\n")
	c.Model.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	id := c.StartThread(nil)
	c.StartTurn(id, "hi")
	c.WaitTurnCompleted()
	reqs := c.Model.ResponseRequests()
	require.NotEmpty(t, reqs)
	body := string(reqs[0].Raw)
	require.Contains(t, body, "- on: turns things on (file: "+filepath.Join(c.Home, "skills", "on", "SKILL.md"))
	require.NotContains(t, body, "disabled skill")
}

func TestBedrockAndVerification(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".aws", "config"), "[default]\nregion = us-west-2\n\n[profile dev]\nregion = eu-west-1\n")
	writeFile(t, filepath.Join(home, ".aws", "credentials"), "[default]\naws_access_key_id = a\naws_secret_access_key = b\n[other]\naws_access_key_id = c\n")
	t.Setenv("HOME", home)
	t.Setenv("AWS_CONFIG_FILE", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	t.Setenv("AWS_REGION", "us-east-2")
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "")
	t.Setenv("PATH", t.TempDir()) // no gcloud
	c := startSettings(t, "")
	var disc map[string]any
	c.Result("account/bedrock/discover", map[string]any{}, &disc)
	require.JSONEq(t, `{"profiles":[{"name":"default","region":"us-west-2"},{"name":"dev","region":"eu-west-1"},{"name":"other","region":null}],
		"environmentCredentials":[{"type":"accessKeys","region":"us-east-2"}]}`, toJSON(t, disc))

	requireRPCError(t, c.Request("account/bedrock/setup", map[string]any{"type": "profile", "profile": "dev", "region": "x"}), -32600, "Amazon Bedrock does not support region `x`")
	requireRPCError(t, c.Request("account/bedrock/setup", map[string]any{"type": "profile", "profile": "dev", "region": "us-east-1"}), -32600,
		"failed to load credentials for AWS profile `dev`: failed to load AWS credentials: the credential provider was not enabled")
	requireRPCError(t, c.Request("account/bedrock/setup", map[string]any{"type": "profile", "profile": "other", "region": "us-east-1"}), -32600,
		"failed to load credentials for AWS profile `other`: failed to load AWS credentials: the credentials provider was not properly configured")
	c.Result("account/bedrock/setup", map[string]any{"type": "environment", "region": "us-east-1"}, nil)
	text, err := os.ReadFile(filepath.Join(c.Home, "config.toml"))
	require.NoError(t, err)
	require.Contains(t, string(text), "\n[model_providers.amazon-bedrock.aws]\nregion = \"us-east-1\"\n")

	m := c.Request("account/gcp/setup", map[string]any{"projectId": "p"})
	requireRPCError(t, m, -32600, "The Google Cloud auth command could not obtain an access token.")
	require.JSONEq(t, `{"reason":"authCommandFailed"}`, string(m.Error.Data))

	var st map[string]any
	c.Result("userVerification/status", map[string]any{}, &st)
	require.JSONEq(t, `{"credentialId":null,"unavailableReason":"providerUnavailable","unavailableMessage":"User verification is not available in this build or account."}`, toJSON(t, st))
	requireRPCError(t, c.Request("userVerification/enroll", map[string]any{}), -32603, "User verification is not available in this build or account.")
	requireRPCError(t, c.Request("userVerification/verify", map[string]any{"challenge": "x", "description": "x", "title": "x"}), -32602, "Invalid verification challenge or display text.")
	c.Result("userVerification/cancel", map[string]any{"requestId": "x"}, nil)
}

// account/rateLimits/read reports the rate-limit headers of the last model response.
func TestRateLimitsFromResponseHeaders(t *testing.T) {
	c := startSettings(t, "")
	requireRPCError(t, c.Request("account/rateLimits/read", nil), -32600, "codex account authentication required to read rate limits")
	c.Model.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}, Headers: map[string]string{
		"x-codex-primary-used-percent": "25", "x-codex-primary-window-minutes": "300", "x-codex-primary-reset-at": "1800000000",
		"x-codex-secondary-used-percent": "5", "x-codex-secondary-window-minutes": "10080",
	}})
	id := c.StartThread(nil)
	c.StartTurn(id, "hi")
	c.WaitTurnCompleted()
	var res struct {
		RateLimits          map[string]any            `json:"rateLimits"`
		RateLimitsByLimitID map[string]map[string]any `json:"rateLimitsByLimitId"`
	}
	c.Result("account/rateLimits/read", nil, &res)
	require.JSONEq(t, `{"usedPercent":25,"windowDurationMins":300,"resetsAt":1800000000}`, toJSON(t, res.RateLimits["primary"]))
	require.JSONEq(t, `{"usedPercent":5,"windowDurationMins":10080,"resetsAt":null}`, toJSON(t, res.RateLimits["secondary"]))
	require.Contains(t, res.RateLimitsByLimitID, "codex")
}

func TestLocalPluginMarketplace(t *testing.T) {
	c := startSettings(t, "")
	repo := filepath.Join(c.Work, "mrepo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	market := filepath.Join(repo, ".agents", "plugins", "marketplace.json")
	writeFile(t, market, `{"name":"demo-market","interface":{"displayName":"Demo Market"},"plugins":[
		{"name":"note","source":{"source":"local","path":"./plugins/note"},"policy":{"installation":"AVAILABLE","authentication":"ON_INSTALL"},"category":"Productivity"},
		{"name":"escape","source":{"source":"local","path":"../outside"}}]}`)
	writeFile(t, filepath.Join(repo, "plugins", "note", ".codex-plugin", "plugin.json"), `{"name":"note","version":"1.0.0","description":"Takes notes","interface":{"displayName":"Note Taker","capabilities":["Read"]}}`)

	type listResp struct {
		Marketplaces []struct {
			Name    string `json:"name"`
			Path    string `json:"path"`
			Plugins []struct {
				ID        string `json:"id"`
				Installed bool   `json:"installed"`
				Enabled   bool   `json:"enabled"`
			} `json:"plugins"`
		} `json:"marketplaces"`
	}
	var l listResp
	c.Result("plugin/list", map[string]any{"cwds": []string{repo}}, &l)
	require.Len(t, l.Marketplaces, 1)
	require.Equal(t, market, l.Marketplaces[0].Path)
	require.Len(t, l.Marketplaces[0].Plugins, 1, "sources outside the marketplace root are skipped")
	require.Equal(t, "note@demo-market", l.Marketplaces[0].Plugins[0].ID)
	require.False(t, l.Marketplaces[0].Plugins[0].Installed)

	var read struct {
		Plugin struct {
			MarketplaceName string `json:"marketplaceName"`
			Description     string `json:"description"`
		} `json:"plugin"`
	}
	c.Result("plugin/read", map[string]any{"pluginName": "note", "marketplacePath": market}, &read)
	require.Equal(t, "demo-market", read.Plugin.MarketplaceName)
	require.Equal(t, "Takes notes", read.Plugin.Description)

	var inst map[string]any
	c.Result("plugin/install", map[string]any{"pluginName": "note", "marketplacePath": market}, &inst)
	require.JSONEq(t, `{"authPolicy":"ON_INSTALL","appsNeedingAuth":[]}`, toJSON(t, inst))
	_, err := os.Stat(filepath.Join(c.Home, "plugins", "cache", "demo-market", "note", "1.0.0", ".codex-plugin", "plugin.json"))
	require.NoError(t, err)
	text, err := os.ReadFile(filepath.Join(c.Home, "config.toml"))
	require.NoError(t, err)
	require.Contains(t, string(text), "\n[plugins.\"note@demo-market\"]\nenabled = true\n")

	c.Result("plugin/installed", map[string]any{"cwds": []string{repo}}, &l)
	require.Len(t, l.Marketplaces, 1)
	require.True(t, l.Marketplaces[0].Plugins[0].Installed)
	require.True(t, l.Marketplaces[0].Plugins[0].Enabled)

	c.Result("plugin/uninstall", map[string]any{"pluginId": "note@demo-market"}, nil)
	c.Result("plugin/installed", map[string]any{"cwds": []string{repo}}, &l)
	require.Empty(t, l.Marketplaces)
	after, err := os.ReadFile(filepath.Join(c.Home, "config.toml"))
	require.NoError(t, err)
	require.NotContains(t, string(after), "plugins.")
	requireRPCError(t, c.Request("plugin/uninstall", map[string]any{"pluginId": "note@demo-market"}), -32600, "resolve remote plugin before uninstall: chatgpt authentication required for remote plugin catalog")
}

// A write to a key that a higher layer (here a `-c` override) sets reports okOverridden.
func TestConfigWriteOverridden(t *testing.T) {
	c := apptest.Start(t, apptest.Options{Overrides: []string{`model="from-flag"`}})
	c.Initialize(false)
	var w struct {
		Status             string         `json:"status"`
		OverriddenMetadata map[string]any `json:"overriddenMetadata"`
	}
	c.Result("config/value/write", map[string]any{"keyPath": "model", "value": "gpt-x", "mergeStrategy": "replace"}, &w)
	require.Equal(t, "okOverridden", w.Status)
	require.Equal(t, "from-flag", w.OverriddenMetadata["effectiveValue"])
	require.Equal(t, "Overridden by session flags", w.OverriddenMetadata["message"])
	c.Result("config/value/write", map[string]any{"keyPath": "sandbox_mode", "value": "workspace-write", "mergeStrategy": "replace"}, &w)
	require.Equal(t, "ok", w.Status)
	require.Nil(t, w.OverriddenMetadata)
}
