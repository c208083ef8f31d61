package threadindex

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStateSurvivesReopenAndRefusesNewer(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFile)
	st, err := OpenState(path)
	require.NoError(t, err)
	ctx := context.Background()
	m, err := st.ThreadMeta(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, ThreadMeta{}, m)
	git, day := `{"sha":"x"}`, true
	require.NoError(t, st.SetThreadMeta(ctx, "a", ThreadMeta{GitInfo: &git, Daybreak: &day}))
	require.NoError(t, st.Close())

	st, err = OpenState(path)
	require.NoError(t, err)
	m, err = st.ThreadMeta(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, git, *m.GitInfo)
	require.True(t, *m.Daybreak)
	_, err = st.db.Exec("PRAGMA user_version = 99")
	require.NoError(t, err)
	require.NoError(t, st.Close())

	_, err = OpenState(path)
	require.ErrorContains(t, err, "newer than this server's")
}
