package transport_test

import (
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"appserver/internal/mockmodel"
	"appserver/transport"
)

const cmdApproval = "item/commandExecution/requestApproval"

func isNotification(method string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["method"] == method && m["id"] == nil }
}

func approvalModel(t *testing.T) *mockmodel.Server {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "echo shared", "sandbox_permissions": "require_escalated", "justification": "test"})}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}},
	)
	return mm
}

func threadID(r map[string]any) string { return r["thread"].(map[string]any)["id"].(string) }

func turnStart(c *wsClient, tid string) {
	c.t.Helper()
	c.result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "go"}}})
}

// TestApprovalGoesToEverySubscriber: as the reference, a server request is sent to every subscribed
// connection; the first answer wins and every asked connection is told serverRequest/resolved.
func TestApprovalGoesToEverySubscriber(t *testing.T) {
	ts := startServer(t, serverOpts{Model: approvalModel(t), ApprovalPolicy: "untrusted"})
	a := ts.mustDial(t)
	a.initialize()
	b := ts.mustDial(t)
	b.initialize()
	tid := threadID(a.result("thread/start", map[string]any{"cwd": ts.Work}))
	b.result("thread/resume", map[string]any{"threadId": tid})
	turnStart(a, tid)
	ra := a.serverRequest(cmdApproval)
	rb := b.serverRequest(cmdApproval)
	require.Equal(t, ra["params"], rb["params"])
	b.send(map[string]any{"id": rb["id"], "result": map[string]any{"decision": "accept"}})
	resolvedA := a.notification("serverRequest/resolved")
	resolvedB := b.notification("serverRequest/resolved")
	require.Equal(t, ra["id"], resolvedA["params"].(map[string]any)["requestId"], "each connection hears its own id")
	require.Equal(t, rb["id"], resolvedB["params"].(map[string]any)["requestId"])
	// A's late answer is ignored; the turn goes on with B's decision.
	a.send(map[string]any{"id": ra["id"], "result": map[string]any{"decision": "decline"}})
	for _, c := range []*wsClient{a, b} {
		done := c.notification("turn/completed")
		require.Equal(t, "completed", done["params"].(map[string]any)["turn"].(map[string]any)["status"])
	}
	item := a.waitFor(func(m map[string]any) bool {
		if m["method"] != "item/completed" {
			return false
		}
		it := m["params"].(map[string]any)["item"].(map[string]any)
		return it["type"] == "commandExecution"
	})
	require.Equal(t, "completed", item["params"].(map[string]any)["item"].(map[string]any)["status"], "B's accept ran the command")
}

// TestApprovalReachesLateSubscriberAndSurvivesItsAskerLeaving: the approval is pending on A alone; B
// subscribes with thread/resume and is asked too; A leaves without answering; B's answer completes the turn.
func TestApprovalReachesLateSubscriberAndSurvivesItsAskerLeaving(t *testing.T) {
	ts := startServer(t, serverOpts{Model: approvalModel(t), ApprovalPolicy: "untrusted"})
	a := ts.mustDial(t)
	a.initialize()
	b := ts.mustDial(t)
	b.initialize()
	tid := threadID(a.result("thread/start", map[string]any{"cwd": ts.Work}))
	require.Zero(t, b.count(isNotification("turn/started")), "B is not subscribed yet")
	turnStart(a, tid)
	a.serverRequest(cmdApproval)
	require.Zero(t, b.count(func(m map[string]any) bool { return m["method"] == cmdApproval }))

	b.result("thread/resume", map[string]any{"threadId": tid})
	again := b.serverRequest(cmdApproval)
	require.NoError(t, a.ws.Close(websocket.StatusNormalClosure, "bye"))
	b.send(map[string]any{"id": again["id"], "result": map[string]any{"decision": "accept"}})
	resolved := b.notification("serverRequest/resolved")
	require.Equal(t, again["id"], resolved["params"].(map[string]any)["requestId"])
	done := b.notification("turn/completed")
	require.Equal(t, "completed", done["params"].(map[string]any)["turn"].(map[string]any)["status"])
}

