package rollout

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/refstate"
)

const incThread = "01b00000-0000-7000-8000-000000000001"

// projectWhole is the projection as it was before it became incremental: read the whole rollout, convert every
// own turn, let the database keep those at or past its projection state.
func projectWhole(t *testing.T, home, path string) {
	t.Helper()
	ctx := context.Background()
	h, err := refstate.OpenHistory(ctx, home)
	require.NoError(t, err)
	defer h.Close()
	info, err := os.Stat(path)
	require.NoError(t, err)
	th, err := ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, HistoryModePaginated, th.Meta.HistoryMode)
	require.NoError(t, h.Project(ctx, incThread, ReferenceTurns(th), th.NextOrdinal, info.Size()))
}

// dumpHistory returns every row of the history tables, in a stable order, as text.
func dumpHistory(t *testing.T, db *sql.DB) string {
	t.Helper()
	var sb strings.Builder
	for _, q := range []string{
		`SELECT * FROM thread_turns ORDER BY thread_id, turn_id`,
		`SELECT * FROM thread_items ORDER BY thread_id, turn_id, item_id`,
		`SELECT * FROM thread_history_projection_state ORDER BY thread_id`,
	} {
		rows, err := db.Query(q)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		fmt.Fprintln(&sb, cols)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					vals[i] = string(b)
				}
			}
			fmt.Fprintln(&sb, vals...)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
	}
	return sb.String()
}

// incLines are records appended after the fixture's three turns, ordinals from 18.
type incLines struct{ ord int }

func (l *incLines) rec(typ, payload string) string {
	s := fmt.Sprintf(`{"timestamp":"2026-11-20T09:01:%02d.000Z","ordinal":%d,"type":%q,"payload":%s}`+"\n",
		l.ord%60, l.ord, typ, payload)
	l.ord++
	return s
}

func (l *incLines) started(turn string) string {
	return l.rec("event_msg", fmt.Sprintf(`{"type":"task_started","turn_id":%q,"started_at":%d}`, turn, 1795165300+l.ord))
}

func (l *incLines) item(turn, item string) string {
	return l.rec("event_msg", fmt.Sprintf(`{"type":"item_completed","thread_id":%q,"turn_id":%q,"item":%s,"started_at_ms":%d,"completed_at_ms":%d}`,
		incThread, turn, item, 1795165300000+int64(l.ord), 1795165300100+int64(l.ord)))
}

func (l *incLines) user(turn, id, text string) string {
	return l.item(turn, fmt.Sprintf(`{"type":"UserMessage","id":%q,"content":[{"type":"text","text":%q,"text_elements":[]}]}`, id, text))
}

func (l *incLines) agent(turn, id, text string) string {
	return l.item(turn, fmt.Sprintf(`{"type":"AgentMessage","id":%q,"content":[{"type":"Text","text":%q}]}`, id, text))
}

func (l *incLines) command(turn, id string) string {
	return l.item(turn, fmt.Sprintf(`{"type":"CommandExecution","id":%q,"process_id":"7","command":["/bin/bash","-lc","ls"],"cwd":"file:///work/proj","parsed_cmd":[],"source":"unified_exec_startup","status":"completed","aggregated_output":"x\n","exit_code":0,"duration":{"secs":0,"nanos":5}}`, id))
}

func (l *incLines) completed(turn string) string {
	return l.rec("event_msg", fmt.Sprintf(`{"type":"task_complete","turn_id":%q,"last_agent_message":"ok","started_at":%d,"completed_at":%d,"duration_ms":7}`, turn, 1795165300, 1795165301))
}

func (l *incLines) aborted(turn string) string {
	return l.rec("event_msg", fmt.Sprintf(`{"type":"turn_aborted","turn_id":%q,"reason":"interrupted","started_at":1795165300,"completed_at":1795165301,"duration_ms":9}`, turn))
}

