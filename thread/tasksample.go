package thread

import (
	"context"
	"encoding/json"
	"time"

	"appserver/compaction"
	"appserver/model"
)

// Sample sends one model request without tools for a task turn (a review): developer is the request's
// first message, followed by the environment context and input. The usage is accounted to the turn;
// the result is the text of the assistant's messages.
func (tc *ToolContext) Sample(ctx context.Context, developer string, input []json.RawMessage) (string, error) {
	t, tn, s := tc.Thread, tc.Turn, tc.Settings
	client, err := t.mgr.modelClient(s.EffectiveConfig(t.mgr.Config()), s.ModelProvider)
	if err != nil {
		return "", err
	}
	req := tn.buildRequest(s, nil)
	in := []json.RawMessage{messageItem("developer", developer), messageItem("user", environmentContext(s.Cwd, time.Now()))}
	req.Input = append(in, input...)
	req.Refresh = nil
	comp, err := client.Stream(ctx, req, func(model.Event) {})
	if err != nil {
		return "", err
	}
	tn.recordUsage(comp.ResponseID, comp.Usage)
	tn.reportUsage(s, comp.Usage)
	return compaction.OutputText(comp.Items), nil
}

// MessageItem is a Responses API message item with the given role and text.
func MessageItem(role, text string) json.RawMessage { return messageItem(role, text) }
