package server_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/stopwatch/stopwatchtest"
)

// maCall is a model call of a multi_agent_v1 tool.
func maCall(name, callID string, args any) mockmodel.Item {
	it := mockmodel.FunctionCall(name, callID, args)
	it.Namespace = "multi_agent_v1"
	return it
}

// agentIDCapture echoes the agent id spawn_agent returned into a later call.
const agentIDCapture = `{{capture:"agent_id":"([0-9a-f-]+)"}}`

// namespaceTools returns the function names of a request's multi_agent_v1 namespace (nil when absent).
func namespaceTools(body map[string]any) []string {
	tools, _ := body["tools"].([]any) // absent on a code-mode model
	for _, raw := range tools {
		tool := raw.(map[string]any)
		if tool["type"] != "namespace" || tool["name"] != "multi_agent_v1" {
			continue
		}
		names := []string{}
		for _, f := range tool["tools"].([]any) {
			names = append(names, f.(map[string]any)["name"].(string))
		}
		return names
	}
	return nil
}

// collabItems returns the collabAgentToolCall items of item/started or item/completed notifications.
func collabItems(t *testing.T, msgs []apptest.Message, method string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, m := range msgs {
		if !m.IsNotification() || m.Method != method {
			continue
		}
		item := params(t, m)["item"].(map[string]any)
		if item["type"] == "collabAgentToolCall" {
			out[item["id"].(string)] = item
		}
	}
	return out
}

func jsonOutput(t *testing.T, body map[string]any, callID string) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(fnOutput(t, body, callID).(string)), &out))
	return out
}

func TestMultiAgentToolsOffered(t *testing.T) {
	for _, tc := range []struct {
		name, model, config string
		want                bool
	}{
		{"mock model", "", "", true},
		{"multi_agent off", "", "[features]\nmulti_agent = false\n", false},
		{"multi_agent_v2 on", "", "[features]\nmulti_agent_v2 = true\n", false},
		{"catalogue model", "gpt-5.5", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(okReply("hi"))
			c := apptest.Start(t, apptest.Options{Model: mm, ModelID: tc.model, Config: tc.config})
			c.Initialize(false)
			c.StartTurn(c.StartThread(nil), "hello")
			c.WaitTurnCompleted()
			got := namespaceTools(mm.ResponseRequests()[0].Body)
			if tc.want {
				require.Equal(t, []string{"close_agent", "resume_agent", "send_input", "spawn_agent", "wait_agent"}, got)
			} else {
				require.Nil(t, got)
			}
		})
	}
}

