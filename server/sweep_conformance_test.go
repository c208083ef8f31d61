package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// Reference (codex-cli 0.169.0) behaviour found by the testdata/conformance scenarios.

// The reference's request enum still holds three v1 methods after account/read; its unknown-method
// error lists them (scenario thread_rollback: thread/rollback is gone in 0.169.0).
func TestUnknownMethodListsTheLegacyMethods(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	requireErrorMatch(t, c.Request("thread/rollback", map[string]any{"threadId": "x", "numTurns": 1}), -32600,
		"^Invalid request: unknown variant `thread/rollback`, expected one of `initialize`, .*, `account/read`, "+
			"`getConversationSummary`, `gitDiffToRemote`, `getAuthStatus`, `fuzzyFileSearch`, `fuzzyFileSearch/sessionStart`, "+
			"`fuzzyFileSearch/sessionUpdate`, `fuzzyFileSearch/sessionStop`$")
}

// model/list refuses a cursor that is not a number or lies beyond the list, and a provider the
// configuration lacks (with error data naming it); the end of the list is a valid cursor (scenario model_list).
func TestModelListRefusesBadCursorsAndProviders(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	var all struct {
		Data []json.RawMessage `json:"data"`
	}
	c.Result("model/list", map[string]any{}, &all)
	n := len(all.Data)
	require.NotZero(t, n)

	requireError(t, c.Request("model/list", map[string]any{"cursor": "garbage"}), -32600, "invalid cursor: garbage")
	requireError(t, c.Request("model/list", map[string]any{"cursor": "999"}), -32600, "cursor 999 exceeds total models "+strconv.Itoa(n))
	var end struct {
		Data       []json.RawMessage `json:"data"`
		NextCursor *string           `json:"nextCursor"`
	}
	c.Result("model/list", map[string]any{"cursor": strconv.Itoa(n)}, &end)
	require.Empty(t, end.Data)
	require.Nil(t, end.NextCursor)

	m := c.Request("model/list", map[string]any{"modelProvider": "nope"})
	require.NotNil(t, m.Error)
	require.Equal(t, -32600, m.Error.Code)
	require.Equal(t, "This chat uses model provider \u201cnope\u201d, which is no longer configured. Restore this provider\u2019s configuration to continue.", m.Error.Message)
	require.JSONEq(t, `{"type":"modelProviderNotConfigured","modelProvider":"nope"}`, string(m.Error.Data))
	require.Equal(t, `{"type":"modelProviderNotConfigured","modelProvider":"nope"}`, string(m.Error.Data), "the reference's member order")
	c.Result("model/list", map[string]any{"modelProvider": "openai"}, nil) // a built-in provider is configured

	var one struct {
		Data       []json.RawMessage `json:"data"`
		NextCursor *string           `json:"nextCursor"`
	}
	c.Result("model/list", map[string]any{"limit": 0}, &one)
	require.Len(t, one.Data, 1, "limit 0 serves one model")
	require.Equal(t, "1", *one.NextCursor)
}

// thread/name/set trims the name and refuses a blank one; an unknown thread has no rollout (scenario
// thread_name_list).
func TestThreadNameSetTrimsAndRefusesBlankNames(t *testing.T) {
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	requireError(t, c.Request("thread/name/set", map[string]any{"threadId": tid, "name": ""}), -32600, "thread name must not be empty")
	requireError(t, c.Request("thread/name/set", map[string]any{"threadId": tid, "name": " \n "}), -32600, "thread name must not be empty")
	unknown := "00000000-0000-0000-0000-000000000000"
	requireError(t, c.Request("thread/name/set", map[string]any{"threadId": unknown, "name": "x"}), -32600, "no rollout found for thread id "+unknown)

	c.Result("thread/name/set", map[string]any{"threadId": tid, "name": "  Padded name \n"}, nil)
	n := c.WaitNotification("thread/name/updated", nil)
	var p struct{ ThreadName string }
	require.NoError(t, json.Unmarshal(n.Params, &p))
	require.Equal(t, "Padded name", p.ThreadName)
}

