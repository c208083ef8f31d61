package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRelativeOverridePaths pins where the reference (0.169.0) resolves a relative path given by a `-c`
// override: the process directory at start and for a thread (its cwd), the cwd config/read asks for, else
// CODEX_HOME; config/read shows every layer's paths resolved (a file's against its directory) and hashes
// the layers as shown.
func TestRelativeOverridePaths(t *testing.T) {
	h := home(t, "model_instructions_file = \"inst.md\"\njs_repl_node_module_dirs = [\"m\", \"/abs/m\"]\n")
	wd, other := t.TempDir(), t.TempDir()
	for _, d := range []string{h, wd, other} {
		require.NoError(t, os.WriteFile(filepath.Join(d, "inst.md"), []byte("x"), 0o600))
	}
	require.NoError(t, os.WriteFile(filepath.Join(wd, "c.md"), []byte("x"), 0o600))
	t.Chdir(wd)

	c, err := Load(h, []string{"experimental_compact_prompt_file=c.md", "log_dir=logs"})
	require.NoError(t, err, "resolved against the process directory at start")

	_, err = c.ReadResponse(false, "")
	require.EqualError(t, err, "failed to read experimental compact prompt file "+filepath.Join(h, "c.md")+": No such file or directory (os error 2)")
	_, err = c.ReadResponse(false, other)
	require.EqualError(t, err, "failed to read experimental compact prompt file "+filepath.Join(other, "c.md")+": No such file or directory (os error 2)")
	_, err = c.ForCwd(other)
	require.Error(t, err, "a thread's cwd")
	_, err = c.ForCwd(wd)
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(filepath.Join(h, "c.md"), []byte("x"), 0o600))
	res, err := c.ReadResponse(true, "")
	require.NoError(t, err)
	for k, want := range map[string]any{
		"experimental_compact_prompt_file": filepath.Join(h, "c.md"),
		"log_dir":                          filepath.Join(h, "logs"),
		"model_instructions_file":          filepath.Join(h, "inst.md"),
		"js_repl_node_module_dirs":         []any{filepath.Join(h, "m"), "/abs/m"},
	} {
		require.Equal(t, want, res.Config[k], k)
	}
	require.Equal(t, filepath.Join(h, "logs"), res.Layers[0].Config["log_dir"])
	require.Equal(t, filepath.Join(h, "inst.md"), res.Layers[1].Config["model_instructions_file"])
	data, err := os.ReadFile(filepath.Join(h, ConfigFileName))
	require.NoError(t, err)
	v, err := FileVersion(filepath.Join(h, ConfigFileName), data)
	require.NoError(t, err)
	require.Equal(t, v, res.Layers[1].Version, "config writes' version is config/read's")
	require.Equal(t, v, res.Origins["model_instructions_file"].Version)

	require.NoError(t, os.WriteFile(filepath.Join(other, "c.md"), []byte("x"), 0o600))
	res, err = c.ReadResponse(false, other)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(other, "logs"), res.Config["log_dir"])
}
