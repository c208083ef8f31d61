package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/rollout"
)

// rawConn is a second client connection to an apptest server, spoken to in raw JSON lines.
type rawConn struct {
	t    *testing.T
	in   *io.PipeWriter
	mu   sync.Mutex
	msgs []map[string]any
	done chan struct{}
}

// connect opens another connection on c's server; it is closed before the server.
func connect(t *testing.T, c *apptest.Client) *rawConn {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	rc := &rawConn{t: t, in: inW, done: make(chan struct{})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = c.Srv.ServeConn(context.Background(), inR, outW)
		_ = outW.Close()
	}()
	go func() {
		defer close(rc.done)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				rc.mu.Lock()
				rc.msgs = append(rc.msgs, m)
				rc.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		<-served
		<-rc.done
	})
	return rc
}

func (rc *rawConn) send(v map[string]any) {
	b, err := json.Marshal(v)
	require.NoError(rc.t, err)
	_, err = rc.in.Write(append(b, '\n'))
	require.NoError(rc.t, err)
}

// waitFor waits for a message satisfying pred.
func (rc *rawConn) waitFor(what string, pred func(map[string]any) bool) map[string]any {
	deadline := time.Now().Add(apptest.WaitLimit)
	for time.Now().Before(deadline) {
		rc.mu.Lock()
		for _, m := range rc.msgs {
			if pred(m) {
				rc.mu.Unlock()
				return m
			}
		}
		rc.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	rc.t.Fatalf("second connection: no %s", what)
	return nil
}

func (rc *rawConn) notification(method, threadID string) map[string]any {
	return rc.waitFor(method, func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		return m["method"] == method && p != nil && p["threadId"] == threadID
	})
}

func (rc *rawConn) has(method string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, m := range rc.msgs {
		if m["method"] == method {
			return true
		}
	}
	return false
}

func TestLifecycleNotificationsReachEveryConnection(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("hi", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	other := connect(t, c)
	other.send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"clientInfo": map[string]any{"name": "second", "version": "1"}}})
	other.waitFor("initialize result", func(m map[string]any) bool { return m["id"] == float64(1) && m["result"] != nil })
	silent := connect(t, c) // never initialized: gets nothing

	tid := oneTurnThread(t, c, "hello")
	c.Result("thread/name/set", map[string]any{"threadId": tid, "name": "Named"}, nil)
	n := other.notification("thread/name/updated", tid)
	require.Equal(t, "Named", n["params"].(map[string]any)["threadName"])
	// The caller (a subscriber) is told once, not twice.
	c.WaitNotification("thread/name/updated", threadIDIs(tid))
	c.Result("thread/archive", map[string]any{"threadId": tid}, nil)
	other.notification("thread/archived", tid)
	c.Result("thread/unarchive", map[string]any{"threadId": tid}, nil)
	other.notification("thread/unarchived", tid)
	c.Result("thread/delete", map[string]any{"threadId": tid}, nil)
	other.notification("thread/deleted", tid)
	c.WaitNotification("thread/deleted", threadIDIs(tid))
	names := 0
	for _, m := range c.Messages() {
		if m.Method == "thread/name/updated" {
			names++
		}
	}
	require.Equal(t, 1, names)
	require.NotContains(t, apptest.NotificationMethods(c.Messages()), "thread/readState/changed", "experimental notification without opt-in")
	for _, m := range []string{"thread/name/updated", "thread/archived", "thread/unarchived", "thread/deleted"} {
		require.False(t, silent.has(m), "uninitialized connection got %s", m)
	}
}

// readStateOf reads thread/read's readState as raw JSON ("null" when absent).
func readStateOf(t *testing.T, c *apptest.Client, tid string) map[string]any {
	t.Helper()
	var res struct {
		ReadState map[string]any `json:"readState"`
	}
	c.Result("thread/read", map[string]any{"threadId": tid}, &res)
	return res.ReadState
}

func firstUnreadTurn(rs map[string]any) string {
	fu, _ := rs["firstUnread"].(map[string]any)
	if fu == nil || fu["type"] != "turn" {
		return ""
	}
	return fu["turnId"].(string)
}

