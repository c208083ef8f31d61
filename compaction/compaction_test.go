package compaction

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func msg(role, text string) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"type": "message", "role": role, "content": []map[string]string{{"type": "input_text", "text": text}}})
	return raw
}

func TestReplaceKeepsContextAndUserWords(t *testing.T) {
	call := json.RawMessage(`{"type":"function_call","name":"exec_command","call_id":"c1","arguments":"{}"}`)
	out := json.RawMessage(`{"type":"function_call_output","call_id":"c1","output":"ok"}`)
	history := []json.RawMessage{
		msg("developer", "<permissions instructions>read-only</permissions instructions>"),
		msg("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
		msg("user", "fix the bug"),
		call, out,
		msg("assistant", "done"),
		msg("developer", "<permissions instructions>workspace-write</permissions instructions>"),
		msg("user", "<environment_context>changed</environment_context>"),
		msg("user", "now add a test"),
	}
	repl, message := Replace(history, "summary text")
	require.Equal(t, SummaryPrefix+"summary text", message)
	var texts []string
	for _, r := range repl {
		it, ok := parse(r)
		require.True(t, ok)
		texts = append(texts, it.Role+": "+it.text())
	}
	require.Equal(t, []string{
		"developer: <permissions instructions>read-only</permissions instructions>",
		"user: <environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
		"user: fix the bug",
		"user: now add a test",
		"user: " + SummaryPrefix + "summary text",
	}, texts)
	require.Equal(t, history[2], repl[2], "kept items are byte-identical")
}

func TestRequestInputAndOutputText(t *testing.T) {
	h := []json.RawMessage{msg("user", "hi")}
	in := RequestInput(h)
	require.Len(t, in, 2)
	require.Len(t, h, 1, "the history is not modified")
	it, _ := parse(in[1])
	require.Equal(t, "user", it.Role)
	require.True(t, strings.HasPrefix(it.text(), "Your context window"))
	require.Equal(t, "a\nb", OutputText([]json.RawMessage{
		json.RawMessage(`{"type":"reasoning","summary":[]}`), msg("assistant", "a"), msg("assistant", "b"),
	}))
	require.Equal(t, "", OutputText(nil))
}
