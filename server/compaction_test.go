package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

func TestThreadCompactStartAndResume(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("first answer", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("SUMMARY: user asked a first question", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("later answer", 1)}},
	)
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "first question")
	c.WaitTurnCompleted()

	require.JSONEq(t, `{}`, string(c.Request("thread/compact/start", map[string]any{"threadId": tid}).Result))
	c.WaitNotification("turn/started", nil)
	st := c.WaitNotification("item/started", nil)
	require.Contains(t, string(st.Params), `"type":"contextCompaction"`)
	done := c.WaitNotification("item/completed", nil)
	require.Contains(t, string(done.Params), `"type":"contextCompaction"`)
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.Empty(t, reqs[1].Body["tools"], "the summary request offers no tools")
	compactIn := inputTexts(reqs[1])
	require.Equal(t, "assistant:first answer", compactIn[len(compactIn)-2])
	require.True(t, strings.HasPrefix(compactIn[len(compactIn)-1], "user:Your context window is about to be reset."))

	// a new server resumes the thread from its rollout: the next request carries the rewritten history
	c.Close()
	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: c.Home})
	c2.Initialize(false)
	c2.Result("thread/resume", map[string]any{"threadId": tid}, nil)
	c2.StartTurn(tid, "after compaction")
	c2.WaitTurnCompleted()
	reqs = mm.ResponseRequests()
	require.Len(t, reqs, 3)
	in := inputTexts(reqs[2])
	joined := strings.Join(in, "\n")
	require.NotContains(t, joined, "first answer", "the summarised exchange is gone")
	require.Contains(t, in, "user:first question", "the user's own words stay")
	require.Contains(t, joined, "SUMMARY: user asked a first question")
	require.Equal(t, "user:after compaction", in[len(in)-1])
}

func TestThreadCompactStartErrors(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	requireError(t, c.Request("thread/compact/start", map[string]any{"threadId": "00000000-0000-0000-0000-000000000000"}), -32600,
		"thread not found: 00000000-0000-0000-0000-000000000000")
}

func TestAutoCompaction(t *testing.T) {
	mm := mockmodel.New(t)
	big := map[string]any{"input_tokens": 5000, "output_tokens": 100, "total_tokens": 5100}
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("first answer", 1)}, Usage: big},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("AUTO SUMMARY", 1)}, Usage: big},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("second answer", 1)}, Usage: big},
	)
	c := apptest.Start(t, apptest.Options{Model: mm, Config: "model_auto_compact_token_limit = 1000"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "first question")
	c.WaitTurnCompleted()
	c.StartTurn(tid, "second question")
	st := c.WaitNotification("item/started", func(p json.RawMessage) bool { return strings.Contains(string(p), "contextCompaction") })
	require.NotNil(t, st)
	c.WaitNotification("item/completed", func(p json.RawMessage) bool { return strings.Contains(string(p), "contextCompaction") })
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3, "one compaction, not a loop of them")
	require.Empty(t, reqs[1].Body["tools"])
	in := strings.Join(inputTexts(reqs[2]), "\n")
	require.NotContains(t, in, "first answer")
	require.Contains(t, in, "AUTO SUMMARY")
	require.True(t, strings.HasSuffix(in, "user:second question"))
}
