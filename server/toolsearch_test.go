package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// searchDynamicTools are a plain tool, a namespace whose members are all deferred, one with a single
// deferred member and one mixing plain and deferred members.
func searchDynamicTools() []any {
	fn := func(name, desc string, deferred bool, props map[string]any) map[string]any {
		f := map[string]any{"type": "function", "name": name, "description": desc,
			"inputSchema": map[string]any{"type": "object", "properties": props}}
		if deferred {
			f["deferLoading"] = true
		}
		return f
	}
	str := map[string]any{"type": "string"}
	return []any{
		fn("weather_now", "Get the current weather for a city", false, map[string]any{"city": str}),
		map[string]any{"type": "namespace", "name": "finance", "description": "Market data", "tools": []any{
			fn("stock_quote", "Look up the latest stock price for a ticker symbol", true, map[string]any{"symbol": str})}},
		map[string]any{"type": "namespace", "name": "calendar", "description": "Calendar tools for events", "tools": []any{
			fn("create_event", "Create a calendar event with a title", true, map[string]any{"title": str}),
			fn("list_events", "List upcoming calendar events", true, map[string]any{})}},
		map[string]any{"type": "namespace", "name": "notes", "description": "Personal notes", "tools": []any{
			fn("add_note", "Add a note", false, map[string]any{"text": str}),
			fn("search_notes", "Search notes by keyword", true, map[string]any{"q": str})}},
	}
}

// toolSearchCall is the model's tool_search_call item, streamed as the Responses API does.
func toolSearchCall(callID string, args map[string]any) []mockmodel.Item {
	item := map[string]any{"type": "tool_search_call", "id": "tsc_" + callID, "call_id": callID, "status": "completed",
		"execution": "client", "arguments": args}
	added := map[string]any{}
	for k, v := range item {
		added[k] = v
	}
	added["status"] = "in_progress"
	return []mockmodel.Item{
		mockmodel.RawEvent(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": added}),
		mockmodel.RawEvent(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item}),
	}
}

// searchOutput returns the tool_search_output answering callID in a request body.
func searchOutput(t *testing.T, body map[string]any, callID string) map[string]any {
	t.Helper()
	for _, it := range body["input"].([]any) {
		m := it.(map[string]any)
		if m["type"] == "tool_search_output" && m["call_id"] == callID {
			return m
		}
	}
	t.Fatalf("no tool_search_output for %s", callID)
	return nil
}

// foundTools lists "namespace.tool" of a tool_search_output, in order.
func foundTools(t *testing.T, out map[string]any) []string {
	t.Helper()
	names := []string{}
	for _, ns := range out["tools"].([]any) {
		n := ns.(map[string]any)
		require.Equal(t, "namespace", n["type"])
		for _, tool := range n["tools"].([]any) {
			f := tool.(map[string]any)
			require.Equal(t, true, f["defer_loading"])
			require.Equal(t, false, f["strict"])
			names = append(names, n["name"].(string)+"."+f["name"].(string))
		}
	}
	return names
}

