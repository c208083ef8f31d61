package toolsearch

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTokens(t *testing.T) {
	require.Equal(t, []string{"list", "event", "calendar", "entry", "search", "box"},
		Tokens("list_events for the Calendar: entries searching boxes"))
	require.Equal(t, []string{"get", "user", "name"}, Tokens("getUserName"))
	require.Empty(t, Tokens("the a for"))
}

func TestSearchRanksAndLimits(t *testing.T) {
	x := New([]Tool{
		{Namespace: "calendar", NamespaceDescription: "Calendar tools for events", Name: "create_event", Description: "Create a calendar event with a title", Parameters: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}}}`)},
		{Namespace: "calendar", NamespaceDescription: "Calendar tools for events", Name: "list_events", Description: "List upcoming calendar events"},
		{Namespace: "finance", NamespaceDescription: "Market data", Name: "stock_quote", Description: "Look up the latest stock price for a ticker symbol"},
	})
	names := func(ts []Tool) []string {
		out := []string{}
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	require.Equal(t, []string{"list_events", "create_event"}, names(x.Search("calendar event", 8)))
	require.Equal(t, []string{"list_events"}, names(x.Search("calendar event", 1)))
	require.Empty(t, x.Search("calendar event", 0))
	require.Equal(t, []string{"create_event"}, names(x.Search("title", 8)), "schema property names are searched")
	require.Empty(t, x.Search("nothing like it", 8))
}

func TestOutputGroupsByNamespace(t *testing.T) {
	out := Output("c1", []Tool{{Namespace: "a", NamespaceDescription: "A", Name: "x"}, {Namespace: "b", Name: "y"}, {Namespace: "a", Name: "z"}})
	var item struct {
		Type, CallID, Status, Execution string
		Tools                           []struct {
			Type, Name, Description string
			Tools                   []map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(out, &item))
	require.Equal(t, "tool_search_output", item.Type)
	require.Len(t, item.Tools, 2)
	require.Equal(t, "a", item.Tools[0].Name)
	require.Len(t, item.Tools[0].Tools, 2)
	require.Equal(t, true, item.Tools[0].Tools[0]["defer_loading"])
	require.Equal(t, map[string]any{"type": "object", "properties": map[string]any{}}, item.Tools[0].Tools[0]["parameters"])
	require.JSONEq(t, `[]`, string(mustField(t, Output("c2", nil), "tools")))
}

func mustField(t *testing.T, raw json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return m[key]
}

func TestNotice(t *testing.T) {
	require.Empty(t, Notice(nil))
	n := Notice([]Namespace{{"notes", "Personal notes"}, {"calendar", "Calendar tools"}})
	require.Equal(t, "<tools>\nNamespaces with more tools (find them with tool_search):\n- calendar: Calendar tools\n- notes: Personal notes\n</tools>", n)
}

// A namespace without a description is listed by name alone (an MCP server without instructions), and a
// later turn's notice names only what was added, as the reference's.
func TestNoticeWithoutDescriptionAndAdded(t *testing.T) {
	require.Equal(t, "<tools>\nNamespaces with more tools (find them with tool_search):\n- mcp__a\n- mcp__b: B server\n</tools>",
		Notice([]Namespace{{"mcp__b", "B server"}, {"mcp__a", ""}}))
	require.Empty(t, AddedNotice(nil))
	require.Equal(t, "<tools>\nMore namespaces with tools to find with tool_search:\n- mcp__c: C\n</tools>", AddedNotice([]Namespace{{"mcp__c", "C"}}))
}
