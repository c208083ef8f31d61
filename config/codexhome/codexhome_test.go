package codexhome

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDir(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	for env, want := range map[string]string{
		"rel/home":                       filepath.Join(base, "rel/home"),
		"./a/../b/":                      filepath.Join(base, "b"),
		filepath.Join(base, "abs") + "/": filepath.Join(base, "abs"),
	} {
		t.Setenv("CODEX_HOME", env)
		got, err := Dir()
		require.NoError(t, err)
		require.Equal(t, want, got)
		st, err := os.Stat(got)
		require.NoError(t, err)
		require.True(t, st.IsDir())
	}
	t.Setenv("CODEX_HOME", "")
	t.Setenv("HOME", base)
	got, err := Dir()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(base, ".codex"), got)

	require.NoError(t, os.WriteFile(filepath.Join(base, "file"), nil, 0o600))
	t.Setenv("CODEX_HOME", filepath.Join(base, "file"))
	_, err = Dir()
	require.Error(t, err)
}

func TestQuote(t *testing.T) {
	for _, s := range []string{"", "rel/home", `a"b\c`, "tab\there", "x\x7fy\a\b\f\n\r\v\x01", "héllo"} {
		require.Equal(t, strconv.Quote(s), quote(s))
	}
}
