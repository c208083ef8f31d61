package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	protocol "appserver/protocol/v2"
	"appserver/review"
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
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_r1", map[string]any{"cmd": "git diff HEAD"})}},
		mockmodel.Response{Items: []mockmodel.Item{{Type: "message", ID: "msg_rev", Text: answer, Chunks: 2}}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("fixed", 1)}},
	)
	c.Initialize(false)
	// the reviewer runs its commands without asking, whatever the thread's approval policy
	tid := c.StartThread(map[string]any{"approvalPolicy": "untrusted"})
	mark := c.Mark()

	var res protocol.ReviewStartResponse
	c.Result("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "uncommittedChanges"}, "delivery": "inline"}, &res)
	require.Equal(t, tid, res.ReviewThreadID)
	require.Equal(t, protocol.TurnStatusInProgress, res.Turn.Status)
	require.Len(t, res.Turn.Items, 1)
	um, ok := res.Turn.Items[0].Value.(protocol.ThreadItemUserMessage)
	require.True(t, ok)
	require.Equal(t, res.Turn.ID, um.ID)
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

	// the reference's order: the answer, enteredReviewMode (between two warnings about the unknown
	// model), the turn announced under the reviewer's turn id, the reviewer's items, its answer only
	// started, then exitedReviewMode and the rendered review
	var seq []string
	var cmd protocol.ThreadItemCommandExecution
	var texts []string
	for _, m := range c.Since(mark) {
		switch m.Method {
		case "":
			if m.Result != nil {
				seq = append(seq, "response")
			}
		case "item/started", "item/completed":
			var n struct {
				TurnID string              `json:"turnId"`
				Item   protocol.ThreadItem `json:"item"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &n))
			require.Equal(t, res.Turn.ID, n.TurnID)
			raw, _ := json.Marshal(n.Item)
			var typ struct {
				Type string `json:"type"`
			}
			require.NoError(t, json.Unmarshal(raw, &typ))
			seq = append(seq, m.Method+" "+typ.Type)
			switch v := n.Item.Value.(type) {
			case protocol.ThreadItemCommandExecution:
				cmd = v
			case protocol.ThreadItemExitedReviewMode:
				texts = append(texts, v.Review)
			case protocol.ThreadItemAgentMessage:
				texts = append(texts, v.Text)
			}
		case "turn/started":
			var n protocol.TurnStartedNotification
			require.NoError(t, json.Unmarshal(m.Params, &n))
			require.NotEqual(t, res.Turn.ID, n.Turn.ID, "turn/started names the reviewer's turn")
			require.Equal(t, res.Turn.ID, *n.Turn.RootTurnID)
			seq = append(seq, m.Method)
		case "warning", "thread/status/changed", "turn/completed", "item/commandExecution/requestApproval":
			seq = append(seq, m.Method)
		}
	}
	require.Equal(t, []string{
		"response", "warning", "item/started enteredReviewMode", "item/completed enteredReviewMode", "warning",
		"thread/status/changed", "turn/started", "item/started userMessage", "item/completed userMessage",
		"item/started commandExecution", "item/completed commandExecution", "item/started agentMessage",
		"item/started exitedReviewMode", "item/completed exitedReviewMode", "item/started agentMessage",
		"item/completed agentMessage", "thread/status/changed", "turn/completed",
	}, seq)
	require.Equal(t, "/bin/bash -lc 'git diff HEAD'", cmd.Command)
	require.NotNil(t, cmd.AggregatedOutput)
	require.Contains(t, *cmd.AggregatedOutput, "+two")
	want := "One bug.\n\nReview comment:\n\n- [P1] Bad thing — " + filepath.Join(c.Work, "a.txt") + ":2-2\n  It breaks."
	require.Equal(t, []string{"", want, want, want, want}, texts, "the reviewer's own message is started empty and never completed")

	// the reviewer's conversation: its own instructions, the environment and the prompt (not the
	// thread's history), the thread's shell tools without goals or web search, and a second request
	// with the command's output; requests say they come from a review sub-agent of the thread
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	for i, r := range reqs {
		tools := toolNames(r.Body)
		require.Contains(t, tools, "exec_command")
		require.Contains(t, tools, "write_stdin")
		require.NotContains(t, tools, "get_goal")
		require.NotContains(t, tools, "web_search")
		require.Equal(t, "review", r.Header.Get("x-openai-subagent"))
		require.Equal(t, tid, r.Header.Get("x-codex-parent-thread-id"))
		require.Equal(t, tid, r.Header.Get("session-id"))
		require.NotEqual(t, tid, r.Header.Get("thread-id"), "the reviewer is a conversation of its own")
		in := inputTexts(r)
		require.Len(t, in, 3, "request %d: %v", i, in)
		require.True(t, strings.HasPrefix(in[0], "developer:# Code review"), in[0])
		require.True(t, strings.HasPrefix(in[1], "user:<environment_context>"), in[1])
		require.True(t, strings.HasPrefix(in[2], "user:Review the changes in the working tree"), in[2])
	}
	second := reqs[1].Body["input"].([]any)
	require.Len(t, second, 5)
	require.Equal(t, "function_call", second[3].(map[string]any)["type"])
	out := second[4].(map[string]any)
	require.Equal(t, "function_call_output", out["type"])
	require.Contains(t, out["output"], "+two")

	// the next turn of the thread sees the review, not the reviewer's conversation
	c.StartTurn(tid, "fix it")
	c.WaitTurnCompleted()
	reqs = mm.ResponseRequests()
	require.Len(t, reqs, 3)
	require.Empty(t, reqs[2].Header.Get("x-openai-subagent"))
	joined := strings.Join(inputTexts(reqs[2]), "\n")
	require.Contains(t, joined, "user:<user_action>")
	require.Contains(t, joined, "assistant:"+want)
	require.NotContains(t, joined, "# Code review")
	require.NotContains(t, fmt.Sprint(reqs[2].Body["input"]), "function_call")
}

// reviewRepo makes c's working directory a repository with an uncommitted change.
func reviewRepo(t *testing.T, c *apptest.Client) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
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
}

// methodsSince lists the notification methods (item ones with their item type) since mark.
func methodsSince(t *testing.T, c *apptest.Client, mark int, keep ...string) []string {
	var seq []string
	for _, m := range c.Since(mark) {
		switch m.Method {
		case "item/started", "item/completed":
			var n struct {
				Item struct {
					Type string `json:"type"`
				} `json:"item"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &n))
			seq = append(seq, m.Method+" "+n.Item.Type)
		default:
			for _, k := range keep {
				if m.Method == k {
					seq = append(seq, m.Method)
				}
			}
		}
	}
	return seq
}

