package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// jsCallOutput returns the output of the *_call_output item for callID in a request body.
func jsCallOutput(t *testing.T, body map[string]any, callID string) any {
	t.Helper()
	input, _ := body["input"].([]any)
	for _, raw := range input {
		it, _ := raw.(map[string]any)
		if it["call_id"] == callID && strings.HasSuffix(it["type"].(string), "_call_output") {
			return it["output"]
		}
	}
	require.Failf(t, "no output", "no output for %s in %s", callID, mustJSON(t, input))
	return nil
}

// codeModeTurn runs one turn of a code-mode model (gpt-5.6-sol) in which the model calls exec with src,
// and returns the client, the mock and the exec call's output as the next request carried it.
func codeModeTurn(t *testing.T, src string) (*apptest.Client, *mockmodel.Server, any) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.CustomToolCall("exec", "call_js", src)}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.6-sol", SandboxMode: "workspace-write"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "run it")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	return c, mm, jsCallOutput(t, reqs[1].Body, "call_js")
}

// The reference's first request for a code-mode model: no `tools` key, parallel_tool_calls false, and an
// additional_tools item first in the input with exec (freeform, Lark grammar), wait and
// request_user_input in the `functions` namespace; the other tools are described inside exec.
func TestCodeModeFirstRequest(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("hi", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6.1-sol"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "hello")
	c.WaitTurnCompleted()
	body := mm.ResponseRequests()[0].Body
	require.NotContains(t, body, "tools")
	require.Equal(t, false, body["parallel_tool_calls"])
	input := body["input"].([]any)
	first := input[0].(map[string]any)
	require.Equal(t, "additional_tools", first["type"])
	require.Equal(t, "developer", first["role"])
	require.Regexp(t, `^at_[0-9a-f-]{36}$`, first["id"])
	require.Equal(t, "developer", input[1].(map[string]any)["role"], "the base instructions follow")
	var item struct {
		Tools []struct {
			Type, Name, Description string
			Tools                   []struct {
				Type, Name, Description string
				Format                  map[string]any
				Parameters              map[string]any
			}
		}
	}
	b, _ := json.Marshal(first)
	require.NoError(t, json.Unmarshal(b, &item))
	require.Len(t, item.Tools, 3, "functions, (gpt-6.x) clock and (multi-agent v2) collaboration")
	require.Equal(t, "collaboration", item.Tools[2].Name)
	require.Equal(t, "clock", item.Tools[1].Name)
	require.Len(t, item.Tools[1].Tools, 1)
	require.Equal(t, "sleep", item.Tools[1].Tools[0].Name)
	ns := item.Tools[0]
	require.Equal(t, "namespace", ns.Type)
	require.Equal(t, "functions", ns.Name)
	var names []string
	for _, tool := range ns.Tools {
		names = append(names, tool.Type+":"+tool.Name)
	}
	require.Equal(t, []string{"custom:exec", "function:wait", "function:request_user_input", "function:request_user_input_async"}, names)
	exec := ns.Tools[0]
	require.Equal(t, map[string]any{"type": "grammar", "syntax": "lark", "definition": "\nstart: pragma_source | plain_source\npragma_source: PRAGMA_LINE NEWLINE SOURCE\nplain_source: SOURCE\n\nPRAGMA_LINE: /[ \\t]*\\/\\/ @exec:[^\\r\\n]*/\nNEWLINE: /\\r?\\n/\nSOURCE: /[\\s\\S]+/\n"}, exec.Format)
	nested := regexp.MustCompile("(?m)^### `([^`]+)`").FindAllStringSubmatch(exec.Description, -1)
	var nestedNames []string
	for _, m := range nested {
		nestedNames = append(nestedNames, m[1])
	}
	require.Equal(t, []string{"apply_patch", "create_goal", "exec_command", "get_goal", "list_mcp_resource_templates", "list_mcp_resources",
		"read_mcp_resource", "update_goal", "view_image", "write_stdin", "clock__curr_time"}, nestedNames)
	require.Contains(t, exec.Description, "declare const tools: { exec_command(args: {\n")
	require.Contains(t, exec.Description, "declare const tools: { apply_patch(input: string): Promise<unknown>; };")
	wait := ns.Tools[1].Parameters
	require.Equal(t, []any{"cell_id"}, wait["required"])
	require.ElementsMatch(t, []string{"cell_id", "max_tokens", "terminate", "yield_time_ms"}, keys(wait["properties"].(map[string]any)))

	// The item keeps its id on the thread's next turn.
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("again", 1)}})
	c.StartTurn(tid, "again")
	c.WaitTurnCompleted()
	second := mm.ResponseRequests()[1].Body["input"].([]any)[0].(map[string]any)
	require.Equal(t, first["id"], second["id"])
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// features.code_mode_only gives a model outside code mode exec, wait and request_user_input in the plain
// tools array (its hosted web_search stays), as the reference does.
func TestCodeModeOnlyFeature(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("hi", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, Config: "[features]\ncode_mode_only = true\n"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "hello")
	c.WaitTurnCompleted()
	body := mm.ResponseRequests()[0].Body
	var names []string
	for _, raw := range body["tools"].([]any) {
		tool := raw.(map[string]any)
		name, _ := tool["name"].(string)
		names = append(names, tool["type"].(string)+":"+name)
	}
	require.Equal(t, []string{"custom:exec", "function:wait", "function:request_user_input", "web_search:"}, names)
	require.NotEqual(t, "additional_tools", body["input"].([]any)[0].(map[string]any)["type"])
}

