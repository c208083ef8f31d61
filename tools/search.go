package tools

import (
	"context"
	"encoding/json"

	"appserver/model"
	"appserver/thread"
	"appserver/toolsearch"
)

// searchSet is the model's tool_search: offered (offer) to the catalogue models outside code mode that have
// deferred tools, and answering every tool_search_call, as the reference does even for a model it did not
// offer it to (with nothing found when the model cannot search).
type searchSet struct {
	offer bool
	index *toolsearch.Index
}

// searchable reports whether the model gets deferred tools through tool search (the reference's catalogue
// entries all have supports_search_tool; a model outside it has none, and its deferred tools are simply
// not offered).
func searchable(modelID string) bool { return model.SearchTool(modelID) }

func newSearchSet(s thread.Settings, codeMode bool) searchSet {
	ok := searchable(s.Model)
	var found []toolsearch.Tool
	if ok {
		found, _ = deferredDynamic(s.DynamicTools)
	}
	// As the reference, the tool is offered only when there is something to find.
	return searchSet{offer: ok && !codeMode && len(found) > 0, index: toolsearch.New(found)}
}

func (ss searchSet) Specs() []json.RawMessage {
	if !ss.offer {
		return nil
	}
	return []json.RawMessage{toolsearch.Spec()}
}

func (ss searchSet) Call(_ context.Context, _ *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Type != toolsearch.CallType {
		return nil, false
	}
	var args toolsearch.Args
	_ = json.Unmarshal([]byte(call.Arguments), &args)
	limit := toolsearch.DefaultLimit
	if args.Limit != nil {
		limit = *args.Limit
	}
	return toolsearch.Output(call.CallID, ss.index.Search(args.Query, limit)), true
}

// ToolsNotice is the `<tools>` text a thread's initial context carries on a model that searches for tools:
// the namespaces holding deferred tools ("" when there are none or the model cannot search).
func ToolsNotice(s thread.Settings) string {
	if !searchable(s.Model) {
		return ""
	}
	_, namespaces := deferredDynamic(s.DynamicTools)
	return toolsearch.Notice(namespaces)
}
