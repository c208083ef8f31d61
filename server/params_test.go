package server_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// toolNames lists the names (or types, for hosted tools) of a model request's tools.
func toolNames(body map[string]any) []string {
	names := []string{}
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		m := t.(map[string]any)
		if n, ok := m["name"].(string); ok {
			names = append(names, n)
		} else {
			names = append(names, m["type"].(string))
		}
	}
	return names
}

func okReply(text string) mockmodel.Response {
	return mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(text, 1)}}
}

func TestOutputSchemaAppliesToItsTurnOnly(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply(`{"title":"Hi"}`), okReply("plain"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	schema := map[string]any{
		"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}},
		"required": []string{"title"}, "additionalProperties": false,
	}
	c.Result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "title please"}}, "outputSchema": schema}, nil)
	c.WaitTurnCompleted()
	c.StartTurn(tid, "again")
	c.WaitTurnCompleted()

	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	format := reqs[0].Body["text"].(map[string]any)["format"].(map[string]any)
	require.Equal(t, "json_schema", format["type"])
	require.Equal(t, true, format["strict"])
	require.Equal(t, "codex_output_schema", format["name"])
	want, _ := json.Marshal(schema)
	got, _ := json.Marshal(format["schema"])
	require.JSONEq(t, string(want), string(got))
	require.NotContains(t, reqs[1].Body, "text", "the schema applies to its own turn only")
}

// tuiTitleConfig is the `config` the official TUI sends on the thread/start of its title thread
// (recorded from codex-cli 0.169.0): features and tools off, web search disabled.
var tuiTitleConfig = map[string]any{
	"tools.experimental_request_user_input.enabled": false, "features.memories": false,
	"features.current_time_reminder": false, "features.code_mode": false, "features.shell_tool": false,
	"features.unified_exec": false, "features.shell_snapshot": false, "features.token_budget": false,
	"features.tool_suggest": false, "features.request_permissions_tool": false, "features.code_mode_only": false,
	"cloud.skills.enabled": false, "features.enable_fanout": false, "mcp_servers": map[string]any{},
	"features.view_image": false, "features.apps": false, "features.image_generation": false,
	"features.hooks": false, "features.standalone_web_search": false, "default_permissions": ":read-only",
	"features.deferred_executor": false, "features.context_management": false, "skills.include_instructions": false,
	"features.multi_agent_v2": false, "tools.update_plan.enabled": false, "web_search": "disabled",
	"features.goals": false, "features.multi_agent": false, "features.plugins": false,
}

func TestFeatureOverridesYieldToolLessRequest(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply(`{"title":"Greet"}`), okReply("hi"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	title := c.StartThread(map[string]any{"ephemeral": true, "threadSource": "thread_title", "config": tuiTitleConfig})
	c.StartTurn(title, "title for: hello")
	c.WaitTurnCompleted()
	plain := c.StartThread(nil)
	c.StartTurn(plain, "hello")
	c.WaitTurnCompleted()

	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.Empty(t, toolNames(reqs[0].Body), "the title thread offers no tools")
	require.Equal(t, []string{"exec_command", "write_stdin", "request_user_input", "view_image", "multi_agent_v1",
		"get_goal", "create_goal", "update_goal", "web_search"}, toolNames(reqs[1].Body), "overrides apply to their thread only")
}

func TestFeatureOverridesPickTools(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config map[string]any
		want   []string
	}{
		// as in the reference (0.169): unified_exec = false brings back no classic shell tool, shell_tool = false
		// drops the command tools whatever unified_exec says, and a model outside the catalogue gets no
		// apply_patch, include_apply_patch_tool or not (the reference has no such key)
		{"unified_exec off changes nothing", map[string]any{"features.unified_exec": false}, []string{"exec_command", "write_stdin"}},
		{"plan tool, live search", map[string]any{"tools.update_plan.enabled": true, "web_search": "live", "features.goals": false}, []string{"exec_command", "write_stdin", "update_plan", "web_search"}},
		{"shell_tool off", map[string]any{"features.shell_tool": false}, []string{}},
		{"include_apply_patch_tool is ignored", map[string]any{"include_apply_patch_tool": true}, []string{"exec_command", "write_stdin"}},
		{"features.view_image", map[string]any{"features.view_image": true}, []string{"exec_command", "write_stdin", "view_image"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(okReply("ok"))
			c := apptest.Start(t, apptest.Options{Model: mm})
			c.Initialize(false)
			cfg := map[string]any{"features.view_image": false, "tools.experimental_request_user_input.enabled": false, "features.goals": false, "web_search": "disabled",
				"features.multi_agent": false}
			for k, v := range tc.config {
				cfg[k] = v
			}
			tid := c.StartThread(map[string]any{"config": cfg})
			c.StartTurn(tid, "go")
			c.WaitTurnCompleted()
			body := mm.ResponseRequests()[0].Body
			require.Equal(t, tc.want, toolNames(body))
			if tc.config["web_search"] == "live" {
				tools := body["tools"].([]any)
				require.Equal(t, true, tools[len(tools)-1].(map[string]any)["external_web_access"])
			}
		})
	}
}

