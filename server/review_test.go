package server_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	protocol "appserver/protocol/v2"
)

func TestReviewStartInline(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Model: mm})
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a"}, args...)...)
		cmd.Dir = c.Work
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	git("init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(c.Work, "a.txt"), []byte("one\n"), 0o644))
	git("add", ".")
	git("commit", "-qm", "first")
	require.NoError(t, os.WriteFile(filepath.Join(c.Work, "a.txt"), []byte("one\ntwo\n"), 0o644))

	answer := `{"findings":[{"title":"[P1] Bad thing","body":"It breaks.","confidence_score":0.8,"priority":1,"code_location":{"absolute_file_path":"` +
		filepath.Join(c.Work, "a.txt") + `","line_range":{"start":2,"end":2}}}],"overall_correctness":"patch is incorrect","overall_explanation":"One bug.","overall_confidence_score":0.7}`
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(answer, 2)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("fixed", 1)}},
	)
	c.Initialize(false)
	tid := c.StartThread(nil)

	var res protocol.ReviewStartResponse
	c.Result("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "uncommittedChanges"}}, &res)
	require.Equal(t, tid, res.ReviewThreadID)
	require.Equal(t, protocol.TurnStatusInProgress, res.Turn.Status)
	require.Len(t, res.Turn.Items, 1)
	um, ok := res.Turn.Items[0].Value.(protocol.ThreadItemUserMessage)
	require.True(t, ok)
	require.Equal(t, res.Turn.ID, um.ID)

	var items []protocol.ThreadItemVariant
	for len(items) < 4 {
		m := c.WaitNotification("item/completed", nil)
		var n protocol.ItemCompletedNotification
		require.NoError(t, json.Unmarshal(m.Params, &n))
		require.Equal(t, res.Turn.ID, n.TurnID)
		items = append(items, n.Item.Value)
	}
	require.Equal(t, "current changes", items[0].(protocol.ThreadItemEnteredReviewMode).Review)
	require.NotEmpty(t, items[1].(protocol.ThreadItemUserMessage).Content)
	want := "One bug.\n\nReview comment:\n\n- [P1] Bad thing — " + filepath.Join(c.Work, "a.txt") + ":2-2\n  It breaks."
	require.Equal(t, want, items[2].(protocol.ThreadItemExitedReviewMode).Review)
	require.Equal(t, want, items[3].(protocol.ThreadItemAgentMessage).Text)
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 1)
	require.Empty(t, reqs[0].Body["tools"])
	in := inputTexts(reqs[0])
	require.True(t, strings.HasPrefix(in[0], "developer:# Code review"), in[0])
	require.True(t, strings.HasPrefix(in[1], "user:<environment_context>"), in[1])
	require.Contains(t, in[len(in)-1], "+two", "the diff goes with the prompt")
	for _, s := range in {
		require.NotContains(t, s, "<permissions instructions>", "the thread's history is not sent to the reviewer")
	}

	// the next turn of the thread sees the review
	c.StartTurn(tid, "fix it")
	c.WaitTurnCompleted()
	reqs = mm.ResponseRequests()
	require.Len(t, reqs, 2)
	joined := strings.Join(inputTexts(reqs[1]), "\n")
	require.Contains(t, joined, "user:<user_action>")
	require.Contains(t, joined, "assistant:"+want)
}

func TestReviewStartErrors(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	tid := c.StartThread(nil)
	requireError(t, c.Request("review/start", map[string]any{"threadId": "00000000-0000-0000-0000-000000000000", "target": map[string]any{"type": "uncommittedChanges"}}),
		-32600, "thread not found: 00000000-0000-0000-0000-000000000000")
	for msg, target := range map[string]map[string]any{
		"instructions must not be empty": {"type": "custom", "instructions": " "},
		"branch must not be empty":       {"type": "baseBranch", "branch": ""},
		"sha must not be empty":          {"type": "commit", "sha": ""},
	} {
		requireError(t, c.Request("review/start", map[string]any{"threadId": tid, "target": target}), -32600, msg)
	}
	m := c.Request("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "nope"}})
	require.NotNil(t, m.Error)
}
