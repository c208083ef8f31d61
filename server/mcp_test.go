package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mcptest"
	"appserver/internal/mockmodel"
	"appserver/stopwatch/stopwatchtest"
)

// mcpServerTOML is a [mcp_servers.<name>] entry running the stdio test server in mode ("" serves),
// recording its pid in pidDir; extra lines are appended to the table.
// Modes "pause-<mode>" serve with the out-of-band elicitation state capability (see mcptest.NewServer);
// the last accepted state is written to pauseFile(pidDir, name).
func mcpServerTOML(t *testing.T, name, mode, pidDir string, extra ...string) string {
	t.Helper()
	pause := ""
	if p, ok := strings.CutPrefix(mode, "pause-"); ok {
		mode, pause = "", p
	}
	return fmt.Sprintf("[mcp_servers.%s]\ncommand = %q\nenv = { %s = %q, %s = %q, %s = %q, %s = %q, %s = %q }\n%s\n",
		name, mcptest.Binary(t), mcptest.EnvMode, mode, mcptest.EnvPidDir, pidDir, mcptest.EnvName, name+"-mcp",
		mcptest.EnvPause, pause, mcptest.EnvPauseFile, pauseFile(pidDir, name), strings.Join(extra, "\n"))
}

// pauseFile is where the test server named name records the last pause state it accepted.
func pauseFile(pidDir, name string) string { return pidDir + ".pause-" + name }

// pids lists the test servers started so far (their pid files).
func pids(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		require.NoError(t, err)
		out = append(out, pid)
	}
	return out
}

func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// requireAllGone waits until no process recorded in dir exists.
func requireAllGone(t *testing.T, dir string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, pid := range pids(t, dir) {
			if alive(pid) {
				return false
			}
		}
		return true
	}, apptest.WaitLimit, 50*time.Millisecond, "MCP server processes outlived their owner")
}

type startupStatus struct {
	ThreadID      *string `json:"threadId"`
	Name          string  `json:"name"`
	Status        string  `json:"status"`
	Error         *string `json:"error"`
	FailureReason *string `json:"failureReason"`
}

// waitStatus waits for mcpServer/startupStatus/updated of a server reaching status (without
// consuming earlier messages of other waits' interest).
func waitStatus(t *testing.T, c *apptest.Client, mark int, name, status string) startupStatus {
	t.Helper()
	var found *startupStatus
	require.Eventually(t, func() bool {
		for _, m := range c.Since(mark) {
			if m.Method != "mcpServer/startupStatus/updated" {
				continue
			}
			var st startupStatus
			require.NoError(t, json.Unmarshal(m.Params, &st))
			if st.Name == name && st.Status == status {
				found = &st
				return true
			}
		}
		return false
	}, apptest.WaitLimit, 20*time.Millisecond, "no %s status %s", name, status)
	return *found
}

type statusList struct {
	Data []struct {
		Name          string                     `json:"name"`
		RuntimeStatus *string                    `json:"runtimeStatus"`
		Tools         map[string]json.RawMessage `json:"tools"`
		ToolsError    *string                    `json:"toolsError"`
		ServerInfo    *struct{ Name string }     `json:"serverInfo"`
		Resources     []json.RawMessage          `json:"resources"`
	} `json:"data"`
	NextCursor *string `json:"nextCursor"`
}

