package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/toolsearch"
)

// dynamicSet offers the tools a client declared on thread/start (dynamicTools) and runs them by asking
// that client (item/tool/call), reporting each call as a dynamicToolCall item. Members marked deferLoading
// are left out of the request (tool_search finds them) but answered all the same; nested (inside code
// mode's exec) lists them marked defer_loading, so that exec lets scripts call them without describing them.
type dynamicSet struct {
	specs  []protocol.DynamicToolSpec
	nested bool
}

// ValidateDynamic checks thread/start's dynamicTools as the reference does: a deferred tool must sit in a
// namespace.
func ValidateDynamic(specs []protocol.DynamicToolSpec) error {
	for _, sp := range specs {
		if v, ok := sp.Value.(protocol.DynamicToolSpecFunction); ok && v.DeferLoading != nil && *v.DeferLoading {
			return fmt.Errorf("deferred dynamic tool must include a namespace: %s", v.Name)
		}
	}
	return nil
}

// deferredDynamic lists the namespaces' deferred members for tool search, and their namespaces.
func deferredDynamic(specs []protocol.DynamicToolSpec) ([]toolsearch.Tool, []toolsearch.Namespace) {
	var tools []toolsearch.Tool
	var namespaces []toolsearch.Namespace
	for _, sp := range specs {
		v, ok := sp.Value.(protocol.DynamicToolSpecNamespace)
		if !ok {
			continue
		}
		found := false
		for _, nt := range v.Tools {
			if f, ok := nt.Value.(protocol.DynamicToolNamespaceToolFunction); ok && f.DeferLoading != nil && *f.DeferLoading {
				tools = append(tools, toolsearch.Tool{Namespace: v.Name, NamespaceDescription: v.Description,
					Name: f.Name, Description: f.Description, Parameters: f.InputSchema})
				found = true
			}
		}
		if found {
			namespaces = append(namespaces, toolsearch.Namespace{Name: v.Name, Description: v.Description})
		}
	}
	return tools, namespaces
}

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
				continue // refused by thread/start (ValidateDynamic); a resumed old thread's is not offered
			}
			b, _ := json.Marshal(dynamicFunction(v.Name, v.Description, v.InputSchema))
			out = append(out, b)
		case protocol.DynamicToolSpecNamespace:
			var tools []any
			for _, nt := range v.Tools {
				f, ok := nt.Value.(protocol.DynamicToolNamespaceToolFunction)
				if !ok {
					continue
				}
				deferred := f.DeferLoading != nil && *f.DeferLoading
				switch {
				case !deferred:
					tools = append(tools, dynamicFunction(f.Name, f.Description, f.InputSchema))
				case d.nested:
					fn := dynamicFunction(f.Name, f.Description, f.InputSchema)
					fn["defer_loading"] = true
					tools = append(tools, fn)
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
