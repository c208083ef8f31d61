package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

func TestBackgroundTerminalsListAndClean(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		execCall("call_bg", map[string]any{"cmd": "echo up; sleep 60", "yield_time_ms": 300}),
		finalMessage("left it running"),
	)
	c := startIsolated(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(nil)

	type terms struct {
		Data []struct {
			ProcessID string  `json:"processId"`
			ItemID    string  `json:"itemId"`
			Command   string  `json:"command"`
			OsPid     *uint32 `json:"osPid"`
		} `json:"data"`
		NextCursor *string `json:"nextCursor"`
	}
	var r terms
	c.Result("thread/backgroundTerminals/list", map[string]any{"threadId": tid}, &r)
	require.Empty(t, r.Data, "no exec_command yet")

	c.StartTurn(tid, "start a server")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	c.Result("thread/backgroundTerminals/list", map[string]any{"threadId": tid}, &r)
	require.Len(t, r.Data, 1)
	require.Equal(t, "call_bg", r.Data[0].ItemID)
	require.Contains(t, r.Data[0].Command, "sleep 60")
	require.NotNil(t, r.Data[0].OsPid)
	require.Nil(t, r.NextCursor)
	c.Result("thread/backgroundTerminals/list", map[string]any{"threadId": tid, "cursor": r.Data[0].ProcessID}, &r)
	require.Empty(t, r.Data, "the cursor continues after the process id")

	c.Result("thread/backgroundTerminals/clean", map[string]any{"threadId": tid}, nil)
	c.Result("thread/backgroundTerminals/list", map[string]any{"threadId": tid}, &r)
	require.Empty(t, r.Data)

	for _, bad := range []struct {
		method string
		params map[string]any
		msg    string
	}{
		{"thread/backgroundTerminals/list", map[string]any{"threadId": "01f20000-0000-7000-8000-000000000001"}, "thread not found: 01f20000-0000-7000-8000-000000000001"},
		{"thread/backgroundTerminals/clean", map[string]any{"threadId": "01f20000-0000-7000-8000-000000000001"}, "thread not found: 01f20000-0000-7000-8000-000000000001"},
		{"thread/backgroundTerminals/list", map[string]any{"threadId": tid, "cursor": "zz"}, "invalid cursor: invalid digit found in string"},
	} {
		m := c.Request(bad.method, bad.params)
		require.NotNil(t, m.Error, "%s %v", bad.method, bad.params)
		require.Equal(t, -32600, m.Error.Code)
		require.Equal(t, bad.msg, m.Error.Message)
	}
}

func TestBackgroundTerminalsTerminate(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		execCall("call_bg", map[string]any{"cmd": "echo up; sleep 60", "yield_time_ms": 300}),
		finalMessage("left it running"),
	)
	c := startIsolated(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "start a server")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])

	var list struct {
		Data []struct {
			ProcessID string `json:"processId"`
		} `json:"data"`
	}
	c.Result("thread/backgroundTerminals/list", map[string]any{"threadId": tid}, &list)
	require.Len(t, list.Data, 1)
	pid := list.Data[0].ProcessID

	type terminated struct {
		Terminated bool `json:"terminated"`
	}
	var r terminated
	c.Result("thread/backgroundTerminals/terminate", map[string]any{"threadId": tid, "processId": "424242"}, &r)
	require.False(t, r.Terminated, "no such session")
	c.Result("thread/backgroundTerminals/terminate", map[string]any{"threadId": tid, "processId": pid}, &r)
	require.True(t, r.Terminated)

	// The command item completes as failed with exit code -1, as the reference reports a terminated session.
	m := c.WaitNotification("item/completed", func(p json.RawMessage) bool { return strings.Contains(string(p), `"call_bg"`) })
	var done struct {
		Item struct {
			Status    string `json:"status"`
			ExitCode  *int   `json:"exitCode"`
			ProcessID string `json:"processId"`
		} `json:"item"`
	}
	require.NoError(t, json.Unmarshal(m.Params, &done))
	require.Equal(t, "failed", done.Item.Status)
	require.NotNil(t, done.Item.ExitCode)
	require.Equal(t, -1, *done.Item.ExitCode)
	require.Equal(t, pid, done.Item.ProcessID)

	c.Result("thread/backgroundTerminals/list", map[string]any{"threadId": tid}, &list)
	require.Empty(t, list.Data)
	c.Result("thread/backgroundTerminals/terminate", map[string]any{"threadId": tid, "processId": pid}, &r)
	require.False(t, r.Terminated, "already terminated")
	c.Result("thread/backgroundTerminals/terminate", map[string]any{"threadId": tid, "processId": "-1"}, &r)
	require.False(t, r.Terminated)

	eph := c.StartThread(map[string]any{"ephemeral": true})
	c.Result("thread/backgroundTerminals/terminate", map[string]any{"threadId": eph, "processId": "1"}, &r)
	require.False(t, r.Terminated, "a thread that never ran a command")

	unknown := "01f20000-0000-7000-8000-000000000001"
	for _, bad := range []struct {
		params map[string]any
		msg    string
	}{
		{map[string]any{"threadId": tid, "processId": "x"}, "invalid background terminal process id: invalid digit found in string"},
		{map[string]any{"threadId": tid, "processId": ""}, "invalid background terminal process id: cannot parse integer from empty string"},
		{map[string]any{"threadId": tid, "processId": "2147483648"}, "invalid background terminal process id: number too large to fit in target type"},
		{map[string]any{"threadId": tid, "processId": "-2147483649"}, "invalid background terminal process id: number too small to fit in target type"},
		{map[string]any{"threadId": unknown, "processId": "x"}, "invalid background terminal process id: invalid digit found in string"},
		{map[string]any{"threadId": unknown, "processId": "1"}, "thread not found: " + unknown},
		{map[string]any{"threadId": "x", "processId": "x"}, "invalid thread id: invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `x` at 1"},
	} {
		m := c.Request("thread/backgroundTerminals/terminate", bad.params)
		require.NotNil(t, m.Error, "%v", bad.params)
		require.Equal(t, -32600, m.Error.Code)
		require.Equal(t, bad.msg, m.Error.Message)
	}
}