func TestMCPStartupStatusesAndStatusList(t *testing.T) {
	pidDir := t.TempDir()
	cfg := mcpServerTOML(t, "good", "", pidDir) +
		mcpServerTOML(t, "broken", "exit", pidDir) +
		mcpServerTOML(t, "slow", "noinit", pidDir, "startup_timeout_sec = 1")
	c := apptest.Start(t, apptest.Options{Config: cfg})
	c.Initialize(false)

	// Before any thread: servers started for this call only, awaited, stopped afterwards.
	var global statusList
	c.Result("mcpServerStatus/list", map[string]any{}, &global)
	require.Len(t, global.Data, 3)
	require.Equal(t, []string{"broken", "good", "slow"}, []string{global.Data[0].Name, global.Data[1].Name, global.Data[2].Name})
	require.Nil(t, global.Data[0].RuntimeStatus)
	require.Empty(t, global.Data[0].Tools)
	require.True(t, strings.HasPrefix(*global.Data[0].ToolsError, "MCP startup failed: "), *global.Data[0].ToolsError)
	require.Equal(t, "good-mcp", global.Data[1].ServerInfo.Name)
	require.Contains(t, global.Data[1].Tools, "echo")
	require.Len(t, global.Data[1].Resources, 1)
	require.True(t, strings.HasPrefix(*global.Data[2].ToolsError, "MCP startup failed: timed out"), *global.Data[2].ToolsError)
	requireAllGone(t, pidDir)

	mark := c.Mark()
	tid := c.StartThread(nil)
	msgs := c.Since(mark)
	require.Equal(t, "thread/started", firstNotification(msgs), "statuses follow thread/started")
	for _, name := range []string{"broken", "good", "slow"} {
		st := waitStatus(t, c, mark, name, "starting")
		require.Equal(t, tid, *st.ThreadID)
		require.Nil(t, st.Error)
	}
	require.Nil(t, waitStatus(t, c, mark, "good", "ready").Error)
	broken := waitStatus(t, c, mark, "broken", "failed")
	require.Contains(t, mcptest.ExitErrors("broken"), *broken.Error)
	slow := waitStatus(t, c, mark, "slow", "failed")
	require.True(t, strings.HasPrefix(*slow.Error, "MCP client for `slow` timed out after 1 seconds."), *slow.Error)

	var page statusList
	c.Result("mcpServerStatus/list", map[string]any{"threadId": tid, "limit": 1}, &page)
	require.Len(t, page.Data, 1)
	require.Equal(t, "broken", page.Data[0].Name)
	require.Equal(t, "failed", *page.Data[0].RuntimeStatus)
	require.Equal(t, "1", *page.NextCursor)
	c.Result("mcpServerStatus/list", map[string]any{"threadId": tid, "cursor": "1"}, &page)
	require.Len(t, page.Data, 2)
	require.Equal(t, "connected", *page.Data[0].RuntimeStatus)
	require.Nil(t, page.NextCursor)

	var one statusList
	c.Result("mcpServerStatus/list", map[string]any{"serverName": "good", "detail": "toolsAndAuthOnly"}, &one)
	require.Len(t, one.Data, 1)
	require.Equal(t, "good", one.Data[0].Name)
	require.Empty(t, one.Data[0].Resources)
	c.Result("mcpServerStatus/list", map[string]any{"serverName": "nope"}, &one)
	require.Empty(t, one.Data)

	m := c.Request("mcpServerStatus/list", map[string]any{"threadId": "not-a-uuid"})
	require.NotNil(t, m.Error)
}

func firstNotification(msgs []apptest.Message) string {
	for _, m := range msgs {
		if m.IsNotification() {
			return m.Method
		}
	}
	return ""
}

func TestMCPRequiredServerFailsThreadStart(t *testing.T) {
	pidDir := t.TempDir()
	cfg := mcpServerTOML(t, "good", "", pidDir) + mcpServerTOML(t, "must", "exit", pidDir, "required = true")
	c := apptest.Start(t, apptest.Options{Config: cfg})
	c.Initialize(false)
	m := c.Request("thread/start", map[string]any{"cwd": c.Work})
	require.NotNil(t, m.Error)
	require.Equal(t, -32603, m.Error.Code)
	require.Contains(t, m.Error.Message, "required MCP servers failed to initialize: must: MCP client for `must` failed to start")
	requireAllGone(t, pidDir)
	var loaded struct{ Data []string }
	c.Result("thread/loaded/list", map[string]any{}, &loaded)
	require.Empty(t, loaded.Data)
}

func TestMCPRequiredServerReadyAllowsThreadStart(t *testing.T) {
	pidDir := t.TempDir()
	c := apptest.Start(t, apptest.Options{Config: mcpServerTOML(t, "good", "", pidDir, "required = true")})
	c.Initialize(false)
	mark := c.Mark()
	c.StartThread(nil)
	waitStatus(t, c, mark, "good", "ready")
}

// outputOf returns the function_call_output of callID in the model request bodies, as JSON text.
func outputOf(t *testing.T, mm *mockmodel.Server, callID string) string {
	t.Helper()
	for _, r := range mm.ResponseRequests() {
		for _, it := range r.Body["input"].([]any) {
			m := it.(map[string]any)
			if m["type"] == "function_call_output" && m["call_id"] == callID {
				if s, ok := m["output"].(string); ok {
					return s
				}
				return string(mustJSONMCP(t, m["output"]))
			}
		}
	}
	t.Fatalf("no output for %s", callID)
	return ""
}

