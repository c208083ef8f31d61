package server_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// onePixelPNG is a 1×1 PNG image.
var onePixelPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")

// fnOutput finds the function_call_output for callID in a model request body.
func fnOutput(t *testing.T, body map[string]any, callID string) any {
	t.Helper()
	for _, it := range body["input"].([]any) {
		m := it.(map[string]any)
		if m["type"] == "function_call_output" && m["call_id"] == callID {
			return m["output"]
		}
	}
	t.Fatalf("no output for %s", callID)
	return nil
}

func TestBuiltinTools(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{
		mockmodel.FunctionCall("update_plan", "p1", map[string]any{"explanation": "why", "plan": []any{
			map[string]any{"step": "a", "status": "completed"}, map[string]any{"step": "b", "status": "in_progress"}}}),
		mockmodel.FunctionCall("view_image", "v1", map[string]any{"path": "pic.png"}),
		mockmodel.RawEvent(map[string]any{"type": "response.output_item.added", "output_index": 2, "item": map[string]any{"type": "web_search_call", "id": "ws_1", "status": "in_progress"}}),
		mockmodel.RawEvent(map[string]any{"type": "response.output_item.done", "output_index": 2, "item": map[string]any{"type": "web_search_call", "id": "ws_1", "status": "completed", "action": map[string]any{"type": "search", "query": "golang"}}}),
		mockmodel.FunctionCall("create_goal", "g1", map[string]any{"objective": "ship it", "token_budget": 1000}),
	}}, mockmodel.Response{Items: []mockmodel.Item{
		mockmodel.FunctionCall("update_goal", "g2", map[string]any{"status": "complete"}),
	}}, okReply("done"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	require.NoError(t, os.WriteFile(filepath.Join(c.Work, "pic.png"), onePixelPNG, 0o644))
	c.Initialize(false)
	tid := c.StartThread(map[string]any{"config": map[string]any{"tools.update_plan.enabled": true}})
	mark := c.Mark()
	c.StartTurn(tid, "go")
	c.WaitTurnCompleted()

	var plan, image, search map[string]any
	var goals []map[string]any
	for _, m := range c.Since(mark) {
		if !m.IsNotification() {
			continue
		}
		p := params(t, m)
		switch m.Method {
		case "turn/plan/updated":
			plan = p
		case "item/completed":
			item := p["item"].(map[string]any)
			switch item["type"] {
			case "imageView":
				image = item
			case "webSearch":
				search = item
			}
		case "thread/goal/updated":
			goals = append(goals, p["goal"].(map[string]any))
		}
	}
	require.Equal(t, "why", plan["explanation"])
	require.Equal(t, []any{map[string]any{"step": "a", "status": "completed"}, map[string]any{"step": "b", "status": "inProgress"}}, plan["plan"])
	require.Equal(t, filepath.Join(c.Work, "pic.png"), image["path"])
	require.Equal(t, "golang", search["query"])
	require.Equal(t, map[string]any{"type": "search", "query": "golang", "queries": nil}, search["action"])
	require.Len(t, goals, 2)
	require.Equal(t, "active", goals[0]["status"])
	require.Equal(t, "complete", goals[1]["status"])
	require.EqualValues(t, 1000, goals[1]["tokenBudget"])

	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	require.Equal(t, "Plan updated", fnOutput(t, reqs[1].Body, "p1"))
	img := fnOutput(t, reqs[1].Body, "v1").([]any)[0].(map[string]any)
	require.Equal(t, "input_image", img["type"])
	require.True(t, strings.HasPrefix(img["image_url"].(string), "data:image/png;base64,"))
	require.Contains(t, fnOutput(t, reqs[1].Body, "g1"), `"objective":"ship it"`)
	require.Contains(t, fnOutput(t, reqs[2].Body, "g2"), `"status":"complete"`)

	var got struct {
		Goal map[string]any `json:"goal"`
	}
	c.Result("thread/goal/get", map[string]any{"threadId": tid}, &got)
	require.Equal(t, "complete", got.Goal["status"])
	var cleared struct {
		Cleared bool `json:"cleared"`
	}
	c.Result("thread/goal/clear", map[string]any{"threadId": tid}, &cleared)
	require.True(t, cleared.Cleared)
	c.WaitNotification("thread/goal/cleared", nil)
	c.Result("thread/goal/get", map[string]any{"threadId": tid}, &got)
	require.Nil(t, got.Goal)
	var set struct {
		Goal map[string]any `json:"goal"`
	}
	c.Result("thread/goal/set", map[string]any{"threadId": tid, "objective": "again"}, &set)
	require.Equal(t, "again", set.Goal["objective"])
	require.Equal(t, "active", set.Goal["status"])
}

