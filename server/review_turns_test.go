package server_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	protocol "appserver/protocol/v2"
	"appserver/review"
)

// readTurns answers thread/read with turns as protocol turns.
func readTurns(t *testing.T, c *apptest.Client, tid string) []protocol.Turn {
	t.Helper()
	var res struct {
		Thread struct {
			Turns []protocol.Turn `json:"turns"`
		} `json:"thread"`
	}
	c.Result("thread/read", map[string]any{"threadId": tid, "includeTurns": true}, &res)
	return res.Thread.Turns
}

func itemTypes(t *testing.T, items []protocol.ThreadItem) []string {
	t.Helper()
	out := []string{}
	for _, it := range items {
		var h struct {
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal(must(json.Marshal(it)), &h))
		out = append(out, h.Type)
	}
	return out
}

// rolloutEvents lists a rollout's event_msg payloads.
func rolloutEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(must(os.ReadFile(path)))), "\n") {
		var rec struct {
			Type    string         `json:"type"`
			Payload map[string]any `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec.Type == "event_msg" {
			out = append(out, rec.Payload)
		}
	}
	return out
}

// After a review, thread/read and thread/turns/list show the reviewer's turn on its own (the id
// turn/started named, rootTurnId the review turn, interrupted and never completed: the prompt and the
// reviewer's tool items) before the review turn (enteredReviewMode, exitedReviewMode, agentMessage), as
// the reference does, the same while the thread is loaded and read back from the rollout after a
// restart. The rollout records them as the reference's does: the review turn has no task_started of
// its own, the reviewer's task_started names it as parent and root, its items name the reviewer's
// thread, which has a rollout of its own (not listed by thread/list). The next turn of a fresh thread
// sends the hand-off before the thread's initial context, as the reference does.
func TestReviewTurnsReadAsReference(t *testing.T) {
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Model: mm})
	reviewRepo(t, c)
	answer := `{"findings":[],"overall_correctness":"patch is correct","overall_explanation":"Looks fine.","overall_confidence_score":0.9}`
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_r1", map[string]any{"cmd": "git diff HEAD"})}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(answer, 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("fixed", 1)}},
	)
	c.Initialize(false)
	tid := c.StartThread(nil)
	var res protocol.ReviewStartResponse
	c.Result("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "uncommittedChanges"}}, &res)
	var started protocol.TurnStartedNotification
	require.NoError(t, json.Unmarshal(c.WaitNotification("turn/started", nil).Params, &started))
	sub, rid := started.Turn.ID, res.Turn.ID
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	next := c.StartTurn(tid, "fix it")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

	check := func(turns []protocol.Turn) {
		t.Helper()
		require.Len(t, turns, 3)
		rv, rt, nx := turns[0], turns[1], turns[2]
		require.Equal(t, sub, rv.ID)
		require.Equal(t, rid, *rv.RootTurnID)
		require.Equal(t, protocol.TurnStatusInterrupted, rv.Status)
		require.NotNil(t, rv.StartedAt)
		require.Nil(t, rv.CompletedAt)
		require.Nil(t, rv.DurationMs)
		require.Equal(t, []string{"userMessage", "commandExecution"}, itemTypes(t, rv.Items))
		um := rv.Items[0].Value.(protocol.ThreadItemUserMessage)
		require.NotNil(t, um.Content[0].Value.(protocol.UserInputText).TextElements, "text_elements: [] as the reference")

		require.Equal(t, rid, rt.ID)
		require.Equal(t, rid, *rt.RootTurnID)
		require.Equal(t, protocol.TurnStatusCompleted, rt.Status)
		require.NotNil(t, rt.CompletedAt)
		require.Equal(t, []string{"enteredReviewMode", "exitedReviewMode", "agentMessage"}, itemTypes(t, rt.Items))

		require.Equal(t, next, nx.ID)
		require.Equal(t, []string{"userMessage", "agentMessage"}, itemTypes(t, nx.Items))
	}
	loaded := readTurns(t, c, tid)
	check(loaded)

	var list struct {
		Data []protocol.Turn `json:"data"`
	}
	c.Result("thread/turns/list", map[string]any{"threadId": tid}, &list)
	require.Len(t, list.Data, 3)
	require.Equal(t, []string{next, rid, sub}, []string{list.Data[0].ID, list.Data[1].ID, list.Data[2].ID})
	require.Equal(t, []string{"agentMessage"}, itemTypes(t, list.Data[1].Items))
	require.Equal(t, []string{"userMessage"}, itemTypes(t, list.Data[2].Items))

	// the next turn: hand-off and review, then the new thread's initial context, then the input
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	in := inputTexts(reqs[2])
	at := func(prefix string) int {
		for i, s := range in {
			if strings.HasPrefix(s, prefix) {
				return i
			}
		}
		t.Fatalf("no %q in %q", prefix, in)
		return -1
	}
	require.Less(t, at("user:<user_action>"), at("assistant:Looks fine."))
	require.Less(t, at("assistant:Looks fine."), at("developer:<permissions instructions>"))
	require.Less(t, at("developer:<permissions instructions>"), at("user:<environment_context>"))
	require.Less(t, at("user:<environment_context>"), at("user:fix it"))

	home := c.Home
	c.Close()

	reviewer := reqs[0].Header.Get("thread-id")
	require.NotEqual(t, tid, reviewer)
	var starts []map[string]any
	subItems := 0
	for _, ev := range rolloutEvents(t, rolloutFile(t, home, tid)) {
		switch ev["type"] {
		case "task_started":
			starts = append(starts, ev)
		case "item_completed":
			if ev["turn_id"] == sub {
				subItems++
				require.Equal(t, reviewer, ev["thread_id"], "the reviewer's items name its thread")
			}
		}
	}
	require.Len(t, starts, 2, "no task_started for the review turn itself")
	require.Equal(t, sub, starts[0]["turn_id"])
	require.Equal(t, rid, starts[0]["root_turn_id"])
	require.Equal(t, rid, starts[0]["turn_attribution"].(map[string]any)["parent_turn_id"])
	require.Equal(t, 2, subItems)

	// the reviewer has a rollout of its own: a review sub-agent of the thread, in its session
	path := rolloutFile(t, home, reviewer)
	var meta struct {
		Payload map[string]any `json:"payload"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(string(must(os.ReadFile(path))), "\n", 2)[0]), &meta))
	require.Equal(t, reviewer, meta.Payload["id"])
	require.Equal(t, tid, meta.Payload["session_id"])
	require.Equal(t, tid, meta.Payload["parent_thread_id"])
	require.Equal(t, map[string]any{"subagent": "review"}, meta.Payload["source"])
	require.Equal(t, "subagent", meta.Payload["thread_source"])
	var kinds []string
	for _, ev := range rolloutEvents(t, path) {
		kinds = append(kinds, ev["type"].(string))
		if ev["type"] == "task_started" || ev["type"] == "task_complete" {
			require.Equal(t, sub, ev["turn_id"])
			require.Equal(t, rid, ev["root_turn_id"])
		}
	}
	require.Equal(t, []string{"task_started", "task_complete"}, kinds)

	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c2.Initialize(false)
	listed, _ := listThreads(t, c2, map[string]any{})
	require.Len(t, listed, 1, "the reviewer's thread is not listed")
	require.Equal(t, tid, listed[0].ID)
	stored := readTurns(t, c2, tid)
	check(stored)
	require.JSONEq(t, string(must(json.Marshal(loaded))), string(must(json.Marshal(stored))))
}