// Every string enum in request params is checked as serde does in the reference: a value outside the
// schema's list is refused before the method runs, listing the values in schema order (probed against
// 0.169.0; scenario config_rw has the mergeStrategy case).
func TestParamsRefuseUnknownEnumValues(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	unknownThread := "00000000-0000-0000-0000-000000000000"
	for _, tc := range []struct {
		method string
		params map[string]any
		msg    string
	}{
		{"thread/list", map[string]any{"sortDirection": "sideways"}, "unknown variant `sideways`, expected `asc` or `desc`"},
		{"thread/list", map[string]any{"sortKey": "bogus"}, "unknown variant `bogus`, expected one of `created_at`, `updated_at`, `recency_at`, `section_position`"},
		{"thread/start", map[string]any{"sandbox": "bogus"}, "unknown variant `bogus`, expected one of `read-only`, `workspace-write`, `danger-full-access`"},
		{"thread/start", map[string]any{"personality": "bogus"}, "unknown variant `bogus`, expected one of `none`, `friendly`, `pragmatic`"},
		{"thread/start", map[string]any{"approvalsReviewer": "bogus"}, "unknown variant `bogus`, expected one of `user`, `auto_review`, `guardian_subagent`"},
		{"config/value/write", map[string]any{"keyPath": "model", "value": "x", "mergeStrategy": "merge"}, "unknown variant `merge`, expected `replace` or `upsert`"},
		{"config/batchWrite", map[string]any{"edits": []any{map[string]any{"keyPath": "model", "value": "x", "mergeStrategy": "merge"}}}, "unknown variant `merge`, expected `replace` or `upsert`"},
		{"turn/start", map[string]any{"threadId": unknownThread, "input": []any{}, "summary": "bogus"}, "unknown variant `bogus`, expected one of `auto`, `concise`, `detailed`, `none`"},
		{"thread/list", map[string]any{"sourceKinds": []any{"bogus"}}, "unknown variant `bogus`, expected one of `cli`, `vscode`, `exec`, `appServer`, `subAgent`, `subAgentReview`, `subAgentCompact`, `subAgentThreadSpawn`, `subAgentOther`, `unknown`"},
		{"mcpServerStatus/list", map[string]any{"detail": "bogus"}, "unknown variant `bogus`, expected `full` or `toolsAndAuthOnly`"},
		{"thread/start", map[string]any{"approvalPolicy": "bogus"}, "unknown variant `bogus`, expected one of `untrusted`, `on-request`, `granular`, `never`"},
	} {
		requireError(t, c.Request(tc.method, tc.params), -32600, "Invalid request: "+tc.msg)
	}
	// a free-form string is not an enum: an unknown effort reaches the method
	requireError(t, c.Request("turn/start", map[string]any{"threadId": unknownThread, "input": []any{}, "effort": "bogus"}), -32600, "thread not found: "+unknownThread)
}

// A review on a fresh thread names it: thread/read's preview is the review's user message (scenario
// review_start).
func TestReviewGivesTheThreadItsPreview(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(`{"findings":[],"overall_correctness":"patch is correct","overall_explanation":"Fine.","overall_confidence_score":0.9}`, 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.Result("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "custom", "instructions": "Review the file a.txt"}}, nil)
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	var res struct {
		Thread struct{ Preview string }
	}
	c.Result("thread/read", map[string]any{"threadId": tid}, &res)
	require.Equal(t, "Review the file a.txt", res.Thread.Preview)
}

// thread/revert reloads the thread in the reference: its subscribers see notLoaded then idle before the
// answer (also when the turn is unknown), and the token usage is what the kept turns used (scenario
// thread_rollback).
func TestThreadRevertReloadsAndRestoresUsage(t *testing.T) {
	mm := mockmodel.New(t)
	usage := map[string]any{"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
	for _, text := range []string{"one", "two", "three"} {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(text, 1)}, Usage: usage})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "q1")
	c.WaitTurnCompleted()
	t2 := c.StartTurn(tid, "q2")
	c.WaitTurnCompleted()

	statuses := func(mark int) []string {
		var out []string
		for _, m := range c.Since(mark) {
			if m.Method == "thread/status/changed" {
				out = append(out, threadStatus(t, m))
			}
		}
		return out
	}
	mark := c.Mark()
	requireError(t, c.Request("thread/revert", map[string]any{"threadId": tid, "beforeTurnId": "nope"}), -32600, "turn not found: nope")
	require.Equal(t, []string{"notLoaded", "idle"}, statuses(mark))
	mark = c.Mark()
	c.Result("thread/revert", map[string]any{"threadId": tid, "beforeTurnId": t2}, nil)
	c.WaitNotification("thread/reverted", nil)
	require.Equal(t, []string{"notLoaded", "idle"}, statuses(mark))

	mark = c.Mark()
	c.StartTurn(tid, "q3")
	c.WaitTurnCompleted()
	var last struct {
		TokenUsage struct {
			Total struct{ TotalTokens int64 }
		}
	}
	for _, m := range c.Since(mark) {
		if m.Method == "thread/tokenUsage/updated" {
			require.NoError(t, json.Unmarshal(m.Params, &last))
		}
	}
	require.EqualValues(t, 240, last.TokenUsage.Total.TotalTokens, "q1 and q3, not the reverted q2")
}

