package thread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"appserver/model"
	protocol "appserver/protocol/v2"
)

// SampleOptions are the inputs of Sample: the turn the caller expects to be the latest one, the prompt
// sent on top of the history, and the optional reasoning effort.
type SampleOptions struct {
	ExpectedTurnID      string
	Prompt              string
	AllowInProgressTurn bool
	Effort              *protocol.ReasoningEffort
	// ClientMetadata is added to the request's client_metadata; ThreadSource (default "thread_sample")
	// and TurnTrigger go into its turn metadata.
	ClientMetadata map[string]string
	ThreadSource   string
	TurnTrigger    string
}

// SampleResult is one sampled response: its id, its assistant text (nil when the model called a tool or
// wrote nothing) and its token usage.
type SampleResult struct {
	SourceTurnID string
	ResponseID   string
	Text         *string
	Usage        *model.Usage
}

// ErrSampleSource is returned when the expected turn is not the thread's latest finished turn.
var ErrSampleSource = errors.New("sample source turn must be the latest finished turn")

// ErrSampleNoHistory is returned for a thread that has no turn yet (and so no rollout to sample from).
var ErrSampleNoHistory = errors.New("no rollout found for thread id")

// Sample asks the thread's model for one response to prompt on top of the thread's history, with the
// thread's tools offered, and records nothing: the thread's history, rollout and clients see no change.
func (t *Thread) Sample(ctx context.Context, o SampleOptions) (SampleResult, error) {
	turns := t.TurnsSnapshot()
	if len(turns) == 0 {
		return SampleResult{}, fmt.Errorf("%w %s", ErrSampleNoHistory, t.ID)
	}
	last := turns[len(turns)-1]
	if last.ID != o.ExpectedTurnID || (last.Status == protocol.TurnStatusInProgress && !o.AllowInProgressTurn) {
		return SampleResult{}, ErrSampleSource
	}
	s := t.Settings()
	if o.Effort != nil {
		s.Effort = o.Effort
	}
	client, err := t.mgr.modelClient(s.EffectiveConfig(t.mgr.Config()), s.ModelProvider)
	if err != nil {
		return SampleResult{}, err
	}
	var sets []ToolSet
	if t.mgr.deps.Tools != nil {
		sets = t.mgr.deps.Tools(t, s)
	}
	comp, err := client.Stream(ctx, t.sampleRequest(s, sets, o), func(model.Event) {})
	if err != nil {
		return SampleResult{}, err
	}
	return SampleResult{SourceTurnID: last.ID, ResponseID: comp.ResponseID, Text: sampleText(comp.Items), Usage: comp.Usage}, nil
}

// sampleRequest is a turn request over a copy of the history plus the prompt as a user message.
func (t *Thread) sampleRequest(s Settings, sets []ToolSet, o SampleOptions) *model.Request {
	t.mu.Lock()
	input := make([]json.RawMessage, 0, len(t.history)+2)
	input = append(input, t.baseItemLocked())
	input = append(input, t.history...)
	t.mu.Unlock()
	input = append(input, messageItem("user", o.Prompt))
	tools := []json.RawMessage{}
	for _, set := range sets {
		tools = append(tools, set.Specs()...)
	}
	reasoning, text := requestControls(s, nil)
	originator := deref(t.meta.Originator)
	source := o.ThreadSource
	if source == "" {
		source = "thread_sample"
	}
	meta := map[string]any{
		"installation_id": t.mgr.deps.InstallationID(), "session_id": t.ID, "thread_id": t.ID,
		"request_kind": "turn", "thread_source": source, "model": s.Model, "sandbox_mode": sandboxModeName(s.Sandbox),
	}
	if o.TurnTrigger != "" {
		meta["turn_trigger"] = o.TurnTrigger
	}
	metaJSON, _ := json.Marshal(meta)
	clientMeta := map[string]string{}
	for k, v := range o.ClientMetadata {
		clientMeta[k] = v
	}
	clientMeta["session_id"], clientMeta["thread_id"] = t.ID, t.ID
	clientMeta["x-codex-turn-metadata"] = string(metaJSON)
	clientMeta["x-codex-installation-id"] = t.mgr.deps.InstallationID()
	return &model.Request{
		Model: s.Model, Input: input, Tools: tools, ToolChoice: "auto", ParallelToolCalls: true,
		Reasoning: reasoning, Text: text, Include: []string{"reasoning.encrypted_content"}, PromptCacheKey: t.ID,
		ClientMetadata: clientMeta,
		Headers: map[string]string{
			"originator": originator, "session-id": t.ID, "thread-id": t.ID, "x-client-request-id": t.ID,
			"x-codex-turn-metadata": string(metaJSON), "user-agent": t.mgr.deps.UserAgent(originator),
		},
	}
}

// sampleText joins the output_text of the response's assistant messages; a tool call or an empty answer
// gives nil.
func sampleText(items []json.RawMessage) *string {
	var out string
	found := false
	for _, raw := range items {
		var it struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch it.Type {
		case "function_call", "custom_tool_call", "local_shell_call", "tool_search_call":
			return nil
		case "message":
			if it.Role != "assistant" {
				continue
			}
			for _, c := range it.Content {
				if c.Type == "output_text" {
					out += c.Text
					found = true
				}
			}
		}
	}
	if !found || out == "" {
		return nil
	}
	return &out
}