func TestToolSearchOffersDeferredDynamicTools(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: toolSearchCall("s1", map[string]any{"query": "calendar event", "limit": 3})},
		mockmodel.Response{Items: []mockmodel.Item{{Type: "function_call", Name: "create_event", Namespace: "calendar", CallID: "f1", Arguments: map[string]any{"title": "x"}}}},
		okReply("done"),
	)
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.5"})
	c.Initialize(true)
	c.SetAnswerer(func(m apptest.Message) (any, int, string, bool) {
		if m.Method != "item/tool/call" {
			return nil, 0, "", false
		}
		return map[string]any{"success": true, "contentItems": []any{map[string]any{"type": "inputText", "text": "event made"}}}, 0, "", true
	})
	tid := c.StartThread(map[string]any{"dynamicTools": searchDynamicTools()})
	mark := c.Mark()
	c.StartTurn(tid, "plan my day")
	c.WaitTurnCompleted()

	reqs := mm.ResponseRequests()
	require.Equal(t, 3, len(reqs))
	first := reqs[0].Body
	names := toolNames(first)
	// As the reference: the plain tools and the namespace's plain member are offered, then tool_search
	// (client-run), then web_search; the deferred members are not.
	require.Contains(t, names, "weather_now")
	require.Contains(t, names, "notes")
	require.NotContains(t, names, "finance")
	require.NotContains(t, names, "calendar")
	i := indexOf(names, "tool_search")
	require.Equal(t, "web_search", names[i+1])
	var spec map[string]any
	for _, tl := range first["tools"].([]any) {
		if tl.(map[string]any)["type"] == "tool_search" {
			spec = tl.(map[string]any)
		}
		if tl.(map[string]any)["name"] == "notes" {
			b, _ := json.Marshal(tl)
			require.NotContains(t, string(b), "search_notes")
		}
	}
	require.Equal(t, "client", spec["execution"])
	sp := spec["parameters"].(map[string]any)
	require.Equal(t, []any{"query"}, sp["required"])
	require.Equal(t, false, sp["additionalProperties"])
	require.Contains(t, sp["properties"], "limit")

	// The <tools> notice ends the developer message that carries the permissions.
	var notice string
	for _, it := range first["input"].([]any) {
		m := it.(map[string]any)
		if m["role"] != "developer" {
			continue
		}
		parts := m["content"].([]any)
		last := parts[len(parts)-1].(map[string]any)["text"].(string)
		if strings.HasPrefix(last, "<tools>") {
			require.True(t, strings.HasPrefix(parts[len(parts)-2].(map[string]any)["text"].(string), "<permissions instructions>"))
			notice = last
		}
	}
	require.NotEmpty(t, notice, "no <tools> notice")
	// gpt-5.5 also finds multi_agent_v1 through the search, as the reference's.
	require.True(t, strings.HasSuffix(notice, "\n- calendar: Calendar tools for events\n- finance: Market data\n- multi_agent_v1: "+
		"Start sub-agents, give them work, wait for their results and shut them down.\n- notes: Personal notes\n</tools>"), notice)

	// The search answers with the namespaces' deferred tools, best first.
	out := searchOutput(t, reqs[1].Body, "s1")
	require.Equal(t, "client", out["execution"])
	require.Equal(t, "completed", out["status"])
	require.True(t, strings.HasPrefix(out["id"].(string), "tso_"))
	require.Equal(t, []string{"calendar.list_events", "calendar.create_event"}, foundTools(t, out))

	// The found tool is called through the client and its answer reaches the model.
	var call map[string]any
	for _, m := range c.Since(mark) {
		if m.Method == "item/tool/call" {
			call = params(t, m)
		}
	}
	require.NotNil(t, call)
	require.Equal(t, "calendar", call["namespace"])
	require.Equal(t, "create_event", call["tool"])
	require.Equal(t, "event made", fnOutput(t, reqs[2].Body, "f1"))
}

func TestToolSearchMatchesAndLimits(t *testing.T) {
	mm := mockmodel.New(t)
	searches := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"query": "zzqqxx"}, []string{}},
		{map[string]any{"query": "the a for"}, []string{}},
		{map[string]any{"query": ""}, []string{}},
		{map[string]any{"limit": 2}, []string{}},
		{map[string]any{"query": "events list", "limit": 0}, []string{}},
		{map[string]any{"query": "Calendar EVENTS listing"}, []string{"calendar.list_events", "calendar.create_event"}},
		{map[string]any{"query": "ticker symbol price"}, []string{"finance.stock_quote"}},
		{map[string]any{"query": "note"}, []string{"notes.search_notes"}},
		{map[string]any{"query": "stock notes calendar", "limit": 1}, []string{"notes.search_notes"}},
		{map[string]any{"query": "stock notes calendar", "limit": 2}, []string{"notes.search_notes", "finance.stock_quote"}},
		{map[string]any{"query": "stock notes calendar"}, []string{"notes.search_notes", "finance.stock_quote", "calendar.list_events", "calendar.create_event"}},
	}
	var items []mockmodel.Item
	for i, s := range searches {
		items = append(items, toolSearchCall(string(rune('a'+i)), s.args)...)
	}
	mm.Enqueue(mockmodel.Response{Items: items}, okReply("done"))
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.5"})
	c.Initialize(true)
	tid := c.StartThread(map[string]any{"dynamicTools": searchDynamicTools()})
	c.StartTurn(tid, "search")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Equal(t, 2, len(reqs))
	for i, s := range searches {
		require.Equal(t, s.want, foundTools(t, searchOutput(t, reqs[1].Body, string(rune('a'+i)))), "%v", s.args)
	}
}

