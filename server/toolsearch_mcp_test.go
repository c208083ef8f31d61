package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// toolsNotice returns the opening `<tools>` note of a request: the part ending the developer message that
// starts with the permissions ("" when none).
func toolsNotice(t *testing.T, body map[string]any) string {
	t.Helper()
	for _, it := range body["input"].([]any) {
		m := it.(map[string]any)
		parts, _ := m["content"].([]any)
		if m["role"] != "developer" || len(parts) < 2 {
			continue
		}
		last, _ := parts[len(parts)-1].(map[string]any)["text"].(string)
		first, _ := parts[0].(map[string]any)["text"].(string)
		if strings.HasPrefix(last, "<tools>") && strings.HasPrefix(first, "<permissions instructions>") {
			return last
		}
	}
	return ""
}

// messageTexts lists the texts of a request's messages as "role: text".
func messageTexts(body map[string]any) []string {
	var out []string
	for _, it := range body["input"].([]any) {
		m := it.(map[string]any)
		if m["type"] != "message" {
			continue
		}
		for _, p := range m["content"].([]any) {
			if text, ok := p.(map[string]any)["text"].(string); ok {
				out = append(out, m["role"].(string)+": "+text)
			}
		}
	}
	return out
}

// On a catalogue model the MCP servers' tools are deferred behind tool_search, as the reference does: the
// namespace is not offered (the resource functions are), the <tools> note names it with the server's
// instructions, a search finds its tools and the model calls them by namespace and name.
func TestToolSearchDefersMCPTools(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: toolSearchCall("s1", map[string]any{"query": "echo text"})},
		mockmodel.Response{Items: []mockmodel.Item{nsCall("tiny", "echo", "c1", map[string]any{"text": "hi"})}},
		okReply("done"),
	)
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.5", Config: mcpServerTOML(t, "tiny", "", pidDir)})
	c.Initialize(false)
	tid := startReadyThread(t, c, "tiny")
	mark := c.Mark()
	c.StartTurn(tid, "echo")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)

	names := toolNames(reqs[0].Body)
	require.NotContains(t, names, "mcp__tiny")
	require.Equal(t, []string{"exec_command", "write_stdin", "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"}, names[:5])
	require.Contains(t, names, "tool_search")
	require.Contains(t, toolsNotice(t, reqs[0].Body), "\n- mcp__tiny: Test server tiny-mcp.\n")

	out := searchOutput(t, reqs[1].Body, "s1")
	require.Equal(t, "mcp__tiny.echo", foundTools(t, out)[0])
	require.Equal(t, "Test server tiny-mcp.", out["tools"].([]any)[0].(map[string]any)["description"])

	_, completed := mcpItems(t, c, mark)
	require.Equal(t, "completed", completed["c1"].Status, "%+v", completed["c1"].Error)
	require.Equal(t, "tiny", completed["c1"].Server)
	require.Equal(t, "echo", completed["c1"].Tool)
	require.Contains(t, outputOf(t, mm, "c1"), "echo: hi")
}

// The opening <tools> note names the servers ready when the first turn starts; a server ready later is named
// once, in a developer message of its own before the input of the next turn, as the reference does.
func TestToolsNoticeNamesMCPServerReadyLater(t *testing.T) {
	pidDir := t.TempDir()
	gate := filepath.Join(t.TempDir(), "open")
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("one"), okReply("two"), okReply("three"))
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.5", Config: gatedServerTOML(t, gate, pidDir, "startup_timeout_sec = 600")})
	c.Initialize(false)
	mark := c.Mark()
	tid := c.StartThread(nil)
	c.StartTurn(tid, "first")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	notice := toolsNotice(t, mm.ResponseRequests()[0].Body)
	require.Contains(t, notice, "\n- multi_agent_v1: ")
	require.NotContains(t, notice, "mcp__slow")

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	waitStatus(t, c, mark, "slow", "ready")
	c.StartTurn(tid, "second")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	texts := messageTexts(mm.ResponseRequests()[1].Body)
	added := "developer: <tools>\nMore namespaces with tools to find with tool_search:\n- mcp__slow: Test server slow-mcp.\n</tools>"
	require.Equal(t, []string{added, "user: second"}, texts[len(texts)-2:])

	c.StartTurn(tid, "third")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	texts = messageTexts(mm.ResponseRequests()[2].Body)
	n := 0
	for _, s := range texts {
		if strings.Contains(s, "mcp__slow") {
			n++
		}
	}
	require.Equal(t, 1, n, "the added note is sent once")
}

// A code-mode model is offered no tool_search, but its <tools> note names the MCP servers and a
// tool_search_call finds their tools, as the reference's.
func TestToolSearchFindsMCPToolsInCodeMode(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: toolSearchCall("s1", map[string]any{"query": "echo text"})}, okReply("done"))
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-6.1-sol", Config: mcpServerTOML(t, "tiny", "", pidDir)})
	c.Initialize(false)
	tid := startReadyThread(t, c, "tiny")
	c.StartTurn(tid, "search")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	require.Contains(t, toolsNotice(t, reqs[0].Body), "\n- mcp__tiny: Test server tiny-mcp.\n")
	require.Equal(t, "mcp__tiny.echo", foundTools(t, searchOutput(t, reqs[1].Body, "s1"))[0])
}

// gpt-5.5 gets multi_agent_v1 through tool_search, as the reference: not offered up front, named in the
// <tools> note, found by a search and answered when called.
func TestToolSearchDefersMultiAgentOnGPT55(t *testing.T) {
	mm := mockmodel.New(t)
	const unknown = "01a21014-54f9-7ce1-b105-c25993485af3"
	mm.Enqueue(
		mockmodel.Response{Items: toolSearchCall("s1", map[string]any{"query": "spawn agent"})},
		mockmodel.Response{Items: []mockmodel.Item{{Type: "function_call", Name: "close_agent", Namespace: "multi_agent_v1", CallID: "f1",
			Arguments: map[string]any{"target": unknown}}}},
		okReply("done"),
	)
	c := apptest.Start(t, apptest.Options{Model: mm, ModelID: "gpt-5.5"})
	c.Initialize(true)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "agents")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	require.NotContains(t, toolNames(reqs[0].Body), "multi_agent_v1")
	require.Contains(t, toolNames(reqs[0].Body), "tool_search")
	require.Contains(t, toolsNotice(t, reqs[0].Body), "\n- multi_agent_v1: ")
	found := foundTools(t, searchOutput(t, reqs[1].Body, "s1"))
	require.Equal(t, "multi_agent_v1.spawn_agent", found[0])
	require.Len(t, found, 5)
	require.Contains(t, fnOutput(t, reqs[2].Body, "f1"), "no agent with id "+unknown)
}

// Outside the catalogue the MCP tools are offered up front, in the reference's places: the resource
// functions after the command tools, the servers' namespaces after the sub-agent tools.
func TestMCPToolsTakeTheReferencePlaces(t *testing.T) {
	pidDir := t.TempDir()
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("ok"))
	c := apptest.Start(t, apptest.Options{Model: mm, Config: mcpServerTOML(t, "tiny", "", pidDir)})
	c.Initialize(false)
	tid := startReadyThread(t, c, "tiny")
	c.StartTurn(tid, "go")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	body := mm.ResponseRequests()[0].Body
	names := toolNames(body)
	i := indexOf(names, "write_stdin")
	require.Equal(t, []string{"list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"}, names[i+1:i+4])
	require.Equal(t, "mcp__tiny", names[indexOf(names, "multi_agent_v1")+1])
	require.Empty(t, toolsNotice(t, body))
}