func mustJSONMCP(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

type mcpItem struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Server     string          `json:"server"`
	Tool       string          `json:"tool"`
	Status     string          `json:"status"`
	Arguments  json.RawMessage `json:"arguments"`
	Result     *struct{ Content []map[string]any }
	Error      *struct{ Message string }
	DurationMs *int64 `json:"durationMs"`
}

// mcpItems returns the started and completed mcpToolCall items since mark, by call id.
func mcpItems(t *testing.T, c *apptest.Client, mark int) (started, completed map[string]mcpItem) {
	started, completed = map[string]mcpItem{}, map[string]mcpItem{}
	for _, m := range c.Since(mark) {
		if m.Method != "item/started" && m.Method != "item/completed" {
			continue
		}
		var p struct{ Item mcpItem }
		require.NoError(t, json.Unmarshal(m.Params, &p))
		if p.Item.Type != "mcpToolCall" {
			continue
		}
		if m.Method == "item/started" {
			started[p.Item.ID] = p.Item
		} else {
			completed[p.Item.ID] = p.Item
		}
	}
	return started, completed
}

// startReadyThread starts a thread and waits until the named servers are ready.
func startReadyThread(t *testing.T, c *apptest.Client, names ...string) string {
	t.Helper()
	mark := c.Mark()
	tid := c.StartThread(nil)
	for _, n := range names {
		waitStatus(t, c, mark, n, "ready")
	}
	return tid
}

func nsCall(server, tool, callID string, args any) mockmodel.Item {
	it := mockmodel.FunctionCall(tool, callID, args)
	it.Namespace = "mcp__" + server
	return it
}

func TestMCPToolsListedAndCalled(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{
		nsCall("good", "echo", "c1", map[string]any{"text": "hi"}),
		mockmodel.FunctionCall("mcp__good__echo", "c2", map[string]any{"text": "flat"}),
		nsCall("good", "progress", "c3", map[string]any{}),
		mockmodel.FunctionCall("list_mcp_resources", "c4", map[string]any{}),
		mockmodel.FunctionCall("read_mcp_resource", "c5", map[string]any{"server": "good", "uri": "file:///hello.txt"}),
		nsCall("nope", "echo", "c6", map[string]any{"text": "hi"}),
	}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, Config: mcpServerTOML(t, "good", "", pidDir) + mcpServerTOML(t, "broken", "exit", pidDir)})
	c.Initialize(false)
	tid := startReadyThread(t, c, "good")
	mark := c.Mark()
	c.StartTurn(tid, "use the tools")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])

	body := mm.ResponseRequests()[0].Body
	var names []string
	var ns map[string]any
	for _, tl := range body["tools"].([]any) {
		m := tl.(map[string]any)
		names = append(names, fmt.Sprint(m["name"]))
		if m["name"] == "mcp__good" {
			ns = m
		}
	}
	require.Contains(t, names, "list_mcp_resources")
	require.Contains(t, names, "list_mcp_resource_templates")
	require.Contains(t, names, "read_mcp_resource")
	require.NotContains(t, names, "mcp__broken", "failed servers are not offered")
	require.NotNil(t, ns)
	require.Equal(t, "namespace", ns["type"])
	require.Equal(t, "Test server good-mcp.", ns["description"])
	require.Contains(t, string(mustJSONMCP(t, ns["tools"])), `"name":"echo"`)

	started, completed := mcpItems(t, c, mark)
	require.Len(t, started, 4, "a flat name is no MCP call")
	require.Len(t, completed, 4)
	for _, id := range []string{"c1", "c3", "c4", "c5"} {
		require.Equal(t, "inProgress", started[id].Status)
		require.Equal(t, "completed", completed[id].Status)
		require.NotNil(t, completed[id].DurationMs)
	}
	require.Equal(t, "good", completed["c1"].Server)
	require.Equal(t, "echo", completed["c1"].Tool)
	require.JSONEq(t, `{"text":"hi"}`, string(completed["c1"].Arguments))
	require.Equal(t, "echo: hi", completed["c1"].Result.Content[0]["text"])
	require.Equal(t, "codex", completed["c4"].Server, "resource functions are items of the pseudo-server codex")
	require.Equal(t, "list_mcp_resources", completed["c4"].Tool)
	require.Equal(t, outputOf(t, mm, "c4"), completed["c4"].Result.Content[0]["text"])
	// The reference (0.169.0) answers a flat `mcp__<server>__<tool>` call, on a model outside the catalogue as
	// on gpt-5.5 and gpt-6-sol, as a call of a tool it does not have; an unknown namespace's call is named by
	// its namespace and name run together.
	require.Equal(t, "unsupported call: mcp__good__echo", outputOf(t, mm, "c2"))
	require.Equal(t, "unsupported call: mcp__nopeecho", outputOf(t, mm, "c6"))
	var raw string
	for _, m := range c.Since(mark) {
		if m.Method == "item/completed" && strings.Contains(string(m.Params), `"id":"c1"`) {
			raw = string(m.Params)
		}
	}
	require.Contains(t, raw, `"readOnlyHint":true`)
	require.Contains(t, raw, `"structuredContent":null`)
	require.Contains(t, raw, `"_meta":null`)

	out := outputOf(t, mm, "c1")
	var items []map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &items))
	require.Len(t, items, 2)
	require.Regexp(t, `^Wall time: \d+\.\d{4} seconds\nOutput:$`, items[0]["text"])
	require.Equal(t, map[string]string{"type": "input_text", "text": "echo: hi"}, items[1])
	require.Contains(t, outputOf(t, mm, "c4"), `"uri":"file:///hello.txt"`)
	require.JSONEq(t, `{"server":"good","uri":"file:///hello.txt","contents":[{"uri":"file:///hello.txt","mimeType":"text/plain","text":"hello"}]}`, outputOf(t, mm, "c5"))

	// item order: started → progress → completed for the progress call
	var order []string
	for _, m := range c.Since(mark) {
		if strings.Contains(string(m.Params), `"c3"`) && m.IsNotification() {
			order = append(order, m.Method)
		}
	}
	require.Equal(t, []string{"item/started", "item/mcpToolCall/progress", "item/completed"}, order)
}

