// Package compaction shrinks a thread's model history: it builds the request that asks the model for
// a hand-off summary and rewrites the history into what a continuing turn needs (the session's
// context, the user's own messages, and the summary), the same shape the reference records in a
// rollout's `compacted` line so a resumed thread continues from it.
package compaction

import (
	"encoding/json"
	"strings"

	"github.com/google/uuid"
)

// Prompt asks the model for the summary (our own wording).
const Prompt = `Your context window is about to be reset. Write a hand-off note for the assistant who will continue this conversation without seeing it.

Cover, briefly and concretely:
- what the user asked for and any constraints or preferences they stated;
- what has been done so far: decisions, files changed, commands run and what they showed;
- what is still open, and the next steps you would take.

Name files, functions and commands exactly. Leave out pleasantries and anything that no longer matters.`

// SummaryPrefix introduces the summary in the rewritten history (our own wording).
const SummaryPrefix = "The earlier part of this conversation was condensed into the hand-off note below, written by the assistant that worked on it. Continue from it; the user's messages above are kept verbatim.\n\n"

// RequestInput is the history followed by the request for a summary.
func RequestInput(history []json.RawMessage) []json.RawMessage {
	out := append([]json.RawMessage(nil), history...)
	return append(out, userMessage(Prompt, ""))
}

// item is the part of a Responses item the rewrite looks at.
type item struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

func parse(raw json.RawMessage) (item, bool) {
	var it item
	if json.Unmarshal(raw, &it) != nil || it.Type != "message" {
		return it, false
	}
	return it, true
}

func (it item) text() string {
	var b strings.Builder
	for _, c := range it.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// contextText reports harness-made user messages (environment, instructions) as opposed to the
// user's own words.
func contextText(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range []string{"<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions instructions>", "<skills_instructions>", "<turn_aborted>"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// OutputText is the text of the assistant messages among a response's output items.
func OutputText(items []json.RawMessage) string {
	var parts []string
	for _, raw := range items {
		if it, ok := parse(raw); ok && it.Role == "assistant" {
			parts = append(parts, it.text())
		}
	}
	return strings.TrimSpace(strings.Join(parts, "\n"))
}

// Replace rewrites history after a summary as the reference does: every message the user wrote (harness
// context and the summaries of earlier compactions left out), a fresh initial context (the session's context
// as the settings now are) before the last of them, and the summary as a final user message. Developer
// messages, context updates, tool calls, outputs and assistant messages are dropped; with no message of the
// user's, the initial context comes right before the summary. It returns the new history and the summary
// message's text.
func Replace(history []json.RawMessage, summary string, initial []json.RawMessage) ([]json.RawMessage, string) {
	var users []json.RawMessage
	for _, raw := range history {
		it, ok := parse(raw)
		// The messages between collaboration agents (agent_message items) are kept as the user's: an agent's
		// tasks and notes survive its compaction.
		if (ok && it.Role == "user" && !contextText(it.text()) && !IsSummary(it.text())) || it.Type == "agent_message" {
			users = append(users, raw)
		}
	}
	out := make([]json.RawMessage, 0, len(users)+len(initial)+1)
	cut := max(len(users)-1, 0)
	out = append(out, users[:cut]...)
	out = append(out, initial...)
	out = append(out, users[cut:]...)
	msg := SummaryPrefix + summary
	return append(out, userMessage(msg, "msg_"+uuid.Must(uuid.NewV7()).String())), msg
}

// refSummaryOpening is how the reference's compaction summaries open (matched, never written: a thread it
// compacted and we compact again drops its summary as it would).
const refSummaryOpening = "Another language model started to solve this problem"

// IsSummary reports whether a user message's text is a compaction's summary (ours or the reference's).
func IsSummary(text string) bool {
	return strings.HasPrefix(text, SummaryPrefix) || strings.HasPrefix(text, refSummaryOpening)
}

func userMessage(text, id string) json.RawMessage {
	m := map[string]any{"type": "message", "role": "user", "content": []map[string]string{{"type": "input_text", "text": text}}}
	if id != "" {
		m = map[string]any{"type": "message", "id": id, "role": "user", "content": []map[string]string{{"type": "input_text", "text": text}}}
	}
	raw, _ := json.Marshal(m)
	return raw
}
