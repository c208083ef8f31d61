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
)

// userTexts lists the texts of a model request's user messages, in order.
func userTexts(body map[string]any) []string {
	var out []string
	for _, it := range body["input"].([]any) {
		m := it.(map[string]any)
		if m["type"] == "message" && m["role"] == "user" {
			for _, c := range m["content"].([]any) {
				out = append(out, c.(map[string]any)["text"].(string))
			}
		}
	}
	return out
}

func developerTexts(body map[string]any) []string {
	var out []string
	for _, it := range body["input"].([]any) {
		m := it.(map[string]any)
		if m["type"] == "message" && m["role"] == "developer" {
			out = append(out, m["content"].([]any)[0].(map[string]any)["text"].(string))
		}
	}
	return out
}

func params(t *testing.T, m apptest.Message) map[string]any {
	var p map[string]any
	require.NoError(t, json.Unmarshal(m.Params, &p))
	return p
}

func TestEchoesWhatTheClientSent(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("one"), okReply("two"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	var start struct {
		Thread map[string]any `json:"thread"`
	}
	c.Result("thread/start", map[string]any{"cwd": c.Work, "threadSource": "user"}, &start)
	require.Equal(t, "user", start.Thread["threadSource"])
	tid := start.Thread["id"].(string)
	c.WaitNotification("thread/started", nil)

	mark := c.Mark()
	c.Result("turn/start", map[string]any{"threadId": tid, "clientUserMessageId": "client-1",
		"input":             []any{map[string]any{"type": "text", "text": "hi"}},
		"collaborationMode": map[string]any{"mode": "default", "settings": map[string]any{"model": "mock-model", "reasoning_effort": nil, "developer_instructions": nil}},
	}, nil)
	c.WaitTurnCompleted()
	methods := apptest.NotificationMethods(c.Since(mark), usageNoise...)
	require.Equal(t, "thread/settings/updated", methods[0], "the first turn's settings are announced before it starts")
	var settings map[string]any
	for _, m := range c.Since(mark) {
		if m.Method == "thread/settings/updated" {
			settings = params(t, m)["threadSettings"].(map[string]any)
		}
		if m.Method == "item/completed" && strings.Contains(string(m.Params), `"userMessage"`) {
			require.Equal(t, "client-1", params(t, m)["item"].(map[string]any)["clientId"])
		}
	}
	require.Equal(t, "default", settings["collaborationMode"].(map[string]any)["mode"])
	require.NotContains(t, strings.Join(developerTexts(mm.ResponseRequests()[0].Body), "\n"), "<collaboration_mode>",
		"a thread starts in Default mode: choosing it changes nothing the model must hear")

	// The same settings again: nothing to announce. A new cwd moves the thread and the model is told.
	sub := filepath.Join(c.Work, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	mark = c.Mark()
	c.Result("turn/start", map[string]any{"threadId": tid, "cwd": sub, "input": []any{map[string]any{"type": "text", "text": "there"}}}, nil)
	c.WaitTurnCompleted()
	updates := 0
	for _, m := range c.Since(mark) {
		if m.Method == "thread/settings/updated" {
			updates++
			require.Equal(t, sub, params(t, m)["threadSettings"].(map[string]any)["cwd"])
		}
	}
	require.Equal(t, 1, updates)
	texts := userTexts(mm.ResponseRequests()[1].Body)
	require.Contains(t, texts[len(texts)-2], "<cwd>"+sub+"</cwd>", "a new environment context precedes the input")
	var read struct {
		Thread map[string]any `json:"thread"`
	}
	c.Result("thread/read", map[string]any{"threadId": tid}, &read)
	require.Equal(t, sub, read.Thread["cwd"])
}

func TestGitInfoOnThreadsInARepository(t *testing.T) {
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Model: mm})
	gitDir := filepath.Join(c.Work, "repo")
	require.NoError(t, os.MkdirAll(gitDir, 0o755))
	for _, args := range [][]string{{"init", "-q", "-b", "trunk"}, {"remote", "add", "origin", "https://example.com/r.git"},
		{"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "x"}} {
		runGit(t, gitDir, args...)
	}
	c.Initialize(false)
	var start struct {
		Thread map[string]any `json:"thread"`
	}
	c.Result("thread/start", map[string]any{"cwd": gitDir}, &start)
	gi := start.Thread["gitInfo"].(map[string]any)
	require.Equal(t, "trunk", gi["branch"])
	require.Equal(t, "https://example.com/r.git", gi["originUrl"])
	require.Len(t, gi["sha"], 40)
	c.Result("thread/start", map[string]any{"cwd": c.Work}, &start)
	require.Nil(t, start.Thread["gitInfo"])
}

func TestSteerRestartsTheRequestAtOnce(t *testing.T) {
	mm := mockmodel.New(t)
	one := 1
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{{Type: "message", Text: "partial answer", Chunks: 3, HangAfterChunks: &one}}}, okReply("after steer"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	turnID := c.StartTurn(tid, "first")
	c.WaitNotification("item/agentMessage/delta", nil)
	mark := c.Mark()
	c.Result("turn/steer", map[string]any{"threadId": tid, "expectedTurnId": turnID, "clientUserMessageId": "s-1",
		"input": []any{map[string]any{"type": "text", "text": "steered"}}}, nil)
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])
	methods := apptest.NotificationMethods(c.Since(mark), append(usageNoise, "item/agentMessage/delta")...)
	require.Equal(t, []string{"item/started", "item/completed", "item/started", "item/completed", "thread/status/changed", "turn/completed"}, methods,
		"the steer's userMessage comes first, then the re-sent request's answer")
	for _, m := range c.Since(mark) {
		if m.Method == "item/started" {
			item := params(t, m)["item"].(map[string]any)
			require.Equal(t, "userMessage", item["type"])
			require.Equal(t, "s-1", item["clientId"])
			break
		}
	}
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	texts := userTexts(reqs[1].Body)
	require.Equal(t, []string{"first", "steered"}, texts[len(texts)-2:])
}