func TestMCPCrashAndToolTimeout(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("crashy", "crash", "c1", map[string]any{}), nsCall("slowpoke", "hang", "c2", map[string]any{})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("still here", 1)}})
	cfg := mcpServerTOML(t, "crashy", "", pidDir) + mcpServerTOML(t, "slowpoke", "", pidDir, "tool_timeout_sec = 1")
	c := apptest.Start(t, apptest.Options{Model: mm, Config: cfg})
	c.Initialize(false)
	tid := startReadyThread(t, c, "crashy", "slowpoke")
	mark := c.Mark()
	c.StartTurn(tid, "go")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"], "the turn goes on after failed MCP calls")
	_, completed := mcpItems(t, c, mark)
	require.Equal(t, "failed", completed["c1"].Status)
	require.Contains(t, completed["c1"].Error.Message, "tool call failed for `crashy/crash`")
	require.Equal(t, "failed", completed["c2"].Status)
	require.Equal(t, "tool call failed for `slowpoke/hang`\n\nCaused by:\n    timed out awaiting tools/call after 1000ms", completed["c2"].Error.Message)
	require.Contains(t, outputOf(t, mm, "c2"), "tool call error: tool call failed for `slowpoke/hang`")
	require.Len(t, mm.ResponseRequests(), 2)
}

// elicitationAnswerer answers MCP approval questions with approval and server elicitations with
// server; nil leaves them unanswered.
func elicitationAnswerer(approval, server func(params map[string]any) any) func(m apptest.Message) (any, int, string, bool) {
	return func(m apptest.Message) (any, int, string, bool) {
		if m.Method != "mcpServer/elicitation/request" {
			return nil, 0, "", false
		}
		var p map[string]any
		_ = json.Unmarshal(m.Params, &p)
		meta, _ := p["_meta"].(map[string]any)
		f := server
		if meta != nil && meta["codex_approval_kind"] == "mcp_tool_call" {
			f = approval
		}
		if f == nil {
			return nil, 0, "", false
		}
		res := f(p)
		if code, ok := res.(int); ok {
			return nil, code, "refused", true
		}
		return res, 0, "", true
	}
}

