package tools

import (
	"context"
	"encoding/json"
	"time"

	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// dynamicSet offers the tools a client declared on thread/start (dynamicTools) and runs them by asking
// that client (item/tool/call), reporting each call as a dynamicToolCall item.
type dynamicSet struct{ specs []protocol.DynamicToolSpec }

func dynamicFunction(name, description string, schema json.RawMessage) map[string]any {
	if len(schema) == 0 || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return map[string]any{"type": "function", "name": name, "description": description, "strict": false, "parameters": schema}
}

func (d dynamicSet) Specs() []json.RawMessage {
	var out []json.RawMessage
	for _, sp := range d.specs {
		switch v := sp.Value.(type) {
		case protocol.DynamicToolSpecFunction:
			if v.DeferLoading != nil && *v.DeferLoading {
				continue // deferred tools are only found through tool search, which we do not offer
			}
			b, _ := json.Marshal(dynamicFunction(v.Name, v.Description, v.InputSchema))
			out = append(out, b)
		case protocol.DynamicToolSpecNamespace:
			var tools []any
			for _, nt := range v.Tools {
				if f, ok := nt.Value.(protocol.DynamicToolNamespaceToolFunction); ok && (f.DeferLoading == nil || !*f.DeferLoading) {
					tools = append(tools, dynamicFunction(f.Name, f.Description, f.InputSchema))
				}
			}
			if len(tools) == 0 {
				continue
			}
			b, _ := json.Marshal(map[string]any{"type": "namespace", "name": v.Name, "description": v.Description, "tools": tools})
			out = append(out, b)
		}
	}
	return out
}

// owns reports whether the call names one of the declared tools.
func (d dynamicSet) owns(call thread.ToolCall) bool {
	for _, sp := range d.specs {
		switch v := sp.Value.(type) {
		case protocol.DynamicToolSpecFunction:
			if call.Namespace == "" && call.Name == v.Name {
				return true
			}
		case protocol.DynamicToolSpecNamespace:
			if call.Namespace != v.Name {
				continue
			}
			for _, nt := range v.Tools {
				if f, ok := nt.Value.(protocol.DynamicToolNamespaceToolFunction); ok && f.Name == call.Name {
					return true
				}
			}
		}
	}
	return false
}

func (d dynamicSet) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Type != "function_call" || !d.owns(call) {
		return nil, false
	}
	args := json.RawMessage(call.Arguments)
	if !json.Valid(args) || len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	var ns *string
	if call.Namespace != "" {
		ns = ptr(call.Namespace)
	}
	start := time.Now()
	item := protocol.ThreadItemDynamicToolCall{
		ID: call.CallID, Tool: call.Name, Namespace: ns, Arguments: args, Status: protocol.DynamicToolCallStatusInProgress,
		StartedAtMs: ptr(start.UnixMilli()),
	}
	tc.ItemStarted(protocol.ThreadItem{Value: item})
	raw, err := tc.RequestUnannounced(ctx, protocol.ServerRequestItemToolCall, protocol.DynamicToolCallParams{
		ThreadID: tc.ThreadID(), TurnID: tc.TurnID(), CallID: call.CallID, Namespace: ns, Tool: call.Name, Arguments: args,
	})
	var resp protocol.DynamicToolCallResponse
	if err == nil {
		err = json.Unmarshal(raw, &resp)
	}
	if err != nil {
		resp = protocol.DynamicToolCallResponse{Success: false, ContentItems: []protocol.DynamicToolCallOutputContentItem{
			{Value: protocol.DynamicToolCallOutputContentItemInputText{Text: "dynamic tool call failed: " + err.Error()}},
		}}
	}
	end := time.Now()
	item.Status = protocol.DynamicToolCallStatusCompleted
	if !resp.Success {
		item.Status = protocol.DynamicToolCallStatusFailed
	}
	item.Success = ptr(resp.Success)
	item.ContentItems = resp.ContentItems
	item.CompletedAtMs = ptr(end.UnixMilli())
	item.DurationMs = ptr(end.Sub(start).Milliseconds())
	tc.ItemCompleted(protocol.ThreadItem{Value: item})
	return thread.FunctionOutputRaw(call.CallID, dynamicOutput(resp.ContentItems)), true
}

// dynamicOutput converts the client's content items into a function_call_output content list.
func dynamicOutput(items []protocol.DynamicToolCallOutputContentItem) json.RawMessage {
	// A lone text answer is sent as plain text, as the reference does.
	if len(items) == 1 {
		if v, ok := items[0].Value.(protocol.DynamicToolCallOutputContentItemInputText); ok {
			b, _ := json.Marshal(v.Text)
			return b
		}
	}
	content := []map[string]string{}
	for _, it := range items {
		switch v := it.Value.(type) {
		case protocol.DynamicToolCallOutputContentItemInputText:
			content = append(content, map[string]string{"type": "input_text", "text": v.Text})
		case protocol.DynamicToolCallOutputContentItemInputImage:
			content = append(content, map[string]string{"type": "input_image", "image_url": v.ImageURL})
		}
	}
	b, _ := json.Marshal(content)
	return b
}
