package server_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/rollout"
)

// legacyThread writes a rollout the way versions before paginated history did: a session_meta without
// history_mode and turns told by user_message / agent_message events.
func legacyThread(t *testing.T, home, id string, created time.Time, turns int) {
	t.Helper()
	r, err := rollout.Create(home, rollout.SessionMeta{ID: id, Cwd: "/w", Originator: "x", CLIVersion: "0.100.0",
		Source: rollout.StringSource("vscode"), ModelProvider: "mock"}, created)
	require.NoError(t, err)
	for i := 1; i <= turns; i++ {
		turn := fmt.Sprintf("t-%d", i)
		require.NoError(t, r.AppendEvent(rollout.TaskStarted{TurnID: turn}))
		require.NoError(t, r.AppendEvent(rollout.UserMessage{Message: fmt.Sprintf("hello %d", i)}))
		require.NoError(t, r.AppendEvent(rollout.AgentMessage{Message: fmt.Sprintf("hi %d", i)}))
		require.NoError(t, r.AppendEvent(rollout.TaskComplete{TurnID: turn}))
	}
	require.NoError(t, r.Close())
}

// TestLegacyHistoryAsTheReference pins what the reference (0.169.0) does with a rollout whose session_meta has no
// history_mode: the thread is "legacy" (listed, read and resumed as such), its turns page with
// {"turnId", "includeAnchor"} cursors, its items cannot be paged, resume gives no backwards cursors, its forks
// are legacy (their rollouts copy its history), and no full-history deprecation notice is sent (it is about
// paginated threads).
func TestLegacyHistoryAsTheReference(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	id := "01f00000-0000-7000-8000-00000000000a"
	legacyThread(t, home, id, time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), 3)
	c := apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	mark := c.Mark()

	var list struct {
		Data []struct {
			ID          string `json:"id"`
			HistoryMode string `json:"historyMode"`
		} `json:"data"`
	}
	c.Result("thread/list", map[string]any{}, &list)
	require.Len(t, list.Data, 1)
	require.Equal(t, "legacy", list.Data[0].HistoryMode)

	var read struct {
		Thread struct {
			HistoryMode string            `json:"historyMode"`
			Turns       []json.RawMessage `json:"turns"`
		} `json:"thread"`
	}
	c.Result("thread/read", map[string]any{"threadId": id, "includeTurns": true}, &read)
	require.Equal(t, "legacy", read.Thread.HistoryMode)
	require.Len(t, read.Thread.Turns, 3)

	type page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		NextCursor      *string `json:"nextCursor"`
		BackwardsCursor *string `json:"backwardsCursor"`
	}
	turns := func(params map[string]any) page {
		var p page
		params["threadId"] = id
		c.Result("thread/turns/list", params, &p)
		return p
	}
	p1 := turns(map[string]any{"limit": 1})
	require.Equal(t, "t-3", p1.Data[0].ID)
	require.Equal(t, `{"turnId":"t-3","includeAnchor":false}`, *p1.NextCursor)
	require.Equal(t, `{"turnId":"t-3","includeAnchor":true}`, *p1.BackwardsCursor)
	p2 := turns(map[string]any{"limit": 1, "cursor": *p1.NextCursor})
	require.Equal(t, "t-2", p2.Data[0].ID)
	require.Equal(t, `{"turnId":"t-2","includeAnchor":false}`, *p2.NextCursor)
	require.Equal(t, "t-3", turns(map[string]any{"limit": 1, "cursor": *p1.BackwardsCursor}).Data[0].ID)
	asc := turns(map[string]any{"limit": 1, "sortDirection": "asc"})
	require.Equal(t, `{"turnId":"t-1","includeAnchor":true}`, *asc.BackwardsCursor)
	all := turns(map[string]any{})
	require.Len(t, all.Data, 3)
	require.Nil(t, all.NextCursor)
	requireError(t, c.Request("thread/turns/list", map[string]any{"threadId": id, "cursor": "garbage"}), -32600, "invalid cursor: garbage")

	requireError(t, c.Request("thread/items/list", map[string]any{"threadId": id}), -32601, "thread/items/list is not supported yet")

	var resume struct {
		Thread struct {
			HistoryMode string            `json:"historyMode"`
			Turns       []json.RawMessage `json:"turns"`
		} `json:"thread"`
		TurnsBackwardsCursor *string `json:"turnsBackwardsCursor"`
		ItemsBackwardsCursor *string `json:"itemsBackwardsCursor"`
	}
	raw := c.Result("thread/resume", map[string]any{"threadId": id}, &resume)
	require.Equal(t, "legacy", resume.Thread.HistoryMode)
	require.Len(t, resume.Thread.Turns, 3)
	require.Contains(t, string(raw), `"turnsBackwardsCursor":null`)
	require.Contains(t, string(raw), `"itemsBackwardsCursor":null`)
	var eph struct {
		Thread struct {
			HistoryMode string `json:"historyMode"`
		} `json:"thread"`
	}
	c.Result("thread/fork", map[string]any{"threadId": id, "ephemeral": true}, &eph)
	require.Equal(t, "legacy", eph.Thread.HistoryMode)

	// A fork is legacy too, its rollout a copy of the parent's history (no history_base).
	var fork struct {
		Thread struct {
			ID          string            `json:"id"`
			Path        string            `json:"path"`
			HistoryMode string            `json:"historyMode"`
			Turns       []json.RawMessage `json:"turns"`
		} `json:"thread"`
	}
	c.Result("thread/fork", map[string]any{"threadId": id}, &fork)
	require.Equal(t, "legacy", fork.Thread.HistoryMode)
	require.Len(t, fork.Thread.Turns, 3)
	meta, err := rollout.ReadMeta(fork.Thread.Path)
	require.NoError(t, err)
	require.Equal(t, "legacy", meta.Session.HistoryMode)
	require.Nil(t, meta.Session.HistoryBase)
	var fp page
	c.Result("thread/turns/list", map[string]any{"threadId": fork.Thread.ID, "limit": 1}, &fp)
	require.Equal(t, `{"turnId":"t-3","includeAnchor":false}`, *fp.NextCursor)
	requireError(t, c.Request("thread/items/list", map[string]any{"threadId": fork.Thread.ID}), -32601, "thread/items/list is not supported yet")
	for _, m := range c.Since(mark) {
		require.NotEqual(t, "deprecationNotice", m.Method, "no hydration notice for a legacy thread: %s", m.Raw)
	}
}

