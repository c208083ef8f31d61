package thread

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

func TestTimelineAndPages(t *testing.T) {
	msg := protocol.ThreadItem{Value: protocol.ThreadItemAgentMessage{ID: "m", Text: "hi"}}
	turns := []protocol.Turn{
		{ID: "t1", Status: protocol.TurnStatusCompleted, Items: []protocol.ThreadItem{msg}},
		{ID: "t2", Status: protocol.TurnStatusInProgress, Items: []protocol.ThreadItem{msg}},
	}
	all := Timeline(turns)
	require.Len(t, all, 5) // t1 start, item, completed; t2 start, item (no completion while in progress)
	for i, e := range all {
		require.EqualValues(t, i+1, entryPosition(e))
	}
	_, open := all[4].Value.(protocol.ThreadTimelineEntryItem)
	require.True(t, open)

	page, next := TimelinePage(all, 0, 0)
	require.Len(t, page, 5)
	require.Zero(t, next)

	page, next = TimelinePage(all, 0, 2)
	require.Equal(t, all[3:], page)
	require.EqualValues(t, 4, next)
	page, next = TimelinePage(all, next, 2)
	require.Equal(t, all[1:3], page)
	require.EqualValues(t, 2, next)
	page, next = TimelinePage(all, next, 2)
	require.Equal(t, all[:1], page)
	require.Zero(t, next)

	page, next = TimelinePage(nil, 0, 3)
	require.Empty(t, page)
	require.Zero(t, next)
}

func TestSampleText(t *testing.T) {
	msg := func(role, text string) json.RawMessage {
		return json.RawMessage(`{"type":"message","role":"` + role + `","content":[{"type":"output_text","text":"` + text + `"}]}`)
	}
	call := json.RawMessage(`{"type":"function_call","name":"exec_command","call_id":"c"}`)
	reasoning := json.RawMessage(`{"type":"reasoning","summary":[]}`)
	for name, tc := range map[string]struct {
		items []json.RawMessage
		want  *string
	}{
		"none":           {nil, nil},
		"text":           {[]json.RawMessage{reasoning, msg("assistant", "a"), msg("assistant", "b")}, ptrTo("ab")},
		"tool call":      {[]json.RawMessage{msg("assistant", "a"), call}, nil},
		"empty text":     {[]json.RawMessage{msg("assistant", "")}, nil},
		"not assistant":  {[]json.RawMessage{msg("user", "x")}, nil},
		"malformed item": {[]json.RawMessage{json.RawMessage(`{`), msg("assistant", "ok")}, ptrTo("ok")},
	} {
		t.Run(name, func(t *testing.T) { require.Equal(t, tc.want, sampleText(tc.items)) })
	}
}

func ptrTo(s string) *string { return &s }
