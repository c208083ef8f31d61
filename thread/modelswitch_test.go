package thread

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/model"
)

func developerText(t *testing.T, item json.RawMessage) string {
	t.Helper()
	var msg struct {
		Role    string `json:"role"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal(item, &msg))
	require.Equal(t, "developer", msg.Role)
	return msg.Content[0].Text
}

// TestSwapModel: the first turn and a turn on the same model tell nothing; as codex-cli 0.169.0 does, a switch to
// a catalogue model in a thread started on a catalogue model with a multi-agent version names the new model in
// <model_instructions> (whatever the model in between), any other switch sends <model_switch>, both with the
// base instructions the settings call for, which a resumed thread reads back from its history.
func TestSwapModel(t *testing.T) {
	for _, tc := range []struct {
		name, start, from, to, prefix string
	}{
		{"unknown models", "mock-model", "mock-model", "mock-model-2", "<model_switch>\n"},
		{"to a catalogue model", "mock-model", "mock-model", "gpt-6.1-sol", "<model_switch>\n"},
		{"from a catalogue model", "gpt-6-luna", "gpt-6-luna", "mock-model", "<model_switch>\n"},
		{"between catalogue models", "gpt-6-luna", "gpt-6-luna", "gpt-6.1-sol", "<model_instructions>\nThe current model is gpt-6.1-sol.\n"},
		{"back to a catalogue model", "gpt-6-sol", "mock-model", "gpt-6-luna", "<model_instructions>\nThe current model is gpt-6-luna.\n"},
		{"between catalogue models of a thread started elsewhere", "mock-model", "gpt-6-sol", "gpt-6-luna", "<model_switch>\n"},
		{"from a model without a multi-agent version", "gpt-5.5", "mock-model", "gpt-6-luna", "<model_switch>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := &Thread{namesModel: model.HasMultiAgentVersion(tc.start)}
			s := Settings{Model: tc.from}
			require.Nil(t, th.swapModel(s), "the first turn")
			require.Nil(t, th.swapModel(s), "the same model")
			s.Model = tc.to
			msg := th.swapModel(s)
			require.NotNil(t, msg)
			text := developerText(t, msg)
			require.Regexp(t, "^"+tc.prefix, text)
			require.Equal(t, s.instructions(), th.told)
			instr, perms := toldFromHistory([]json.RawMessage{msg}, "old base")
			require.Equal(t, s.instructions(), instr)
			require.Empty(t, perms)
			require.Nil(t, th.swapModel(s), "the same model again")
		})
	}
	instr, _ := toldFromHistory([]json.RawMessage{messageItem("developer", "<model_switch>\nsomeone else's\n</model_switch>")}, "old base")
	require.Equal(t, "old base", instr, "a message of another program is not ours to read")
}