// An interrupted review records its exit with no output and the cut-short message without showing
// them; thread/read shows them in the review turn, after the reviewer's interrupted turn, as the
// reference does.
func TestReviewInterruptRecordsHiddenExit(t *testing.T) {
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Model: mm})
	reviewRepo(t, c)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(120)}})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	var res protocol.ReviewStartResponse
	c.Result("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "uncommittedChanges"}}, &res)
	var started protocol.TurnStartedNotification
	require.NoError(t, json.Unmarshal(c.WaitNotification("turn/started", nil).Params, &started))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, mm.WaitRequests(ctx, 1))
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": started.Turn.ID}, nil)
	require.Equal(t, "interrupted", c.WaitTurnCompleted()["status"])
	require.NotContains(t, methodsSince(t, c, mark), "item/completed exitedReviewMode", "nothing more is shown")

	check := func(turns []protocol.Turn) {
		t.Helper()
		require.Len(t, turns, 2)
		require.Equal(t, started.Turn.ID, turns[0].ID)
		require.Equal(t, protocol.TurnStatusInterrupted, turns[0].Status)
		require.Equal(t, []string{"userMessage"}, itemTypes(t, turns[0].Items))
		require.Equal(t, res.Turn.ID, turns[1].ID)
		require.Equal(t, protocol.TurnStatusInterrupted, turns[1].Status)
		require.Equal(t, []string{"enteredReviewMode", "exitedReviewMode", "agentMessage"}, itemTypes(t, turns[1].Items))
		require.Equal(t, "Reviewer failed to output a response.", turns[1].Items[1].Value.(protocol.ThreadItemExitedReviewMode).Review)
		require.Equal(t, review.CutShortMessage, turns[1].Items[2].Value.(protocol.ThreadItemAgentMessage).Text)
	}
	check(readTurns(t, c, tid))
	home := c.Home
	c.Close()

	var exited map[string]any
	for _, ev := range rolloutEvents(t, rolloutFile(t, home, tid)) {
		if it, ok := ev["item"].(map[string]any); ok && it["type"] == "ExitedReviewMode" {
			exited = it
		}
	}
	require.NotNil(t, exited, "ExitedReviewMode recorded")
	out, ok := exited["review_output"]
	require.True(t, ok)
	require.Nil(t, out)

	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c2.Initialize(false)
	check(readTurns(t, c2, tid))
}
