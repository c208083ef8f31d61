package thread

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

// itemID returns the "id" member of an encoded item.
func itemID(t *testing.T, raw json.RawMessage) string {
	var it struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(raw, &it))
	require.Regexp(t, `^msg_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, it.ID)
	return it.ID
}

// TestMessageItemsMatchMarshalledMaps: the hand-written messages are byte for byte what marshal makes of
// the maps they used to be built from (members sorted, no HTML escaping, escapes as encoding/json's).
func TestMessageItemsMatchMarshalledMaps(t *testing.T) {
	texts := []string{"", "hello", baseInstructions, "<a & b> \"q\" \\ \n\t\x01 é \u2028 \xff", "line\r\nnext"}
	for _, text := range texts {
		for _, role := range []string{"developer", "user", "r\"ole"} {
			got := messageItem(role, text)
			want := marshal(map[string]any{
				"type": "message", "id": itemID(t, got), "role": role,
				"content": []map[string]string{{"type": "input_text", "text": text}},
			})
			require.Equal(t, string(want), string(got))
		}
	}
	url := "https://example.com/a.png?x=<y>&z"
	inputs := [][]protocol.UserInput{
		nil,
		{{Value: protocol.UserInputText{Text: "hi <there> \"q\""}}},
		{
			{Value: protocol.UserInputText{Text: texts[3]}},
			{Value: protocol.UserInputImage{URL: &url}},
			{Value: protocol.UserInputImage{}},
			{Value: protocol.UserInputLocalImage{Path: "/tmp/a \"b\".png"}},
			{Value: protocol.UserInputSkill{Name: "s<k>", Path: "/skills/s"}},
			{Value: protocol.UserInputMention{Name: "m", Path: "app://x&y"}},
		},
	}
	for _, input := range inputs {
		got := userInputItem(input, "mock-model")
		content := []map[string]any{}
		for _, in := range input {
			switch v := in.Value.(type) {
			case protocol.UserInputText:
				content = append(content, map[string]any{"type": "input_text", "text": v.Text})
			case protocol.UserInputImage:
				content = append(content, map[string]any{"type": "input_image", "image_url": v.URL, "detail": "high"})
			case protocol.UserInputLocalImage: // a file that does not exist
				content = append(content, map[string]any{"type": "input_text", "text": "Codex could not read the local image at `" + string(v.Path) + "`: No such file or directory (os error 2)"})
			case protocol.UserInputSkill:
				content = append(content, map[string]any{"type": "input_text", "text": "<skill name=\"" + v.Name + "\" path=\"" + string(v.Path) + "\"/>"})
			case protocol.UserInputMention:
				content = append(content, map[string]any{"type": "input_text", "text": "<mention name=\"" + v.Name + "\" path=\"" + v.Path + "\"/>"})
			}
		}
		want := marshal(map[string]any{"type": "message", "id": itemID(t, got), "role": "user", "content": content})
		require.Equal(t, string(want), string(got))
	}
}

func TestEncodeUUIDMatchesString(t *testing.T) {
	for range 100 {
		id := uuid.Must(uuid.NewV7())
		b := make([]byte, 36)
		encodeUUID(b, id)
		require.Equal(t, id.String(), string(b))
	}
}

// TestItemTimesMatchEncodedTimes: the times read from the common variants are those their encoding carries.
func TestItemTimesMatchEncodedTimes(t *testing.T) {
	five, six := int64(5), int64(6)
	for _, item := range []protocol.ThreadItem{
		{Value: protocol.ThreadItemUserMessage{ID: "u", Content: []protocol.UserInput{}, StartedAtMs: &five, CompletedAtMs: &six}},
		{Value: protocol.ThreadItemUserMessage{ID: "u", Content: []protocol.UserInput{}}},
		{Value: protocol.ThreadItemAgentMessage{ID: "a", Text: "x", StartedAtMs: &five}},
		{Value: protocol.ThreadItemAgentMessage{ID: "a", Text: "x", CompletedAtMs: &six}},
	} {
		b, err := json.Marshal(item)
		require.NoError(t, err)
		var ts struct {
			StartedAtMs   *int64 `json:"startedAtMs"`
			CompletedAtMs *int64 `json:"completedAtMs"`
		}
		require.NoError(t, json.Unmarshal(b, &ts))
		started, completed := itemTimes(item)
		require.Equal(t, ts.StartedAtMs, started)
		require.Equal(t, ts.CompletedAtMs, completed)
	}
}

// TestEmptyRateLimitsEncoding: the pre-encoded rate limits are what Marshal and Appender writers produce.
func TestEmptyRateLimitsEncoding(t *testing.T) {
	want := `{"rateLimits":{"credits":null,"individualLimit":null,"limitId":"codex","limitName":null,"normalModelSlug":null,"planType":null,"primary":null,"rateLimitReachedType":null,"secondary":null,"spendControlReached":null}}`
	b, err := json.Marshal(emptyRateLimits())
	require.NoError(t, err)
	require.Equal(t, want, string(b))
	require.Equal(t, "x"+want, string(emptyRateLimits().AppendJSON([]byte("x"))))
}
