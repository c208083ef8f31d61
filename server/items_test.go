package server_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

func TestThreadItemsReadAndInject(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{{Type: "message", Text: "hello there", Chunks: 1, ID: "msg_a"}}}, finalMessage("second"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	id := c.StartThread(nil)
	turn := c.StartTurn(id, "hi")
	c.WaitTurnCompleted()

	var got struct {
		Data []struct {
			TurnID      string `json:"turnId"`
			StartedAtMs *int64 `json:"startedAtMs"`
			Item        struct {
				Type string `json:"type"`
				ID   string `json:"id"`
				Text string `json:"text"`
			} `json:"item"`
		} `json:"data"`
	}
	c.Result("thread/items/read", map[string]any{"threadId": id, "turnId": turn, "itemIds": []string{"msg_a", "unknown"}}, &got)
	require.Len(t, got.Data, 1, "unknown ids are left out")
	require.Equal(t, turn, got.Data[0].TurnID)
	require.Equal(t, "agentMessage", got.Data[0].Item.Type)
	require.Equal(t, "hello there", got.Data[0].Item.Text)
	require.NotNil(t, got.Data[0].StartedAtMs)
	c.Result("thread/items/read", map[string]any{"threadId": id, "turnId": "other", "itemIds": []string{"msg_a"}}, &got)
	require.Empty(t, got.Data, "an unknown turn has no items")

	// inject_items: the next turn sends the items to the model.
	require.JSONEq(t, `{}`, string(c.Result("thread/inject_items", map[string]any{"threadId": id, "items": []any{
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "injected-marker"}}},
	}}, nil)))
	c.StartTurn(id, "again")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.NotContains(t, string(reqs[0].Raw), "injected-marker")
	body := string(reqs[1].Raw)
	require.Contains(t, body, "injected-marker")
	require.Less(t, strings.Index(body, "injected-marker"), strings.Index(body, `"again"`), "injected before the new input")

	tooMany := make([]string, 101)
	for i := range tooMany {
		tooMany[i] = "x"
	}
	for _, tc := range []struct {
		method string
		params map[string]any
		msg    string
	}{
		{"thread/items/read", map[string]any{"threadId": id, "turnId": turn, "itemIds": []string{}}, "itemIds must contain 1 to 100 IDs"},
		{"thread/items/read", map[string]any{"threadId": id, "turnId": turn, "itemIds": tooMany}, "itemIds must contain 1 to 100 IDs"},
		{"thread/items/read", map[string]any{"threadId": "00000000-0000-0000-0000-000000000000", "turnId": "t", "itemIds": []string{"a"}}, "thread not found: 00000000-0000-0000-0000-000000000000"},
		{"thread/inject_items", map[string]any{"threadId": id, "items": []any{map[string]any{"bogus": 1}}}, "items[0] is not a valid response item: missing field `type`"},
		{"thread/inject_items", map[string]any{"threadId": "00000000-0000-0000-0000-000000000000", "items": []any{}}, "thread not found: 00000000-0000-0000-0000-000000000000"},
		{"thread/inject_items", map[string]any{"threadId": "bogus", "items": []any{}}, "invalid thread id: "},
	} {
		m := c.Request(tc.method, tc.params)
		require.NotNil(t, m.Error, "%s %v", tc.method, tc.params)
		require.Equal(t, -32600, m.Error.Code)
		require.Contains(t, m.Error.Message, tc.msg)
	}
}
