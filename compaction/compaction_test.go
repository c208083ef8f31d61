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

// TestReplaceInsertsFreshContext: as the reference's, the replacement keeps the user's own messages (not
// harness context, nor an earlier summary), puts the fresh initial context before the last of them, and ends
// with the summary.
func TestReplaceInsertsFreshContext(t *testing.T) {
	call := json.RawMessage(`{"type":"function_call","name":"exec_command","call_id":"c1","arguments":"{}"}`)
	out := json.RawMessage(`{"type":"function_call_output","call_id":"c1","output":"ok"}`)
	history := []json.RawMessage{
		msg("developer", "<permissions instructions>read-only</permissions instructions>"),
		msg("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
		msg("user", "fix the bug"),
		call, out,
		msg("assistant", "done"),
		msg("user", SummaryPrefix+"an earlier summary"),
		msg("user", refSummaryOpening+" and wrote this (the reference's summary)"),
		msg("developer", "<model_switch>\nother model\n</model_switch>"),
		msg("developer", "<permissions instructions>workspace-write</permissions instructions>"),
		msg("user", "<environment_context>changed</environment_context>"),
		msg("user", "now add a test"),
	}
	initial := []json.RawMessage{msg("developer", "<permissions instructions>fresh</permissions instructions>"),
		msg("user", "<environment_context>fresh</environment_context>")}
	repl, message := Replace(history, "summary text", initial)
	require.Equal(t, SummaryPrefix+"summary text", message)
	require.Equal(t, []string{
		"user: fix the bug",
		"developer: <permissions instructions>fresh</permissions instructions>",
		"user: <environment_context>fresh</environment_context>",
		"user: now add a test",
		"user: " + SummaryPrefix + "summary text",
	}, texts(t, repl))
	require.Equal(t, history[2], repl[0], "kept items are byte-identical")

	repl, _ = Replace(history[:2], "s", initial)
	require.Equal(t, []string{
		"developer: <permissions instructions>fresh</permissions instructions>",
		"user: <environment_context>fresh</environment_context>",
		"user: " + SummaryPrefix + "s",
	}, texts(t, repl), "without a message of the user's, the context comes before the summary")
}

func texts(t *testing.T, items []json.RawMessage) []string {
	var out []string
	for _, r := range items {
		it, ok := parse(r)
		require.True(t, ok)
		out = append(out, it.Role+": "+it.text())
	}
	return out
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

func TestReplaceKeepsAgentMessages(t *testing.T) {
	task := json.RawMessage(`{"type":"agent_message","id":"amsg_1","author":"/root","recipient":"/root/w","content":[{"type":"input_text","text":"Message Type: NEW_TASK\n"},{"type":"encrypted_content","encrypted_content":"count"}]}`)
	history := []json.RawMessage{msg("user", "<environment_context>x</environment_context>"), task, msg("assistant", "3")}
	repl, _ := Replace(history, "s", []json.RawMessage{msg("user", "<environment_context>fresh</environment_context>")})
	require.Len(t, repl, 3)
	require.Equal(t, task, repl[1], "the task stays, after the fresh context (the last kept message)")
}
