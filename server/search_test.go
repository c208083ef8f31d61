package server_test

import (
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

func TestThreadSearchFindsMessages(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	id := func(i int) string { return fmt.Sprintf("01f30000-0000-7000-8000-%012d", i) }
	base := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	storedThread(t, home, id(1), "openai", rollout.StringSource("vscode"), base, "question one")
	storedThread(t, home, id(2), "mock", rollout.StringSource("vscode"), base.Add(time.Hour), "question two")
	// an agent answer appended to the second thread, as the reference records it (event and item)
	p := filepath.Join(home, "sessions", "2026", "06", "01", rollout.RolloutFileName(id(2), base.Add(time.Hour)))
	r, err := rollout.OpenAppend(p)
	require.NoError(t, err)
	require.NoError(t, r.AppendEvent(rollout.AgentMessage{Message: "The Quick answer"}))
	require.NoError(t, r.AppendEvent(rollout.ItemCompleted{ThreadID: id(2), TurnID: "t2",
		Item: rollout.AgentMessageItem{Type: "AgentMessage", ID: "m2", Content: []rollout.AgentMessageContent{{Type: "Text", Text: "The Quick answer"}}}}))
	require.NoError(t, r.Close())

	c := apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	type result struct {
		Data []struct {
			Snippet string `json:"snippet"`
			Thread  struct {
				ID string `json:"id"`
			} `json:"thread"`
		} `json:"data"`
		NextCursor *string `json:"nextCursor"`
	}
	var res result
	c.Result("thread/search", map[string]any{"searchTerm": "quick ANSWER"}, &res)
	require.Len(t, res.Data, 1)
	require.Equal(t, id(2), res.Data[0].Thread.ID)
	require.Equal(t, "The Quick answer", res.Data[0].Snippet)

	c.Result("thread/search", map[string]any{"searchTerm": "question", "limit": 1}, &res)
	require.Len(t, res.Data, 1, "every provider is searched")
	require.Equal(t, id(2), res.Data[0].Thread.ID)
	require.Equal(t, "question two", res.Data[0].Snippet)
	require.NotNil(t, res.NextCursor)
	c.Result("thread/search", map[string]any{"searchTerm": "question", "cursor": *res.NextCursor}, &res)
	require.Equal(t, id(1), res.Data[0].Thread.ID)

	m := c.Request("thread/search", map[string]any{"searchTerm": ""})
	require.NotNil(t, m.Error)
	require.Equal(t, -32600, m.Error.Code)
	require.Equal(t, "thread/search requires a non-empty searchTerm", m.Error.Message)

	// thread/searchOccurrences reads a stored thread that is not loaded.
	var occ occurrences
	c.Result("thread/searchOccurrences", map[string]any{"threadId": id(1), "searchTerm": "QUESTION"}, &occ)
	require.Len(t, occ.Data, 1)
	require.Equal(t, "u-"+id(1), occ.Data[0].ItemID)
	require.Equal(t, "t-"+id(1), occ.Data[0].TurnID)
	require.Equal(t, "question one", occ.Data[0].Snippet)
	require.Equal(t, textRange{0, 8}, occ.Data[0].SnippetMatchRange)
	require.Nil(t, occ.NextCursor)
}

type textRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

type occurrences struct {
	Data []struct {
		ItemID            string    `json:"itemId"`
		TurnID            string    `json:"turnId"`
		TurnCursor        string    `json:"turnCursor"`
		Snippet           string    `json:"snippet"`
		SnippetMatchRange textRange `json:"snippetMatchRange"`
	} `json:"data"`
	NextCursor *string `json:"nextCursor"`
}

func TestThreadSearchOccurrences(t *testing.T) {
	mm := mockmodel.New(t)
	long := strings.Repeat("alpha ", 30) + "Needle in the middle " + strings.Repeat("omega ", 30)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Reasoning("thinking about a needle"), mockmodel.Message(long, 3)}},
		finalMessage("second needle answer"),
	)
	c := startIsolated(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(nil)

	m := c.Request("thread/searchOccurrences", map[string]any{"threadId": tid, "searchTerm": "needle"})
	require.NotNil(t, m.Error)
	require.Equal(t, -32601, m.Error.Code, "no turn yet: the reference has no rollout to search")

	c.StartTurn(tid, "find the needle, NEEDLE")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	c.StartTurn(tid, "more")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

	var r occurrences
	c.Result("thread/searchOccurrences", map[string]any{"threadId": tid, "searchTerm": "needle"}, &r)
	require.Len(t, r.Data, 4, "user and agent messages, case-insensitively; not reasoning")
	require.Nil(t, r.NextCursor)
	require.Equal(t, "find the needle, NEEDLE", r.Data[0].Snippet)
	require.Equal(t, textRange{9, 15}, r.Data[0].SnippetMatchRange)
	require.Equal(t, textRange{17, 23}, r.Data[1].SnippetMatchRange)
	require.Equal(t, r.Data[0].ItemID, r.Data[1].ItemID)
	require.Equal(t, "...  "+strings.Repeat("alpha ", 8)+"Needle in the middle "+strings.Repeat("omega ", 13)+"ome ...", r.Data[2].Snippet)
	require.Equal(t, textRange{53, 59}, r.Data[2].SnippetMatchRange)
	require.Equal(t, "second needle answer", r.Data[3].Snippet)
	require.Equal(t, r.Data[0].TurnID, r.Data[2].TurnID)
	require.NotEqual(t, r.Data[0].TurnID, r.Data[3].TurnID)

	// turnCursor is a thread/turns/list cursor whose page starts at the occurrence's turn.
	for _, d := range []int{0, 3} {
		var turns struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		c.Result("thread/turns/list", map[string]any{"threadId": tid, "cursor": r.Data[d].TurnCursor, "limit": 1}, &turns)
		require.Len(t, turns.Data, 1)
		require.Equal(t, r.Data[d].TurnID, turns.Data[0].ID)
	}

	// Paging: limit 0 is 1; the cursor resumes at the next occurrence.
	var all []string
	var cursor any
	for i := 0; ; i++ {
		require.Less(t, i, 10)
		var page occurrences
		c.Result("thread/searchOccurrences", map[string]any{"threadId": tid, "searchTerm": "needle", "limit": 0, "cursor": cursor}, &page)
		require.Len(t, page.Data, 1)
		all = append(all, fmt.Sprintf("%s@%d", page.Data[0].ItemID, page.Data[0].SnippetMatchRange.Start))
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	var want []string
	for _, d := range r.Data {
		want = append(want, fmt.Sprintf("%s@%d", d.ItemID, d.SnippetMatchRange.Start))
	}
	require.Equal(t, want, all)

	c.Result("thread/searchOccurrences", map[string]any{"threadId": tid, "searchTerm": "zzz"}, &r)
	require.Empty(t, r.Data)
	require.Nil(t, r.NextCursor)

	eph := c.StartThread(map[string]any{"ephemeral": true})
	unknown := "01f20000-0000-7000-8000-000000000001"
	otherCursor := fmt.Sprintf(`{"threadId":%q,"searchTerm":"other","nextRolloutOrdinal":0,"nextOccurrenceIndex":0}`, tid)
	for _, bad := range []struct {
		params map[string]any
		code   int
		msg    string
	}{
		{map[string]any{"threadId": "x", "searchTerm": ""}, -32600, "invalid thread id: invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `x` at 1"},
		{map[string]any{"threadId": unknown, "searchTerm": ""}, -32600, "thread/searchOccurrences requires a non-empty searchTerm"},
		{map[string]any{"threadId": unknown, "searchTerm": "a", "cursor": "bad"}, -32601, "thread/searchOccurrences is not supported yet"},
		{map[string]any{"threadId": eph, "searchTerm": "a"}, -32601, "thread/searchOccurrences is not supported yet"},
		{map[string]any{"threadId": tid, "searchTerm": "needle", "cursor": "bogus"}, -32600, "invalid cursor: bogus"},
		{map[string]any{"threadId": tid, "searchTerm": "needle", "cursor": ""}, -32600, "invalid cursor: "},
		{map[string]any{"threadId": tid, "searchTerm": "needle", "cursor": otherCursor}, -32600, "invalid cursor: " + otherCursor},
	} {
		m := c.Request("thread/searchOccurrences", bad.params)
		require.NotNil(t, m.Error, "%v", bad.params)
		require.Equal(t, bad.code, m.Error.Code, "%v", bad.params)
		require.Equal(t, bad.msg, m.Error.Message)
	}
}