// A script calling exec_command: the command's commandExecution items go out as for a direct call (ids
// "exec-…"), no item for the script itself, and the model gets the script's text items after a header.
func TestCodeModeExecCommand(t *testing.T) {
	c, _, out := codeModeTurn(t, "const r = await tools.exec_command({cmd: \"echo hi\"});\ntext(r.output);\ntext(1+2);\ntext({a: r.exit_code});")
	parts := out.([]any)
	require.Len(t, parts, 4)
	require.Regexp(t, `^Script completed\nWall time \d+\.\d seconds\nOutput:\n$`, parts[0].(map[string]any)["text"])
	// (The host's login shell may print its own noise first.)
	require.True(t, strings.HasSuffix(parts[1].(map[string]any)["text"].(string), "hi\n"), parts[1])
	require.Equal(t, []any{
		map[string]any{"type": "input_text", "text": "3"},
		map[string]any{"type": "input_text", "text": `{"a":0}`},
	}, parts[2:])
	var seen []string
	for _, m := range c.Messages() {
		if m.Method != "item/started" && m.Method != "item/completed" {
			continue
		}
		var p struct {
			Item map[string]any `json:"item"`
		}
		require.NoError(t, json.Unmarshal(m.Params, &p))
		switch p.Item["type"] {
		case "userMessage", "agentMessage":
			continue
		}
		require.Equal(t, "commandExecution", p.Item["type"])
		require.Regexp(t, `^exec-[0-9a-f-]{36}$`, p.Item["id"])
		require.Equal(t, "/bin/bash -lc 'echo hi'", p.Item["command"])
		seen = append(seen, m.Method+":"+p.Item["status"].(string))
	}
	require.Equal(t, []string{"item/started:inProgress", "item/completed:completed"}, seen)
}

// A script that throws: "Script failed", the output so far, then the error with its position.
func TestCodeModeScriptError(t *testing.T) {
	_, _, out := codeModeTurn(t, "text(\"before\");\nthrow new Error(\"boom\");")
	parts := out.([]any)
	require.Len(t, parts, 3)
	require.Regexp(t, `^Script failed\nWall time \d+\.\d seconds\nOutput:\n$`, parts[0].(map[string]any)["text"])
	require.Equal(t, "before", parts[1].(map[string]any)["text"])
	require.Equal(t, "Script error:\nError: boom\n    at exec_main.mjs:2:7", parts[2].(map[string]any)["text"])
}

// A script with no output is answered with the bare header, as a string.
func TestCodeModeNoOutput(t *testing.T) {
	_, _, out := codeModeTurn(t, "const x = [1, 2, 3].map(v => v * v);\nx.reduce((a, b) => a + b, 0);")
	require.Regexp(t, `^Script completed\nWall time \d+\.\d seconds\nOutput:\n$`, out)
}

// A script that loops forever yields after its yield time ("Script running with cell ID 1"); wait
// with terminate stops it.
func TestCodeModeLoopYieldsAndTerminates(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.CustomToolCall("exec", "call_js", "// @exec: {\"yield_time_ms\": 0}\nwhile (true) {}")}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("wait", "call_wait", map[string]any{"cell_id": "1", "terminate": true})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("wait", "call_gone", map[string]any{"cell_id": "1"})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.6-sol"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "spin")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 4)
	require.Regexp(t, `^Script running with cell ID 1\nWall time \d+\.\d seconds\nOutput:\n$`, jsCallOutput(t, reqs[1].Body, "call_js"))
	require.Regexp(t, `^Script terminated\nWall time \d+\.\d seconds\nOutput:\n`, textOf(jsCallOutput(t, reqs[2].Body, "call_wait")))
	gone := jsCallOutput(t, reqs[3].Body, "call_gone").([]any)
	require.Equal(t, "Script error:\nexec cell 1 not found", gone[1].(map[string]any)["text"])
}

