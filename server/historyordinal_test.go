package server_test

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// rolloutOrdinals reads a rollout's task_started ordinals by turn id and item_completed ordinals by item id.
func rolloutOrdinals(t *testing.T, path string) (turns, items map[string]int) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	turns, items = map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l struct {
			Ordinal int `json:"ordinal"`
			Type    string
			Payload struct {
				Type   string `json:"type"`
				TurnID string `json:"turn_id"`
				Item   struct {
					ID string `json:"id"`
				} `json:"item"`
			} `json:"payload"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		switch l.Payload.Type {
		case "task_started":
			turns[l.Payload.TurnID] = l.Ordinal
		case "item_completed":
			if _, seen := items[l.Payload.Item.ID]; !seen {
				items[l.Payload.Item.ID] = l.Ordinal
			}
		}
	}
	require.NoError(t, sc.Err())
	return turns, items
}

type historyCursor struct {
	ThreadID      string `json:"requestedThreadId"`
	Ordinal       int    `json:"rolloutOrdinal"`
	IncludeAnchor bool   `json:"includeAnchor"`
	Scope         struct {
		Kind string `json:"kind"`
	} `json:"scope"`
}

func decodeHistoryCursor(t *testing.T, raw *string) historyCursor {
	t.Helper()
	require.NotNil(t, raw)
	var c historyCursor
	require.NoError(t, json.Unmarshal([]byte(*raw), &c))
	return c
}

// History cursors (thread/turns/list, thread/items/list, thread/resume's backwards cursors) carry, as the
// reference's, the rollout ordinal of the anchor's record: task_started for a turn, item_completed for an
// item; and they page from there.
func TestHistoryCursorsCarryRolloutOrdinals(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("one", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("two", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true) // experimental: thread/searchOccurrences
	tid := oneTurnThread(t, c, "first")
	c.StartTurn(tid, "second")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

	var read struct {
		Thread struct {
			Path  string `json:"path"`
			Turns []struct {
				ID    string `json:"id"`
				Items []struct {
					ID string `json:"id"`
				} `json:"items"`
			} `json:"turns"`
		} `json:"thread"`
	}
	c.Result("thread/read", map[string]any{"threadId": tid, "includeTurns": true}, &read)
	require.Len(t, read.Thread.Turns, 2)
	turnOrd, itemOrd := rolloutOrdinals(t, read.Thread.Path)
	t1, t2 := read.Thread.Turns[0].ID, read.Thread.Turns[1].ID
	require.Greater(t, turnOrd[t2], 1, "an ordinal, not a position")
	var itemIDs []string
	for _, tu := range read.Thread.Turns {
		for _, it := range tu.Items {
			itemIDs = append(itemIDs, it.ID)
		}
	}
	require.Len(t, itemIDs, 4)

	type turnsPage struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		NextCursor      *string `json:"nextCursor"`
		BackwardsCursor *string `json:"backwardsCursor"`
	}
	var p turnsPage
	c.Result("thread/turns/list", map[string]any{"threadId": tid, "limit": 1}, &p)
	require.Equal(t, t2, p.Data[0].ID)
	next := decodeHistoryCursor(t, p.NextCursor)
	require.Equal(t, historyCursor{ThreadID: tid, Ordinal: turnOrd[t2], Scope: struct {
		Kind string `json:"kind"`
	}{"turns"}}, next)
	back := decodeHistoryCursor(t, p.BackwardsCursor)
	require.Equal(t, turnOrd[t2], back.Ordinal)
	require.True(t, back.IncludeAnchor)
	c.Result("thread/turns/list", map[string]any{"threadId": tid, "limit": 1, "cursor": *p.NextCursor}, &p)
	require.Equal(t, t1, p.Data[0].ID)
	require.Nil(t, p.NextCursor)
	c.Result("thread/turns/list", map[string]any{"threadId": tid, "limit": 1, "sortDirection": "asc"}, &p)
	require.Equal(t, t1, p.Data[0].ID)
	require.Equal(t, turnOrd[t1], decodeHistoryCursor(t, p.NextCursor).Ordinal)
	c.Result("thread/turns/list", map[string]any{"threadId": tid, "limit": 5, "sortDirection": "asc", "cursor": *p.NextCursor}, &p)
	require.Len(t, p.Data, 1)
	require.Equal(t, t2, p.Data[0].ID)

	var ip struct {
		Data []struct {
			Item struct {
				ID string `json:"id"`
			} `json:"item"`
		} `json:"data"`
		NextCursor      *string `json:"nextCursor"`
		BackwardsCursor *string `json:"backwardsCursor"`
	}
	c.Result("thread/items/list", map[string]any{"threadId": tid, "limit": 1}, &ip)
	require.Equal(t, itemIDs[0], ip.Data[0].Item.ID)
	n := decodeHistoryCursor(t, ip.NextCursor)
	require.Equal(t, itemOrd[itemIDs[0]], n.Ordinal)
	require.Equal(t, "itemsByCreatedAtOrdinal", n.Scope.Kind)
	c.Result("thread/items/list", map[string]any{"threadId": tid, "limit": 2, "cursor": *ip.NextCursor}, &ip)
	require.Equal(t, itemIDs[1], ip.Data[0].Item.ID)
	require.Equal(t, itemIDs[2], ip.Data[1].Item.ID)
	require.Equal(t, itemOrd[itemIDs[2]], decodeHistoryCursor(t, ip.NextCursor).Ordinal)
	require.Equal(t, itemOrd[itemIDs[1]], decodeHistoryCursor(t, ip.BackwardsCursor).Ordinal)

	// thread/searchOccurrences: the hit's turnCursor and the next item's nextRolloutOrdinal
	var so struct {
		Data []struct {
			ItemID     string `json:"itemId"`
			TurnCursor string `json:"turnCursor"`
		} `json:"data"`
		NextCursor *string `json:"nextCursor"`
	}
	c.Result("thread/searchOccurrences", map[string]any{"threadId": tid, "searchTerm": "e", "limit": 1}, &so)
	require.Equal(t, itemIDs[1], so.Data[0].ItemID, `"one"`)
	require.Equal(t, turnOrd[t1], decodeHistoryCursor(t, &so.Data[0].TurnCursor).Ordinal)
	require.NotNil(t, so.NextCursor)
	var sc struct {
		Next int `json:"nextRolloutOrdinal"`
	}
	require.NoError(t, json.Unmarshal([]byte(*so.NextCursor), &sc))
	require.Equal(t, itemOrd[itemIDs[2]], sc.Next, `"second"`)
	c.Result("thread/searchOccurrences", map[string]any{"threadId": tid, "searchTerm": "e", "limit": 1, "cursor": *so.NextCursor}, &so)
	require.Equal(t, itemIDs[2], so.Data[0].ItemID)
	require.Equal(t, turnOrd[t2], decodeHistoryCursor(t, &so.Data[0].TurnCursor).Ordinal)

	var res struct {
		TurnsBackwardsCursor *string `json:"turnsBackwardsCursor"`
		ItemsBackwardsCursor *string `json:"itemsBackwardsCursor"`
	}
	c.Result("thread/resume", map[string]any{"threadId": tid}, &res)
	require.Equal(t, turnOrd[t2], decodeHistoryCursor(t, res.TurnsBackwardsCursor).Ordinal)
	require.Equal(t, itemOrd[itemIDs[3]], decodeHistoryCursor(t, res.ItemsBackwardsCursor).Ordinal)
}