func TestMCPApprovalAcceptForSessionAndDecline(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "add", "c1", map[string]any{"a": 1, "b": 2})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "add", "c2", map[string]any{"a": 3, "b": 4})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "echo", "c3", map[string]any{"text": "ro"})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ApprovalPolicy: "on-request", Config: mcpServerTOML(t, "good", "", pidDir)})
	var asked atomic.Int32
	var first atomic.Value
	c.SetAnswerer(elicitationAnswerer(func(p map[string]any) any {
		if asked.Add(1) == 1 {
			first.Store(p)
		}
		return map[string]any{"action": "accept", "_meta": map[string]any{"persist": "session"}}
	}, nil))
	c.Initialize(false)
	tid := startReadyThread(t, c, "good")
	mark := c.Mark()
	turnID := c.StartTurn(tid, "add")
	c.WaitTurnCompleted()
	require.Equal(t, int32(1), asked.Load(), "persist session: not asked twice; read-only tools never")
	p := first.Load().(map[string]any)
	require.Equal(t, tid, p["threadId"])
	require.Equal(t, turnID, p["turnId"])
	require.Equal(t, "good", p["serverName"])
	require.Equal(t, "form", p["mode"])
	require.Equal(t, `Allow the good MCP server to run tool "add"?`, p["message"])
	require.Equal(t, map[string]any{"type": "object", "properties": map[string]any{}}, p["requestedSchema"])
	meta := p["_meta"].(map[string]any)
	require.Equal(t, "mcp_tool_call", meta["codex_approval_kind"])
	require.Equal(t, []any{"session", "always"}, meta["persist"])
	require.Equal(t, "add", meta["tool_name"])
	require.Equal(t, "Add", meta["tool_title"])
	require.Equal(t, "Add two numbers.", meta["tool_description"])
	require.Equal(t, map[string]any{"a": 1.0, "b": 2.0}, meta["tool_params"])
	require.Equal(t, []any{map[string]any{"name": "a", "value": 1.0, "display_name": "a"}, map[string]any{"name": "b", "value": 2.0, "display_name": "b"}}, meta["tool_params_display"])
	require.Equal(t, map[string]any{"destructiveHint": true, "idempotentHint": false, "readOnlyHint": false}, meta["tool_annotations"], "as the server sent them")
	_, completed := mcpItems(t, c, mark)
	require.Equal(t, "3", completed["c1"].Result.Content[0]["text"])
	require.Equal(t, "7", completed["c2"].Result.Content[0]["text"])

	// Order: item/started, waitingOnApproval, request, resolved, flag cleared, item/completed.
	var order []string
	for _, m := range c.Since(mark) {
		switch {
		case m.IsServerRequest():
			order = append(order, "request")
		case m.Method == "thread/status/changed" && strings.Contains(string(m.Params), "waitingOnApproval"):
			order = append(order, "waiting")
		case m.Method == "serverRequest/resolved", (m.Method == "item/started" || m.Method == "item/completed") && strings.Contains(string(m.Params), `"c1"`):
			order = append(order, m.Method)
		}
	}
	require.Equal(t, []string{"item/started", "waiting", "request", "serverRequest/resolved", "item/completed"}, order)
}

func TestMCPApprovalDeclinedFailedAndNever(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "add", "c1", map[string]any{"a": 1, "b": 2})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "add", "c2", map[string]any{"a": 1, "b": 2})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "add", "c3", map[string]any{"a": 1, "b": 2})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "add", "c3b", map[string]any{"a": 1, "b": 2})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "add", "c4", map[string]any{"a": 1, "b": 2})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ApprovalPolicy: "on-request", Config: mcpServerTOML(t, "good", "", pidDir)})
	var n atomic.Int32
	c.SetAnswerer(elicitationAnswerer(func(map[string]any) any {
		switch n.Add(1) {
		case 1:
			return map[string]any{"action": "decline"}
		case 2:
			return -32000 // a JSON-RPC error answer declines
		case 3:
			return map[string]any{"bogus": true} // undecodable: declines
		}
		return map[string]any{"action": "cancel"}
	}, nil))
	c.Initialize(false)
	tid := startReadyThread(t, c, "good")
	mark := c.Mark()
	c.StartTurn(tid, "add")
	c.WaitTurnCompleted()
	_, completed := mcpItems(t, c, mark)
	for _, id := range []string{"c1", "c2", "c3", "c3b"} {
		text := "user rejected MCP tool call"
		if id == "c3b" {
			text = "user cancelled MCP tool call"
		}
		require.Equal(t, "failed", completed[id].Status, id)
		require.Equal(t, text, completed[id].Error.Message, id)
		require.Equal(t, int64(0), *completed[id].DurationMs, "the server was not called")
		var out []map[string]string
		require.NoError(t, json.Unmarshal([]byte(outputOf(t, mm, id)), &out))
		require.Len(t, out, 2)
		require.Contains(t, out[0]["text"], "Wall time: ")
		require.Equal(t, map[string]string{"type": "input_text", "text": text}, out[1])
	}

	mark = c.Mark()
	c.Result("turn/start", map[string]any{"threadId": tid, "approvalPolicy": "never", "input": []any{map[string]any{"type": "text", "text": "again"}}}, nil)
	c.WaitTurnCompleted()
	_, completed = mcpItems(t, c, mark)
	require.Equal(t, "MCP tool call requires approval, but approval policy is never", completed["c4"].Error.Message)
	require.Equal(t, int32(4), n.Load(), "never does not ask")
}

