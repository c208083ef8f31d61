package mcpconn

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// conformanceServer is a copy of the shared harness's tiny stdio MCP server (conformance/mcp_server.py).
const conformanceServer = "testdata/mcp_server.py"

// TestAgainstConformanceServer checks the wire against the reference transcript's server: the
// initialize request, the raw tool and capability echo, and the tool output format.
func TestAgainstConformanceServer(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	require.FileExists(t, conformanceServer)
	logPath := filepath.Join(t.TempDir(), "tiny.log")
	rec := &recorder{}
	m := startAndWait(t, []ServerConfig{
		{Name: "tiny", Command: python, Args: []string{conformanceServer, "--log", logPath}, Enabled: true},
		{Name: "broken", Command: python, Args: []string{conformanceServer, "--exit-immediately"}, Enabled: true},
	}, rec.hooks())

	// The failed status is reported by the server's own goroutine; wait for it rather than assume it
	// precedes WaitReady's return.
	var errs map[string]string
	require.Eventually(t, func() bool { _, errs = rec.snapshot(); return errs["broken"] != "" }, time.Minute, 10*time.Millisecond)
	requireServerGone(t, errs["broken"])

	st := m.Statuses(context.Background())
	require.Len(t, st, 2)
	tiny, err := json.Marshal(st[1])
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"tiny","runtimeStatus":null,"pluginId":null,"httpOrigin":null,
		"serverInfo":{"name":"tiny-mcp","title":null,"version":"0.1.0","description":null,"icons":null,"websiteUrl":null},
		"serverCapabilities":{"tools":{"listChanged":false}},"toolListMeta":null,
		"tools":{"add":{"name":"add","title":"Add","description":"Add two numbers.","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]},"annotations":{"readOnlyHint":false,"destructiveHint":true}},
		         "ask_name":{"name":"ask_name","title":"Ask name","description":"Ask the user for their name via MCP elicitation and return it.","inputSchema":{"type":"object","properties":{}}},
		         "echo":{"name":"echo","title":"Echo","description":"Echo the given text back.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"readOnlyHint":true}}},
		"toolsError":null,"resources":[],"resourceTemplates":[],"authStatus":"unsupported"}`, string(tiny))

	tools := m.NamespaceTools()
	require.Len(t, tools, 1)
	require.JSONEq(t, `{"type":"namespace","name":"mcp__tiny","description":"Tiny conformance MCP server.","tools":[
		{"type":"function","name":"add","description":"Add two numbers.","strict":false,"parameters":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}},
		{"type":"function","name":"ask_name","description":"Ask the user for their name via MCP elicitation and return it.","strict":false,"parameters":{"type":"object","properties":{}}},
		{"type":"function","name":"echo","description":"Echo the given text back.","strict":false,"parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}`, string(tools[0]))

	res, err := m.CallTool(context.Background(), nil, "tiny", "echo", json.RawMessage(`{"text":"hello"}`), map[string]any{"callId": "c1"})
	require.NoError(t, err)
	var out []map[string]string
	require.NoError(t, json.Unmarshal(FormatForModel(res, res.Duration), &out))
	require.Len(t, out, 2)
	require.Equal(t, map[string]string{"type": "input_text", "text": "echo: hello"}, out[1])
	m.Close()

	// The initialize request as the server saw it.
	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var init json.RawMessage
	for sc.Scan() {
		var e struct {
			Dir string
			Msg struct {
				Method string
				Params json.RawMessage
			}
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Dir == "in" && e.Msg.Method == "initialize" {
			init = e.Msg.Params
		}
	}
	require.JSONEq(t, `{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"codex-mcp-client","title":"Codex","version":"0.169.0"}}`, string(init))
}
