package refstate

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// newHome creates a CODEX_HOME holding a history database built from the captured schema, with the sqlx
// migration rows up to maxVersion.
func newHome(t *testing.T, maxVersion int) string {
	t.Helper()
	home := t.TempDir()
	ddl, err := os.ReadFile("testdata/thread_history_1.sql")
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(home, HistoryFile))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(string(ddl))
	require.NoError(t, err)
	_, err = db.Exec(`PRAGMA journal_mode=WAL`)
	require.NoError(t, err)
	_, err = db.Exec(`DELETE FROM _sqlx_migrations WHERE version > ?`, maxVersion)
	require.NoError(t, err)
	if maxVersion > HistorySchemaVersion {
		_, err = db.Exec(`INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
			VALUES (?, 'future', 1, X'00', 0)`, maxVersion)
		require.NoError(t, err)
	}
	return home
}

func i64(v int64) *int64 { return &v }

func sampleTurn(id string, ord int64) Turn {
	user, err := ItemFromMap(map[string]any{"type": "userMessage", "id": id + "-u", "clientId": nil,
		"content":     []any{map[string]any{"type": "text", "text": "hi", "text_elements": []any{}}},
		"startedAtMs": int64(1000), "completedAtMs": int64(1000)}, ord+1, 0)
	if err != nil {
		panic(err)
	}
	agent, err := ItemFromMap(map[string]any{"type": "agentMessage", "id": id + "-a", "text": "hello",
		"startedAtMs": i64(1100), "completedAtMs": nil}, ord+2, 999)
	if err != nil {
		panic(err)
	}
	return Turn{ID: id, Ordinal: ord, EndOrdinal: ord + 3, Status: "completed", StartedAt: i64(1), CompletedAt: i64(2),
		DurationMs: i64(1000), Items: []Item{user, agent}}
}

func counts(t *testing.T, home, thread string) (turns, items int, state [2]int64) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(home, HistoryFile)+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM thread_turns WHERE thread_id = ?`, thread).Scan(&turns))
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM thread_items WHERE thread_id = ?`, thread).Scan(&items))
	err = db.QueryRow(`SELECT next_rollout_byte_offset, next_rollout_ordinal FROM thread_history_projection_state
		WHERE thread_id = ?`, thread).Scan(&state[0], &state[1])
	if !errors.Is(err, sql.ErrNoRows) {
		require.NoError(t, err)
	}
	return turns, items, state
}

func TestProjectWritesTurnsItemsAndState(t *testing.T) {
	ctx := context.Background()
	home := newHome(t, HistorySchemaVersion)
	h, err := OpenHistory(ctx, home)
	require.NoError(t, err)
	defer h.Close()

	require.NoError(t, h.Project(ctx, "th", []Turn{sampleTurn("t1", 1)}, 5, 500))
	turns, items, state := counts(t, home, "th")
	require.Equal(t, 1, turns)
	require.Equal(t, 2, items)
	require.Equal(t, [2]int64{500, 5}, state)

	db := h.db
	var first, final, root string
	var endOrd int64
	require.NoError(t, db.QueryRow(`SELECT first_user_item_id, final_agent_item_id, root_turn_id, rollout_end_ordinal
		FROM thread_turns WHERE turn_id = 't1'`).Scan(&first, &final, &root, &endOrd))
	require.Equal(t, []any{"t1-u", "t1-a", "t1", int64(4)}, []any{first, final, root, endOrd})
	var js, typ string
	var created int64
	var completed sql.NullInt64
	require.NoError(t, db.QueryRow(`SELECT item_json, item_type, created_at_ms, completed_at_ms FROM thread_items
		WHERE item_id = 't1-a'`).Scan(&js, &typ, &created, &completed))
	require.JSONEq(t, `{"type":"agentMessage","id":"t1-a","text":"hello"}`, js)
	require.Equal(t, "agentMessage", typ)
	require.Equal(t, int64(1100), created)
	require.False(t, completed.Valid)

	// Already projected up to this size: nothing changes, even with other turns offered.
	require.NoError(t, h.Project(ctx, "th", []Turn{sampleTurn("t1", 1), sampleTurn("tx", 3)}, 5, 500))
	turns, _, _ = counts(t, home, "th")
	require.Equal(t, 1, turns)

	// Appended: only turns at or past the projected ordinal are written.
	require.NoError(t, h.Project(ctx, "th", []Turn{sampleTurn("t1", 1), sampleTurn("t2", 5)}, 9, 900))
	turns, items, state = counts(t, home, "th")
	require.Equal(t, 2, turns)
	require.Equal(t, 4, items)
	require.Equal(t, [2]int64{900, 9}, state)
}

func TestProjectConflictRollsBackWhole(t *testing.T) {
	ctx := context.Background()
	home := newHome(t, HistorySchemaVersion)
	h, err := OpenHistory(ctx, home)
	require.NoError(t, err)
	defer h.Close()
	// Another writer holds item ordinal 7 of this thread (unique page index).
	_, err = h.db.Exec(`INSERT INTO thread_items (thread_id, turn_id, item_id, rollout_ordinal, created_at_ms,
		item_json) VALUES ('th', 'other', 'x', 7, 0, '{}')`)
	require.NoError(t, err)
	err = h.Project(ctx, "th", []Turn{sampleTurn("t1", 1), sampleTurn("t2", 5)}, 9, 900)
	require.Error(t, err)
	turns, items, state := counts(t, home, "th")
	require.Equal(t, 0, turns)
	require.Equal(t, 1, items)
	require.Equal(t, [2]int64{0, 0}, state)
}

func TestOpenHistoryAbsentNeverCreates(t *testing.T) {
	home := t.TempDir()
	_, err := OpenHistory(context.Background(), home)
	require.ErrorIs(t, err, ErrAbsent)
	_, err = os.Stat(filepath.Join(home, HistoryFile))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestOpenHistoryUnknownSchema(t *testing.T) {
	for _, v := range []int{HistorySchemaVersion - 1, HistorySchemaVersion + 1} {
		home := newHome(t, v)
		before, err := os.ReadFile(filepath.Join(home, HistoryFile))
		require.NoError(t, err)
		_, err = OpenHistory(context.Background(), home)
		require.ErrorIs(t, err, ErrUnknownSchema, "version %d", v)
		after, err := os.ReadFile(filepath.Join(home, HistoryFile))
		require.NoError(t, err)
		require.True(t, bytes.Equal(before, after), "version %d: database file changed", v)
	}
}

func TestOpenHistoryNotADatabase(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, HistoryFile), []byte("not sqlite at all, really not"), 0o644))
	_, err := OpenHistory(context.Background(), home)
	require.Error(t, err)
	b, _ := os.ReadFile(filepath.Join(home, HistoryFile))
	require.Equal(t, "not sqlite at all, really not", string(b))
}

func TestOpenHistoryNotWAL(t *testing.T) {
	home := newHome(t, HistorySchemaVersion)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(home, HistoryFile))
	require.NoError(t, err)
	_, err = db.Exec(`PRAGMA journal_mode=DELETE`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = OpenHistory(context.Background(), home)
	require.ErrorIs(t, err, ErrUnknownSchema)
}
