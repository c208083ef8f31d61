package config

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The reference's configWarning for a configuration that does not load carries the range of the
// offending value (or of the syntax error): first and last character, 1-based.
func TestErrorRange(t *testing.T) {
	cases := []struct {
		name, file                 string
		line, col, endLine, endCol int
	}{
		{"syntax", "model = \"gpt-5\"\nfoo = [\n", 2, 8, 2, 8},
		{"integer for string", "model = 5\n", 1, 9, 1, 9},
		{"unknown variant", "approval_policy = \"bogus\"\n", 1, 19, 1, 25},
		{"nested value", "[model_providers.m]\nname = \"x\"\nrequest_max_retries = \"many\"\n", 3, 23, 3, 28},
		{"table header", "[approval_policy]\nother = 1\n", 1, 1, 1, 17},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := loadErr(t, c.file)
			require.Equal(t, []int{c.line, c.col, c.endLine, c.endCol}, []int{e.Line, e.Column, e.EndLine, e.EndColumn}, e.Error())
			require.Equal(t, c.name == "syntax", e.Syntax)
		})
	}
}

func TestDefaults(t *testing.T) {
	dir := home(t, "model = 5\n")
	_, err := Load(dir, nil)
	require.Error(t, err)
	require.False(t, IsOverrideError(err))

	c, err := Defaults(dir, nil)
	require.NoError(t, err)
	require.Equal(t, dir, c.CodexHome)
	def, err := Load(t.TempDir(), nil)
	require.NoError(t, err)
	require.Equal(t, def.Model, c.Model)

	c, err = Defaults(dir, []string{"model=m2"})
	require.NoError(t, err)
	require.Equal(t, "m2", c.Model)

	for _, bad := range []string{"model=5", "nokey"} {
		_, err = Defaults(dir, []string{bad})
		require.True(t, IsOverrideError(err), bad)
		_, err = Load(filepath.Join(dir, "x"), []string{bad})
		require.True(t, IsOverrideError(err), bad)
	}
}

func TestUnknownKeysWarning(t *testing.T) {
	require.Empty(t, UnknownKeysWarning(nil))
	require.Equal(t, "Codex is ignoring 1 unrecognized configuration setting. Check for typos or deprecated settings.\n  user (/h/config.toml): `foo` is ignored.",
		UnknownKeysWarning([]UnknownKey{{File: "/h/config.toml", Line: 2, Key: "foo"}}))
	require.Equal(t, "Codex is ignoring 3 unrecognized configuration settings. Check for typos or deprecated settings.\n"+
		"  user (/h/config.toml): `bar` is ignored.\n  user (/h/config.toml): `features.xyz` is ignored.\n  user (/h/config.toml): `foo_unknown` is ignored.",
		UnknownKeysWarning([]UnknownKey{{File: "/h/config.toml", Line: 2, Key: "foo_unknown"}, {File: "/h/config.toml", Line: 3, Key: "bar"}, {File: "/h/config.toml", Line: 5, Key: "features.xyz"}}))
}

// appserver's own settings are not unknown keys (the client would be warned about them).
func TestOwnKeysAreKnown(t *testing.T) {
	dir := home(t, "approval_timeout_ms = 5\n[model_providers.m]\nname = \"M\"\nnetwork_wait_max_retries = 2\n")
	keys, err := UserConfigUnknownKeys(dir)
	require.NoError(t, err)
	require.Empty(t, keys)
}
