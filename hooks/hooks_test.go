package hooks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.toml"), []byte(`
[[hooks.PreToolUse]]
matcher = "Bash"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "check"
timeout = 5
[[hooks.PreToolUse.hooks]]
type = "command"
command = "second"
async = true
`), 0o644))
	res := Discover([]Layer{{Source: "user", Dir: dir}})
	require.Empty(t, res.Errors)
	require.Len(t, res.Hooks, 2)
	first := res.Hooks[0]
	require.Equal(t, filepath.Join(dir, "config.toml")+":pre_tool_use:0:0", first.Key)
	require.Equal(t, uint64(5), first.TimeoutSec)
	require.Equal(t, "untrusted", first.TrustStatus)
	require.Equal(t, int64(1), res.Hooks[1].DisplayOrder)
	require.True(t, res.Hooks[1].Async)
	require.Equal(t, uint64(DefaultTimeoutSec), res.Hooks[1].TimeoutSec)

	// [hooks.state] records trust by hash and enablement by key; a changed hook shows as modified.
	state := "\n[hooks.state.\"" + first.Key + "\"]\nenabled = false\ntrusted_hash = \"" + first.CurrentHash + "\"\n" +
		"[hooks.state.\"" + res.Hooks[1].Key + "\"]\ntrusted_hash = \"sha256:old\"\n"
	f, err := os.OpenFile(filepath.Join(dir, "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(state)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	res = Discover([]Layer{{Source: "user", Dir: dir}})
	require.False(t, res.Hooks[0].Enabled)
	require.Equal(t, "trusted", res.Hooks[0].TrustStatus)
	require.Equal(t, "modified", res.Hooks[1].TrustStatus)
}

func TestDiscoverErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hooks.json"), []byte(`{"hooks":{},"$schema":"x"}`), 0o644))
	res := Discover([]Layer{{Source: "user", Dir: dir}})
	require.Len(t, res.Errors, 1, "unknown root fields refuse the file")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hooks.json"), []byte(`{"hooks":{"Stop":[{"extra":1,"hooks":[{"type":"agent","x":1}]}]}}`), 0o644))
	res = Discover([]Layer{{Source: "user", Dir: dir}})
	require.Empty(t, res.Errors, "unknown group and handler fields are ignored")
	require.Empty(t, res.Hooks)
	require.Equal(t, []string{"skipping agent hook in " + filepath.Join(dir, "hooks.json") + ": agent hooks are not supported yet"}, res.Warnings)
}