// textOf is an output's first text (a bare string or a content list's first part).
func textOf(out any) string {
	if s, ok := out.(string); ok {
		return s
	}
	return out.([]any)[0].(map[string]any)["text"].(string)
}

// turn/interrupt stops a script that never yields (a busy loop, after a nested command ran): the turn
// ends interrupted, the model later reads "aborted by user after …", and the thread goes on.
func TestCodeModeInterruptStopsScript(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.CustomToolCall("exec", "call_js", "await tools.exec_command({cmd: \"echo started\"});\nwhile (true) {}")}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.CustomToolCall("exec", "call_next", "text(\"alive\");")}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.6-sol"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	turnID := c.StartTurn(tid, "spin")
	c.WaitNotification("item/completed", func(p json.RawMessage) bool { return strings.Contains(string(p), `"commandExecution"`) })
	require.JSONEq(t, `{}`, string(c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": turnID}, nil)))
	require.Equal(t, "interrupted", c.WaitTurnCompleted()["status"])

	c.StartTurn(tid, "again")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	require.Regexp(t, `^aborted by user after \d+\.\ds$`, jsCallOutput(t, reqs[1].Body, "call_js"))
	next := jsCallOutput(t, reqs[2].Body, "call_next").([]any)
	require.Equal(t, "alive", next[1].(map[string]any)["text"])
}

// The gpt-6.x extras, as the reference: clock.sleep (a sleep item, "Sleep completed."; out of range
// refused), clock__curr_time from a script, request_user_input_async (an async agentMessage, accepted).
func TestCodeModeClockAndAsyncInput(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{
		{Type: "function_call", Name: "sleep", Namespace: "clock", CallID: "call_sleep", Arguments: map[string]any{"duration_ms": 1}},
		{Type: "function_call", Name: "sleep", Namespace: "clock", CallID: "call_bad", Arguments: map[string]any{"duration_ms": 0}},
		mockmodel.CustomToolCall("exec", "call_js", "text(await tools.clock__curr_time({}));"),
		mockmodel.FunctionCall("request_user_input_async", "call_ask", map[string]any{"questions": []any{map[string]any{"title": "Which?", "options": []any{"a", "b"}}}}),
	}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6.1-sol"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "go")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	body := mm.ResponseRequests()[1].Body
	require.Regexp(t, `^Wall time: \d+\.\d{4} seconds\nSleep completed\.$`, jsCallOutput(t, body, "call_sleep"))
	require.Equal(t, "duration_ms must be between 1 and 43200000", jsCallOutput(t, body, "call_bad"))
	now := jsCallOutput(t, body, "call_js").([]any)[1].(map[string]any)["text"]
	require.Regexp(t, `^\{"current_time":"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"\}$`, now)
	require.Equal(t, `{"accepted":true}`, jsCallOutput(t, body, "call_ask"))
	var kinds []string
	for _, m := range c.Messages() {
		if m.Method != "item/completed" {
			continue
		}
		var p struct {
			Item map[string]any `json:"item"`
		}
		require.NoError(t, json.Unmarshal(m.Params, &p))
		switch p.Item["type"] {
		case "sleep":
			require.Equal(t, "call_sleep", p.Item["id"])
			require.EqualValues(t, 1, p.Item["durationMs"])
			kinds = append(kinds, "sleep")
		case "agentMessage":
			if p.Item["id"] == "call_ask" {
				require.Equal(t, "async", p.Item["delivery"])
				require.Equal(t, "final_answer", p.Item["phase"])
				require.Equal(t, "Which?\n- a\n- b", p.Item["text"])
				require.Equal(t, []any{map[string]any{"title": "Which?", "options": []any{"a", "b"}}}, p.Item["questions"])
				kinds = append(kinds, "ask")
			}
		}
	}
	require.Equal(t, []string{"sleep", "ask"}, kinds)
}

// notify() adds a custom_tool_call_output of the exec call, named "exec", after the script's output (the
// reference's injection).
func TestCodeModeNotify(t *testing.T) {
	_, mm, out := codeModeTurn(t, "notify(\"note1\");\ntext(\"x\");")
	require.Equal(t, "x", out.([]any)[1].(map[string]any)["text"])
	input := mm.ResponseRequests()[1].Body["input"].([]any)
	var outputs []map[string]any
	for _, raw := range input {
		it := raw.(map[string]any)
		if it["call_id"] == "call_js" && it["type"] == "custom_tool_call_output" {
			outputs = append(outputs, it)
		}
	}
	require.Len(t, outputs, 2)
	require.Equal(t, "exec", outputs[1]["name"])
	require.Equal(t, "note1", outputs[1]["output"])
	require.Regexp(t, `^ctco_`, outputs[1]["id"])
}

// An MCP tool called from a script: an mcpToolCall item as for a direct call, the script gets MCP's
// CallToolResult, and the tool is callable and in ALL_TOOLS though exec's description leaves it out.
func TestCodeModeMCPTool(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.CustomToolCall("exec", "call_js",
		"const r = await tools.mcp__good__echo({text: \"hi\"});\ntext(r);\ntext(ALL_TOOLS.some(t => t.name === \"mcp__good__echo\"));")}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.6-sol", Config: mcpServerTOML(t, "good", "", pidDir)})
	c.Initialize(false)
	tid := startReadyThread(t, c, "good")
	mark := c.Mark()
	c.StartTurn(tid, "go")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.NotContains(t, execNestedNames(t, reqs[0].Body), "mcp__good__echo")
	out := jsCallOutput(t, reqs[1].Body, "call_js").([]any)
	require.Len(t, out, 3)
	require.Regexp(t, `^\{"content":\[\{.*"type":"text".*\}\],"isError":false`, out[1].(map[string]any)["text"])
	require.Equal(t, "true", out[2].(map[string]any)["text"])
	started, completed := mcpItems(t, c, mark)
	require.Len(t, started, 1)
	require.Len(t, completed, 1)
	for id, it := range completed {
		require.Regexp(t, `^exec-`, id)
		require.Equal(t, "completed", it.Status)
	}
}