func TestToolSearchNotOfferedOutsideTheCatalogue(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: toolSearchCall("s1", map[string]any{"query": "calendar"})}, okReply("done"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(map[string]any{"dynamicTools": searchDynamicTools()})
	c.StartTurn(tid, "search")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.NotContains(t, toolNames(reqs[0].Body), "tool_search")
	b, _ := json.Marshal(reqs[0].Body["input"])
	require.NotContains(t, string(b), "<tools>")
	// The reference answers a search all the same, finding nothing.
	require.Equal(t, []string{}, foundTools(t, searchOutput(t, reqs[1].Body, "s1")))
}

func TestDeferredDynamicToolMustBeInANamespace(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	m := c.Request("thread/start", map[string]any{"dynamicTools": []any{map[string]any{"type": "function", "name": "hidden",
		"description": "d", "inputSchema": map[string]any{"type": "object"}, "deferLoading": true}}})
	require.NotNil(t, m.Error)
	require.Equal(t, -32600, m.Error.Code)
	require.Equal(t, "deferred dynamic tool must include a namespace: hidden", m.Error.Message)
}

// A code-mode model gets no tool_search; its deferred dynamic tools are callable from exec and listed in
// ALL_TOOLS, but exec's description leaves them out (the plain ones are described); the <tools> notice is
// still sent and a tool_search_call is still answered — all as the reference.
func TestToolSearchInCodeMode(t *testing.T) {
	mm := mockmodel.New(t)
	src := "text(ALL_TOOLS.map(t => t.name).join(\",\"));\nconst r = await tools.calendar__create_event({title: \"y\"});\ntext(JSON.stringify(r));"
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.CustomToolCall("exec", "call_js", src)}},
		mockmodel.Response{Items: toolSearchCall("s1", map[string]any{"query": "calendar event"})},
		okReply("done"),
	)
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.6-sol"})
	c.Initialize(true)
	c.SetAnswerer(func(m apptest.Message) (any, int, string, bool) {
		if m.Method != "item/tool/call" {
			return nil, 0, "", false
		}
		return map[string]any{"success": true, "contentItems": []any{map[string]any{"type": "inputText", "text": "made"}}}, 0, "", true
	})
	tid := c.StartThread(map[string]any{"dynamicTools": searchDynamicTools()})
	c.StartTurn(tid, "run it")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Equal(t, 3, len(reqs))

	first, _ := json.Marshal(reqs[0].Body["input"])
	require.NotContains(t, string(first), `"tool_search"`)
	require.Contains(t, string(first), `- calendar: Calendar tools for events`)
	additional := reqs[0].Body["input"].([]any)[0].(map[string]any)
	require.Equal(t, "additional_tools", additional["type"])
	desc, _ := json.Marshal(additional["tools"])
	require.Contains(t, string(desc), "add_note")
	require.NotContains(t, string(desc), "search_notes")
	require.NotContains(t, string(desc), "create_event")

	out, _ := json.Marshal(jsCallOutput(t, reqs[1].Body, "call_js"))
	require.Contains(t, string(out), "calendar__create_event")
	require.Contains(t, string(out), "notes__search_notes")
	require.Contains(t, string(out), `\"made\"`)
	require.Equal(t, []string{"calendar.list_events", "calendar.create_event"}, foundTools(t, searchOutput(t, reqs[2].Body, "s1")))
}

// As the reference, a catalogue model is offered tool_search only when some tool is deferred (here
// features.multi_agent is off: gpt-5.5's multi_agent_v1 would be).
func TestToolSearchOnlyWithDeferredTools(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("ok"))
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.5", Config: "[features]\nmulti_agent = false\n"})
	c.Initialize(true)
	tid := c.StartThread(map[string]any{"dynamicTools": []any{map[string]any{"type": "namespace", "name": "notes", "description": "Notes",
		"tools": []any{map[string]any{"type": "function", "name": "add_note", "description": "Add", "inputSchema": map[string]any{"type": "object"}}}}}})
	c.StartTurn(tid, "go")
	c.WaitTurnCompleted()
	body := mm.ResponseRequests()[0].Body
	require.Contains(t, toolNames(body), "notes")
	require.NotContains(t, toolNames(body), "tool_search")
	b, _ := json.Marshal(body["input"])
	require.NotContains(t, string(b), "<tools>")
}
