package server_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/stopwatch/stopwatchtest"
)

// coCall is a model call of a collaboration tool.
func coCall(name, callID string, args any) mockmodel.Item {
	it := mockmodel.FunctionCall(name, callID, args)
	it.Namespace = "collaboration"
	return it
}

// additionalNamespaces returns the namespaces of a request's additional_tools item with their function names.
func additionalNamespaces(t *testing.T, body map[string]any) map[string][]string {
	t.Helper()
	input := body["input"].([]any)
	first := input[0].(map[string]any)
	if first["type"] != "additional_tools" {
		return nil
	}
	out := map[string][]string{}
	var order []string
	for _, raw := range first["tools"].([]any) {
		ns := raw.(map[string]any)
		names := []string{}
		for _, f := range ns["tools"].([]any) {
			names = append(names, f.(map[string]any)["name"].(string))
		}
		out[ns["name"].(string)] = names
		order = append(order, ns["name"].(string))
	}
	out[""] = order
	return out
}

// plainNamespace returns the function names of a namespace in a request's tools array (nil when absent).
func plainNamespace(body map[string]any, name string) []string {
	tools, _ := body["tools"].([]any)
	for _, raw := range tools {
		tool := raw.(map[string]any)
		if tool["type"] == "namespace" && tool["name"] == name {
			names := []string{}
			for _, f := range tool["tools"].([]any) {
				names = append(names, f.(map[string]any)["name"].(string))
			}
			return names
		}
	}
	return nil
}

var collabNames = []string{"followup_task", "interrupt_agent", "list_agents", "send_message", "spawn_agent", "wait_agent"}

// The reference offers the collaboration namespace after clock in the additional_tools item of its
// multi-agent v2 code-mode models, and in the plain tools under features.multi_agent_v2.
func TestCollaborationOffered(t *testing.T) {
	for _, tc := range []struct {
		name, model, config string
		order               []string // additional_tools namespaces (nil: plain tools)
		plain               bool     // collaboration in the plain tools
	}{
		{"gpt-6.1-sol", "gpt-6.1-sol", "", []string{"functions", "clock", "collaboration"}, false},
		{"gpt-5.6-sol", "gpt-5.6-sol", "", []string{"functions", "collaboration"}, false},
		{"multi_agent off", "gpt-6.1-sol", "[features]\nmulti_agent = false\n", []string{"functions", "clock"}, false},
		{"mock model, multi_agent_v2", "", "[features]\nmulti_agent_v2 = true\n", nil, true},
		{"mock model", "", "", nil, false},
		{"gpt-5.5", "gpt-5.5", "[features]\nmulti_agent_v2 = true\n", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(okReply("hi"))
			c := apptest.Start(t, apptest.Options{Model: mm, ModelID: tc.model, Config: tc.config})
			c.Initialize(false)
			c.StartTurn(c.StartThread(nil), "hello")
			c.WaitTurnCompleted()
			body := mm.ResponseRequests()[0].Body
			ns := additionalNamespaces(t, body)
			if tc.order != nil {
				require.Equal(t, tc.order, ns[""])
				offered := tc.order[len(tc.order)-1] == "collaboration"
				if offered {
					require.Equal(t, collabNames, ns["collaboration"])
				}
				role := ""
				for _, text := range developerTexts(body) {
					if strings.Contains(text, "primary agent of this session") {
						role = text
					}
				}
				require.Equal(t, offered, strings.Contains(role, "The `collaboration` tools"), "the role text names the tools when offered: %s", role)
				return
			}
			require.Nil(t, ns)
			if tc.plain {
				require.Equal(t, collabNames, plainNamespace(body, "collaboration"))
				require.Nil(t, plainNamespace(body, "multi_agent_v1"), "v2 replaces multi_agent_v1")
			} else {
				require.Nil(t, plainNamespace(body, "collaboration"))
			}
		})
	}
}

// splitRequests separates the parent's model requests from its sub-agents'.
func splitRequests(mm *mockmodel.Server) (parent, child []map[string]any) {
	for _, r := range mm.ResponseRequests() {
		if mockmodel.SubAgentRequest(r) {
			child = append(child, r.Body)
		} else {
			parent = append(parent, r.Body)
		}
	}
	return parent, child
}