func TestReviewStartModelFailure(t *testing.T) {
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Model: mm})
	reviewRepo(t, c)
	mm.Enqueue(
		mockmodel.Response{HTTPStatus: 400, ErrorBody: map[string]any{"error": map[string]any{"message": "bad review request"}}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}},
	)
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	var res protocol.ReviewStartResponse
	c.Result("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "uncommittedChanges"}}, &res)
	done := c.WaitTurnCompleted()
	require.Equal(t, "failed", done["status"])
	require.Equal(t, res.Turn.ID, done["id"])
	require.Contains(t, done["error"].(map[string]any)["message"], "bad review request")

	// the reference's order: systemError and the error before the review's last items
	require.Equal(t, []string{
		"warning", "item/started enteredReviewMode", "item/completed enteredReviewMode", "warning", "thread/status/changed", "turn/started",
		"item/started userMessage", "item/completed userMessage", "thread/status/changed", "error",
		"item/started exitedReviewMode", "item/completed exitedReviewMode", "item/started agentMessage", "item/completed agentMessage",
		"turn/completed",
	}, methodsSince(t, c, mark, "warning", "thread/status/changed", "turn/started", "error", "turn/completed"))
	var agent protocol.ItemCompletedNotification
	for _, m := range c.Since(mark) {
		if m.Method == "item/completed" {
			require.NoError(t, json.Unmarshal(m.Params, &agent))
		}
	}
	require.Equal(t, review.CutShortMessage, agent.Item.Value.(protocol.ThreadItemAgentMessage).Text)

	c.StartTurn(tid, "what happened?")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	joined := strings.Join(inputTexts(reqs[1]), "\n")
	require.Contains(t, joined, "user:"+review.HandoffCutShort())
	require.Contains(t, joined, "assistant:"+review.CutShortMessage)
}

