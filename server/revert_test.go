package server_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

func TestThreadRevert(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("answer one", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("answer two", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("answer three", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("answer four", 1)}},
	)
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "q1")
	c.WaitTurnCompleted()
	t2 := c.StartTurn(tid, "q2")
	c.WaitTurnCompleted()

	requireError(t, c.Request("thread/revert", map[string]any{"threadId": tid, "beforeTurnId": "nope"}), -32600, "turn not found: nope")

	var res struct {
		Thread struct {
			ID    string `json:"id"`
			Turns []any  `json:"turns"`
		} `json:"thread"`
		TurnsBackwardsCursor *string `json:"turnsBackwardsCursor"`
	}
	c.Result("thread/revert", map[string]any{"threadId": tid, "beforeTurnId": t2}, &res)
	require.Equal(t, tid, res.Thread.ID)
	require.Empty(t, res.Thread.Turns)
	require.NotNil(t, res.TurnsBackwardsCursor)
	c.WaitNotification("thread/reverted", nil)

	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	c.Result("thread/turns/list", map[string]any{"threadId": tid}, &page)
	require.Len(t, page.Data, 1, "the reverted turn is gone")

	c.StartTurn(tid, "q3")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	joined := strings.Join(inputTexts(reqs[2]), "\n")
	require.Contains(t, joined, "user:q1")
	require.Contains(t, joined, "assistant:answer one")
	require.NotContains(t, joined, "q2")
	require.NotContains(t, joined, "answer two")

	// a resumed thread continues from the reverted history
	c.Close()
	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: c.Home})
	c2.Initialize(false)
	var resumed struct {
		Thread struct {
			Turns []any `json:"turns"`
		} `json:"thread"`
	}
	c2.Result("thread/resume", map[string]any{"threadId": tid}, &resumed)
	require.Len(t, resumed.Thread.Turns, 2, "q1 and q3")
	c2.StartTurn(tid, "q4")
	c2.WaitTurnCompleted()
	reqs = mm.ResponseRequests()
	joined = strings.Join(inputTexts(reqs[3]), "\n")
	require.Contains(t, joined, "user:q1")
	require.Contains(t, joined, "user:q3")
	require.NotContains(t, joined, "answer two")
}