// activityItems returns the subAgentActivity items of item/completed notifications, in order.
func activityItems(t *testing.T, msgs []apptest.Message) []map[string]any {
	var out []map[string]any
	for _, m := range msgs {
		if m.IsNotification() && m.Method == "item/completed" {
			item := params(t, m)["item"].(map[string]any)
			if item["type"] == "subAgentActivity" {
				out = append(out, item)
			}
		}
	}
	return out
}

// agentMessages returns a request's agent_message input items without their ids.
func agentMessages(body map[string]any) []map[string]any {
	var out []map[string]any
	for _, it := range body["input"].([]any) {
		m := it.(map[string]any)
		if m["type"] == "agent_message" {
			cp := map[string]any{}
			for k, v := range m {
				if k != "id" {
					cp[k] = v
				}
			}
			out = append(out, cp)
		}
	}
	return out
}

// task is the agent_message item of a NEW_TASK or MESSAGE as the reference builds it: the framing, then the
// payload apart as encrypted_content.
func task(kind, recipient, sender, payload string) map[string]any {
	return map[string]any{"type": "agent_message", "author": sender, "recipient": recipient, "content": []any{
		map[string]any{"type": "input_text", "text": "Message Type: " + kind + "\nTask name: " + recipient + "\nSender: " + sender + "\nPayload:\n"},
		map[string]any{"type": "encrypted_content", "encrypted_content": payload},
	}}
}

// finalAnswer is the agent_message item of a FINAL_ANSWER as the reference builds it (the answer inline).
func finalAnswer(recipient, sender, answer string) map[string]any {
	return map[string]any{"type": "agent_message", "author": sender, "recipient": recipient, "content": []any{
		map[string]any{"type": "input_text", "text": "Message Type: FINAL_ANSWER\nTask name: " + recipient + "\nSender: " + sender + "\nPayload:\n" + answer},
	}}
}

// readCollabTurns returns thread/read's preview and turns (with their items) of a thread.
func readCollabTurns(c *apptest.Client, id string) (preview string, turns []map[string]any) {
	var out struct {
		Thread struct {
			Preview string           `json:"preview"`
			Turns   []map[string]any `json:"turns"`
		} `json:"thread"`
	}
	c.Result("thread/read", map[string]any{"threadId": id, "includeTurns": true}, &out)
	return out.Thread.Preview, out.Thread.Turns
}

