package server_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// taskStartedAt returns the ordinal and byte offset of a turn's task_started line in a rollout.
func taskStartedAt(t *testing.T, path, turnID string) (ordinal, offset int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var off int64
	for _, ln := range bytes.SplitAfter(data, []byte("\n")) {
		var l struct {
			Ordinal int64 `json:"ordinal"`
			Payload struct {
				Type   string `json:"type"`
				TurnID string `json:"turn_id"`
			} `json:"payload"`
		}
		if json.Unmarshal(ln, &l) == nil && l.Payload.Type == "task_started" && l.Payload.TurnID == turnID {
			return l.Ordinal, off
		}
		off += int64(len(ln))
	}
	t.Fatalf("no task_started of %s in %s", turnID, path)
	return 0, 0
}

// thread/revert continues the thread in a new rollout file, as the reference: rollout-<time>-<thread
// id>_<segment id>.jsonl, starting with the session_meta whose history_base references the part of the
// previous file before the reverted turn (by that file's segment id: the thread id for the first file),
// ordinals going on from there; the old files are left as they were. thread/read, thread/list and a
// resume after a restart use the newest file.
func TestThreadRevertWritesNewRollout(t *testing.T) {
	mm := mockmodel.New(t)
	for _, a := range []string{"one", "two", "three", "four"} {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("answer "+a, 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := oneTurnThread(t, c, "q1")
	t2 := c.StartTurn(tid, "q2")
	c.WaitTurnCompleted()
	first := readThread(t, c, tid, false).Path
	require.NotNil(t, first)
	before, err := os.ReadFile(*first)
	require.NoError(t, err)

	revert := func(turnID, prevPath, prevSegment string) string {
		t.Helper()
		ord, off := taskStartedAt(t, prevPath, turnID)
		var res struct {
			Thread struct {
				Path string `json:"path"`
			} `json:"thread"`
		}
		c.Result("thread/revert", map[string]any{"threadId": tid, "beforeTurnId": turnID}, &res)
		c.WaitNotification("thread/reverted", nil)
		require.Regexp(t, regexp.MustCompile(`/rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-`+tid+`_[0-9a-f-]{36}\.jsonl$`), res.Thread.Path)
		data, err := os.ReadFile(res.Thread.Path)
		require.NoError(t, err)
		var head struct {
			Ordinal int64  `json:"ordinal"`
			Type    string `json:"type"`
			Payload struct {
				ID          string `json:"id"`
				HistoryMode string `json:"history_mode"`
				HistoryBase struct {
					ThreadID            string `json:"thread_id"`
					EndOrdinalExclusive int64  `json:"end_ordinal_exclusive"`
					EndByteOffset       int64  `json:"end_byte_offset"`
				} `json:"history_base"`
			} `json:"payload"`
		}
		require.NoError(t, json.Unmarshal(bytes.SplitN(data, []byte("\n"), 2)[0], &head))
		require.Equal(t, "session_meta", head.Type)
		require.Equal(t, ord, head.Ordinal, "ordinals go on from the cut")
		require.Equal(t, tid, head.Payload.ID)
		require.Equal(t, "paginated", head.Payload.HistoryMode)
		require.Equal(t, prevSegment, head.Payload.HistoryBase.ThreadID)
		require.Equal(t, ord, head.Payload.HistoryBase.EndOrdinalExclusive)
		require.Equal(t, off, head.Payload.HistoryBase.EndByteOffset)
		return res.Thread.Path
	}
	second := revert(t2, *first, tid)
	after, err := os.ReadFile(*first)
	require.NoError(t, err)
	require.Equal(t, before, after, "the old file is left as it was")

	t3 := c.StartTurn(tid, "q3")
	c.WaitTurnCompleted()
	seg := regexp.MustCompile(`_([0-9a-f-]{36})\.jsonl$`).FindStringSubmatch(second)[1]
	third := revert(t3, second, seg)
	require.Equal(t, filepath.Dir(*first), filepath.Dir(third))
	t4 := c.StartTurn(tid, "q4")
	c.WaitTurnCompleted()

	check := func(c *apptest.Client) {
		t.Helper()
		th := readThread(t, c, tid, true)
		require.Equal(t, third, *th.Path)
		require.Len(t, th.Turns, 2, "q1 and q4")
		data, _ := listThreads(t, c, map[string]any{})
		require.Len(t, data, 1)
		require.Equal(t, tid, data[0].ID)
		require.Equal(t, third, *data[0].Path)
	}
	check(c)
	c.Close()
	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: c.Home})
	c2.Initialize(false)
	check(c2)
	// resumed from the newest file, the backwards cursor carries the last turn's ordinal in it
	var res struct {
		TurnsBackwardsCursor *string `json:"turnsBackwardsCursor"`
	}
	c2.Result("thread/resume", map[string]any{"threadId": tid}, &res)
	ord, _ := taskStartedAt(t, third, t4)
	require.Equal(t, int(ord), decodeHistoryCursor(t, res.TurnsBackwardsCursor).Ordinal)
}