func TestMCPServerElicitations(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	for i, tool := range []string{"ask", "ask", "ask", "askurl"} {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", tool, fmt.Sprintf("c%d", i+1), map[string]any{})}})
	}
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ApprovalPolicy: "on-request", Config: mcpServerTOML(t, "good", "", pidDir)})
	var reqs []map[string]any
	answers := []any{
		map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}},
		map[string]any{"action": "decline"},
		map[string]any{"action": "cancel"},
		map[string]any{"action": "accept"},
	}
	var n atomic.Int32
	c.SetAnswerer(elicitationAnswerer(nil, func(p map[string]any) any {
		i := n.Add(1) - 1
		reqs = append(reqs, p)
		return answers[i]
	}))
	c.Initialize(false)
	tid := startReadyThread(t, c, "good")
	mark := c.Mark()
	turnID := c.StartTurn(tid, "ask")
	c.WaitTurnCompleted()
	require.Len(t, reqs, 4)
	require.Equal(t, map[string]any{"threadId": tid, "turnId": turnID, "serverName": "good", "mode": "form", "message": "What is your name?",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}},
		"_meta":           nil}, reqs[0])
	require.Equal(t, map[string]any{"threadId": tid, "turnId": turnID, "serverName": "good", "mode": "url", "message": "Open this",
		"url": "https://example.com/x", "elicitationId": "el-1", "_meta": nil}, reqs[3])
	_, completed := mcpItems(t, c, mark)
	require.Contains(t, completed["c1"].Result.Content[0]["text"], `"action":"accept","content":{"name":"Ada"}`)
	require.Contains(t, completed["c2"].Result.Content[0]["text"], `"action":"decline"`)
	require.Contains(t, completed["c3"].Result.Content[0]["text"], `"action":"cancel"`)
	require.Contains(t, completed["c4"].Result.Content[0]["text"], `"action":"accept"`)
	waiting := 0
	for _, m := range c.Since(mark) {
		if m.Method == "thread/status/changed" && strings.Contains(string(m.Params), "waitingOnApproval") {
			waiting++
		}
	}
	require.Equal(t, 4, waiting, "every pending elicitation flags waitingOnApproval")
}

func TestMCPUnansweredElicitationIsBounded(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "ask", "c1", map[string]any{})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	c := apptest.Start(t, apptest.Options{Model: mm, ApprovalPolicy: "on-request", Clock: clock,
		Config: "approval_timeout_ms = 500\n" + mcpServerTOML(t, "good", "", pidDir)})
	c.Initialize(false)
	tid := startReadyThread(t, c, "good")
	mark := c.Mark()
	c.StartTurn(tid, "ask")
	c.WaitServerRequest("mcpServer/elicitation/request") // never answered
	th, ok := c.Srv.Threads().Get(tid)
	require.True(t, ok)
	require.True(t, th.Controller().Paused(), "a pending elicitation holds the thread's deadlines")
	clock.Advance(500 * time.Millisecond) // exactly the approval timeout: no other deadline is charged
	turn := c.WaitTurnCompleted()
	require.False(t, th.Controller().Paused())
	require.Equal(t, "completed", turn["status"])
	_, completed := mcpItems(t, c, mark)
	require.Contains(t, completed["c1"].Result.Content[0]["text"], `"action":"decline"`)
	var resolved bool
	for _, m := range c.Since(mark) {
		resolved = resolved || m.Method == "serverRequest/resolved"
	}
	require.True(t, resolved)
}

