package server

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

// TestAppendTurnMatchesMarshal checks the hand-written turn encoder against encoding/json on every optional
// field set and unset, strings that need escaping, and item and input types it leaves to MarshalJSON.
func TestAppendTurnMatchesMarshal(t *testing.T) {
	str := func(s string) *string { return &s }
	n := func(v int64) *int64 { return &v }
	yes := true
	view := protocol.TurnItemsViewFull
	phase := protocol.MessagePhaseCommentary
	delivery := protocol.AgentMessageDeliveryAsync
	odd := []string{"", "plain text", "<b>a & b</b>", "line\nbreak\t\"q\" \\", "é ü 日本", "\u2028\u2029", "\xff\xfe bad", "\x00\x1f", "emoji 😀"}
	var turns []protocol.Turn
	for i, s := range odd {
		turns = append(turns,
			protocol.Turn{ID: s, Status: protocol.TurnStatus(s), RootTurnID: str(s), Items: []protocol.ThreadItem{
				{Value: protocol.ThreadItemUserMessage{ID: s, ClientID: str(s), Content: []protocol.UserInput{
					{Value: protocol.UserInputText{Text: s}},
					{Value: protocol.UserInputText{Text: s, TextElements: []protocol.TextElement{}}},
					{Value: protocol.UserInputText{Text: s, TextElements: []protocol.TextElement{{ByteRange: protocol.ByteRange{Start: 1, End: 2}, Placeholder: str(s)}}}},
					{Value: protocol.UserInputImage{URL: str(s)}},
				}, StartedAtMs: n(int64(i)), CompletedAtMs: n(-5)}},
				{Value: protocol.ThreadItemAgentMessage{ID: s, Text: s, Phase: &phase, Delivery: &delivery,
					MemoryCitation: &protocol.MemoryCitation{Entries: []protocol.MemoryCitationEntry{{Path: s, Note: s}}},
					Moderation:     &protocol.AgentMessageModeration{Moderated: true, Display: &protocol.AgentMessageDisplay{Action: s, CheckTrustedContacts: &yes}},
					Questions:      []protocol.AsyncUserInputQuestion{{Title: s, Options: []string{s}}}, StartedAtMs: n(1), CompletedAtMs: n(2)}},
				{Value: protocol.ThreadItemAgentMessage{Questions: []protocol.AsyncUserInputQuestion{}}},
				{Value: protocol.ThreadItemReasoning{ID: s, Summary: []string{s}}},
			}},
			protocol.Turn{ID: s, Status: protocol.TurnStatusFailed, Error: &protocol.TurnError{Message: s}, StartedAt: n(7),
				CompletedAt: n(9), DurationMs: n(2000), ItemsView: &view, Items: []protocol.ThreadItem{
					{Value: protocol.ThreadItemUserMessage{}},
					{Value: protocol.ThreadItemAgentMessage{}},
				}},
		)
	}
	turns = append(turns, protocol.Turn{}, protocol.Turn{Items: []protocol.ThreadItem{}})
	for i := range turns {
		want, err := json.Marshal(turns[i])
		require.NoError(t, err)
		got, err := appendTurn([]byte("prefix"), &turns[i])
		require.NoError(t, err)
		require.Equal(t, "prefix"+string(want), string(got), "turn %d", i)
	}
	// An empty union fails as it does through json.Marshal.
	_, err := appendTurn(nil, &protocol.Turn{Items: []protocol.ThreadItem{{}}})
	require.Error(t, err)
}