// A top-level MCP call on a code-mode model, as the reference (0.169.0) on gpt-6-sol answers it: by namespace and
// name it runs (an mcpToolCall item) though only exec was offered; the flat `mcp__<server>__<tool>` name is an
// "unsupported call".
func TestCodeModeTopLevelMCPCall(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{
		nsCall("good", "echo", "c1", map[string]any{"text": "hi"}),
		mockmodel.FunctionCall("mcp__good__echo", "c2", map[string]any{"text": "flat"}),
	}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6-sol", Config: mcpServerTOML(t, "good", "", pidDir)})
	c.Initialize(false)
	tid := startReadyThread(t, c, "good")
	mark := c.Mark()
	c.StartTurn(tid, "go")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	started, completed := mcpItems(t, c, mark)
	require.Len(t, started, 1)
	require.Len(t, completed, 1)
	require.Equal(t, "completed", completed["c1"].Status)
	require.Contains(t, outputOf(t, mm, "c1"), "echo: hi")
	require.Equal(t, "unsupported call: mcp__good__echo", outputOf(t, mm, "c2"))
}

// Code mode offers the MCP resource helpers without any MCP server, as the reference: empty lists, and a
// read of an unknown server throws.
func TestCodeModeResourceHelpersWithoutServers(t *testing.T) {
	_, _, out := codeModeTurn(t, "text(await tools.list_mcp_resources({}));\ntext(await tools.list_mcp_resource_templates({}));\n"+
		"try { await tools.read_mcp_resource({server: \"x\", uri: \"y\"}); } catch (e) { text(\"ERR \" + e); }")
	parts := out.([]any)
	require.Len(t, parts, 4)
	require.Equal(t, `{"resources":[]}`, parts[1].(map[string]any)["text"])
	require.Equal(t, `{"resourceTemplates":[]}`, parts[2].(map[string]any)["text"])
	require.Equal(t, "ERR unknown MCP server `x`", parts[3].(map[string]any)["text"])
}

// turn/steer ends a clock.sleep early: "Sleep interrupted by new input.", as the reference.
func TestCodeModeSleepEndsOnSteer(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{
		{Type: "function_call", Name: "sleep", Namespace: "clock", CallID: "call_sleep", Arguments: map[string]any{"duration_ms": 43200000}},
	}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6.1-sol"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	turnID := c.StartTurn(tid, "nap")
	c.WaitNotification("item/started", func(p json.RawMessage) bool { return strings.Contains(string(p), `"type":"sleep"`) })
	c.Result("turn/steer", map[string]any{"threadId": tid, "expectedTurnId": turnID, "input": []any{map[string]any{"type": "text", "text": "wake"}}}, nil)
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	body := mm.ResponseRequests()[1].Body
	require.Regexp(t, `^Wall time: \d+\.\d{4} seconds\nSleep interrupted by new input\.$`, jsCallOutput(t, body, "call_sleep"))
}