func TestViewImageRefusesMissingAndNonImageFiles(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{
		mockmodel.FunctionCall("view_image", "v1", map[string]any{"path": "nope.png"}),
		mockmodel.FunctionCall("view_image", "v2", map[string]any{"path": "notes.txt"}),
	}}, okReply("done"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	require.NoError(t, os.WriteFile(filepath.Join(c.Work, "notes.txt"), []byte("plain text"), 0o644))
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "go")
	c.WaitTurnCompleted()
	body := mm.ResponseRequests()[1].Body
	require.Contains(t, fnOutput(t, body, "v1"), "unable to locate image")
	require.Contains(t, fnOutput(t, body, "v2"), "is not an image file")
}

func TestDynamicToolsAreCalledThroughTheClientAndSurviveResume(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{
		mockmodel.FunctionCall("get_weather", "d1", map[string]any{"city": "Oslo"}),
		{Type: "function_call", Name: "lookup", Namespace: "crm", CallID: "d2", Arguments: map[string]any{}},
	}}, okReply("done"), okReply("again"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	c.SetAnswerer(func(m apptest.Message) (any, int, string, bool) {
		if m.Method != "item/tool/call" {
			return nil, 0, "", false
		}
		if strings.Contains(string(m.Params), `"crm"`) {
			return map[string]any{"success": false, "contentItems": []any{map[string]any{"type": "inputText", "text": "no"}, map[string]any{"type": "inputText", "text": "such"}}}, 0, "", true
		}
		return map[string]any{"success": true, "contentItems": []any{map[string]any{"type": "inputText", "text": "42 degrees"}}}, 0, "", true
	})
	dyn := []any{
		map[string]any{"type": "function", "name": "get_weather", "description": "Weather now", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
		map[string]any{"type": "namespace", "name": "crm", "description": "CRM", "tools": []any{
			map[string]any{"type": "function", "name": "lookup", "description": "Find", "inputSchema": map[string]any{"type": "object"}},
			map[string]any{"type": "function", "name": "hidden", "description": "deferred", "inputSchema": map[string]any{"type": "object"}, "deferLoading": true}}},
	}
	tid := c.StartThread(map[string]any{"dynamicTools": dyn})
	mark := c.Mark()
	c.StartTurn(tid, "weather?")
	c.WaitTurnCompleted()

	call := c.Since(mark)
	var calls []map[string]any
	completed := map[string]map[string]any{}
	for _, m := range call {
		if m.Method == "item/tool/call" {
			calls = append(calls, params(t, m))
		}
		if m.Method == "item/completed" && strings.Contains(string(m.Params), `"dynamicToolCall"`) {
			item := params(t, m)["item"].(map[string]any)
			completed[item["id"].(string)] = item
		}
	}
	require.Len(t, calls, 2)
	require.NotContains(t, apptest.NotificationMethods(call), "serverRequest/resolved", "the reference announces no resolution of item/tool/call")
	byID := map[string]map[string]any{}
	for _, cl := range calls {
		byID[cl["callId"].(string)] = cl
	}
	require.Equal(t, "get_weather", byID["d1"]["tool"])
	require.Equal(t, map[string]any{"city": "Oslo"}, byID["d1"]["arguments"])
	require.Equal(t, "crm", byID["d2"]["namespace"])
	require.Equal(t, "lookup", byID["d2"]["tool"])
	require.Len(t, completed, 2)
	require.Equal(t, "completed", completed["d1"]["status"])
	require.Equal(t, "failed", completed["d2"]["status"])

	reqs := mm.ResponseRequests()
	require.Contains(t, toolNames(reqs[0].Body), "get_weather")
	require.Contains(t, toolNames(reqs[0].Body), "crm")
	tools, _ := json.Marshal(reqs[0].Body["tools"])
	require.NotContains(t, string(tools), "hidden", "deferred tools are not offered directly")
	require.Equal(t, "42 degrees", fnOutput(t, reqs[1].Body, "d1"), "a lone text answer is plain text")
	require.Len(t, fnOutput(t, reqs[1].Body, "d2"), 2)

	// A restarted server resumes the thread from its rollout.
	c.Close()
	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: c.Home})
	c2.Initialize(true)
	c2.Result("thread/resume", map[string]any{"threadId": tid}, nil)
	c2.StartTurn(tid, "again")
	c2.WaitTurnCompleted()
	reqs = mm.ResponseRequests()
	require.Contains(t, toolNames(reqs[len(reqs)-1].Body), "get_weather", "a resumed thread keeps its dynamic tools")
}