// delegation is a parent turn that spawns /root/worker (forked), waits, lists, sends it a note and a
// follow-up task and waits again; it returns the client, the parent's thread id, the mark before the turn and
// the model requests of the parent and the child.
func delegation(t *testing.T) (c *apptest.Client, tid string, mark int, parent, child []map[string]any) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{coCall("spawn_agent", "s1", map[string]any{"task_name": "worker", "message": "count the files"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("wait_agent", "w1", map[string]any{"timeout_ms": 3600000})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("list_agents", "l1", map[string]any{})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("send_message", "m1", map[string]any{"target": "worker", "message": "mind the hidden ones"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("followup_task", "f1", map[string]any{"target": "/root/worker", "message": "now the dirs"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("wait_agent", "w2", map[string]any{})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("list_agents", "l2", map[string]any{"path_prefix": "/root/worker"})}},
		okReply("parent done"),
	)
	mm.EnqueueFor(mockmodel.SubAgentRequest, okReply("3 files"), okReply("2 dirs"))
	c = apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6.1-sol"})
	c.Initialize(false)
	tid = c.StartThread(nil)
	mark = c.Mark()
	c.StartTurn(tid, "delegate")
	c.WaitNotification("turn/completed", threadIDIs(tid))

	parent, child = splitRequests(mm)
	return c, tid, mark, parent, child
}

func TestCollaborationSpawnWaitMessageFollowup(t *testing.T) {
	c, tid, mark, parent, child := delegation(t)
	require.Len(t, parent, 8)
	require.Len(t, child, 2)
	require.Equal(t, collabNames, additionalNamespaces(t, child[0])["collaboration"], "a sub-agent can start its own agents")
	require.Equal(t, `{"task_name":"/root/worker"}`, fnOutput(t, parent[1], "s1"))
	require.Equal(t, false, jsonOutput(t, parent[2], "w1")["timed_out"])
	require.Equal(t, map[string]any{"agents": []any{
		map[string]any{"agent_name": "/root", "agent_status": "running"},
		map[string]any{"agent_name": "/root/worker", "agent_status": map[string]any{"completed": "3 files"}},
	}}, jsonOutput(t, parent[3], "l1"))
	require.Equal(t, "", fnOutput(t, parent[4], "m1"))
	require.Equal(t, "", fnOutput(t, parent[5], "f1"))
	require.Equal(t, false, jsonOutput(t, parent[6], "w2")["timed_out"])
	require.Equal(t, map[string]any{"agents": []any{
		map[string]any{"agent_name": "/root/worker", "agent_status": map[string]any{"completed": "2 dirs"}},
	}}, jsonOutput(t, parent[7], "l2"))

	// The child gets its task, then the note ahead of its follow-up task; the parent gets each answer: all
	// as agent_message items (as the reference's), never as user messages.
	require.Equal(t, []map[string]any{task("NEW_TASK", "/root/worker", "/root", "count the files")}, agentMessages(child[0]))
	require.Equal(t, []map[string]any{
		task("NEW_TASK", "/root/worker", "/root", "count the files"),
		task("MESSAGE", "/root/worker", "/root", "mind the hidden ones"),
		task("NEW_TASK", "/root/worker", "/root", "now the dirs"),
	}, agentMessages(child[1]))
	require.Equal(t, []map[string]any{finalAnswer("/root", "/root/worker", "3 files"), finalAnswer("/root", "/root/worker", "2 dirs")},
		agentMessages(parent[7]))
	for _, body := range append(append([]map[string]any{}, child...), parent...) {
		require.NotContains(t, strings.Join(userTexts(body), "\n"), "Message Type:", "no envelope as a user message")
	}
	var childID string
	for _, m := range c.Since(mark) {
		if m.IsNotification() && strings.HasPrefix(m.Method, "item/") {
			p := params(t, m)
			item, _ := p["item"].(map[string]any)
			if p["threadId"] != tid {
				childID = p["threadId"].(string)
				require.NotEqual(t, "userMessage", item["type"], "the child's turn shows no userMessage item")
			}
		}
	}
	require.NotEmpty(t, childID)
	var kinds []string
	for _, it := range activityItems(t, c.Since(mark)) {
		require.Equal(t, "/root/worker", it["agentPath"])
		kinds = append(kinds, it["kind"].(string)+":"+strings.SplitN(it["id"].(string), "-", 2)[0])
	}
	require.Equal(t, []string{"started:s1", "completed:subagent", "interacted:m1", "interacted:f1", "completed:subagent"}, kinds)
	waits := collabItems(t, c.Since(mark), "item/completed")
	require.Equal(t, "wait", waits["w1"]["tool"])
	require.Equal(t, "completed", waits["w1"]["status"])
	require.Equal(t, []any{}, waits["w1"]["receiverThreadIds"])
}

// The reference's multi-agent v2 forks the parent's history with its running spawn call answered "aborted",
// then tells the agent it was spawned and its role, before its task.
func TestCollaborationForkKeepsTheRunningSpawn(t *testing.T) {
	_, _, _, _, child := delegation(t)
	var tail []string
	seen := false
	for _, it := range child[0]["input"].([]any) {
		m := it.(map[string]any)
		if !seen {
			seen = m["role"] == "user" && strings.Contains(strings.Join(userTexts(map[string]any{"input": []any{m}}), ""), "delegate")
			continue
		}
		d := m["type"].(string)
		switch d {
		case "function_call", "function_call_output":
			d += ":" + m["call_id"].(string)
			if out, ok := m["output"].(string); ok {
				d += ":" + out
			}
		case "message":
			text := m["content"].([]any)[0].(map[string]any)["text"].(string)
			d = m["role"].(string) + ":" + text[:min(len(text), 40)]
		}
		tail = append(tail, d)
	}
	require.Equal(t, []string{
		"function_call:s1", "function_call_output:s1:aborted",
		"developer:You are now an agent started by the agen",
		"developer:<multi_agent_role>You are an agent of a ",
		"developer:<multi_agent_mode>Do not delegate to sub",
		"agent_message",
	}, tail)

}

// thread/read keeps the completed activity items in the parent's turn, as the reference's does.
func TestCollaborationReadKeepsActivity(t *testing.T) {
	c, tid, mark, _, _ := delegation(t)
	var childID string
	for _, m := range c.Since(mark) {
		if m.IsNotification() && strings.HasPrefix(m.Method, "item/") && params(t, m)["threadId"] != tid {
			childID = params(t, m)["threadId"].(string)
		}
	}
	require.NotEmpty(t, childID)
	// thread/read keeps what the client saw: the parent's turn holds the completed activity items, the child's
	// turns only their answers (and the child has no preview).
	_, pturns := readCollabTurns(c, tid)
	require.Len(t, pturns, 1)
	var kept []string
	for _, it := range pturns[0]["items"].([]any) {
		item := it.(map[string]any)
		if item["type"] == "subAgentActivity" {
			kept = append(kept, item["kind"].(string)+":"+strings.SplitN(item["id"].(string), "-", 2)[0])
		}
	}
	require.Equal(t, []string{"started:s1", "completed:subagent", "interacted:m1", "interacted:f1", "completed:subagent"}, kept)
	preview, cturns := readCollabTurns(c, childID)
	require.Equal(t, "", preview)
	require.Len(t, cturns, 2)
	for _, turn := range cturns {
		var types []string
		for _, it := range turn["items"].([]any) {
			types = append(types, it.(map[string]any)["type"].(string))
		}
		require.Equal(t, []string{"agentMessage"}, types)
	}

}

func TestCollaborationInterruptErrorsAndTimeout(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{coCall("spawn_agent", "s1", map[string]any{"task_name": "worker", "message": "take your time", "fork_turns": "none"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("interrupt_agent", "i1", map[string]any{"target": "worker"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("interrupt_agent", "i2", map[string]any{"target": "/root/worker"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("send_message", "e1", map[string]any{"target": "nobody", "message": "x"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("followup_task", "e2", map[string]any{"target": "/root", "message": "x"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("interrupt_agent", "e3", map[string]any{"target": "/root/nobody"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("spawn_agent", "e4", map[string]any{"task_name": "Bad-Name", "message": "x"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("spawn_agent", "e5", map[string]any{"task_name": "worker", "message": "again"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("wait_agent", "w1", map[string]any{"timeout_ms": 5})}},
		okReply("gave up"),
	)
	mm.EnqueueFor(mockmodel.SubAgentRequest, mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(120)}})
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6.1-sol", Clock: clock})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "delegate")
	// The child's request must be hanging before the interrupt, for a running turn to interrupt.
	c.WaitNotification("item/started", func(p json.RawMessage) bool { return strings.Contains(string(p), `"tool":"wait"`) })
	clock.Advance(9999 * time.Millisecond) // timeout_ms is raised to the 10 s minimum
	clock.Advance(time.Millisecond)
	c.WaitNotification("turn/completed", threadIDIs(tid))

	parent, _ := splitRequests(mm)
	require.Len(t, parent, 10)
	require.Equal(t, map[string]any{"previous_status": "running"}, jsonOutput(t, parent[2], "i1"))
	require.Equal(t, map[string]any{"previous_status": "interrupted"}, jsonOutput(t, parent[3], "i2"))
	// The reference's texts.
	require.Equal(t, "live agent path `/root/nobody` not found", fnOutput(t, parent[4], "e1"))
	require.Equal(t, "Follow-up tasks can't target the root agent", fnOutput(t, parent[5], "e2"))
	require.Equal(t, "live agent path `/root/nobody` not found", fnOutput(t, parent[6], "e3"))
	require.Equal(t, "agent_name must use only lowercase letters, digits, and underscores", fnOutput(t, parent[7], "e4"))
	require.Equal(t, "agent path `/root/worker` already exists", fnOutput(t, parent[8], "e5"))
	require.Equal(t, map[string]any{"message": "Wait timed out.", "timed_out": true}, jsonOutput(t, parent[9], "w1"), "an interrupted turn is no news")

	var kinds []string
	for _, it := range activityItems(t, c.Since(mark)) {
		kinds = append(kinds, it["kind"].(string)+":"+it["id"].(string))
	}
	require.Equal(t, []string{"started:s1", "interrupted:i1", "interrupted:i2"}, kinds, "failed calls have no items")
}

func TestCollaborationInterruptEndsAWait(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{coCall("spawn_agent", "s1", map[string]any{"task_name": "worker", "message": "hang on"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("wait_agent", "w1", map[string]any{"timeout_ms": 3600000})}},
	)
	mm.EnqueueFor(mockmodel.SubAgentRequest, mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(120)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6.1-sol"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	turn := c.StartTurn(tid, "delegate")
	c.WaitNotification("item/started", func(p json.RawMessage) bool { return strings.Contains(string(p), `"tool":"wait"`) })
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": turn}, nil)
	m := c.WaitNotification("turn/completed", threadIDIs(tid))
	require.Equal(t, "interrupted", params(t, m)["turn"].(map[string]any)["status"])
}

// wait_agent ends when the user steers new input into the waiting turn, as the reference's description says.
func TestCollaborationWaitEndsOnSteer(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{coCall("wait_agent", "w1", map[string]any{"timeout_ms": 3600000})}},
		okReply("done"),
	)
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6.1-sol"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	turnID := c.StartTurn(tid, "wait for news")
	c.WaitNotification("item/started", func(p json.RawMessage) bool { return strings.Contains(string(p), `"tool":"wait"`) })
	c.Result("turn/steer", map[string]any{"threadId": tid, "expectedTurnId": turnID, "input": []any{map[string]any{"type": "text", "text": "stop waiting"}}}, nil)
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	require.Equal(t, map[string]any{"message": "Wait completed.", "timed_out": false}, jsonOutput(t, mm.ResponseRequests()[1].Body, "w1"),
		"the reference's text, as for news")
}

// An agent starts its own agent: the grandchild's path is under its parent's, its answer goes to its
// parent (not the root), and list_agents from the root shows the whole tree.
func TestCollaborationNestedAgents(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{coCall("spawn_agent", "s1", map[string]any{"task_name": "worker", "message": "split the job", "fork_turns": "none"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("wait_agent", "w1", map[string]any{"timeout_ms": 3600000})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("list_agents", "l1", map[string]any{})}},
		okReply("root done"),
	)
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6.1-sol"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	child := func(r mockmodel.Request) bool { return r.Header.Get("x-codex-parent-thread-id") == tid }
	grandchild := func(r mockmodel.Request) bool {
		p := r.Header.Get("x-codex-parent-thread-id")
		return p != "" && p != tid
	}
	mm.EnqueueFor(child,
		mockmodel.Response{Items: []mockmodel.Item{coCall("spawn_agent", "cs1", map[string]any{"task_name": "sub", "message": "half of it", "fork_turns": "none"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("wait_agent", "cw1", map[string]any{"timeout_ms": 3600000})}},
		okReply("child done"),
	)
	mm.EnqueueFor(grandchild, okReply("grand done"))
	c.StartTurn(tid, "delegate")
	c.WaitNotification("turn/completed", threadIDIs(tid))

	var root, kid, grand []map[string]any
	for _, r := range mm.ResponseRequests() {
		switch {
		case child(r):
			kid = append(kid, r.Body)
		case grandchild(r):
			grand = append(grand, r.Body)
		default:
			root = append(root, r.Body)
		}
	}
	require.Len(t, root, 4)
	require.Len(t, kid, 3)
	require.Len(t, grand, 1)
	require.Equal(t, `{"task_name":"/root/worker/sub"}`, fnOutput(t, kid[1], "cs1"))
	require.Equal(t, []map[string]any{task("NEW_TASK", "/root/worker/sub", "/root/worker", "half of it")}, agentMessages(grand[0]))
	require.Contains(t, agentMessages(kid[2]), finalAnswer("/root/worker", "/root/worker/sub", "grand done"))
	require.Equal(t, []map[string]any{finalAnswer("/root", "/root/worker", "child done")}, agentMessages(root[3]), "a grandchild answers its own parent")
	// A fresh (fork_turns none) agent's initial context tells it a child's role, not the root's.
	for _, body := range [][]map[string]any{kid, grand} {
		dev := strings.Join(developerTexts(body[0]), "\n")
		require.Contains(t, dev, "<multi_agent_role>You are an agent of a team working on the user's goals, started by another agent")
		require.NotContains(t, dev, "You are `/root`")
		require.NotContains(t, dev, "You are now an agent started by", "only a forked agent is told it inherited a conversation")
	}
	require.Contains(t, strings.Join(developerTexts(root[0]), "\n"), "You are `/root`")
	// Sub-agents get the gpt-6.x tools but request_user_input_async, as the reference's.
	require.Equal(t, []string{"exec", "wait", "request_user_input", "request_user_input_async"}, additionalNamespaces(t, root[0])["functions"])
	for _, body := range [][]map[string]any{kid, grand} {
		require.Equal(t, []string{"exec", "wait", "request_user_input"}, additionalNamespaces(t, body[0])["functions"])
	}
	require.Equal(t, map[string]any{"agents": []any{
		map[string]any{"agent_name": "/root", "agent_status": "running"},
		map[string]any{"agent_name": "/root/worker", "agent_status": map[string]any{"completed": "child done"}},
		map[string]any{"agent_name": "/root/worker/sub", "agent_status": map[string]any{"completed": "grand done"}},
	}}, jsonOutput(t, root[3], "l1"))
}

// A count of turns in fork_turns is accepted; the reference (0.169.0) then forks the whole history.
func TestCollaborationForkTurnsCount(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		okReply("first answer"),
		mockmodel.Response{Items: []mockmodel.Item{coCall("spawn_agent", "s1", map[string]any{"task_name": "worker", "message": "go", "fork_turns": "1"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("wait_agent", "w1", map[string]any{"timeout_ms": 3600000})}},
		okReply("parent done"),
	)
	mm.EnqueueFor(mockmodel.SubAgentRequest, okReply("child done"))
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6.1-sol"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "first question")
	c.WaitNotification("turn/completed", threadIDIs(tid))
	c.StartTurn(tid, "delegate")
	c.WaitNotification("turn/completed", threadIDIs(tid))
	parent, child := splitRequests(mm)
	require.Equal(t, `{"task_name":"/root/worker"}`, fnOutput(t, parent[2], "s1"))
	require.Len(t, child, 1)
	require.Equal(t, []string{"first question", "delegate"}, userTexts(child[0])[1:])
}

// The root as a target, as the reference treats it: a note to it is delivered (to the caller itself here)
// and shown as an interacted item; interrupting it is refused.
func TestCollaborationRootAsTarget(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{coCall("send_message", "m1", map[string]any{"target": "/root", "message": "self note"})}},
		mockmodel.Response{Items: []mockmodel.Item{coCall("interrupt_agent", "i1", map[string]any{"target": "/root"})}},
		okReply("done"),
	)
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6.1-sol"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "note to self")
	c.WaitNotification("turn/completed", threadIDIs(tid))
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	require.Equal(t, "", fnOutput(t, reqs[1].Body, "m1"))
	require.Equal(t, []map[string]any{task("MESSAGE", "/root", "/root", "self note")}, agentMessages(reqs[1].Body))
	require.Equal(t, "root is not a spawned agent", fnOutput(t, reqs[2].Body, "i1"))
	items := activityItems(t, c.Since(mark))
	require.Len(t, items, 1, "the refused interrupt has no item")
	require.Equal(t, "interacted", items[0]["kind"])
	require.Equal(t, "/root", items[0]["agentPath"])
	require.Equal(t, tid, items[0]["agentThreadId"])
}

// The base instructions message keeps its id from request to request, and a forked agent's requests start
// with the parent's, as the reference's (where it is part of the history).
func TestCollaborationBaseMessageShared(t *testing.T) {
	_, _, _, parent, child := delegation(t)
	id := func(body map[string]any) any { return body["input"].([]any)[1].(map[string]any)["id"] }
	for _, body := range append(parent[1:], child...) {
		require.Equal(t, id(parent[0]), id(body))
	}
}
