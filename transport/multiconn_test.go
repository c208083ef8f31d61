package transport_test

import (
	"context"
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

// TestTwoConnectionsShareAThread: B subscribes with thread/resume and sees A's turn; the approval goes to
// one subscriber and, when that connection leaves without answering, is asked again on the other.
func TestTwoConnectionsShareAThread(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "echo shared", "sandbox_permissions": "require_escalated", "justification": "test"})}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}},
	)
	ts := startServer(t, serverOpts{Model: mm, ApprovalPolicy: "untrusted"})
	a := ts.mustDial(t)
	a.initialize()
	b := ts.mustDial(t)
	b.initialize()

	started := a.result("thread/start", map[string]any{"cwd": ts.Work})
	tid := started["thread"].(map[string]any)["id"].(string)
	require.Zero(t, b.count(isNotification("thread/started")), "B is not subscribed yet")

	// B attaches to the loaded thread.
	b.result("thread/resume", map[string]any{"threadId": tid})

	a.result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "go"}}})
	a.notification("turn/started")
	b.notification("turn/started")

	// The approval is asked on exactly one connection; that one leaves without answering.
	var first, second *wsClient
	req := waitEither(t, a, b, cmdApproval)
	if req.client == a {
		first, second = a, b
	} else {
		first, second = b, a
	}
	require.NoError(t, first.ws.Close(websocket.StatusNormalClosure, "bye"))

	// The other subscriber is asked instead and answers.
	again := second.serverRequest(cmdApproval)
	second.send(map[string]any{"id": again["id"], "result": map[string]any{"decision": "accept"}})
	resolved := second.notification("serverRequest/resolved")
	require.Equal(t, again["id"], resolved["params"].(map[string]any)["requestId"])
	done := second.notification("turn/completed")
	require.Equal(t, "completed", done["params"].(map[string]any)["turn"].(map[string]any)["status"])
}

type fromClient struct {
	client *wsClient
	msg    map[string]any
}

// waitEither returns the first server request of method seen on a or b.
func waitEither(t *testing.T, a, b *wsClient, method string) fromClient {
	t.Helper()
	got := make(chan fromClient, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []*wsClient{a, b} {
		go func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			for {
				for _, m := range c.msgs {
					if m["method"] == method && m["id"] != nil {
						got <- fromClient{c, m}
						return
					}
				}
				if ctx.Err() != nil || c.err != nil {
					return
				}
				c.cond.Wait()
			}
		}()
	}
	r := <-got
	cancel()
	for _, c := range []*wsClient{a, b} {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	}
	require.Equal(t, 0, otherCount(r.client, a, b, method), "the request went to one connection only")
	return r
}

func otherCount(got, a, b *wsClient, method string) int {
	other := a
	if got == a {
		other = b
	}
	return other.count(func(m map[string]any) bool { return m["method"] == method && m["id"] != nil })
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