// TestLegacyThreadTurnRecordsLegacyEvents: a turn run on a resumed legacy thread is recorded as the reference
// records it there (user_message, agent_reasoning, agent_message; no item_completed), so that the thread, read
// again after a restart, still has that turn's items.
func TestLegacyThreadTurnRecordsLegacyEvents(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	id := "01f00000-0000-7000-8000-00000000000b"
	legacyThread(t, home, id, time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), 1)
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Reasoning("thinking"), mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Home: home, Model: mm})
	c.Initialize(true)
	c.Result("thread/resume", map[string]any{"threadId": id}, nil)
	c.StartTurn(id, "run it")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	c.Close()

	kinds := recordKinds(t, rolloutFile(t, home, id))
	require.NotContains(t, strings.Join(kinds, " "), "item_completed")
	require.Contains(t, kinds, "event_msg:agent_reasoning")

	c2 := apptest.Start(t, apptest.Options{Home: home, Model: mm})
	c2.Initialize(true)
	var read struct {
		Thread struct {
			Turns []struct {
				Items []map[string]any `json:"items"`
			} `json:"turns"`
		} `json:"thread"`
	}
	c2.Result("thread/read", map[string]any{"threadId": id, "includeTurns": true}, &read)
	require.Len(t, read.Thread.Turns, 2)
	var got []string
	for _, it := range read.Thread.Turns[1].Items {
		b, err := json.Marshal(map[string]any{"text": it["text"], "summary": it["summary"], "content": it["content"]})
		require.NoError(t, err)
		got = append(got, fmt.Sprint(it["type"], " ", string(b)))
	}
	require.Equal(t, []string{
		`userMessage {"content":[{"text":"run it","text_elements":[],"type":"text"}],"summary":null,"text":null}`,
		`reasoning {"content":[],"summary":["thinking"],"text":null}`,
		`agentMessage {"content":null,"summary":null,"text":"done"}`,
	}, got)
}