// Archiving, unarchiving and deleting a reverted thread take its older rollout files along, so that none
// of them is listed in its place.
func TestRevertedThreadArchiveDelete(t *testing.T) {
	mm := mockmodel.New(t)
	for _, a := range []string{"one", "two"} {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("answer "+a, 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := oneTurnThread(t, c, "q1")
	t2 := c.StartTurn(tid, "q2")
	c.WaitTurnCompleted()
	c.Result("thread/revert", map[string]any{"threadId": tid, "beforeTurnId": t2}, nil)
	files := func(dir string) int {
		m, _ := filepath.Glob(filepath.Join(c.Home, dir, "rollout-*-"+tid+"*.jsonl"))
		return len(m)
	}
	require.Equal(t, 2, files("sessions/*/*/*"))
	c.Result("thread/archive", map[string]any{"threadId": tid}, nil)
	require.Equal(t, 0, files("sessions/*/*/*"))
	require.Equal(t, 2, files("archived_sessions"))
	data, _ := listThreads(t, c, map[string]any{})
	require.Empty(t, data, "no older file is listed in its place")
	c.Result("thread/unarchive", map[string]any{"threadId": tid}, nil)
	require.Equal(t, 2, files("sessions/*/*/*"))
	data, _ = listThreads(t, c, map[string]any{})
	require.Len(t, data, 1)
	require.Regexp(t, regexp.MustCompile(tid+`_[0-9a-f-]{36}\.jsonl$`), *data[0].Path)
	c.Result("thread/delete", map[string]any{"threadId": tid}, nil)
	require.Equal(t, 0, files("sessions/*/*/*")+files("archived_sessions"))
	data, _ = listThreads(t, c, map[string]any{})
	require.Empty(t, data)
}

// A fork of a reverted thread references the thread's current file by its segment id, so it inherits
// the history after the revert; cut before a turn of an older file, it references that file.
func TestForkOfRevertedThread(t *testing.T) {
	mm := mockmodel.New(t)
	for _, a := range []string{"one", "two", "three"} {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("answer "+a, 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true) // experimental: thread/fork.beforeTurnId
	tid := oneTurnThread(t, c, "q1")
	t1 := readThread(t, c, tid, true).Turns[0].ID
	t2 := c.StartTurn(tid, "q2")
	c.WaitTurnCompleted()
	c.Result("thread/revert", map[string]any{"threadId": tid, "beforeTurnId": t2}, nil)
	t3 := c.StartTurn(tid, "q3")
	c.WaitTurnCompleted()
	fork := func(params map[string]any) []string {
		t.Helper()
		params["threadId"] = tid
		var res struct {
			Thread struct {
				ID string `json:"id"`
			} `json:"thread"`
		}
		c.Result("thread/fork", params, &res)
		var ids []string
		for _, tu := range readThread(t, c, res.Thread.ID, true).Turns {
			ids = append(ids, tu.ID)
		}
		return ids
	}
	require.Equal(t, []string{t1, t3}, fork(map[string]any{}))
	require.Equal(t, []string{t1}, fork(map[string]any{"beforeTurnId": t3}))
	require.Empty(t, fork(map[string]any{"beforeTurnId": t1}))
}

// With the reference's history database in CODEX_HOME, a reverted thread's later file is projected under
// its segment id (the reference keys its rows so, and reads a reverted thread's turns through them); the
// turns of the first file stay under the thread id.
func TestRevertProjectsSegmentsForReference(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	ddl, err := os.ReadFile("../refstate/testdata/thread_history_1.sql")
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(home, "thread_history_1.sqlite"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec(string(ddl))
	require.NoError(t, err)
	_, err = db.Exec(`PRAGMA journal_mode=WAL`)
	require.NoError(t, err)

	mm := mockmodel.New(t)
	for _, a := range []string{"one", "two", "three"} {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("answer "+a, 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c.Initialize(false)
	tid := oneTurnThread(t, c, "q1")
	t1 := readThread(t, c, tid, true).Turns[0].ID
	t2 := c.StartTurn(tid, "q2")
	c.WaitTurnCompleted()
	var res struct {
		Thread struct {
			Path string `json:"path"`
		} `json:"thread"`
	}
	c.Result("thread/revert", map[string]any{"threadId": tid, "beforeTurnId": t2}, &res)
	seg := regexp.MustCompile(`_([0-9a-f-]{36})\.jsonl$`).FindStringSubmatch(res.Thread.Path)[1]
	t3 := c.StartTurn(tid, "q3")
	c.WaitTurnCompleted()

	rows, err := db.Query(`SELECT thread_id, turn_id FROM thread_turns ORDER BY rollout_ordinal`)
	require.NoError(t, err)
	var got [][2]string
	for rows.Next() {
		var r [2]string
		require.NoError(t, rows.Scan(&r[0], &r[1]))
		got = append(got, r)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, [][2]string{{tid, t1}, {tid, t2}, {seg, t3}}, got)
}