func (l *incLines) tool(turn, callID string) string {
	return l.rec("response_item", fmt.Sprintf(`{"type":"function_call","id":"fc_%s","name":"exec_command","arguments":"{}","call_id":%q}`, callID, callID)) +
		l.command(turn, callID) +
		l.rec("response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":"x\n"}`, callID))
}

// incHome is a CODEX_HOME with the reference's history database and the fixture's rollout path (empty).
func incHome(t *testing.T) (home, path string, db *sql.DB) {
	t.Helper()
	home = t.TempDir()
	day := filepath.Join(home, "sessions", "2026", "11", "20")
	require.NoError(t, os.MkdirAll(day, 0o755))
	db = historyDB(t, home)
	path = filepath.Join(day, "rollout-2026-11-20T09-00-00-"+incThread+".jsonl")
	return home, path, db
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestIncrementalProjectionMatchesWhole projects a growing rollout after each turn, once incrementally (one
// RefHistory for the whole thread) and once as before (the whole rollout each time, into another home), and
// requires the same rows after every step: turns with tool calls, an interrupted and a failed turn, a turn
// projected while still open and finished later, an item for an old turn, a turn opened by an item without a
// turn id, a rollback, and another writer's appends. Only the first projection reads the rollout whole.
func TestIncrementalProjectionMatchesWhole(t *testing.T) {
	fixture, err := os.ReadFile("testdata/paginated_three_turns.jsonl")
	require.NoError(t, err)
	lines := strings.SplitAfter(string(fixture), "\n")
	require.Len(t, lines, 19) // 18 records and the empty rest
	l := &incLines{ord: 18}
	steps := []string{
		strings.Join(lines[:13], ""),                                   // turn-a: user message, a command, the answer
		strings.Join(lines[13:16], ""),                                 // turn-b: interrupted
		strings.Join(lines[16:18], ""),                                 // turn-c: failed
		l.started("turn-d") + l.user("turn-d", "u-d", "still running"), // projected while open
		l.tool("turn-d", "call_d") + l.agent("turn-d", "a-d", "done") + l.completed("turn-d") +
			l.user("turn-a", "late-a", "late item of an old turn") +
			l.started("turn-e") + l.user("turn-e", "u-e", "e") + l.tool("turn-e", "call_e1") + l.tool("turn-e", "call_e2") +
			l.agent("turn-e", "a-e", "e done") + l.completed("turn-e"),
		l.started("turn-f") + l.user("turn-f", "u-f", "f") + l.tool("turn-f", "call_f") + l.aborted("turn-f"),
		l.user("", "u-implicit", "no turn id") + l.agent("", "a-implicit", "answer"),
		l.started("turn-g") + l.user("turn-g", "u-g", "g") + l.agent("turn-g", "a-g", "g") + l.completed("turn-g"),
		// A turn its items opened (a review) with a sub-agent turn inside, projected before the review ends.
		l.user("turn-r", "u-r", "review this") +
			l.rec("event_msg", `{"type":"task_started","turn_id":"turn-r-sub","root_turn_id":"turn-r","started_at":1795165400}`) +
			l.agent("turn-r-sub", "a-r-sub", "reviewing") + l.completed("turn-r-sub"),
		l.agent("turn-r", "a-r", "review done") + l.completed("turn-r"),
		l.rec("event_msg", `{"type":"thread_rolled_back","num_turns":1}`) +
			l.started("turn-h") + l.user("turn-h", "u-h", "h") + l.agent("turn-h", "a-h", "h") + l.completed("turn-h"),
		// Another writer (the reference resuming the thread) appends a turn of its own.
		l.started("turn-ref") + l.user("turn-ref", "u-ref", "from the reference") + l.agent("turn-ref", "a-ref", "r") +
			l.completed("turn-ref"),
	}

	incHomeDir, incPath, incDB := incHome(t)
	wholeHomeDir, wholePath, wholeDB := incHome(t)
	rh := NewRefHistory(incHomeDir)
	defer rh.Close()
	ctx := context.Background()
	for i, s := range steps {
		appendTo(t, incPath, s)
		appendTo(t, wholePath, s)
		rh.Project(ctx, incThread, incPath)
		projectWhole(t, wholeHomeDir, wholePath)
		want := dumpHistory(t, wholeDB)
		require.Equal(t, want, dumpHistory(t, incDB), "after step %d", i)
	}
	require.Equal(t, 1, rh.fullReads, "only the first projection reads the rollout whole")
	dump := dumpHistory(t, incDB)
	for _, id := range []string{"turn-a", "turn-b", "turn-c", "turn-d", "turn-e", "call_e2", "turn-f", "turn-g", "turn-h", "turn-ref", "u-implicit", "turn-r-sub"} {
		require.Contains(t, dump, id)
	}
	require.Contains(t, dump, "interrupted")
	require.Contains(t, dump, "failed")

	// The projection state moved back (rows and state deleted by another writer): both read everything again.
	for _, db := range []*sql.DB{incDB, wholeDB} {
		_, err := db.Exec(`DELETE FROM thread_history_projection_state`)
		require.NoError(t, err)
		_, err = db.Exec(`DELETE FROM thread_turns WHERE turn_id IN ('turn-b', 'turn-e')`)
		require.NoError(t, err)
	}
	s := l.started("turn-i") + l.user("turn-i", "u-i", "i") + l.completed("turn-i")
	appendTo(t, incPath, s)
	appendTo(t, wholePath, s)
	rh.Project(ctx, incThread, incPath)
	projectWhole(t, wholeHomeDir, wholePath)
	require.Equal(t, dumpHistory(t, wholeDB), dumpHistory(t, incDB))
	require.Equal(t, 2, rh.fullReads)
	s = l.started("turn-j") + l.user("turn-j", "u-j", "j") + l.completed("turn-j")
	appendTo(t, incPath, s)
	appendTo(t, wholePath, s)
	rh.Project(ctx, incThread, incPath)
	projectWhole(t, wholeHomeDir, wholePath)
	require.Equal(t, dumpHistory(t, wholeDB), dumpHistory(t, incDB))
	require.Equal(t, 2, rh.fullReads, "incremental again after the whole read")
}

// fixtureTurns returns the fixture's records without its torn last line.
func fixtureTurns(t *testing.T) (complete, torn string) {
	t.Helper()
	b, err := os.ReadFile("testdata/paginated_three_turns.jsonl")
	require.NoError(t, err)
	i := bytes.LastIndexByte(b, '\n')
	return string(b[:i+1]), string(b[i+1:])
}

// TestIncrementalProjectionFallsBack reads the rollout whole again when what was read is no longer its start.
func TestIncrementalProjectionFallsBack(t *testing.T) {
	fixture, tornLine := fixtureTurns(t)
	require.NotEmpty(t, tornLine)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
		whole  bool
	}{
		{"appended", func(t *testing.T, path string) {}, false},
		{"torn last line when read", func(t *testing.T, path string) {
			// A line without its newline was read: it is read again with what completes it.
			appendTo(t, path, tornLine)
		}, true},
		{"rewritten in place", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			b = bytes.Replace(b, []byte("boom"), []byte("BOOM"), 1)
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt(b, 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, true},
		{"truncated", func(t *testing.T, path string) {
			require.NoError(t, os.Truncate(path, 100))
			appendTo(t, path, "\n")
		}, true},
		{"replaced", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path+".new", b, 0o644))
			require.NoError(t, os.Rename(path+".new", path))
		}, true},
		{"projection state removed", func(t *testing.T, path string) {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(filepath.Dir(path), "..", "..", "..", "..", refstate.HistoryFile))
			require.NoError(t, err)
			defer db.Close()
			_, err = db.Exec(`DELETE FROM thread_history_projection_state`)
			require.NoError(t, err)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, path, _ := incHome(t)
			appendTo(t, path, fixture)
			rh := NewRefHistory(home)
			defer rh.Close()
			if tc.name == "torn last line when read" {
				tc.change(t, path)
				rh.Project(ctx, incThread, path)
				require.Equal(t, 1, rh.fullReads)
				require.NoError(t, os.Truncate(path, int64(len(fixture))))
			} else {
				rh.Project(ctx, incThread, path)
				require.Equal(t, 1, rh.fullReads)
				tc.change(t, path)
			}
			l := &incLines{ord: 18}
			appendTo(t, path, l.started("turn-x")+l.user("turn-x", "u-x", "x")+l.completed("turn-x"))
			rh.Project(ctx, incThread, path)
			want := 1
			if tc.whole {
				want = 2
			}
			require.Equal(t, want, rh.fullReads)
		})
	}
}

// TestIncrementalProjectionForgetAndLegacy: a forgotten thread (unloaded, then resumed) is read whole again; a
// legacy rollout is read once and never projected.
func TestIncrementalProjectionForgetAndLegacy(t *testing.T) {
	fixture, _ := fixtureTurns(t)
	ctx := context.Background()
	home, path, db := incHome(t)
	appendTo(t, path, fixture)
	rh := NewRefHistory(home)
	defer rh.Close()
	rh.Project(ctx, incThread, path)
	rh.Forget(incThread)
	rh.Project(ctx, incThread, path)
	require.Equal(t, 2, rh.fullReads)

	legacy, err := os.ReadFile("testdata/legacy_no_ordinal.jsonl")
	require.NoError(t, err)
	lp := filepath.Join(filepath.Dir(path), "rollout-legacy.jsonl")
	require.NoError(t, os.WriteFile(lp, legacy, 0o644))
	rh.Project(ctx, "legacy", lp)
	rh.Project(ctx, "legacy", lp)
	require.Equal(t, 3, rh.fullReads)
	var n int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM thread_turns WHERE thread_id = 'legacy'`).Scan(&n))
	require.Zero(t, n)
}
