package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/stopwatch/stopwatchtest"
)

const unknownID = "01b00000-0000-7000-8000-00000000dead"

func threadIDIs(id string) func(json.RawMessage) bool {
	return func(p json.RawMessage) bool {
		var v struct {
			ThreadID string `json:"threadId"`
			Thread   struct {
				ID string `json:"id"`
			} `json:"thread"`
		}
		return json.Unmarshal(p, &v) == nil && (v.ThreadID == id || v.Thread.ID == id)
	}
}

// oneTurnThread starts a thread and completes one turn on it.
func oneTurnThread(t *testing.T, c *apptest.Client, text string) string {
	t.Helper()
	tid := c.StartThread(nil)
	c.StartTurn(tid, text)
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	return tid
}

func TestArchiveUnarchiveForkNameDelete(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("First reply.", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("Second reply.", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := oneTurnThread(t, c, "First message")
	c.StartTurn(tid, "Second message")
	c.WaitTurnCompleted()

	// name/set: reply, notification, persisted in session_index.jsonl
	c.Result("thread/name/set", map[string]any{"threadId": tid, "name": "My thread"}, nil)
	n := c.WaitNotification("thread/name/updated", threadIDIs(tid))
	require.Contains(t, string(n.Params), `"threadName":"My thread"`)
	idx, err := os.ReadFile(filepath.Join(c.Home, "session_index.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(idx), `"thread_name":"My thread"`)

	// fork: new id, name and turns copied, thread/started
	var fk struct {
		Thread threadObj `json:"thread"`
	}
	c.Result("thread/fork", map[string]any{"threadId": tid}, &fk)
	fid := fk.Thread.ID
	require.NotEqual(t, tid, fid)
	require.Equal(t, tid, *fk.Thread.ForkedFromID)
	require.Equal(t, "My thread", *fk.Thread.Name)
	require.Len(t, fk.Thread.Turns, 2)
	c.WaitNotification("thread/started", threadIDIs(fid))

	// fork with lastTurnId keeps only the first turn; an unknown turn is an error
	var fk1 struct {
		Thread threadObj `json:"thread"`
	}
	c.Result("thread/fork", map[string]any{"threadId": tid, "lastTurnId": fk.Thread.Turns[0].ID}, &fk1)
	require.Len(t, fk1.Thread.Turns, 1)
	require.Equal(t, "First reply.", fk1.Thread.Turns[0].Items[1]["text"])
	m := c.Request("thread/fork", map[string]any{"threadId": tid, "beforeTurnId": "nope"})
	require.NotNil(t, m.Error)

	// ephemeral fork: no file
	var fke struct {
		Thread struct {
			ID        string  `json:"id"`
			Path      *string `json:"path"`
			Ephemeral bool    `json:"ephemeral"`
		} `json:"thread"`
	}
	c.Result("thread/fork", map[string]any{"threadId": tid, "ephemeral": true, "excludeTurns": true}, &fke)
	require.True(t, fke.Thread.Ephemeral)
	require.Nil(t, fke.Thread.Path)

	// archive a loaded fork: status notLoaded, thread/archived, listed only as archived
	c.Result("thread/archive", map[string]any{"threadId": fid}, nil)
	c.WaitNotification("thread/status/changed", func(p json.RawMessage) bool {
		return threadIDIs(fid)(p) && strings.Contains(string(p), "notLoaded")
	})
	c.WaitNotification("thread/archived", threadIDIs(fid))
	rolloutFile(t, c.Home, fid)
	_, err = os.Stat(filepath.Join(c.Home, "archived_sessions", filepath.Base(rolloutFile(t, c.Home, fid))))
	require.NoError(t, err)
	live, _ := listThreads(t, c, map[string]any{})
	for _, th := range live {
		require.NotEqual(t, fid, th.ID)
	}
	arch, _ := listThreads(t, c, map[string]any{"archived": true})
	require.Len(t, arch, 1)
	require.Equal(t, fid, arch[0].ID)
	require.Equal(t, "notLoaded", arch[0].Status["type"])
	var loaded struct {
		Data []string `json:"data"`
	}
	c.Result("thread/loaded/list", map[string]any{}, &loaded)
	require.NotContains(t, loaded.Data, fid)

	// unarchive: back under sessions/, thread/unarchived
	var un struct {
		Thread threadObj `json:"thread"`
	}
	c.Result("thread/unarchive", map[string]any{"threadId": fid}, &un)
	require.Equal(t, "notLoaded", un.Thread.Status["type"])
	require.Contains(t, *un.Thread.Path, string(filepath.Separator)+"sessions"+string(filepath.Separator))
	require.Equal(t, tid, *un.Thread.ForkedFromID)
	c.WaitNotification("thread/unarchived", threadIDIs(fid))

	// name/set on a stored (not loaded) thread persists too
	c.Result("thread/name/set", map[string]any{"threadId": fid, "name": "Renamed fork"}, nil)
	c.WaitNotification("thread/name/updated", threadIDIs(fid))
	require.Equal(t, "Renamed fork", *readThread(t, c, fid, false).Name)

	// delete: file gone, thread/deleted, unknown afterwards
	path := rolloutFile(t, c.Home, fid)
	c.Result("thread/delete", map[string]any{"threadId": fid}, nil)
	c.WaitNotification("thread/deleted", threadIDIs(fid))
	_, err = os.Stat(path)
	require.True(t, os.IsNotExist(err))
	m = c.Request("thread/read", map[string]any{"threadId": fid})
	require.NotNil(t, m.Error)
	require.Equal(t, "thread not loaded: "+fid, m.Error.Message)
}

func TestLifecycleUnknownAndInvalidIDs(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	// The reference words a bad id "invalid session id" in the methods that go to the rollout by id.
	const session, thread = "invalid session id: ", "invalid thread id: "
	for _, tc := range []struct {
		method, want, invalid string
	}{
		{"thread/resume", "no rollout found for thread id " + unknownID, session},
		{"thread/read", "thread not loaded: " + unknownID, thread},
		{"thread/archive", "no rollout found for thread id " + unknownID, session},
		{"thread/unarchive", "no rollout found for thread id " + unknownID, session},
		{"thread/fork", "no rollout found for thread id " + unknownID, session},
		{"thread/delete", "no rollout found for thread id " + unknownID, thread},
		{"thread/turns/list", "no rollout found for thread id " + unknownID, thread},
		{"thread/items/list", "no rollout found for thread id " + unknownID, thread},
	} {
		t.Run(strings.ReplaceAll(tc.method, "/", "_"), func(t *testing.T) {
			m := c.Request(tc.method, map[string]any{"threadId": unknownID})
			require.NotNil(t, m.Error)
			require.Equal(t, -32600, m.Error.Code)
			require.Equal(t, tc.want, m.Error.Message)
			m = c.Request(tc.method, map[string]any{"threadId": "not-a-uuid"})
			require.NotNil(t, m.Error)
			require.Equal(t, -32600, m.Error.Code)
			require.True(t, strings.HasPrefix(m.Error.Message, tc.invalid), m.Error.Message)
		})
	}
	var res struct {
		Status string `json:"status"`
	}
	c.Result("thread/unsubscribe", map[string]any{"threadId": unknownID}, &res)
	require.Equal(t, "notLoaded", res.Status)
}

func TestUnsubscribeUnloadsAfterDelay(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("hi", 1)}})
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	c := apptest.Start(t, apptest.Options{Model: mm, Clock: clock, Config: "thread_unload_delay_secs = 1"})
	c.Initialize(false)
	tid := oneTurnThread(t, c, "hello")
	var res struct {
		Status string `json:"status"`
	}
	c.Result("thread/unsubscribe", map[string]any{"threadId": tid}, &res)
	require.Equal(t, "unsubscribed", res.Status)
	c.Result("thread/unsubscribe", map[string]any{"threadId": tid}, &res)
	require.Equal(t, "notSubscribed", res.Status)
	clock.Advance(time.Second)
	c.WaitNotification("thread/status/changed", func(p json.RawMessage) bool {
		return threadIDIs(tid)(p) && strings.Contains(string(p), "notLoaded")
	})
	c.WaitNotification("thread/closed", threadIDIs(tid))
	var loaded struct {
		Data []string `json:"data"`
	}
	c.Result("thread/loaded/list", map[string]any{}, &loaded)
	require.Empty(t, loaded.Data)
	c.Result("thread/unsubscribe", map[string]any{"threadId": tid}, &res)
	require.Equal(t, "notLoaded", res.Status)
	// still readable from disk
	require.Len(t, readThread(t, c, tid, true).Turns, 1)
}

func TestResubscribeCancelsUnload(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("hi", 1)}})
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	c := apptest.Start(t, apptest.Options{Model: mm, Clock: clock, Config: "thread_unload_delay_secs = 1"})
	c.Initialize(false)
	tid := oneTurnThread(t, c, "hello")
	c.Result("thread/unsubscribe", map[string]any{"threadId": tid}, nil)
	c.Result("thread/resume", map[string]any{"threadId": tid, "excludeTurns": true}, nil)
	// Pass the delay with a second thread unloading, then check the first is still loaded.
	other := c.StartThread(nil)
	c.Result("thread/unsubscribe", map[string]any{"threadId": other}, nil)
	clock.Advance(time.Second)
	c.WaitNotification("thread/closed", threadIDIs(other))
	var loaded struct {
		Data []string `json:"data"`
	}
	c.Result("thread/loaded/list", map[string]any{}, &loaded)
	require.Equal(t, []string{tid}, loaded.Data)
}