func TestMCPElicitationDoesNotCountTowardToolTimeout(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "ask", "c1", map[string]any{})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	// The tool's budget runs on a fake clock: only the test's Advance charges it, so the round trips
	// around the question cost nothing however loaded the machine is.
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	c := apptest.Start(t, apptest.Options{Model: mm, ApprovalPolicy: "on-request", Clock: clock,
		Config: mcpServerTOML(t, "good", "", pidDir, "tool_timeout_sec = 1")})
	c.Initialize(false)
	tid := startReadyThread(t, c, "good")
	mark := c.Mark()
	c.StartTurn(tid, "ask")
	req := c.WaitServerRequest("mcpServer/elicitation/request")
	clock.Advance(time.Hour) // the user thinks for an hour; the tool's budget is 1 s
	c.Respond(req.ID, map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}})
	c.WaitTurnCompleted()
	_, completed := mcpItems(t, c, mark)
	require.Equal(t, "completed", completed["c1"].Status, "%+v", completed["c1"].Error)
	require.Contains(t, completed["c1"].Result.Content[0]["text"], "Ada")
}

func TestMCPNoProcessOutlivesThreadOrServer(t *testing.T) {
	pidDir := t.TempDir()
	c := apptest.Start(t, apptest.Options{Config: mcpServerTOML(t, "a", "", pidDir) + mcpServerTOML(t, "b", "noinit", pidDir, "startup_timeout_sec = 60")})
	c.Initialize(false)
	mark := c.Mark()
	tid := c.StartThread(nil)
	waitStatus(t, c, mark, "a", "ready")
	require.Eventually(t, func() bool { return len(pids(t, pidDir)) == 2 }, time.Minute, 20*time.Millisecond)
	for _, pid := range pids(t, pidDir) {
		require.True(t, alive(pid))
	}
	require.True(t, c.Srv.Threads().Unload(tid))
	requireAllGone(t, pidDir)
	waitStatus(t, c, mark, "b", "cancelled")

	// A second thread's servers die with the server.
	pidDir2 := t.TempDir()
	c2 := apptest.Start(t, apptest.Options{Config: mcpServerTOML(t, "a", "", pidDir2)})
	c2.Initialize(false)
	startReadyThread(t, c2, "a")
	require.Len(t, pids(t, pidDir2), 1)
	require.True(t, alive(pids(t, pidDir2)[0]))
	c2.Close()
	requireAllGone(t, pidDir2)
}

func TestMCPReloadRestartsThreadServers(t *testing.T) {
	pidDir := t.TempDir()
	c := apptest.Start(t, apptest.Options{Config: mcpServerTOML(t, "a", "", pidDir)})
	c.Initialize(false)
	startReadyThread(t, c, "a")
	before := pids(t, pidDir)
	require.Len(t, before, 1)
	mark := c.Mark()
	c.Result("config/mcpServer/reload", nil, nil)
	waitStatus(t, c, mark, "a", "starting")
	waitStatus(t, c, mark, "a", "ready")
	require.Len(t, pids(t, pidDir), 2)
	require.False(t, alive(before[0]), "the old server was stopped")
}

func TestMCPDirectToolCallAndResourceRead(t *testing.T) {
	pidDir := t.TempDir()
	c := apptest.Start(t, apptest.Options{Config: mcpServerTOML(t, "good", "", pidDir)})
	c.Initialize(false)
	tid := startReadyThread(t, c, "good")
	var res struct {
		Content []map[string]any `json:"content"`
		IsError *bool            `json:"isError"`
	}
	c.Result("mcpServer/tool/call", map[string]any{"threadId": tid, "server": "good", "tool": "echo", "arguments": map[string]any{"text": "direct"}}, &res)
	require.Equal(t, "echo: direct", res.Content[0]["text"])
	require.False(t, *res.IsError)

	m := c.Request("mcpServer/tool/call", map[string]any{"threadId": tid, "server": "nope", "tool": "echo"})
	require.NotNil(t, m.Error)
	require.Equal(t, -32603, m.Error.Code)
	require.Equal(t, "unknown MCP server 'nope'", m.Error.Message)

	var rr struct {
		Contents []map[string]any `json:"contents"`
	}
	c.Result("mcpServer/resource/read", map[string]any{"threadId": tid, "server": "good", "uri": "file:///hello.txt"}, &rr)
	require.Equal(t, "hello", rr.Contents[0]["text"])
	c.Result("mcpServer/resource/read", map[string]any{"server": "good", "uri": "file:///hello.txt"}, &rr)
	require.Equal(t, "hello", rr.Contents[0]["text"])
	m = c.Request("mcpServer/resource/read", map[string]any{"server": "missing", "uri": "x"})
	require.NotNil(t, m.Error)
	m = c.Request("mcpServer/resource/read", map[string]any{"threadId": tid, "server": "good", "uri": "file:///missing.txt"})
	require.NotNil(t, m.Error)
	require.Equal(t, -32602, m.Error.Code, "the MCP server's own error passes through")
	require.Equal(t, "Resource not found", m.Error.Message)
}

