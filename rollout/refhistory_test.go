package rollout

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/refstate"
)

// historyDB creates the reference's history database (schema captured from codex-cli 0.169.0) in home.
func historyDB(t *testing.T, home string) *sql.DB {
	t.Helper()
	ddl, err := os.ReadFile("../refstate/testdata/thread_history_1.sql")
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(home, refstate.HistoryFile))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec(string(ddl))
	require.NoError(t, err)
	_, err = db.Exec(`PRAGMA journal_mode=WAL`)
	require.NoError(t, err)
	return db
}

// TestProjectForkOwnTurns projects the reference's fork fixture: like the reference, only the fork's own turn
// is written under the fork (the parent's two stay the parent's), with the rollout ordinals of its own file.
func TestProjectForkOwnTurns(t *testing.T) {
	home, day := compressedHome(t, true)
	db := historyDB(t, home)
	path := rolloutIn(t, day, zstChild)
	rh := NewRefHistory(home)
	defer rh.Close()
	rh.Project(context.Background(), zstChild, path)

	type turnRow struct {
		ID                   string
		Ordinal, EndOrdinal  int64
		FirstUser, LastAgent string
	}
	var turns []turnRow
	rows, err := db.Query(`SELECT turn_id, rollout_ordinal, rollout_end_ordinal, first_user_item_id,
		final_agent_item_id FROM thread_turns WHERE thread_id = ? ORDER BY rollout_ordinal`, zstChild)
	require.NoError(t, err)
	for rows.Next() {
		var r turnRow
		require.NoError(t, rows.Scan(&r.ID, &r.Ordinal, &r.EndOrdinal, &r.FirstUser, &r.LastAgent))
		turns = append(turns, r)
	}
	require.NoError(t, rows.Err())
	// The rows the reference wrote for a fork made the same way (parent of two turns, fork of one): one turn,
	// rollout ordinals 25..33, items at 28 and 29, projection state at the file's end and ordinal 34.
	require.Len(t, turns, 1)
	require.EqualValues(t, 25, turns[0].Ordinal)
	require.EqualValues(t, 33, turns[0].EndOrdinal)
	require.NotEmpty(t, turns[0].FirstUser)
	require.Equal(t, "msg_3_0", turns[0].LastAgent)

	var items []int64
	rows, err = db.Query(`SELECT rollout_ordinal FROM thread_items WHERE thread_id = ? ORDER BY rollout_ordinal`, zstChild)
	require.NoError(t, err)
	for rows.Next() {
		var o int64
		require.NoError(t, rows.Scan(&o))
		items = append(items, o)
	}
	require.Equal(t, []int64{28, 29}, items)

	info, err := os.Stat(path)
	require.NoError(t, err)
	var off, next int64
	require.NoError(t, db.QueryRow(`SELECT next_rollout_byte_offset, next_rollout_ordinal
		FROM thread_history_projection_state WHERE thread_id = ?`, zstChild).Scan(&off, &next))
	require.Equal(t, info.Size(), off)
	require.EqualValues(t, 34, next)

	var parentRows int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM thread_turns WHERE thread_id = ?`, zstParent).Scan(&parentRows))
	require.Zero(t, parentRows)
}
