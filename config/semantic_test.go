package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Values that type-check but that the reference refuses on their meaning fail the load in its words
// (codex-cli 0.169.0's configWarning details and thread/start errors), without a position, in its order.
func TestRefusedOnMeaning(t *testing.T) {
	files := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(files, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	ok, empty, blank := write("ok.md", "hi\n"), write("empty.md", ""), write("blank.md", " \n")
	badJSON, noModels, catalog := write("bad.json", "not json\n"), write("nomodels.json", "{}\n"), write("catalog.json", validCatalog)
	const missing = "/nonexistent/file"
	cases := []struct{ name, file, want string }{
		{"endpoint", "experimental_thread_store_endpoint = \"http://x\"\n", "`experimental_thread_store_endpoint` is no longer supported; remove it from config.toml"},
		{"endpoint empty", "experimental_thread_store_endpoint = \"\"\n", "`experimental_thread_store_endpoint` is no longer supported; remove it from config.toml"},
		{"no permissions table", "default_permissions = \"foo\"\n", "default_permissions requires a `[permissions]` table"},
		{"undefined profile", "default_permissions = \"foo\"\n[permissions.bar]\n", "default_permissions refers to undefined profile `foo`"},
		{"unknown built-in", "default_permissions = \":bogus\"\n", "default_permissions refers to unknown built-in profile `:bogus`"},
		{"no provider", "model_provider = \"x\"\n", "Model provider `x` not found"},
		{"instructions missing", "model_instructions_file = \"" + missing + "\"\n", "failed to read model instructions file /nonexistent/file: No such file or directory (os error 2)"},
		{"instructions dir", "model_instructions_file = \"/\"\n", "failed to read model instructions file /: path `/` is not a file"},
		{"instructions empty", "model_instructions_file = \"" + empty + "\"\n", "model instructions file is empty: " + empty},
		{"compact prompt missing", "experimental_compact_prompt_file = \"" + missing + "\"\n", "failed to read experimental compact prompt file /nonexistent/file: No such file or directory (os error 2)"},
		{"compact prompt dir", "experimental_compact_prompt_file = \"/\"\n", "failed to read experimental compact prompt file /: path `/` is not a file"},
		{"compact prompt empty", "experimental_compact_prompt_file = \"" + empty + "\"\n", "experimental compact prompt file is empty: " + empty},
		{"catalog missing", "model_catalog_json = \"" + missing + "\"\n", "No such file or directory (os error 2)"},
		{"catalog dir", "model_catalog_json = \"/\"\n", "Is a directory (os error 21)"},
		{"catalog no models", "model_catalog_json = \"" + noModels + "\"\n", "failed to parse model_catalog_json path `" + noModels + "` as JSON: missing field `models` at line 1 column 2"},
		{"catalog not JSON", "model_catalog_json = \"" + badJSON + "\"\n", "failed to parse model_catalog_json path `" + badJSON + "` as JSON: "},
		// The reference's order: endpoint, permissions, provider, instructions, compact prompt, catalogue.
		{"order endpoint", "model_provider = \"x\"\ndefault_permissions = \"foo\"\nexperimental_thread_store_endpoint = \"x\"\nmodel_instructions_file = \"" + missing + "\"\n", "`experimental_thread_store_endpoint` is no longer supported; remove it from config.toml"},
		{"order permissions", "model_provider = \"x\"\ndefault_permissions = \"foo\"\n", "default_permissions requires a `[permissions]` table"},
		{"order provider", "model_catalog_json = \"" + missing + "\"\nexperimental_compact_prompt_file = \"" + missing + "\"\nmodel_instructions_file = \"" + missing + "\"\nmodel_provider = \"x\"\n", "Model provider `x` not found"},
		{"order instructions", "model_catalog_json = \"" + missing + "\"\nexperimental_compact_prompt_file = \"" + missing + "\"\nmodel_instructions_file = \"" + missing + "\"\n", "failed to read model instructions file "},
		{"order compact prompt", "model_catalog_json = \"" + missing + "\"\nexperimental_compact_prompt_file = \"" + missing + "\"\n", "failed to read experimental compact prompt file "},
		{"type errors first", "model_provider = \"x\"\nexperimental_thread_store = {a=1}\n", "missing field `type`"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := loadErr(t, tc.file)
			require.True(t, strings.HasPrefix(e.Error(), tc.want) || strings.HasSuffix(e.Error(), tc.want), e.Error())
			if !strings.HasPrefix(tc.name, "type") {
				require.Equal(t, tc.want, e.Msg[:min(len(tc.want), len(e.Msg))])
				require.Zero(t, e.Line, "no position")
				require.Empty(t, e.File)
			}
		})
	}
	for _, good := range []string{
		"default_permissions = \":read-only\"\n", "default_permissions = \":workspace\"\n",
		"default_permissions = \":danger-full-access\"\n", "default_permissions = \"foo\"\n[permissions.foo]\n",
		"model_instructions_file = \"" + ok + "\"\n", "experimental_compact_prompt_file = \"" + ok + "\"\n",
		"model_catalog_json = \"" + catalog + "\"\n", "model_provider = \"m\"\n[model_providers.m]\nname = \"M\"\n",
	} {
		load(t, good)
	}
	_ = blank
}