func TestMCPStreamableHTTPServer(t *testing.T) {
	srv := mcptest.NewServer("web-mcp", "")
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	require.True(t, strings.HasPrefix(ts.URL, "http://127.0.0.1:"))
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("web", "echo", "c1", map[string]any{"text": "over http"})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, Config: fmt.Sprintf("[mcp_servers.web]\nurl = %q\n", ts.URL)})
	c.Initialize(false)
	tid := startReadyThread(t, c, "web")
	mark := c.Mark()
	c.StartTurn(tid, "http")
	c.WaitTurnCompleted()
	_, completed := mcpItems(t, c, mark)
	require.Equal(t, "echo: over http", completed["c1"].Result.Content[0]["text"])
	var list statusList
	c.Result("mcpServerStatus/list", map[string]any{"threadId": tid}, &list)
	require.Len(t, list.Data, 1)
	require.Equal(t, "connected", *list.Data[0].RuntimeStatus)
}

func pauseState(t *testing.T, c *apptest.Client, tid string) string {
	t.Helper()
	var res struct {
		Content []map[string]any `json:"content"`
	}
	c.Result("mcpServer/tool/call", map[string]any{"threadId": tid, "server": "p", "tool": "pausestate"}, &res)
	return fmt.Sprint(res.Content[0]["text"])
}

func TestMCPUnansweredApprovalIsBounded(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "add", "c1", map[string]any{"a": 1, "b": 2})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	c := apptest.Start(t, apptest.Options{Model: mm, ApprovalPolicy: "on-request", Clock: clock,
		Config: "approval_timeout_ms = 300\n" + mcpServerTOML(t, "good", "", pidDir)})
	c.Initialize(false)
	tid := startReadyThread(t, c, "good")
	mark := c.Mark()
	c.StartTurn(tid, "add")
	c.WaitServerRequest("mcpServer/elicitation/request") // never answered
	th, _ := c.Srv.Threads().Get(tid)
	require.True(t, th.Controller().Paused(), "a pending approval holds the thread's deadlines")
	clock.Advance(300 * time.Millisecond)
	c.WaitTurnCompleted()
	require.False(t, th.Controller().Paused())
	_, completed := mcpItems(t, c, mark)
	require.Equal(t, "user rejected MCP tool call", completed["c1"].Error.Message)
}

// "Always allow" on an MCP tool approval is saved to config.toml (mcp_servers.<server>.tools.<tool>.
// approval_mode = "approve"), so a later thread runs the tool without asking, as the reference.
func TestMCPApprovalAlwaysIsSaved(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "add", "c1", map[string]any{"a": 1, "b": 2})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{nsCall("good", "add", "c2", map[string]any{"a": 3, "b": 4})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("done", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm, ApprovalPolicy: "on-request", Config: mcpServerTOML(t, "good", "", pidDir)})
	var asked atomic.Int32
	c.SetAnswerer(elicitationAnswerer(func(p map[string]any) any {
		asked.Add(1)
		return map[string]any{"action": "accept", "_meta": map[string]any{"persist": "always"}}
	}, nil))
	c.Initialize(false)
	tid := startReadyThread(t, c, "good")
	c.StartTurn(tid, "add")
	c.WaitTurnCompleted()
	require.Equal(t, int32(1), asked.Load())
	b, err := os.ReadFile(filepath.Join(c.Home, "config.toml"))
	require.NoError(t, err)
	require.Contains(t, string(b), "[mcp_servers.good.tools.add]\napproval_mode = \"approve\"\n")

	tid2 := startReadyThread(t, c, "good")
	mark := c.Mark()
	c.StartTurn(tid2, "add again")
	c.WaitTurnCompleted()
	require.Equal(t, int32(1), asked.Load(), "allowed for good: a new thread does not ask")
	_, completed := mcpItems(t, c, mark)
	require.Equal(t, "7", completed["c2"].Result.Content[0]["text"])
}