func TestReviewStartInterrupt(t *testing.T) {
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Model: mm})
	reviewRepo(t, c)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(120)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}},
	)
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	var res protocol.ReviewStartResponse
	c.Result("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "uncommittedChanges"}}, &res)
	var started protocol.TurnStartedNotification
	require.NoError(t, json.Unmarshal(c.WaitNotification("turn/started", nil).Params, &started))
	sub := started.Turn.ID
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, mm.WaitRequests(ctx, 1))

	// a review takes no input while it runs: turn/steer (which sees the review turn) and turn/start
	// are refused as the reference refuses them
	requireError(t, c.Request("turn/steer", map[string]any{"threadId": tid, "expectedTurnId": sub, "input": []map[string]any{{"type": "text", "text": "also"}}}),
		-32600, "expected active turn id `"+sub+"` but found `"+res.Turn.ID+"`")
	m := c.Request("turn/steer", map[string]any{"threadId": tid, "expectedTurnId": res.Turn.ID, "input": []map[string]any{{"type": "text", "text": "also"}}})
	require.NotNil(t, m.Error)
	require.Equal(t, -32600, m.Error.Code)
	require.Equal(t, "cannot steer a review turn", m.Error.Message)
	require.JSONEq(t, `{"message":"cannot steer a review turn","codexErrorInfo":{"activeTurnNotSteerable":{"turnKind":"review"}},"additionalDetails":null,"misalignment":null}`, string(m.Error.Data))
	requireError(t, c.Request("turn/start", map[string]any{"threadId": tid, "input": []map[string]any{{"type": "text", "text": "meanwhile"}}}),
		-32603, "failed to submit turn input: ActiveTurnNotSteerable { turn_kind: Review }")

	// while the reviewer runs, turn/interrupt addresses the turn turn/started named
	requireError(t, c.Request("turn/interrupt", map[string]any{"threadId": tid, "turnId": res.Turn.ID}), -32600,
		"expected active turn id "+res.Turn.ID+" but found "+sub)
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": sub}, nil)
	done := c.WaitTurnCompleted()
	require.Equal(t, "interrupted", done["status"])
	require.Equal(t, res.Turn.ID, done["id"])
	seq := methodsSince(t, c, mark)
	require.NotContains(t, seq, "item/started exitedReviewMode", "an interrupted review shows nothing more")

	c.StartTurn(tid, "what happened?")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	in := inputTexts(reqs[1])
	joined := strings.Join(in, "\n")
	require.Contains(t, joined, "user:"+review.HandoffCutShort())
	require.Contains(t, joined, "assistant:"+review.CutShortMessage)
	require.Contains(t, joined, "user:<turn_aborted>")
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
	// the schema's only delivery is inline; the reference fails others while decoding, before the
	// thread is looked up
	for _, d := range []string{"detached", "bogus"} {
		requireError(t, c.Request("review/start", map[string]any{"threadId": "00000000-0000-0000-0000-000000000000", "delivery": d,
			"target": map[string]any{"type": "uncommittedChanges"}}), -32600, "Invalid request: unknown variant `"+d+"`, expected `inline`")
	}
	m := c.Request("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "nope"}})
	require.NotNil(t, m.Error)
}

// The review items are recorded in the reference's core form (the target and hint; the parsed
// output, null when there is none) and read back as the items the turn showed.
func TestReviewRolloutAcrossRestart(t *testing.T) {
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Model: mm})
	reviewRepo(t, c)
	answer := `{"findings":[],"overall_correctness":"patch is correct","overall_explanation":"Looks fine.","overall_confidence_score":0.9}`
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(answer, 1)}})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.Result("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "baseBranch", "branch": "main"}}, nil)
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	home := c.Home
	c.Close()

	var entered, exited map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(must(os.ReadFile(rolloutFile(t, home, tid))))), "\n") {
		var rec struct {
			Type    string `json:"type"`
			Payload struct {
				Type string         `json:"type"`
				Item map[string]any `json:"item"`
			} `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec.Payload.Type != "item_completed" {
			continue
		}
		switch rec.Payload.Item["type"] {
		case "EnteredReviewMode":
			entered = rec.Payload.Item
		case "ExitedReviewMode":
			exited = rec.Payload.Item
		}
	}
	require.Equal(t, map[string]any{"type": "baseBranch", "branch": "main"}, entered["target"])
	require.Equal(t, "changes against 'main'", entered["user_facing_hint"])
	require.Equal(t, map[string]any{"findings": []any{}, "overall_correctness": "patch is correct",
		"overall_explanation": "Looks fine.", "overall_confidence_score": 0.9}, exited["review_output"])

	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c2.Initialize(false)
	read := readThread(t, c2, tid, true)
	require.Len(t, read.Turns, 2, "the reviewer's turn, then the review turn")
	var types []string
	for _, it := range read.Turns[1].Items {
		types = append(types, it["type"].(string))
		switch it["type"] {
		case "enteredReviewMode":
			require.Equal(t, "changes against 'main'", it["review"])
		case "exitedReviewMode":
			require.Equal(t, "Looks fine.", it["review"])
		}
	}
	require.Contains(t, types, "enteredReviewMode")
	require.Contains(t, types, "exitedReviewMode")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