func TestTurnsAndItemsPages(t *testing.T) {
	mm := mockmodel.New(t)
	for i := 0; i < 3; i++ {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("reply", 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := oneTurnThread(t, c, "one")
	for _, txt := range []string{"two", "three"} {
		c.StartTurn(tid, txt)
		c.WaitTurnCompleted()
	}
	for _, loadedNow := range []bool{true, false} {
		if !loadedNow {
			c.Srv.Threads().Unload(tid)
		}
		var page struct {
			Data []struct {
				ID        string           `json:"id"`
				ItemsView string           `json:"itemsView"`
				Items     []map[string]any `json:"items"`
			} `json:"data"`
			NextCursor *string `json:"nextCursor"`
		}
		c.Result("thread/turns/list", map[string]any{"threadId": tid, "limit": 2}, &page)
		require.Len(t, page.Data, 2)
		require.NotNil(t, page.NextCursor)
		require.Equal(t, "summary", page.Data[0].ItemsView, "the default view")
		require.Equal(t, "three", page.Data[0].Items[0]["content"].([]any)[0].(map[string]any)["text"], "newest first")
		newest := page.Data[0].ID
		c.Result("thread/turns/list", map[string]any{"threadId": tid, "limit": 2, "cursor": *page.NextCursor}, &page)
		require.Len(t, page.Data, 1)
		require.Nil(t, page.NextCursor)
		require.NotEqual(t, newest, page.Data[0].ID)

		var items struct {
			Data []struct {
				TurnID string         `json:"turnId"`
				Item   map[string]any `json:"item"`
			} `json:"data"`
			NextCursor *string `json:"nextCursor"`
		}
		c.Result("thread/items/list", map[string]any{"threadId": tid, "sortDirection": "asc", "limit": 4}, &items)
		require.Len(t, items.Data, 4)
		require.Equal(t, "userMessage", items.Data[0].Item["type"])
		require.NotNil(t, items.NextCursor)
		c.Result("thread/items/list", map[string]any{"threadId": tid, "sortDirection": "asc", "limit": 4, "cursor": *items.NextCursor}, &items)
		require.Len(t, items.Data, 2)
		require.Nil(t, items.NextCursor)
		c.Result("thread/items/list", map[string]any{"threadId": tid, "turnId": newest}, &items)
		require.Len(t, items.Data, 2)
	}
	m := c.Request("thread/turns/list", map[string]any{"threadId": tid, "cursor": "garbage"})
	require.NotNil(t, m.Error)
	require.Equal(t, -32600, m.Error.Code)
}