// A code-mode model that calls a nested tool directly (exec_command at the top level, not from exec's
// JavaScript) gets it run as outside code mode, with its commandExecution item: the reference answers it
// although it offered only exec (it used to be "unsupported call: exec_command").
func TestCodeModeDirectNestedCall(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "echo direct"})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6-luna", SandboxMode: "workspace-write"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	mark := c.Mark()
	c.StartTurn(tid, "run it")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	out, _ := jsCallOutput(t, reqs[1].Body, "call_1").(string)
	require.True(t, strings.HasSuffix(out, "\ndirect\n"), out)
	var started bool
	for _, m := range c.Since(mark) {
		if m.Method == "item/started" && strings.Contains(string(m.Params), `"type":"commandExecution"`) {
			started = true
		}
	}
	require.True(t, started, "the command has its item")
}

// As the reference, a code-mode thread's rollout opens its initial context with the additional_tools item
// (sent as the first request's); a resumed thread and a fork lead with it under the same id, once.
func TestCodeModeToolsItemRecorded(t *testing.T) {
	mm := mockmodel.New(t)
	for _, a := range []string{"one", "two", "three"} {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(a, 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.6-sol"})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "one")
	c.WaitTurnCompleted()
	first := mm.ResponseRequests()[0].Body["input"].([]any)[0].(map[string]any)
	require.Equal(t, "additional_tools", first["type"])
	kinds := recordKinds(t, rolloutFile(t, c.Home, tid))
	require.Equal(t, []string{"session_meta", "event_msg:task_started", "response_item:additional_tools:developer", "response_item:message:developer"}, kinds[:4])
	require.Contains(t, string(mustRead(t, rolloutFile(t, c.Home, tid))), `"id":"`+first["id"].(string)+`"`)

	c.Close()
	c2 := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.6-sol", Home: c.Home})
	c2.Initialize(false)
	c2.Result("thread/resume", map[string]any{"threadId": tid}, nil)
	c2.StartTurn(tid, "two")
	c2.WaitTurnCompleted()
	var fork struct {
		Thread struct{ ID string }
	}
	c2.Result("thread/fork", map[string]any{"threadId": tid}, &fork)
	c2.StartTurn(fork.Thread.ID, "three")
	c2.WaitTurnCompleted()
	for _, r := range mm.ResponseRequests()[1:] {
		var lead []any
		for _, it := range r.Body["input"].([]any) {
			if it.(map[string]any)["type"] == "additional_tools" {
				lead = append(lead, it)
			}
		}
		require.Len(t, lead, 1)
		require.Equal(t, first["id"], lead[0].(map[string]any)["id"])
		require.Equal(t, first, r.Body["input"].([]any)[0])
	}
	require.Equal(t, 1, strings.Count(string(mustRead(t, rolloutFile(t, c.Home, tid))), `"type":"additional_tools"`), "recorded once")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// notify() reaches the model at once, as the reference's: a note from a script still running after its
// exec returned joins the running turn, which makes one more request after the model's final answer.
func TestCodeModeLateNotify(t *testing.T) {
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.6-sol", SandboxMode: "danger-full-access"})
	ready := filepath.Join(t.TempDir(), "ready")
	src := "yield_control();\n" +
		"await tools.exec_command({cmd: \"until [ -e '" + ready + "' ]; do sleep 0.02; done\", login: false, yield_time_ms: 30000});\n" +
		"notify(\"late\");\n" +
		"await tools.exec_command({cmd: \"echo second\", login: false});"
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.CustomToolCall("exec", "call_js", src)}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1), mockmodel.Hang(120)}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("fine", 1)}})
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "run it")
	require.NoError(t, mm.WaitRequests(context.Background(), 2))
	require.NoError(t, os.WriteFile(ready, nil, 0o644))
	// The second command starts after notify() returned.
	c.WaitNotification("item/started", func(p json.RawMessage) bool { return strings.Contains(string(p), "echo second") })
	mm.Release()
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	input := reqs[2].Body["input"].([]any)
	n := len(input)
	require.Equal(t, "assistant", input[n-2].(map[string]any)["role"], "after the final answer")
	note := input[n-1].(map[string]any)
	require.Equal(t, "custom_tool_call_output", note["type"])
	require.Equal(t, "call_js", note["call_id"])
	require.Equal(t, "exec", note["name"])
	require.Equal(t, "late", note["output"])
}