func TestProviderOverrideChoosesTheThreadsModelClient(t *testing.T) {
	def := mockmodel.New(t)
	other := mockmodel.New(t)
	def.Enqueue(okReply("from default"))
	other.Enqueue(okReply("from override"))
	c := apptest.Start(t, apptest.Options{Model: def})
	c.Initialize(false)
	tid := c.StartThread(map[string]any{"config": map[string]any{"model_providers.mock.base_url": other.URL()}})
	c.StartTurn(tid, "go")
	c.WaitTurnCompleted()
	require.Len(t, other.ResponseRequests(), 1, "the overridden provider settings get their own client")
	require.Empty(t, def.ResponseRequests())
	plain := c.StartThread(nil)
	c.StartTurn(plain, "go")
	c.WaitTurnCompleted()
	require.Len(t, def.ResponseRequests(), 1)
}

func TestExperimentalFieldsGatedByValue(t *testing.T) {
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	for _, ok := range []map[string]any{{"experimentalRawEvents": false}, {"allowProviderModelFallback": false}, {"multiAgentMode": nil}} {
		m := c.Request("thread/start", merge(map[string]any{"cwd": c.Work}, ok))
		require.Nil(t, m.Error, "%v is a default value", ok)
	}
	for field, val := range map[string]any{"experimentalRawEvents": true, "dynamicTools": []any{}, "daybreakEnabled": false, "historyMode": "paginated"} {
		m := c.Request("thread/start", map[string]any{"cwd": c.Work, field: val})
		require.NotNil(t, m.Error, field)
		require.Equal(t, -32600, m.Error.Code)
		require.Equal(t, "thread/start."+field+" requires experimentalApi capability", m.Error.Message)
	}
}

func merge(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

func TestCatalogueModelKeepsApplyPatchWithoutCommandTools(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("ok"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(map[string]any{"model": "gpt-5.5", "config": tuiTitleConfig})
	c.StartTurn(tid, "go")
	c.WaitTurnCompleted()
	body := mm.ResponseRequests()[0].Body
	require.Equal(t, []string{"apply_patch"}, toolNames(body), "the reference offers apply_patch by model")
	require.Equal(t, map[string]any{"verbosity": "low"}, body["text"], "catalogue defaults")
	require.Equal(t, map[string]any{"effort": "medium"}, body["reasoning"])
}

// TestCatalogueModelTools: the tools the reference 0.169 offers catalogue models (compared on the first
// request's tools): apply_patch by model whatever include_apply_patch_tool says, the hosted web_search with
// text and image results, and no hosted web_search at all for the code-mode models (all but gpt-5.5);
// gpt-5.5 gets tool_search for its deferred multi_agent_v1.
func TestCatalogueModelTools(t *testing.T) {
	for _, tc := range []struct {
		model     string
		config    map[string]any
		want      []string
		webSearch map[string]any
	}{
		{"gpt-5.5", map[string]any{"web_search": "live"}, []string{"exec_command", "write_stdin", "apply_patch", "tool_search", "web_search"},
			map[string]any{"type": "web_search", "external_web_access": true, "search_content_types": []any{"text", "image"}}},
		{"gpt-5.5", map[string]any{"include_apply_patch_tool": false}, []string{"exec_command", "write_stdin", "apply_patch", "tool_search", "web_search"},
			map[string]any{"type": "web_search", "external_web_access": false, "search_content_types": []any{"text", "image"}}},
		// Code mode: the tools are nested in exec (listed by name), no `tools` key.
		{"gpt-6.1-sol", map[string]any{"web_search": "live"}, []string{"apply_patch", "exec_command", "list_mcp_resource_templates", "list_mcp_resources", "read_mcp_resource", "write_stdin", "clock__curr_time"}, nil},
		{"gpt-5.6-sol", map[string]any{"features.shell_tool": false}, []string{"apply_patch", "list_mcp_resource_templates", "list_mcp_resources", "read_mcp_resource"}, nil},
	} {
		t.Run(tc.model, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(okReply("ok"))
			c := apptest.Start(t, apptest.Options{Model: mm})
			c.Initialize(true)
			cfg := map[string]any{"features.view_image": false, "tools.experimental_request_user_input.enabled": false, "features.goals": false}
			for k, v := range tc.config {
				cfg[k] = v
			}
			tid := c.StartThread(map[string]any{"model": tc.model, "config": cfg})
			c.StartTurn(tid, "go")
			c.WaitTurnCompleted()
			body := mm.ResponseRequests()[0].Body
			if tc.model != "gpt-5.5" {
				require.NotContains(t, body, "tools")
				require.Equal(t, tc.want, execNestedNames(t, body))
				return
			}
			require.Equal(t, tc.want, toolNames(body))
			if tc.webSearch != nil {
				tools := body["tools"].([]any)
				require.Equal(t, tc.webSearch, tools[len(tools)-1])
			}
		})
	}
}

// execNestedNames are the tools a code-mode request describes inside exec (its additional_tools item).
func execNestedNames(t *testing.T, body map[string]any) []string {
	t.Helper()
	first := body["input"].([]any)[0].(map[string]any)
	require.Equal(t, "additional_tools", first["type"])
	ns := first["tools"].([]any)[0].(map[string]any)
	exec := ns["tools"].([]any)[0].(map[string]any)
	require.Equal(t, "exec", exec["name"])
	var names []string
	for _, m := range regexp.MustCompile("(?m)^### `([^`]+)`").FindAllStringSubmatch(exec["description"].(string), -1) {
		names = append(names, m[1])
	}
	return names
}