// thread/loaded/list pages by thread id (the cursor is the last id served), refusing anything else;
// mcpServerStatus/list refuses a cursor that is not a number or lies beyond the list (probed against 0.169.0).
func TestListCursorsAreChecked(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	ids := []string{c.StartThread(nil), c.StartThread(nil), c.StartThread(nil)}
	type page struct {
		Data       []string `json:"data"`
		NextCursor *string  `json:"nextCursor"`
	}
	var p1, p2, all page
	c.Result("thread/loaded/list", map[string]any{"limit": 1}, &p1)
	require.Equal(t, ids[:1], p1.Data)
	require.Equal(t, ids[0], *p1.NextCursor)
	c.Result("thread/loaded/list", map[string]any{"limit": 1, "cursor": *p1.NextCursor}, &p2)
	require.Equal(t, ids[1:2], p2.Data)
	require.Equal(t, ids[1], *p2.NextCursor)
	c.Result("thread/loaded/list", map[string]any{"cursor": "00000000-0000-0000-0000-000000000000"}, &all)
	require.Equal(t, ids, all.Data)
	require.Nil(t, all.NextCursor)
	requireError(t, c.Request("thread/loaded/list", map[string]any{"cursor": "1"}), -32600, "invalid cursor: 1")

	requireError(t, c.Request("mcpServerStatus/list", map[string]any{"cursor": "garbage"}), -32600, "invalid cursor: garbage")
	requireError(t, c.Request("mcpServerStatus/list", map[string]any{"cursor": "5"}), -32600, "cursor 5 exceeds total MCP servers 0")
}

// thread/fork (like thread/start) takes a relative cwd as the server's working directory's.
func TestForkResolvesARelativeCwd(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("hi", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "hello")
	c.WaitTurnCompleted()
	var res struct{ Cwd string }
	c.Result("thread/fork", map[string]any{"threadId": tid, "cwd": "relative"}, &res)
	require.True(t, filepath.IsAbs(res.Cwd), res.Cwd)
	require.Equal(t, "relative", filepath.Base(res.Cwd))
}

// command/exec takes a relative cwd as the server's working directory's; a missing one cannot spawn
// (scenario list_cursors).
func TestCommandExecRelativeCwd(t *testing.T) {
	c := startIsolated(t, apptest.Options{})
	c.Initialize(false)
	sub := filepath.Join(c.Work, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	wd, err := os.Getwd() // the server runs in the test's directory
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, sub)
	require.NoError(t, err)
	var res struct {
		ExitCode int
		Stdout   string
	}
	c.Result("command/exec", map[string]any{"command": []string{"pwd"}, "cwd": rel}, &res)
	require.Equal(t, 0, res.ExitCode)
	real, err := filepath.EvalSymlinks(sub)
	require.NoError(t, err)
	require.Equal(t, real+"\n", res.Stdout)
	requireError(t, c.Request("command/exec", map[string]any{"command": []string{"pwd"}, "cwd": "missing"}), -32603,
		"failed to spawn command: No such file or directory (os error 2)")
}
