package tools

import (
	"context"
	"encoding/json"

	"appserver/model"
	"appserver/thread"
	"appserver/toolsearch"
)

// Deferrable is implemented by a tool set whose tools a model that searches for tools finds with tool_search
// instead of being offered them up front (an MCP server's tools, gpt-5.5's multi_agent_v1), as the reference
// defers them.
type Deferrable interface {
	thread.ToolSet
	// SearchTools lists the set's deferrable tools for the index, and their namespaces for the `<tools>` notes.
	SearchTools() ([]toolsearch.Tool, []toolsearch.Namespace)
	// Deferred returns the set without those tools in its specs, still answering their calls.
	Deferred() thread.ToolSet
}

// searchSet is the model's tool_search: offered (offer) to the catalogue models outside code mode that have
// deferred tools, and answering every tool_search_call, as the reference does even for a model it did not
// offer it to (with nothing found when the model cannot search). It names the namespaces of the deferred
// tools for the `<tools>` notes.
type searchSet struct {
	offer bool
	// dynamic are the deferred dynamic tools, other those of the Deferrable sets; the index holds both.
	dynamic, other []toolsearch.Tool
	namespaces     []toolsearch.Namespace
	index          *toolsearch.Index
}

// searchable reports whether the model gets deferred tools through tool search (the reference's catalogue
// entries all have supports_search_tool; a model outside it has none, and its deferred tools are simply
// not offered).
func searchable(modelID string) bool { return model.SearchTool(modelID) }

// deferTools builds a turn's tool_search over the deferred dynamic tools and, on a model that searches for
// tools, the Deferrable sets' tools; outside code mode those sets are replaced in sets by their deferred form
// (code mode's exec leaves them undescribed itself).
func deferTools(sets []thread.ToolSet, s thread.Settings, codeMode bool) searchSet {
	var ss searchSet
	if searchable(s.Model) {
		ss.dynamic, ss.namespaces = deferredDynamic(s.DynamicTools)
		for i, set := range sets {
			d, ok := set.(Deferrable)
			if !ok {
				continue
			}
			found, namespaces := d.SearchTools()
			ss.other = append(ss.other, found...)
			ss.namespaces = append(ss.namespaces, namespaces...)
			if !codeMode {
				sets[i] = d.Deferred()
			}
		}
	}
	all := append(append([]toolsearch.Tool(nil), ss.dynamic...), ss.other...)
	ss.index = toolsearch.New(all)
	// As the reference, the tool is offered only when there is something to find.
	ss.offer = !codeMode && len(all) > 0
	return ss
}

// withoutDynamic is the search of a turn that lost the dynamic tools (a reviewer's).
func (ss searchSet) withoutDynamic() searchSet {
	ss.dynamic = nil
	ss.index = toolsearch.New(ss.other)
	return ss
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

// DeferredNamespaces names the namespaces holding the deferred tools (thread.DeferredTools).
func (ss searchSet) DeferredNamespaces() []string {
	var names []string
	seen := map[string]bool{}
	for _, n := range ss.namespaces {
		if !seen[n.Name] {
			seen[n.Name] = true
			names = append(names, n.Name)
		}
	}
	return names
}

// ToolsNotice renders the `<tools>` note naming names (thread.DeferredTools).
func (ss searchSet) ToolsNotice(names []string, added bool) string {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var list []toolsearch.Namespace
	for _, n := range ss.namespaces {
		if want[n.Name] {
			list = append(list, n)
		}
	}
	if added {
		return toolsearch.AddedNotice(list)
	}
	return toolsearch.Notice(list)
}
