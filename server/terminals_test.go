package server_test

import (
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