func TestReadStateFollowsTurnsUpdatesAndRestarts(t *testing.T) {
	mm := mockmodel.New(t)
	for i := 0; i < 3; i++ {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("reply", 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(nil)
	require.Nil(t, readStateOf(t, c, tid), "a thread without turns has no read state")

	first := c.StartTurn(tid, "one")
	c.WaitTurnCompleted()
	rs1 := readStateOf(t, c, tid)
	require.Equal(t, first, firstUnreadTurn(rs1))
	// thread/readState/changed precedes the idle status of the turn's end.
	var order []string
	for _, m := range c.Messages() {
		if m.Method == "thread/readState/changed" || m.Method == "thread/status/changed" || m.Method == "turn/completed" {
			order = append(order, m.Method)
		}
	}
	require.Equal(t, []string{"thread/status/changed", "thread/readState/changed", "thread/status/changed", "turn/completed"}, order)

	c.StartTurn(tid, "two")
	c.WaitTurnCompleted()
	rs2 := readStateOf(t, c, tid)
	require.Equal(t, first, firstUnreadTurn(rs2), "the first unread turn stays")
	require.NotEqual(t, rs1["revision"], rs2["revision"])

	var list struct {
		ReadStates map[string]map[string]any `json:"readStates"`
	}
	c.Result("thread/list", map[string]any{}, &list)
	require.Equal(t, rs2, list.ReadStates[tid])

	// A stale revision is a conflict that reports the current state.
	m := c.Request("thread/readState/update", map[string]any{"threadId": tid, "operation": map[string]any{"type": "read"}, "expectedRevision": rs1["revision"]})
	require.NotNil(t, m.Error)
	require.Equal(t, -32600, m.Error.Code)
	require.Equal(t, "read state changed", m.Error.Message)
	require.Contains(t, string(m.Raw), `"readStateConflict"`)

	var upd struct {
		ReadState map[string]any `json:"readState"`
	}
	c.Result("thread/readState/update", map[string]any{"threadId": tid, "operation": map[string]any{"type": "read"}, "expectedRevision": rs2["revision"]}, &upd)
	require.Nil(t, upd.ReadState["firstUnread"])
	c.WaitNotification("thread/readState/changed", threadIDIs(tid))
	require.Equal(t, upd.ReadState, readStateOf(t, c, tid))
	c.Result("thread/readState/update", map[string]any{"threadId": tid, "operation": map[string]any{"type": "unread"}, "expectedRevision": upd.ReadState["revision"]}, &upd)
	require.Equal(t, map[string]any{"type": "threadStart"}, upd.ReadState["firstUnread"])

	for _, bad := range []map[string]any{
		{"threadId": tid, "expectedRevision": "x"},
		{"threadId": tid, "operation": map[string]any{"type": "bogus"}, "expectedRevision": "x"},
		{"threadId": "not-a-uuid", "operation": map[string]any{"type": "read"}, "expectedRevision": "x"},
		{"threadId": "01b00000-0000-7000-8000-0000000000ff", "operation": map[string]any{"type": "read"}, "expectedRevision": "x"},
	} {
		m := c.Request("thread/readState/update", bad)
		require.NotNil(t, m.Error, "%v", bad)
		require.Equal(t, -32600, m.Error.Code)
	}

	// A fork starts with nothing unread.
	var fork struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	c.Result("thread/fork", map[string]any{"threadId": tid, "excludeTurns": true}, &fork)
	require.Equal(t, map[string]any{"firstUnread": nil, "revision": "initial:" + fork.Thread.ID}, readStateOf(t, c, fork.Thread.ID))

	// The state survives a restart.
	home := c.Home
	c.Close()
	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c2.Initialize(true)
	require.Equal(t, upd.ReadState, readStateOf(t, c2, tid))
}

func TestReadStateOfInterruptedOnlyThread(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(60)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	turn := c.StartTurn(tid, "stop me")
	c.WaitNotification("turn/started", nil)
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": turn}, nil)
	require.Equal(t, "interrupted", c.WaitTurnCompleted()["status"])
	require.Equal(t, map[string]any{"firstUnread": nil, "revision": "initial:" + tid}, readStateOf(t, c, tid))
	for _, m := range c.Messages() {
		require.NotEqual(t, "thread/readState/changed", m.Method)
	}
}

type pageResp struct {
	Data []struct {
		ID     string         `json:"id"`
		TurnID string         `json:"turnId"`
		Item   map[string]any `json:"item"`
	} `json:"data"`
	NextCursor      *string `json:"nextCursor"`
	BackwardsCursor *string `json:"backwardsCursor"`
}

func (p pageResp) ids() []string {
	var out []string
	for _, d := range p.Data {
		if d.Item != nil {
			out = append(out, d.Item["id"].(string))
		} else {
			out = append(out, d.ID)
		}
	}
	return out
}

func TestHistoryCursorsPageBothWays(t *testing.T) {
	mm := mockmodel.New(t)
	for i := 0; i < 3; i++ {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("reply", 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	var turns []string
	for _, txt := range []string{"one", "two", "three"} {
		turns = append(turns, c.StartTurn(tid, txt))
		c.WaitTurnCompleted()
	}
	for _, loaded := range []bool{true, false} {
		if !loaded {
			c.Srv.Threads().Unload(tid)
		}
		list := func(method string, params map[string]any) pageResp {
			t.Helper()
			params["threadId"] = tid
			var p pageResp
			c.Result(method, params, &p)
			return p
		}
		// Turns: newest first by default, one per page, then back the other way from the backwards cursor.
		p1 := list("thread/turns/list", map[string]any{"limit": 1})
		require.Equal(t, []string{turns[2]}, p1.ids())
		require.Regexp(t, `"includeAnchor":false`, *p1.NextCursor)
		require.Regexp(t, `"rolloutOrdinal":\d+`, *p1.NextCursor)
		p2 := list("thread/turns/list", map[string]any{"limit": 1, "cursor": *p1.NextCursor})
		require.Equal(t, []string{turns[1]}, p2.ids())
		p3 := list("thread/turns/list", map[string]any{"limit": 1, "cursor": *p2.NextCursor})
		require.Equal(t, []string{turns[0]}, p3.ids())
		require.Nil(t, p3.NextCursor)
		back := list("thread/turns/list", map[string]any{"limit": 5, "sortDirection": "asc", "cursor": *p2.BackwardsCursor})
		require.Equal(t, []string{turns[1], turns[2]}, back.ids(), "the backwards cursor includes its anchor")
		require.Nil(t, back.NextCursor)
		same := list("thread/turns/list", map[string]any{"limit": 1, "cursor": *p2.BackwardsCursor})
		require.Equal(t, []string{turns[1]}, same.ids())

		// Items: oldest first by default.
		i1 := list("thread/items/list", map[string]any{"limit": 2})
		require.Len(t, i1.Data, 2)
		require.Equal(t, turns[0], i1.Data[0].TurnID)
		require.Equal(t, "userMessage", i1.Data[0].Item["type"])
		require.Contains(t, *i1.NextCursor, `"itemsByCreatedAtOrdinal"`)
		i2 := list("thread/items/list", map[string]any{"limit": 2, "cursor": *i1.NextCursor})
		require.Equal(t, turns[1], i2.Data[0].TurnID)
		desc := list("thread/items/list", map[string]any{"limit": 10, "sortDirection": "desc", "cursor": *i2.BackwardsCursor})
		require.Len(t, desc.Data, 3, "items at and before the anchor")
		require.Equal(t, i2.Data[0].Item["id"], desc.Data[0].Item["id"])

		// An item anchor inside a turn is exclusive.
		inTurn := list("thread/items/list", map[string]any{"turnId": turns[1]})
		require.Len(t, inTurn.Data, 2)
		after := list("thread/items/list", map[string]any{"turnId": turns[1], "cursor": map[string]any{"type": "item", "itemId": inTurn.Data[0].Item["id"]}})
		require.Equal(t, inTurn.ids()[1:], after.ids())
	}

	// Resume's backwards cursors page from the newest entries.
	var res struct {
		TurnsBackwardsCursor string `json:"turnsBackwardsCursor"`
		ItemsBackwardsCursor string `json:"itemsBackwardsCursor"`
	}
	c.Result("thread/resume", map[string]any{"threadId": tid, "excludeTurns": true}, &res)
	var p pageResp
	c.Result("thread/turns/list", map[string]any{"threadId": tid, "limit": 1, "cursor": res.TurnsBackwardsCursor}, &p)
	require.Equal(t, []string{turns[2]}, p.ids())
	c.Result("thread/items/list", map[string]any{"threadId": tid, "limit": 1, "sortDirection": "desc", "cursor": res.ItemsBackwardsCursor}, &p)
	require.Len(t, p.Data, 1)
	require.Equal(t, turns[2], p.Data[0].TurnID)
	require.Equal(t, "agentMessage", p.Data[0].Item["type"])

	for _, bad := range []struct {
		method string
		params map[string]any
	}{
		{"thread/turns/list", map[string]any{"cursor": "garbage"}},
		{"thread/turns/list", map[string]any{"cursor": "3"}},
		{"thread/turns/list", map[string]any{"cursor": strings.Replace(res.TurnsBackwardsCursor, tid, "01b00000-0000-7000-8000-0000000000ff", 1)}},
		{"thread/turns/list", map[string]any{"cursor": res.ItemsBackwardsCursor}},
		{"thread/items/list", map[string]any{"cursor": res.TurnsBackwardsCursor}},
		{"thread/items/list", map[string]any{"cursor": map[string]any{"type": "item", "itemId": "x"}}},
		{"thread/items/list", map[string]any{"turnId": turns[0], "cursor": map[string]any{"type": "item", "itemId": "missing"}}},
		{"thread/items/list", map[string]any{"cursor": 7}},
	} {
		bad.params["threadId"] = tid
		m := c.Request(bad.method, bad.params)
		require.NotNil(t, m.Error, "%s %v", bad.method, bad.params)
		require.Equal(t, -32600, m.Error.Code)
	}
}

func TestThreadListBackwardsCursor(t *testing.T) {
	mm := mockmodel.New(t)
	for i := 0; i < 3; i++ {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	empty0 := c.StartThread(nil) // no turn: not listed, as the reference
	var ids []string
	for i := 0; i < 3; i++ {
		time.Sleep(5 * time.Millisecond) // distinct creation instants
		ids = append(ids, oneTurnThread(t, c, fmt.Sprint("q", i)))
	}
	type listResp struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		NextCursor      *string `json:"nextCursor"`
		BackwardsCursor *string `json:"backwardsCursor"`
	}
	get := func(params map[string]any) listResp {
		var r listResp
		// updated_at: under created_at the reference pages by whole seconds of the file names, where this
		// cursor arithmetic does not hold (TestThreadListCreatedAtByFileName)
		params["sortKey"] = "updated_at"
		c.Result("thread/list", params, &r)
		return r
	}
	all := get(map[string]any{})
	require.Len(t, all.Data, 3)
	require.NotContains(t, []string{all.Data[0].ID, all.Data[1].ID, all.Data[2].ID}, empty0)
	p1 := get(map[string]any{"limit": 1})
	require.Len(t, p1.Data, 1)
	require.Equal(t, ids[2], p1.Data[0].ID)
	require.NotNil(t, p1.BackwardsCursor)
	require.Regexp(t, regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$`), *p1.BackwardsCursor)
	require.Regexp(t, regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z\|`+ids[2]+`$`), *p1.NextCursor)
	p2 := get(map[string]any{"limit": 1, "cursor": *p1.NextCursor})
	require.Equal(t, ids[1], p2.Data[0].ID)
	back := get(map[string]any{"sortDirection": "asc", "cursor": *p2.BackwardsCursor})
	require.Equal(t, []string{ids[1], ids[2]}, []string{back.Data[0].ID, back.Data[1].ID}, "inclusive, towards newer threads")
	// It is 1 ms before the first thread's (as the reference's): in the page's own direction it starts after it.
	again := get(map[string]any{"cursor": *p2.BackwardsCursor})
	require.Equal(t, ids[0], again.Data[0].ID)
	empty := get(map[string]any{"archived": true})
	require.Empty(t, empty.Data)
	require.Nil(t, empty.BackwardsCursor)
	m := c.Request("thread/list", map[string]any{"cursor": "not a cursor"})
	require.NotNil(t, m.Error)
	require.Equal(t, -32600, m.Error.Code)
}

func TestResumeWithHistoryStartsANewThread(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("one", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("two", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true) // history is experimental
	tid := oneTurnThread(t, c, "original")
	mark := c.Mark()
	var res struct {
		Thread struct {
			ID      string `json:"id"`
			Preview string `json:"preview"`
			Path    string `json:"path"`
		} `json:"thread"`
		TurnsBackwardsCursor *string `json:"turnsBackwardsCursor"`
	}
	c.Result("thread/resume", map[string]any{"threadId": tid, "excludeTurns": true, "history": []any{
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "HISTORY-MARKER"}}},
	}}, &res)
	require.NotEqual(t, tid, res.Thread.ID)
	require.Equal(t, "HISTORY-MARKER", res.Thread.Preview)
	require.Nil(t, res.TurnsBackwardsCursor)
	require.FileExists(t, res.Thread.Path)
	methods := apptest.NotificationMethods(c.Since(mark))
	require.Contains(t, methods, "thread/status/changed")
	require.NotContains(t, methods, "thread/started")

	c.StartTurn(res.Thread.ID, "next")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	body, err := json.Marshal(reqs[len(reqs)-1].Body["input"])
	require.NoError(t, err)
	require.Contains(t, string(body), "HISTORY-MARKER")
	require.NotContains(t, string(body), "original", "the old thread's history is not used")

	m := c.Request("thread/resume", map[string]any{"threadId": tid, "history": []any{map[string]any{"type": "no-such-item"}}})
	require.NotNil(t, m.Error)

	// With a history the reference does not look at threadId at all, not even at its syntax.
	var other struct {
		Thread threadObj `json:"thread"`
	}
	c.Result("thread/resume", map[string]any{"threadId": "not-a-uuid", "excludeTurns": true, "history": []any{
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "OTHER"}}},
	}}, &other)
	require.Equal(t, "OTHER", other.Thread.Preview)
}

