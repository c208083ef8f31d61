package server_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
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
	m = c.Request("thread/searchOccurrences", map[string]any{"threadId": id(1), "searchTerm": "x"})
	require.NotNil(t, m.Error)
	require.Equal(t, -32601, m.Error.Code)
	require.Equal(t, "thread/searchOccurrences is not supported yet", m.Error.Message)
}