func TestCollaborationModes(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("request_user_input", "q1", map[string]any{"questions": []any{
			map[string]any{"id": "color", "header": "Color", "question": "Which?", "options": []any{map[string]any{"label": "Blue", "description": "b"}}},
		}})}},
		okReply("planned"),
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("request_user_input", "q2", map[string]any{"questions": []any{}})}},
		okReply("done"),
	)
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	var list struct {
		Data []map[string]any `json:"data"`
	}
	c.Result("collaborationMode/list", map[string]any{}, &list)
	require.Equal(t, []map[string]any{
		{"name": "Plan", "mode": "plan", "model": nil, "reasoning_effort": "medium"},
		{"name": "Default", "mode": "default", "model": nil, "reasoning_effort": nil},
	}, list.Data)

	c.SetAnswerer(func(m apptest.Message) (any, int, string, bool) {
		if m.Method == "item/tool/requestUserInput" {
			return map[string]any{"answers": map[string]any{"color": map[string]any{"answers": []string{"Blue"}}}}, 0, "", true
		}
		return nil, 0, "", false
	})
	tid := c.StartThread(nil)
	mode := func(m string, effort any) map[string]any {
		return map[string]any{"mode": m, "settings": map[string]any{"model": "mock-model", "reasoning_effort": effort, "developer_instructions": nil}}
	}
	c.Result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "plan it"}}, "collaborationMode": mode("plan", "high")}, nil)
	req := c.WaitServerRequest("item/tool/requestUserInput")
	require.Equal(t, "q1", params(t, req)["itemId"])
	c.WaitTurnCompleted()
	c.Result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "do it"}}, "collaborationMode": mode("default", nil)}, nil)
	c.WaitTurnCompleted()

	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 4)
	require.Equal(t, "high", reqs[0].Body["reasoning"].(map[string]any)["effort"], "the mode's effort applies")
	require.NotContains(t, reqs[2].Body["reasoning"], "effort", "a null effort clears it")
	require.Contains(t, string(mustJSON(t, reqs[1].Body["input"])), `{\"answers\":{\"color\":{\"answers\":[\"Blue\"]}}}`)
	planDev := developerTexts(reqs[0].Body)
	require.Contains(t, planDev[len(planDev)-1], "<collaboration_mode>", "entering Plan mode tells the model")
	require.Contains(t, planDev[len(planDev)-1], "Plan")
	dev := developerTexts(reqs[2].Body)
	require.Contains(t, dev[len(dev)-1], "<collaboration_mode>", "switching modes tells the model")
	require.Contains(t, dev[len(dev)-1], "Default")
	require.Contains(t, string(mustJSON(t, reqs[3].Body["input"])), "request_user_input is unavailable in Default mode")
}

func runGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
}

func TestDeleteAndResumeAnnounceLikeTheReference(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("one"), okReply("two"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "hi")
	c.WaitTurnCompleted()
	mark := c.Mark()
	c.Result("thread/delete", map[string]any{"threadId": tid}, nil)
	c.WaitNotification("thread/deleted", nil)
	var seq []string
	for _, m := range c.Since(mark) {
		if m.IsNotification() {
			seq = append(seq, m.Method)
			if m.Method == "thread/status/changed" {
				require.Equal(t, "notLoaded", params(t, m)["status"].(map[string]any)["type"])
			}
		} else {
			seq = append(seq, "response")
		}
	}
	require.Equal(t, []string{"thread/status/changed", "response", "thread/deleted"}, seq)

	// A connection that resubscribes to a loaded thread is told its usage.
	other := c.StartThread(nil)
	c.StartTurn(other, "hi")
	c.WaitTurnCompleted()
	c.Result("thread/unsubscribe", map[string]any{"threadId": other}, nil)
	mark = c.Mark()
	c.Result("thread/resume", map[string]any{"threadId": other}, nil)
	c.WaitNotification("thread/goal/cleared", nil)
	require.Contains(t, apptest.NotificationMethods(c.Since(mark)), "thread/tokenUsage/updated")
	mark = c.Mark()
	c.Result("thread/resume", map[string]any{"threadId": other}, nil)
	c.WaitNotification("thread/goal/cleared", nil)
	require.NotContains(t, apptest.NotificationMethods(c.Since(mark)), "thread/tokenUsage/updated", "an attached connection is not told again")
}