func TestMultiAgentSpawnWaitSendClose(t *testing.T) {
	mm := mockmodel.New(t)
	const unknown = "00000000-0000-0000-0000-000000000000"
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{maCall("spawn_agent", "s1", map[string]any{"message": "count the files"})}},
		mockmodel.Response{Items: []mockmodel.Item{maCall("wait_agent", "w1", map[string]any{"targets": []any{agentIDCapture}, "timeout_ms": 3600000})}},
		mockmodel.Response{Items: []mockmodel.Item{maCall("send_input", "i1", map[string]any{"target": agentIDCapture, "message": "now the dirs"})}},
		mockmodel.Response{Items: []mockmodel.Item{maCall("wait_agent", "w2", map[string]any{"targets": []any{agentIDCapture}, "timeout_ms": 3600000})}},
		mockmodel.Response{Items: []mockmodel.Item{maCall("close_agent", "c1", map[string]any{"target": agentIDCapture})}},
		mockmodel.Response{Items: []mockmodel.Item{maCall("close_agent", "c2", map[string]any{"target": agentIDCapture})}},
		mockmodel.Response{Items: []mockmodel.Item{maCall("wait_agent", "w3", map[string]any{"targets": []any{unknown}})}},
		mockmodel.Response{Items: []mockmodel.Item{maCall("wait_agent", "w4", map[string]any{"targets": []any{"nope"}})}},
		okReply("parent done"),
	)
	mm.EnqueueFor(mockmodel.SubAgentRequest, okReply("3 files"), okReply("2 dirs"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	parentTurn := c.StartTurn(tid, "delegate")
	c.WaitNotification("turn/completed", threadIDIs(tid))

	var parentReqs, childReqs []map[string]any
	for _, r := range mm.ResponseRequests() {
		if mockmodel.SubAgentRequest(r) {
			require.Equal(t, "collab_spawn", r.Header.Get("x-openai-subagent"))
			require.Equal(t, tid, r.Header.Get("x-codex-parent-thread-id"))
			childReqs = append(childReqs, r.Body)
		} else {
			parentReqs = append(parentReqs, r.Body)
		}
	}
	require.Len(t, parentReqs, 9)
	require.Len(t, childReqs, 2)
	require.NotNil(t, namespaceTools(parentReqs[0]))
	require.Nil(t, namespaceTools(childReqs[0]), "a sub-agent is offered no agents of its own")

	spawned := jsonOutput(t, parentReqs[1], "s1")
	child, _ := spawned["agent_id"].(string)
	require.NotEmpty(t, child)
	require.NotEmpty(t, spawned["nickname"])
	require.Equal(t, map[string]any{"status": map[string]any{child: map[string]any{"completed": "3 files"}}, "timed_out": false},
		jsonOutput(t, parentReqs[2], "w1"))
	sub := jsonOutput(t, parentReqs[3], "i1")
	require.NotEmpty(t, sub["submission_id"])
	require.Equal(t, map[string]any{"status": map[string]any{child: map[string]any{"completed": "2 dirs"}}, "timed_out": false},
		jsonOutput(t, parentReqs[4], "w2"))
	require.Equal(t, map[string]any{"previous_status": map[string]any{"completed": "2 dirs"}}, jsonOutput(t, parentReqs[5], "c1"))
	require.Contains(t, fnOutput(t, parentReqs[6], "c2"), child, "closing twice names the agent not found")
	require.Equal(t, map[string]any{"status": map[string]any{unknown: "not_found"}, "timed_out": false}, jsonOutput(t, parentReqs[7], "w3"))
	require.Contains(t, fnOutput(t, parentReqs[8], "w4"), "invalid agent id nope")

	// The parent hears once how its agent's first task ended, after the wait that saw it.
	notice := "<subagent_notification>\n{\"agent_path\":\"" + child + "\",\"status\":{\"completed\":\"3 files\"}}\n</subagent_notification>"
	texts := userTexts(parentReqs[2])
	require.Equal(t, notice, texts[len(texts)-1])
	count := 0
	for _, text := range userTexts(parentReqs[8]) {
		if strings.HasPrefix(text, "<subagent_notification>") {
			count++
		}
	}
	require.Equal(t, 1, count)

	// The child's first request: its own user message, no tools to start agents.
	last := childReqs[0]["input"].([]any)
	require.Contains(t, string(mustMarshal(t, last[len(last)-1])), "count the files")

	msgs := c.Since(mark)
	started, completed := collabItems(t, msgs, "item/started"), collabItems(t, msgs, "item/completed")
	require.Equal(t, "spawnAgent", started["s1"]["tool"])
	require.Equal(t, []any{}, started["s1"]["receiverThreadIds"])
	require.Equal(t, "count the files", started["s1"]["prompt"])
	require.Equal(t, []any{child}, completed["s1"]["receiverThreadIds"])
	require.Equal(t, "mock-model", completed["s1"]["model"])
	require.Equal(t, map[string]any{child: map[string]any{"status": "pendingInit", "message": nil}}, completed["s1"]["agentsStates"])
	require.Equal(t, map[string]any{child: map[string]any{"status": "completed", "message": "3 files"}}, completed["w1"]["agentsStates"])
	require.Equal(t, "sendInput", completed["i1"]["tool"])
	require.Equal(t, "now the dirs", completed["i1"]["prompt"])
	require.Equal(t, "completed", completed["c1"]["status"])
	require.Equal(t, "failed", completed["c2"]["status"])
	require.Equal(t, map[string]any{child: map[string]any{"status": "notFound", "message": nil}}, completed["c2"]["agentsStates"])
	require.Equal(t, "failed", completed["w3"]["status"])
	require.NotContains(t, started, "w4", "an invalid id fails before any item")

	// The child's own turns reach the parent's client; it is never announced with thread/started.
	childTurns := 0
	for _, m := range msgs {
		if !m.IsNotification() {
			continue
		}
		p := params(t, m)
		switch m.Method {
		case "thread/started":
			t.Fatalf("unexpected thread/started: %s", m.Params)
		case "turn/completed":
			if p["threadId"] == child {
				childTurns++
				require.Equal(t, parentTurn, p["turn"].(map[string]any)["rootTurnId"], "a sub-agent's turn descends from its parent's")
			}
		}
	}
	require.Equal(t, 2, childTurns)
	require.Equal(t, []string{"idle", "active", "idle", "active", "idle", "notLoaded"}, statusTypes(t, msgs, child),
		"the child is announced idle when spawned and not loaded when closed")

	// Closed, the child is no longer loaded; its rollout lists it as the parent's sub-agent.
	var loaded struct {
		Data []string `json:"data"`
	}
	c.Result("thread/loaded/list", map[string]any{}, &loaded)
	require.Equal(t, []string{tid}, loaded.Data)
	var list struct {
		Data []map[string]any `json:"data"`
	}
	c.Result("thread/list", map[string]any{}, &list)
	require.Len(t, list.Data, 1, "sub-agents are not listed by default")
	c.Result("thread/list", map[string]any{"sourceKinds": []any{"subAgentThreadSpawn"}}, &list)
	require.Len(t, list.Data, 1)
	row := list.Data[0]
	require.Equal(t, child, row["id"])
	require.Equal(t, tid, row["parentThreadId"])
	require.Equal(t, spawned["nickname"], row["agentNickname"])
	require.Equal(t, "count the files", row["preview"])
	spawn := row["source"].(map[string]any)["subAgent"].(map[string]any)["thread_spawn"].(map[string]any)
	require.Equal(t, tid, spawn["parent_thread_id"])
	require.EqualValues(t, 1, spawn["depth"])
	raw, err := os.ReadFile(row["path"].(string))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"thread_source":"subagent"`)
	require.Contains(t, string(raw), `"session_id":"`+tid+`"`, "a sub-agent's rollout belongs to its parent's session")

	// The parent's rollout keeps the calls in the reference's core form; a new server reads them back as the
	// client saw them.
	c.Close()
	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: c.Home})
	c2.Initialize(false)
	var read struct {
		Thread struct {
			Path  string `json:"path"`
			Turns []struct {
				Items []map[string]any `json:"items"`
			} `json:"turns"`
		} `json:"thread"`
	}
	c2.Result("thread/read", map[string]any{"threadId": tid, "includeTurns": true}, &read)
	raw, err = os.ReadFile(read.Thread.Path)
	require.NoError(t, err)
	require.Contains(t, string(raw), `{"type":"CollabAgentToolCall","id":"s1","tool":"spawn_agent","status":"completed"`)
	require.Contains(t, string(raw), `"agents_states":{"`+child+`":"pending_init"}`)
	require.Len(t, read.Thread.Turns, 1)
	stored := map[string]map[string]any{}
	for _, it := range read.Thread.Turns[0].Items {
		if it["type"] == "collabAgentToolCall" {
			stored[it["id"].(string)] = it
		}
	}
	for _, id := range []string{"s1", "w1", "i1", "c1", "c2", "w3"} {
		want, got := completed[id], stored[id]
		require.NotNil(t, got, id)
		for _, k := range []string{"tool", "status", "senderThreadId", "receiverThreadIds", "prompt", "model", "reasoningEffort", "agentsStates"} {
			require.Equal(t, want[k], got[k], "%s %s", id, k)
		}
	}
}

// statusTypes lists the thread/status/changed types of one thread in msgs.
func statusTypes(t *testing.T, msgs []apptest.Message, id string) []string {
	var out []string
	for _, m := range msgs {
		if m.IsNotification() && m.Method == "thread/status/changed" {
			p := params(t, m)
			if p["threadId"] == id {
				out = append(out, p["status"].(map[string]any)["type"].(string))
			}
		}
	}
	return out
}

func mustMarshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestMultiAgentWaitTimesOutOnTheClock(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{maCall("spawn_agent", "s1", map[string]any{"message": "take your time"})}},
		mockmodel.Response{Items: []mockmodel.Item{maCall("wait_agent", "w1", map[string]any{"targets": []any{agentIDCapture}, "timeout_ms": 5})}},
		okReply("gave up"),
	)
	mm.EnqueueFor(mockmodel.SubAgentRequest, mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(120)}})
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	c := apptest.Start(t, apptest.Options{Model: mm, Clock: clock})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "delegate")
	c.WaitNotification("item/started", func(p json.RawMessage) bool { return strings.Contains(string(p), `"tool":"wait"`) })
	clock.Advance(9999 * time.Millisecond) // timeout_ms is raised to the 10 s minimum
	clock.Advance(time.Millisecond)
	c.WaitNotification("turn/completed", threadIDIs(tid))
	reqs := mm.ResponseRequests()
	var last map[string]any
	for _, r := range reqs {
		if !mockmodel.SubAgentRequest(r) {
			last = r.Body
		}
	}
	require.Equal(t, map[string]any{"status": map[string]any{}, "timed_out": true}, jsonOutput(t, last, "w1"))
}

func TestMultiAgentInterruptEndsAWait(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{maCall("spawn_agent", "s1", map[string]any{"message": "hang on"})}},
		mockmodel.Response{Items: []mockmodel.Item{maCall("wait_agent", "w1", map[string]any{"targets": []any{agentIDCapture}, "timeout_ms": 3600000})}},
	)
	mm.EnqueueFor(mockmodel.SubAgentRequest, mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(120)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	turn := c.StartTurn(tid, "delegate")
	mark := c.Mark()
	c.WaitNotification("item/started", func(p json.RawMessage) bool { return strings.Contains(string(p), `"tool":"wait"`) })
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": turn}, nil)
	m := c.WaitNotification("turn/completed", threadIDIs(tid))
	require.Equal(t, "interrupted", params(t, m)["turn"].(map[string]any)["status"])
	require.NotContains(t, collabItems(t, c.Since(mark), "item/completed"), "w1", "an interrupted wait is left unfinished, as the reference leaves it")
}

func TestMultiAgentChildClosesWithItsParent(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{maCall("spawn_agent", "s1", map[string]any{"message": "long job"})}},
		okReply("started it"),
	)
	mm.EnqueueFor(mockmodel.SubAgentRequest, mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(120)}})
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	c := apptest.Start(t, apptest.Options{Model: mm, Clock: clock, Config: "thread_unload_delay_secs = 1"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "delegate")
	c.WaitNotification("turn/completed", threadIDIs(tid))
	var loaded struct {
		Data []string `json:"data"`
	}
	c.Result("thread/loaded/list", map[string]any{}, &loaded)
	require.Len(t, loaded.Data, 2, "the child runs on after its parent's turn")
	child := loaded.Data[0]
	if child == tid {
		child = loaded.Data[1]
	}
	mark := c.Mark()
	c.Result("thread/unsubscribe", map[string]any{"threadId": tid}, nil)
	clock.Advance(time.Second)
	c.WaitNotification("thread/closed", threadIDIs(tid))
	var childEnd map[string]any
	for _, m := range c.Since(mark) {
		if m.IsNotification() && m.Method == "turn/completed" && threadIDIs(child)(m.Params) {
			childEnd = params(t, m)["turn"].(map[string]any)
		}
	}
	require.NotNil(t, childEnd, "the child's turn ends with its parent")
	require.Equal(t, "interrupted", childEnd["status"])
	require.Equal(t, []string{"notLoaded"}, statusTypes(t, c.Since(mark), child)[1:])
	c.Result("thread/loaded/list", map[string]any{}, &loaded)
	require.Empty(t, loaded.Data)
}

func TestMultiAgentSendInputInterrupts(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{maCall("spawn_agent", "s1", map[string]any{"message": "slow task"})}},
		mockmodel.Response{Items: []mockmodel.Item{maCall("send_input", "i1", map[string]any{"target": agentIDCapture, "message": "stop, do this", "interrupt": true})}},
		mockmodel.Response{Items: []mockmodel.Item{maCall("wait_agent", "w1", map[string]any{"targets": []any{`{{capture:"agent_id":"([0-9a-f-]+)"}}`}, "timeout_ms": 3600000})}},
		okReply("parent done"),
	)
	mm.EnqueueFor(mockmodel.SubAgentRequest, mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(120)}}, okReply("redirected"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "delegate")
	c.WaitNotification("turn/completed", threadIDIs(tid))
	var parentReqs []map[string]any
	for _, r := range mm.ResponseRequests() {
		if !mockmodel.SubAgentRequest(r) {
			parentReqs = append(parentReqs, r.Body)
		}
	}
	require.Len(t, parentReqs, 4)
	child := jsonOutput(t, parentReqs[1], "s1")["agent_id"].(string)
	completed := collabItems(t, c.Since(mark), "item/completed")
	require.Equal(t, map[string]any{child: map[string]any{"status": "running", "message": nil}}, completed["i1"]["agentsStates"],
		"send_input reports the status the agent had")
	require.Equal(t, map[string]any{"status": map[string]any{child: map[string]any{"completed": "redirected"}}, "timed_out": false},
		jsonOutput(t, parentReqs[3], "w1"))
	var ends []string
	for _, m := range c.Since(mark) {
		if m.IsNotification() && m.Method == "turn/completed" && threadIDIs(child)(m.Params) {
			ends = append(ends, params(t, m)["turn"].(map[string]any)["status"].(string))
		}
	}
	require.Equal(t, []string{"interrupted", "completed"}, ends)
}

func TestMultiAgentForkContext(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{maCall("spawn_agent", "s1", map[string]any{"message": "carry on from here", "fork_context": true})}},
		mockmodel.Response{Items: []mockmodel.Item{maCall("wait_agent", "w1", map[string]any{"targets": []any{agentIDCapture}, "timeout_ms": 3600000})}},
		okReply("parent done"),
	)
	mm.EnqueueFor(mockmodel.SubAgentRequest, okReply("forked reply"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "the parent's question")
	c.WaitNotification("turn/completed", threadIDIs(tid))
	var parent, child map[string]any
	for _, r := range mm.ResponseRequests() {
		if mockmodel.SubAgentRequest(r) {
			child = r.Body
		} else if parent == nil {
			parent = r.Body
		}
	}
	require.NotNil(t, child)
	texts := userTexts(child)
	require.Equal(t, []string{"the parent's question", "carry on from here"}, texts[len(texts)-2:], "the child continues the parent's conversation")
	require.Equal(t, userTexts(parent), texts[:len(texts)-1], "with the parent's context")
	require.NotContains(t, string(mustMarshal(t, child["input"])), "spawn_agent", "the running spawn call is left out")
}

// TestMultiAgentRoleNamesTheTools: a multi-agent v2 thread is told its role naming the collaboration tools;
// switched to a model outside the catalogue it is told its role again, naming the multi_agent_v1 tools that
// model is now offered.
func TestMultiAgentRoleNamesTheTools(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("one"), okReply("two"))
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6.1-sol"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "first")
	c.WaitTurnCompleted()
	c.Result("turn/start", map[string]any{"threadId": tid, "model": "mock-model",
		"input": []any{map[string]any{"type": "text", "text": "second"}}}, nil)
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.Nil(t, namespaceTools(reqs[0].Body))
	require.NotNil(t, namespaceTools(reqs[1].Body))
	var roles []string
	for _, text := range developerTexts(reqs[1].Body) {
		if strings.Contains(text, "primary agent") {
			roles = append(roles, text)
		}
	}
	require.Len(t, roles, 2, "the role at the start, and again at the switch")
	require.Contains(t, roles[0], "The `collaboration` tools", "gpt-6.1-sol is offered the collaboration namespace")
	require.Contains(t, roles[1], "multi_agent_v1")
}