func TestResumeOfLoadedThreadKeepsItsSettings(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("one", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := oneTurnThread(t, c, "hello")
	mark := c.Mark()
	var res struct {
		Model string `json:"model"`
		Cwd   string `json:"cwd"`
	}
	c.Result("thread/resume", map[string]any{"threadId": tid, "excludeTurns": true, "model": "other-model", "cwd": "/"}, &res)
	require.Equal(t, "mock-model", res.Model)
	require.Equal(t, c.Work, res.Cwd)
	c.WaitNotification("thread/goal/cleared", threadIDIs(tid))
	require.NotContains(t, apptest.NotificationMethods(c.Since(mark)), "thread/tokenUsage/updated")
}

func TestForkOfRunningThreadRecordsInterruption(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{{Type: "message", Text: "partial answer", Chunks: 2, HangAfterChunks: mockmodel.Int(1), MaxS: 60}}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("fork reply", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	running := c.StartTurn(tid, "long task")
	c.WaitNotification("item/agentMessage/delta", nil)
	var fork struct {
		Thread struct {
			ID    string `json:"id"`
			Path  string `json:"path"`
			Turns []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"turns"`
		} `json:"thread"`
	}
	c.Result("thread/fork", map[string]any{"threadId": tid}, &fork)
	require.Len(t, fork.Thread.Turns, 1)
	require.Equal(t, running, fork.Thread.Turns[0].ID)
	require.Equal(t, "interrupted", fork.Thread.Turns[0].Status)
	data, err := os.ReadFile(fork.Thread.Path)
	require.NoError(t, err)
	require.Contains(t, string(data), `"turn_aborted"`)

	// The fork's next turn tells the model the previous one was interrupted.
	c.StartTurn(fork.Thread.ID, "continue")
	c.WaitNotification("turn/completed", threadIDIs(fork.Thread.ID))
	reqs := mm.ResponseRequests()
	body, err := json.Marshal(reqs[len(reqs)-1].Body["input"])
	require.NoError(t, err)
	require.Contains(t, string(body), "turn_aborted")
	// Interrupt before releasing the model: once released, the turn may complete first.
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": running}, nil)
	mm.Release()
}

func TestLazyTurnsKeepOrderAfterResume(t *testing.T) {
	mm := mockmodel.New(t)
	for i := 0; i < 3; i++ {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("reply", 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := oneTurnThread(t, c, "one")
	c.StartTurn(tid, "two")
	c.WaitTurnCompleted()
	c.Srv.Threads().Unload(tid)
	var res struct {
		Thread struct {
			Turns []any `json:"turns"`
		} `json:"thread"`
		TurnsBackwardsCursor string `json:"turnsBackwardsCursor"`
	}
	c.Result("thread/resume", map[string]any{"threadId": tid, "excludeTurns": true}, &res)
	require.Empty(t, res.Thread.Turns)
	require.Contains(t, res.TurnsBackwardsCursor, `"rolloutOrdinal":1`)
	// A turn run before anything reads the stored turns still lands after them.
	third := c.StartTurn(tid, "three")
	c.WaitTurnCompleted()
	th := readThread(t, c, tid, true)
	require.Len(t, th.Turns, 3)
	var p pageResp
	c.Result("thread/turns/list", map[string]any{"threadId": tid, "limit": 1}, &p)
	require.Equal(t, []string{third}, p.ids())
}

// TestReadStateOnlyForUserThreads: as in the reference, a thread started with a threadSource other than
// "user" has no read state (thread/read shows null, a completed turn announces nothing, an update is
// refused) and thread/list shows its initial state; a "user" thread is tracked like one without a source.
func TestReadStateOnlyForUserThreads(t *testing.T) {
	mm := mockmodel.New(t)
	for i := 0; i < 2; i++ {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("reply", 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)

	other := c.StartThread(map[string]any{"threadSource": "my_source"})
	c.StartTurn(other, "one")
	c.WaitTurnCompleted()
	require.NotContains(t, apptest.NotificationMethods(c.Messages()), "thread/readState/changed")
	require.Nil(t, readStateOf(t, c, other))
	var list struct {
		ReadStates map[string]map[string]any `json:"readStates"`
	}
	c.Result("thread/list", map[string]any{}, &list)
	require.Equal(t, map[string]any{"firstUnread": nil, "revision": "initial:" + other}, list.ReadStates[other])
	m := c.Request("thread/readState/update", map[string]any{"threadId": other, "operation": map[string]any{"type": "unread"}, "expectedRevision": "initial:" + other})
	require.NotNil(t, m.Error)
	require.Equal(t, -32600, m.Error.Code)
	require.Equal(t, "thread read state unavailable", m.Error.Message)

	user := c.StartThread(map[string]any{"threadSource": "user"})
	turn := c.StartTurn(user, "two")
	c.WaitNotification("thread/readState/changed", threadIDIs(user))
	c.WaitTurnCompleted()
	require.Equal(t, turn, firstUnreadTurn(readStateOf(t, c, user)))
}

// TestNoReadStateForSubAgentThreads: as in the reference (0.169.0), a sub-agent's thread (session source
// subAgent, whatever its kind) has no read state: thread/read shows none, thread/list's readStates leave it
// out, thread/readState/update is refused and its turns, once resumed, change nothing; the resumed thread
// keeps its sub-agent source.
func TestNoReadStateForSubAgentThreads(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	id := func(i int) string { return fmt.Sprintf("01f00000-0000-7000-8000-%012d", i) }
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	parent, spawned, review := id(1), id(2), id(3)
	storedThread(t, home, parent, "mock", rollout.StringSource("vscode"), base, "parent")
	storedThread(t, home, spawned, "mock", json.RawMessage(fmt.Sprintf(`{"subagent":{"thread_spawn":{"parent_thread_id":%q,"depth":1}}}`, parent)), base.Add(time.Hour), "spawned")
	storedThread(t, home, review, "mock", json.RawMessage(`{"subagent":"review"}`), base.Add(2*time.Hour), "review")
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("reply", 1)}})
	c := apptest.Start(t, apptest.Options{Home: home, Model: mm})
	c.Initialize(true)

	require.Equal(t, map[string]any{"firstUnread": nil, "revision": "initial:" + parent}, readStateOf(t, c, parent))
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		ReadStates map[string]map[string]any `json:"readStates"`
	}
	c.Result("thread/list", map[string]any{"sourceKinds": []string{"vscode", "subAgent"}}, &list)
	require.Len(t, list.Data, 3)
	require.Contains(t, list.ReadStates, parent)
	for _, sub := range []string{spawned, review} {
		require.Nil(t, readStateOf(t, c, sub), sub)
		require.NotContains(t, list.ReadStates, sub)
		requireError(t, c.Request("thread/readState/update", map[string]any{"threadId": sub, "operation": map[string]any{"type": "read"}, "expectedRevision": "initial:" + sub}),
			-32600, "thread read state unavailable")
	}

	var res struct {
		Thread struct {
			Source map[string]any `json:"source"`
		} `json:"thread"`
	}
	c.Result("thread/resume", map[string]any{"threadId": spawned, "excludeTurns": true}, &res)
	require.Equal(t, map[string]any{"subAgent": map[string]any{"thread_spawn": map[string]any{"parent_thread_id": parent, "depth": float64(1),
		"agent_path": nil, "agent_nickname": nil, "agent_role": nil}}}, res.Thread.Source)
	mark := c.Mark()
	c.StartTurn(spawned, "more")
	c.WaitTurnCompleted()
	require.NotContains(t, apptest.NotificationMethods(c.Since(mark)), "thread/readState/changed")
	require.Nil(t, readStateOf(t, c, spawned))
}

// TestArchiveAnnouncesUnloadOnce: archiving a loaded thread sends one thread/status/changed notLoaded
// before its reply, as the reference does.
func TestArchiveAnnouncesUnloadOnce(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("reply", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "one")
	c.WaitTurnCompleted()
	c.Result("thread/archive", map[string]any{"threadId": tid}, nil)
	c.WaitNotification("thread/archived", threadIDIs(tid))
	var unloads int
	for _, m := range c.Messages() {
		if m.Method == "thread/status/changed" && strings.Contains(string(m.Params), "notLoaded") {
			unloads++
		}
	}
	require.Equal(t, 1, unloads)
}