// TestUnsubscribedConnectionGetsNoNotifications: after thread/unsubscribe, B sees nothing of A's turn.
func TestUnsubscribedConnectionGetsNoNotifications(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("one", 1)}}, mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("two", 1)}})
	ts := startServer(t, serverOpts{Model: mm})
	a := ts.mustDial(t)
	a.initialize()
	b := ts.mustDial(t)
	b.initialize()
	tid := a.result("thread/start", map[string]any{"cwd": ts.Work})["thread"].(map[string]any)["id"].(string)
	b.result("thread/resume", map[string]any{"threadId": tid})

	a.result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "1"}}})
	a.notification("turn/completed")
	b.notification("turn/completed")

	b.reset()
	require.Equal(t, "unsubscribed", b.result("thread/unsubscribe", map[string]any{"threadId": tid})["status"])
	require.Equal(t, "notSubscribed", b.result("thread/unsubscribe", map[string]any{"threadId": tid})["status"])
	a.result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "2"}}})
	a.notification("turn/completed")
	// B's connection is served in order: a round trip after A's turn proves nothing was queued for it.
	b.result("thread/loaded/list", map[string]any{})
	require.Zero(t, b.count(isNotification("turn/started")), "no notifications after unsubscribing")
	require.Zero(t, b.count(isNotification("item/agentMessage/delta")))
}

// TestStalledConnectionIsDroppedWithoutDelayingOthers: A subscribes and stops reading; B's turn streams
// more messages than A's queue holds; B's turn completes and A is disconnected.
func TestStalledConnectionIsDroppedWithoutDelayingOthers(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(strings.Repeat("word ", 200), 50)}})
	var stall func()
	ts := startServer(t, serverOpts{Model: mm, QueueSize: 8, Configure: func(h *transport.WSHandler) { stall = transport.StallFirstConnection(h) }})

	a := ts.mustDial(t)
	a.initialize()
	b := ts.mustDial(t)
	b.initialize()
	tid := b.result("thread/start", map[string]any{"cwd": ts.Work})["thread"].(map[string]any)["id"].(string)
	a.result("thread/resume", map[string]any{"threadId": tid})
	stall() // A stops taking messages off its socket

	b.result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "stream"}}})
	done := b.notification("turn/completed")
	require.Equal(t, "completed", done["params"].(map[string]any)["turn"].(map[string]any)["status"])
	require.Equal(t, 50, b.count(isNotification("item/agentMessage/delta")), "B got every delta")

	// A was dropped once its queue overflowed: its connection ends.
	require.Error(t, a.waitClosed())
	require.Less(t, a.count(isNotification("item/agentMessage/delta")), 50)
}

// TestServerWideThreadNotificationsReachUnsubscribedConnections: as the reference, thread/started,
// thread/status/changed, thread/name/updated and thread/goal/updated go to every connection, while the
// turn's own notifications go to subscribers only.
func TestServerWideThreadNotificationsReachUnsubscribedConnections(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("one", 1)}})
	ts := startServer(t, serverOpts{Model: mm})
	a := ts.mustDial(t)
	a.initialize()
	b := ts.mustDial(t)
	b.initialize()
	tid := threadID(a.result("thread/start", map[string]any{"cwd": ts.Work}))
	started := b.notification("thread/started")
	require.Equal(t, tid, threadID(started["params"].(map[string]any)))

	turnStart(a, tid)
	a.notification("turn/completed")
	status := func(m map[string]any) string {
		return m["params"].(map[string]any)["status"].(map[string]any)["type"].(string)
	}
	require.Equal(t, "active", status(b.notification("thread/status/changed")))
	idle := b.waitFor(func(m map[string]any) bool { return m["method"] == "thread/status/changed" && status(m) == "idle" })
	require.Equal(t, tid, idle["params"].(map[string]any)["threadId"])

	a.result("thread/name/set", map[string]any{"threadId": tid, "name": "shared name"})
	named := b.notification("thread/name/updated")
	require.Equal(t, "shared name", named["params"].(map[string]any)["threadName"])
	a.result("thread/goal/set", map[string]any{"threadId": tid, "objective": "g", "status": "paused"})
	b.notification("thread/goal/updated")

	b.result("thread/loaded/list", map[string]any{})
	require.Zero(t, b.count(isNotification("turn/started")), "turn notifications stay with subscribers")
	require.Zero(t, b.count(isNotification("item/completed")))
}
