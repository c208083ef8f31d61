package toolsearch

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/google/uuid"
)

// Name is the tool's name, and the call and output item types are derived from it.
const (
	Name       = "tool_search"
	CallType   = "tool_search_call"
	OutputType = "tool_search_output"
)

// Spec is the tool_search entry of the request's tools array (the model runs it by emitting a
// tool_search_call item that the client, we, answer).
func Spec() json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"type":        Name,
		"execution":   "client",
		"description": description,
		"parameters": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"limit": map[string]any{"type": "number", "description": "How many tools to return at most (8 when left out)."},
				"query": map[string]any{"type": "string", "description": "Words describing the tool you need."},
			},
			"required":             []string{"query"},
			"additionalProperties": false,
		},
	})
	return b
}

const description = "# Finding more tools\n\n" +
	"Not every tool is listed up front: the namespaces named in the <tools> note hold more, found by searching " +
	"their names and descriptions (BM25). The tools a search returns can be called on the next step, by " +
	"namespace and name. Use this tool, rather than the MCP resource listings, to discover MCP tools."

// Args are a tool_search_call's arguments.
type Args struct {
	Query string `json:"query"`
	Limit *int   `json:"limit"`
}

// Output builds the tool_search_output item answering call callID with tools: one namespace entry per
// namespace, in the order of its best tool, holding its tools best first, each marked defer_loading.
func Output(callID string, tools []Tool) json.RawMessage {
	type fn struct {
		Type         string          `json:"type"`
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		Strict       bool            `json:"strict"`
		DeferLoading bool            `json:"defer_loading"`
		Parameters   json.RawMessage `json:"parameters"`
	}
	type ns struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		Description string `json:"description"`
		Tools       []fn   `json:"tools"`
	}
	groups := []*ns{}
	byName := map[string]*ns{}
	for _, t := range tools {
		g := byName[t.Namespace]
		if g == nil {
			g = &ns{Type: "namespace", Name: t.Namespace, Description: t.NamespaceDescription}
			byName[t.Namespace] = g
			groups = append(groups, g)
		}
		params := t.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		g.Tools = append(g.Tools, fn{Type: "function", Name: t.Name, Description: t.Description, DeferLoading: true, Parameters: params})
	}
	b, _ := json.Marshal(struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Status    string `json:"status"`
		Execution string `json:"execution"`
		Tools     []*ns  `json:"tools"`
	}{OutputType, "tso_" + uuid.Must(uuid.NewV7()).String(), callID, "completed", "client", groups})
	return b
}

// Namespace is a namespace holding deferred tools, for the notice (an empty Description lists the name alone).
type Namespace struct{ Name, Description string }

// Notice is the `<tools>` text that tells the model which namespaces hold deferred tools, sorted by name
// ("" when there are none).
func Notice(namespaces []Namespace) string {
	return notice(namespaces, "Namespaces with more tools (find them with tool_search):")
}

// AddedNotice is the `<tools>` text of a later turn naming namespaces that hold deferred tools since then
// (their servers started after the model was told of the others); "" when there are none.
func AddedNotice(namespaces []Namespace) string {
	return notice(namespaces, "More namespaces with tools to find with tool_search:")
}

func notice(namespaces []Namespace, header string) string {
	if len(namespaces) == 0 {
		return ""
	}
	ns := append([]Namespace(nil), namespaces...)
	sort.SliceStable(ns, func(i, j int) bool { return ns[i].Name < ns[j].Name })
	var b strings.Builder
	b.WriteString("<tools>\n" + header + "\n")
	seen := map[string]bool{}
	for _, n := range ns {
		if seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		b.WriteString("- " + n.Name)
		if n.Description != "" {
			b.WriteString(": " + n.Description)
		}
		b.WriteString("\n")
	}
	b.WriteString("</tools>")
	return b.String()
}