// A relative path is resolved against the directory of the file that sets it; "" names that directory.
func TestRefusedFileRelativePath(t *testing.T) {
	dir := home(t, "model_instructions_file = \"sub/missing.md\"\n")
	_, err := Load(dir, nil)
	require.EqualError(t, err, "failed to read model instructions file "+filepath.Join(dir, "sub/missing.md")+": No such file or directory (os error 2)")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub/missing.md"), []byte("x"), 0o600))
	_, err = Load(dir, nil)
	require.NoError(t, err)

	dir = home(t, "model_instructions_file = \"\"\n")
	_, err = Load(dir, nil)
	require.EqualError(t, err, "failed to read model instructions file "+dir+": path `"+dir+"` is not a file")
}

// The same refusals come from a `-c` override and from an override object (thread/start's config): then
// even the defaults do not load (the reference does not start), and the error is not a file's.
func TestRefusedOnMeaningOverrides(t *testing.T) {
	dir := home(t, "")
	for _, o := range []string{"model_provider=\"x\"", "default_permissions=\"foo\"", "experimental_thread_store_endpoint=\"x\"",
		"model_instructions_file=\"/nonexistent/file\"", "experimental_compact_prompt_file=\"/nonexistent/file\"", "model_catalog_json=\"/nonexistent/file\""} {
		_, err := Load(dir, []string{o})
		require.Error(t, err, o)
		_, err = Defaults(dir, []string{o})
		require.Error(t, err, o)
		require.NotContains(t, err.Error(), "override", o)
	}
	// A relative -c path is the process directory's; in the defaults (no file read), the home's.
	wd, err := os.Getwd()
	require.NoError(t, err)
	_, err = Load(dir, []string{"model_instructions_file=\"sub/missing.md\""})
	require.EqualError(t, err, "failed to read model instructions file "+filepath.Join(wd, "sub/missing.md")+": No such file or directory (os error 2)")
	_, err = Defaults(dir, []string{"model_instructions_file=\"sub/missing.md\""})
	require.EqualError(t, err, "failed to read model instructions file "+filepath.Join(dir, "sub/missing.md")+": No such file or directory (os error 2)")
	c, err := Load(dir, nil)
	require.NoError(t, err)
	_, err = c.WithOverrides(map[string]any{"model_provider": "x"})
	require.EqualError(t, err, "Model provider `x` not found")
	_, err = c.WithOverrides(map[string]any{"experimental_thread_store": map[string]any{"a": 1}})
	var ce *Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, []string{"missing field `type`", "experimental_thread_store", ObjectOverrideLabel}, []string{ce.Msg, ce.Key, ce.File})
	_, err = c.WithOverrides(map[string]any{"mcp_enterprise_managed_auth.a": 1})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, []string{"unknown field `a`, expected `idp`", "mcp_enterprise_managed_auth"}, []string{ce.Msg, ce.Key})
	_, err = Load(dir, []string{"experimental_thread_store={type=\"x\"}"})
	require.ErrorAs(t, err, &ce)
	require.True(t, IsOverrideError(err))
	require.Equal(t, []string{"unknown variant `x`, expected `local` or `in_memory`", "experimental_thread_store.type"}, []string{ce.Msg, ce.Key})
}

// experimental_thread_store and mcp_enterprise_managed_auth are checked field by field, each error where
// the reference puts it (line, first and last column of the range it reports).
func TestStructFieldErrors(t *testing.T) {
	cases := []struct {
		file, msg, key string
		pos            []int
	}{
		{"experimental_thread_store = {a=1}\n", "missing field `type`", "experimental_thread_store", []int{1, 29, 1, 33}},
		{"experimental_thread_store={type=\"x\"}\n", "unknown variant `x`, expected `local` or `in_memory`", "experimental_thread_store.type", []int{1, 33, 1, 35}},
		{"experimental_thread_store={type=1}\n", "invalid type: integer `1`, expected variant identifier", "experimental_thread_store.type", []int{1, 33, 1, 33}},
		{"experimental_thread_store={type=\"in_memory\"}\n", "missing field `id`", "experimental_thread_store", []int{1, 27, 1, 44}},
		{"experimental_thread_store={type=\"in_memory\", id=1}\n", "invalid type: integer `1`, expected a string", "experimental_thread_store", []int{1, 27, 1, 50}},
		{"[experimental_thread_store]\na = 1\n", "missing field `type`", "experimental_thread_store", []int{1, 1, 1, 27}},
		{"mcp_enterprise_managed_auth = {a=1}\n", "unknown field `a`, expected `idp`", "mcp_enterprise_managed_auth", []int{1, 34, 1, 34}},
		{"[mcp_enterprise_managed_auth]\na = 1\n", "unknown field `a`, expected `idp`", "mcp_enterprise_managed_auth", []int{2, 5, 2, 5}},
		{"[mcp_enterprise_managed_auth]\n", "missing field `idp`", "mcp_enterprise_managed_auth", []int{1, 1, 1, 29}},
		{"mcp_enterprise_managed_auth={idp=1}\n", "invalid type: integer `1`, expected struct McpServerIdpOAuthConfig", "mcp_enterprise_managed_auth.idp", []int{1, 34, 1, 34}},
		{"mcp_enterprise_managed_auth={idp={}}\n", "missing field `issuer`", "mcp_enterprise_managed_auth.idp", []int{1, 34, 1, 35}},
		{"mcp_enterprise_managed_auth={idp={issuer=\"x\"}}\n", "missing field `client_id`", "mcp_enterprise_managed_auth.idp", []int{1, 34, 1, 45}},
		{"mcp_enterprise_managed_auth={idp={issuer=1}}\n", "invalid type: integer `1`, expected a string", "mcp_enterprise_managed_auth.idp.issuer", []int{1, 42, 1, 42}},
		{"mcp_enterprise_managed_auth={idp={zz=1}}\n", "unknown field `zz`, expected one of `issuer`, `client_id`, `client_secret`, `token_endpoint_auth_method`", "mcp_enterprise_managed_auth.idp", []int{1, 38, 1, 38}},
		{"mcp_enterprise_managed_auth={idp={issuer=\"x\", client_id=\"y\", token_endpoint_auth_method=\"zz\"}}\n", "unknown variant `zz`, expected `client_secret_basic` or `client_secret_post`", "mcp_enterprise_managed_auth.idp.token_endpoint_auth_method", []int{1, 89, 1, 92}},
		{"mcp_enterprise_managed_auth={idp={issuer=\"x\", client_id=\"y\", token_endpoint_auth_method=1}}\n", "wanted string or table", "mcp_enterprise_managed_auth.idp.token_endpoint_auth_method", []int{1, 89, 1, 89}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			e := loadErr(t, tc.file)
			require.Equal(t, tc.msg, e.Msg)
			require.Equal(t, tc.key, e.Key)
			require.Equal(t, tc.pos, []int{e.Line, e.Column, e.EndLine, e.EndColumn}, e.Error())
		})
	}
	for _, good := range []string{
		"experimental_thread_store = {type=\"local\", x=1}\n", "experimental_thread_store = {type=\"in_memory\", id=\"a\"}\n",
		"mcp_enterprise_managed_auth = {idp={issuer=\"x\", client_id=\"y\", client_secret=\"s\", token_endpoint_auth_method=\"client_secret_post\"}}\n",
	} {
		load(t, good)
	}
}

// validCatalog is a model catalogue codex-cli 0.169.0 reads: one model with every required field.
const validCatalog = `{"models":[{"slug":"m","display_name":"M","supported_reasoning_levels":[],"shell_type":"default",` +
	`"visibility":"list","supported_in_api":true,"priority":1,"support_verbosity":false,` +
	`"truncation_policy":{"mode":"bytes","limit":1},"experimental_supported_tools":[],"base_instructions":"x"}]}`
