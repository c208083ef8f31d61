package mcpconn

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"appserver/stopwatch"
	"appserver/stopwatch/stopwatchtest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// recorder collects hook calls.
type recorder struct {
	mu       sync.Mutex
	statuses []string // "name:status"
	errs     map[string]string
	progress []string
}

func (r *recorder) hooks() Hooks {
	return Hooks{
		OnStatus: func(name, status, errMsg string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.statuses = append(r.statuses, name+":"+status)
			if r.errs == nil {
				r.errs = map[string]string{}
			}
			r.errs[name] = errMsg
		},
		OnProgress: func(callID, message string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.progress = append(r.progress, callID+":"+message)
		},
	}
}

func (r *recorder) snapshot() ([]string, map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := map[string]string{}
	for k, v := range r.errs {
		errs[k] = v
	}
	return append([]string(nil), r.statuses...), errs
}

func startAndWait(t *testing.T, servers []ServerConfig, hooks Hooks) *Manager {
	t.Helper()
	m := Start(context.Background(), servers, hooks)
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, m.WaitReady(ctx))
	return m
}

func TestStartupOutcomes(t *testing.T) {
	rec := &recorder{}
	slow := serverCmd(t, "slow", "noinit", nil)
	slow.StartupTimeout = time.Second
	broken := serverCmd(t, "broken", "exit", nil)
	broken.Required = true
	disabled := serverCmd(t, "off", "good", nil)
	disabled.Enabled = false
	servers := []ServerConfig{
		serverCmd(t, "good", "good", nil),
		{Name: "bad", Command: "/nonexistent/mcp-server", Enabled: true},
		broken, slow, disabled,
	}
	m := startAndWait(t, servers, rec.hooks())
	statuses, errs := rec.snapshot()
	require.Len(t, statuses, 8)
	require.ElementsMatch(t, []string{"good:starting", "bad:starting", "broken:starting", "slow:starting"}, statuses[:4])
	require.ElementsMatch(t, []string{"good:ready", "bad:failed", "broken:failed", "slow:failed"}, statuses[4:])

	require.Empty(t, errs["good"])
	require.True(t, strings.HasPrefix(errs["bad"], "MCP client for `bad` failed to start: MCP startup failed: failed to spawn MCP server: "), errs["bad"])
	brokenErr := requireServerGone(t, errs["broken"])
	require.Equal(t, "MCP client for `slow` timed out after 1 seconds. Add or adjust `startup_timeout_sec` in your config.toml:\n[mcp_servers.slow]\nstartup_timeout_sec = XX", errs["slow"])

	require.EqualError(t, m.RequiredFailure(), "required MCP servers failed to initialize: broken: "+errs["broken"])

	st := m.Statuses(context.Background())
	require.Len(t, st, 4)
	names := []string{st[0].Name, st[1].Name, st[2].Name, st[3].Name}
	require.Equal(t, []string{"bad", "broken", "good", "slow"}, names)

	b, err := json.Marshal(st[1])
	require.NoError(t, err)
	toolsErr, err := json.Marshal("MCP startup failed: " + brokenErr)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"broken","runtimeStatus":null,"pluginId":null,"httpOrigin":null,"serverInfo":null,"serverCapabilities":null,"toolListMeta":null,"tools":{},"toolsError":`+string(toolsErr)+`,"resources":[],"resourceTemplates":[],"authStatus":"unsupported"}`, string(b))
	require.Equal(t, "failed", st[1].ConnectionStatus)

	good := st[2]
	require.Equal(t, "connected", good.ConnectionStatus)
	require.Nil(t, good.ToolsError)
	require.JSONEq(t, `{"name":"test-mcp","title":null,"version":"0.1.0","description":null,"icons":null,"websiteUrl":null}`, string(good.ServerInfo))
	require.Contains(t, string(good.ServerCapabilities), `"tools"`)
	require.Contains(t, good.Tools, "echo")
	require.JSONEq(t, `{"name":"echo","title":"Echo","description":"Echo the text.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},"annotations":{"idempotentHint":false,"readOnlyHint":true}}`, string(good.Tools["echo"])) // verbatim: the Go SDK server sends idempotentHint
	require.Len(t, good.Resources, 1)
	require.Contains(t, string(good.Resources[0]), "file:///hello.txt")
	require.Len(t, good.ResourceTemplates, 1)
	require.True(t, strings.HasPrefix(*st[3].ToolsError, "MCP startup failed: timed out"), *st[3].ToolsError)
}

// requireServerGone checks that errMsg is the startup failure of a stdio server that exited before
// answering initialize, and returns the handshake part. Two wordings are right, as in the reference:
// which one depends on whether the server had closed its stdin before the initialize request was
// written (EPIPE, see TestHandshakeServerGone) or only before it answered (EOF).
func requireServerGone(t *testing.T, errMsg string) string {
	t.Helper()
	const prefix = "MCP client for `broken` failed to start: MCP startup failed: "
	require.True(t, strings.HasPrefix(errMsg, prefix), errMsg)
	require.Contains(t, []string{handshakeClosed, handshakeEPIPE}, strings.TrimPrefix(errMsg, prefix))
	return strings.TrimPrefix(errMsg, prefix)
}

// TestHandshakeServerGone: over real pipes, a server that goes away during the handshake gets the
// reference's wording for that moment (not Go's "write |1: broken pipe"): its stdin closed before the
// initialize request or the initialized notification is a broken pipe "when send" that message, its
// stdout closed before an answer is "connection closed" (initialize) or "Transport closed" (tools/list).
// A server's own error stays its own.
func TestHandshakeServerGone(t *testing.T) {
	const epipe = "Send message error Transport [codex_rmcp_client::tool_list_changes::ToolListChanges<codex_rmcp_client::ordered_byte_transport::OrderedByteTransport<codex_rmcp_client::stdio_server_launcher::StdioServerTransport>>] error: Broken pipe (os error 32), when send "
	for _, tc := range []struct {
		name  string
		stage string // what the server does: "stdin closed", "stdout closed" or "answer, stdin closed"
		want  string
	}{
		{"stdin closed before the request", "stdin closed",
			"handshaking with MCP server failed: " + epipe + "initialize request: " + epipe + "initialize request"},
		{"stdout closed after the request", "stdout closed",
			"handshaking with MCP server failed: connection closed: initialize response: connection closed: initialize response"},
		{"stdin closed before the initialized notification", "answer, stdin closed",
			"handshaking with MCP server failed: " + epipe + "initialized notification: " + epipe + "initialized notification"},
		{"stdout closed after tools/list", "answer, read tools/list, stdout closed", "Transport closed"},
		{"tools/list refused", "answer, refuse tools/list", "failed to list tools: calling \"tools/list\": channel closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inR, inW, err := os.Pipe()
			require.NoError(t, err)
			outR, outW, err := os.Pipe()
			require.NoError(t, err)
			defer inW.Close()
			defer outR.Close()
			switch tc.stage {
			case "stdin closed":
				require.NoError(t, inR.Close()) // no reader left: the write fails with EPIPE
				defer outW.Close()              // and stdout stays open: no EOF races it
			case "stdout closed":
				defer inR.Close() // the request fits in the pipe
				require.NoError(t, outW.Close())
			default:
				defer outW.Close()
				defer inR.Close()
				go func() {
					in := bufio.NewReader(inR)
					read := func() (id string) {
						line, err := in.ReadBytes('\n')
						var req struct{ ID json.RawMessage }
						if err == nil && json.Unmarshal(line, &req) == nil {
							id = string(req.ID)
						}
						return id
					}
					id := read()
					if tc.stage == "answer, stdin closed" {
						_ = inR.Close() // before the answer: the initialized notification gets EPIPE
					}
					_, _ = outW.Write([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1"}}}` + "\n"))
					if tc.stage == "answer, stdin closed" {
						return
					}
					read() // notifications/initialized
					id = read()
					if tc.stage == "answer, refuse tools/list" {
						_, _ = outW.Write([]byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32000,"message":"channel closed"}}` + "\n"))
						return
					}
					_ = outW.Close()
				}()
			}
			s := &server{cfg: ServerConfig{Name: "gone"}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sess, _, err := s.handshake(ctx, s.newClient(), &sniffTransport{inner: &mcp.IOTransport{Reader: outR, Writer: inW}, raw: newRawCapture()}, true)
			if sess != nil {
				defer sess.Close()
			}
			require.EqualError(t, err, tc.want)
		})
	}
	// tools/list that cannot be written (staged: over pipes it would race the initialized notification).
	unwritable := fmt.Errorf("calling %q: %w", "tools/list", &os.PathError{Op: "write", Path: "|1", Err: syscall.EPIPE})
	require.EqualError(t, listToolsError(unwritable, true), "Transport send error: Transport [codex_rmcp_client::tool_list_changes::ToolListChanges<codex_rmcp_client::ordered_byte_transport::OrderedByteTransport<codex_rmcp_client::stdio_server_launcher::StdioServerTransport>>] error: Broken pipe (os error 32)")
	require.EqualError(t, listToolsError(unwritable, false), `failed to list tools: calling "tools/list": write |1: broken pipe`, "only stdio is worded as the reference's stdio transport")
}

func TestNoServers(t *testing.T) {
	m := startAndWait(t, nil, Hooks{})
	require.Nil(t, m.ModelTools())
	require.NoError(t, m.RequiredFailure())
	require.Empty(t, m.Statuses(context.Background()))
	require.NoError(t, m.SetPaused(context.Background(), true))
	_, err := m.CallTool(context.Background(), nil, "nope", "echo", nil, nil)
	require.EqualError(t, err, "unknown MCP server `nope`")
}

func TestConfigWithoutTransportFails(t *testing.T) {
	rec := &recorder{}
	startAndWait(t, []ServerConfig{{Name: "empty", Enabled: true}}, rec.hooks())
	_, errs := rec.snapshot()
	require.Equal(t, "MCP client for `empty` failed to start: MCP startup failed: MCP server config has neither `command` nor `url`", errs["empty"])
}

func TestCloseCancelsStartup(t *testing.T) {
	rec := &recorder{}
	read := filepath.Join(t.TempDir(), "read")
	cfg := serverCmd(t, "slow", "noinit", map[string]string{"MCPCONN_READFILE": read})
	cfg.StartupTimeout = time.Minute
	m := Start(context.Background(), []ServerConfig{cfg}, rec.hooks())
	// Close once the server holds the initialize request: the handshake is under way.
	require.Eventually(t, func() bool { _, err := os.Stat(read); return err == nil }, time.Minute, 10*time.Millisecond)
	m.Close()
	statuses, _ := rec.snapshot()
	require.Equal(t, []string{"slow:starting", "slow:cancelled"}, statuses)
	require.Equal(t, "cancelled", m.Statuses(context.Background())[0].ConnectionStatus)
	require.NoError(t, m.RequiredFailure())
}

func TestModelToolsAndResolve(t *testing.T) {
	good := serverCmd(t, "good", "good", nil)
	good.DisabledTools = []string{"crash"}
	filtered := serverCmd(t, "only.echo", "good", map[string]string{"MCPCONN_NOINSTR": "1"})
	filtered.EnabledTools = []string{"echo", "hang"}
	filtered.DisabledTools = []string{"hang"}
	m := startAndWait(t, []ServerConfig{good, filtered, {Name: "bad", Command: "/nonexistent", Enabled: true}}, Hooks{})

	tools := m.ModelTools()
	require.Len(t, tools, 5) // 3 resource functions + 2 namespaces (bad is omitted)
	var names []string
	for _, raw := range tools[:3] {
		var f struct{ Type, Name string }
		require.NoError(t, json.Unmarshal(raw, &f))
		require.Equal(t, "function", f.Type)
		names = append(names, f.Name)
	}
	require.Equal(t, []string{"list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"}, names)

	var ns struct {
		Type, Name, Description string
		Tools                   []struct {
			Type, Name, Description string
			Strict                  *bool
			Parameters              json.RawMessage
		}
	}
	require.NoError(t, json.Unmarshal(tools[3], &ns))
	require.Equal(t, "namespace", ns.Type)
	require.Equal(t, "mcp__good", ns.Name)
	require.Equal(t, "Test server.", ns.Description)
	var toolNames []string
	for _, tl := range ns.Tools {
		toolNames = append(toolNames, tl.Name)
		require.Equal(t, "function", tl.Type)
		require.NotNil(t, tl.Strict)
		require.False(t, *tl.Strict)
	}
	require.Equal(t, []string{"ask", "askurl", "echo", "hang", "meta", "pausestate", "progress", "spawn", "weird_name_with_chars"}, toolNames)
	require.JSONEq(t, `{"type":"object","properties":{"text":{"type":"string"}}}`, string(ns.Tools[2].Parameters))

	require.NoError(t, json.Unmarshal(tools[4], &ns))
	require.Equal(t, "mcp__only_echo", ns.Name)
	require.Equal(t, "Tools in the mcp__only_echo namespace.", ns.Description, "default without server instructions")
	require.Len(t, ns.Tools, 1)
	require.Equal(t, "echo", ns.Tools[0].Name)

	for _, tc := range []struct {
		ns, name, server, tool string
		ok                     bool
	}{
		{"mcp__good", "echo", "good", "echo", true},
		{"mcp__good", "weird_name_with_chars", "good", "weird name.with/chars", true},
		{"", "mcp__good__echo", "", "", false}, // the flat form: "unsupported call" in the reference
		{"", "mcp__only_echo__echo", "", "", false},
		{"mcp__only_echo", "hang", "", "", false}, // disabled
		{"mcp__good", "crash", "", "", false},     // disabled
		{"mcp__bad", "echo", "", "", false},
		{"mcp__good", "nope", "", "", false},
		{"", "echo", "", "", false},
	} {
		server, tool, ok := m.Resolve(tc.ns, tc.name)
		require.Equal(t, tc.ok, ok, "%s/%s", tc.ns, tc.name)
		require.Equal(t, tc.server, server)
		require.Equal(t, tc.tool, tool)
	}
	_, err := m.CallTool(context.Background(), nil, "bad", "echo", nil, nil)
	require.ErrorContains(t, err, "is not ready (failed)")
}

func TestSanitizeName(t *testing.T) {
	long := "mcp__" + strings.Repeat("x", 80)
	for _, tc := range []struct{ in, want string }{
		{"echo", "echo"},
		{"a.b/c d", "a_b_c_d"},
		{"ok-_9Z", "ok-_9Z"},
		{"é", "_"},
		{strings.Repeat("y", 64), strings.Repeat("y", 64)},
	} {
		require.Equal(t, tc.want, sanitizeName(tc.in))
	}
	got := sanitizeName(long)
	require.Len(t, got, 64)
	require.True(t, strings.HasPrefix(got, "mcp__xxxxxxxx"))
	require.NotEqual(t, got, sanitizeName(long+"x"), "hash suffix distinguishes long names")
	require.Equal(t, "mcp__a_b", NamespaceName("a.b"))
}

func TestCallToolAndFormat(t *testing.T) {
	rec := &recorder{}
	m := startAndWait(t, []ServerConfig{serverCmd(t, "good", "good", nil)}, rec.hooks())
	ctx := context.Background()
	ctl := stopwatch.NewController()

	res, err := m.CallTool(ctx, ctl, "good", "echo", json.RawMessage(`{"text":"hi"}`), map[string]any{"callId": "call_1"})
	require.NoError(t, err)
	require.JSONEq(t, `[{"type":"text","text":"echo: hi"}]`, string(res.Content))
	require.False(t, res.IsError)
	require.Nil(t, res.StructuredContent)
	require.Positive(t, res.Duration)
	require.JSONEq(t, `[{"type":"input_text","text":"Wall time: 0.0032 seconds\nOutput:"},{"type":"input_text","text":"echo: hi"}]`,
		string(FormatForModel(res, 3200*time.Microsecond)))
	require.Zero(t, ctl.Len(), "the call's stopwatch is released")

	res, err = m.CallTool(ctx, nil, "good", "meta", nil, map[string]any{"callId": "call_2", "x-codex-turn-metadata": map[string]any{"turn": 1}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.JSONEq(t, `{"ok":true}`, string(res.StructuredContent))
	require.JSONEq(t, `{"m":1}`, string(res.Meta))
	var blocks []struct{ Text string }
	require.NoError(t, json.Unmarshal(res.Content, &blocks))
	var sent map[string]any
	require.NoError(t, json.Unmarshal([]byte(blocks[0].Text), &sent))
	require.Equal(t, "call_2", sent["callId"])
	require.Equal(t, map[string]any{"turn": float64(1)}, sent["x-codex-turn-metadata"])
	require.Contains(t, sent, "progressToken")

	// The server sends its result right after the progress: the progress is still reported first.
	for i := range 20 {
		_, err = m.CallTool(ctx, nil, "good", "progress", json.RawMessage(`{}`), map[string]any{"callId": "call_3"})
		require.NoError(t, err)
		rec.mu.Lock()
		require.Len(t, rec.progress, i+1, "reported before the call ended")
		require.Equal(t, "call_3:half way", rec.progress[i])
		rec.mu.Unlock()
	}

	_, err = m.CallTool(ctx, nil, "good", "echo", json.RawMessage(`{bad json`), nil)
	require.ErrorContains(t, err, "not valid JSON")
	_, err = m.CallTool(ctx, nil, "good", "no_such_tool", nil, nil)
	require.ErrorContains(t, err, "tool call failed for `good/no_such_tool`")
}

func TestFormatForModelBlocks(t *testing.T) {
	res := CallResult{Content: json.RawMessage(`[{"type":"text","text":""},{"type":"image","data":"AAA=","mimeType":"image/png"},{"type":"resource","resource":{"uri":"x:/y","text":"r"}}]`)}
	require.JSONEq(t, `[{"type":"input_text","text":"Wall time: 1.5000 seconds\nOutput:"},{"type":"input_text","text":""},{"type":"input_image","image_url":"data:image/png;base64,AAA="},{"type":"input_text","text":"{\"type\":\"resource\",\"resource\":{\"uri\":\"x:/y\",\"text\":\"r\"}}"}]`,
		string(FormatForModel(res, 1500*time.Millisecond)))
	res = CallResult{Content: json.RawMessage(`[]`), StructuredContent: json.RawMessage(`{"a":1}`)}
	require.JSONEq(t, `[{"type":"input_text","text":"Wall time: 0.0000 seconds\nOutput:"},{"type":"input_text","text":"{\"a\":1}"}]`, string(FormatForModel(res, 0)))
}

func TestCrashMidCall(t *testing.T) {
	m := startAndWait(t, []ServerConfig{serverCmd(t, "good", "good", nil)}, Hooks{})
	_, err := m.CallTool(context.Background(), nil, "good", "crash", nil, nil)
	require.Error(t, err)
	require.ErrorContains(t, err, "tool call failed for `good/crash`")
	require.NotErrorIs(t, err, ErrToolTimeout)
	require.Eventually(t, func() bool { return m.Statuses(context.Background())[0].ConnectionStatus == "failed" }, time.Minute, 20*time.Millisecond)
	_, err = m.CallTool(context.Background(), nil, "good", "echo", nil, nil)
	require.EqualError(t, err, "MCP server `good` is no longer running")
	require.Empty(t, m.NamespaceTools(), "a dead server is no longer offered to the model")
}

// callStopwatch returns the tool-timeout stopwatch of server's single running call, or nil.
func callStopwatch(m *Manager, server string) *stopwatch.Stopwatch {
	s := m.byName[server]
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sw := range s.calls {
		return sw
	}
	return nil
}

// TestToolTimeout runs the tool timeout on a fake clock: the budget is charged only when the test
// advances it, so no amount of load can expire or spare it.
func TestToolTimeout(t *testing.T) {
	cfg := serverCmd(t, "good", "good", nil)
	cfg.ToolTimeout = 500 * time.Millisecond
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	m := startAndWait(t, []ServerConfig{cfg}, Hooks{Clock: clock})
	hang := func(ctx context.Context, ctl *stopwatch.Controller) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := m.CallTool(ctx, ctl, "good", "hang", nil, nil)
			done <- err
		}()
		return done
	}
	wait := func(done <-chan error) error {
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			t.Fatal("the call did not end")
			return nil
		}
	}
	armed := func() bool { return clock.Pending() == 1 }

	done := hang(context.Background(), nil)
	require.Eventually(t, armed, time.Minute, time.Millisecond)
	clock.Advance(499 * time.Millisecond)
	require.False(t, callStopwatch(m, "good").Expired())
	clock.Advance(time.Millisecond)
	err := wait(done)
	require.ErrorIs(t, err, ErrToolTimeout)
	require.EqualError(t, err, "tool call failed for `good/hang`\n\nCaused by:\n    timed out awaiting tools/call after 500ms")
	require.JSONEq(t, `[{"type":"input_text","text":"Wall time: 0.5100 seconds\nOutput:"},{"type":"input_text","text":"tool call error: tool call failed for `+"`good/hang`"+`\n\nCaused by:\n    timed out awaiting tools/call after 500ms"}]`,
		string(FormatErrorForModel(err, 510*time.Millisecond)))
	var te *TimeoutError
	require.True(t, errors.As(err, &te))
	require.Equal(t, 500*time.Millisecond, te.Timeout)

	// A paused thread controller freezes the timeout.
	ctl := stopwatch.NewController()
	ctl.SetPaused(true)
	done = hang(context.Background(), ctl)
	require.Eventually(t, func() bool { return ctl.Len() == 1 }, time.Minute, time.Millisecond)
	clock.Advance(time.Hour)
	require.False(t, callStopwatch(m, "good").Expired(), "charged while paused")
	ctl.SetPaused(false)
	require.True(t, armed())
	clock.Advance(500 * time.Millisecond)
	require.ErrorIs(t, wait(done), ErrToolTimeout)

	// The caller's ctx still cancels (the budget is never advanced: only the cancel can end the call).
	ctx, cancel := context.WithCancel(context.Background())
	done = hang(ctx, nil)
	require.Eventually(t, armed, time.Minute, time.Millisecond)
	cancel()
	require.ErrorIs(t, wait(done), context.Canceled)
}

func elicitHooks(f func(ctx context.Context, req ElicitationRequest) (ElicitationResult, error), got *[]ElicitationRequest, mu *sync.Mutex) Hooks {
	return Hooks{Elicit: func(ctx context.Context, req ElicitationRequest) (ElicitationResult, error) {
		mu.Lock()
		*got = append(*got, req)
		mu.Unlock()
		return f(ctx, req)
	}}
}

func TestElicitation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(context.Context, ElicitationRequest) (ElicitationResult, error)
		want  string
	}{
		{"accept", func(context.Context, ElicitationRequest) (ElicitationResult, error) {
			return ElicitationResult{Action: "accept", Content: json.RawMessage(`{"name":"Ada"}`), Meta: json.RawMessage(`{"k":"v"}`)}, nil
		}, `{"_meta":{"k":"v"},"action":"accept","content":{"name":"Ada"}}`},
		{"decline", func(context.Context, ElicitationRequest) (ElicitationResult, error) {
			return ElicitationResult{Action: "decline"}, nil
		}, `{"action":"decline"}`},
		{"cancel", func(context.Context, ElicitationRequest) (ElicitationResult, error) {
			return ElicitationResult{Action: "cancel"}, nil
		}, `{"action":"cancel"}`},
		{"hook error declines", func(context.Context, ElicitationRequest) (ElicitationResult, error) {
			return ElicitationResult{Action: "accept"}, errors.New("client went away")
		}, `{"action":"decline"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []ElicitationRequest
			m := startAndWait(t, []ServerConfig{serverCmd(t, "good", "good", nil)}, elicitHooks(tc.reply, &got, &mu))
			res, err := m.CallTool(context.Background(), nil, "good", "ask", nil, nil)
			require.NoError(t, err)
			var blocks []struct{ Text string }
			require.NoError(t, json.Unmarshal(res.Content, &blocks))
			require.JSONEq(t, tc.want, blocks[0].Text)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, got, 1)
			require.Equal(t, "good", got[0].ServerName)
			require.Equal(t, "form", got[0].Mode)
			require.Equal(t, "What is your name?", got[0].Message)
			require.JSONEq(t, `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`, string(got[0].RequestedSchema))
		})
	}
}

func TestElicitationURLMode(t *testing.T) {
	var mu sync.Mutex
	var got []ElicitationRequest
	m := startAndWait(t, []ServerConfig{serverCmd(t, "good", "good", nil)}, elicitHooks(func(context.Context, ElicitationRequest) (ElicitationResult, error) {
		return ElicitationResult{Action: "accept"}, nil
	}, &got, &mu))
	res, err := m.CallTool(context.Background(), nil, "good", "askurl", nil, nil)
	require.NoError(t, err)
	require.Contains(t, string(res.Content), `\"action\":\"accept\"`)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 1)
	require.Equal(t, ElicitationRequest{ServerName: "good", Message: "Open this", Mode: "url", URL: "https://example.com/x", ElicitationID: "el-1"}, got[0])
}

func TestElicitationBlockedHookEndsOnClose(t *testing.T) {
	entered := make(chan struct{})
	hookErr := make(chan error, 1)
	m := Start(context.Background(), []ServerConfig{serverCmd(t, "good", "good", nil)}, Hooks{
		Elicit: func(ctx context.Context, _ ElicitationRequest) (ElicitationResult, error) {
			close(entered)
			<-ctx.Done()
			hookErr <- ctx.Err()
			return ElicitationResult{}, ctx.Err()
		}})
	require.NoError(t, m.WaitReady(context.Background()))
	callErr := make(chan error, 1)
	go func() {
		_, err := m.CallTool(context.Background(), nil, "good", "ask", nil, nil)
		callErr <- err
	}()
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("hook not called")
	}
	closed := make(chan struct{})
	go func() { m.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close blocked on a pending elicitation")
	}
	require.ErrorIs(t, <-hookErr, context.Canceled)
	select {
	case <-callErr: // the call ends with whatever the closed connection yields
	case <-time.After(20 * time.Second):
		t.Fatal("call did not end after Close")
	}
}

// TestElicitationPausesToolTimeout: a whole hour (on a fake clock) passes while the user answers an
// elicitation, yet the call's one-second budget is not used up.
func TestElicitationPausesToolTimeout(t *testing.T) {
	cfg := serverCmd(t, "good", "good", nil)
	cfg.ToolTimeout = time.Second
	clock := stopwatchtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	m := startAndWait(t, []ServerConfig{cfg}, Hooks{Clock: clock, Elicit: func(context.Context, ElicitationRequest) (ElicitationResult, error) {
		clock.Advance(time.Hour)
		return ElicitationResult{Action: "accept", Content: json.RawMessage(`{"name":"Ada"}`)}, nil
	}})
	res, err := m.CallTool(context.Background(), stopwatch.NewController(), "good", "ask", nil, nil)
	require.NoError(t, err)
	require.Contains(t, string(res.Content), "Ada")
}

func TestSetPaused(t *testing.T) {
	m := startAndWait(t, []ServerConfig{
		serverCmd(t, "pausable", "good", map[string]string{"MCPCONN_PAUSE": "ok"}),
		serverCmd(t, "plain", "good", nil),
	}, Hooks{})
	ctx := context.Background()
	state := func(server string) string {
		res, err := m.CallTool(ctx, nil, server, "pausestate", nil, nil)
		require.NoError(t, err)
		var blocks []struct{ Text string }
		require.NoError(t, json.Unmarshal(res.Content, &blocks))
		return blocks[0].Text
	}
	require.Equal(t, "unset", state("pausable"))
	require.NoError(t, m.SetPaused(ctx, true))
	require.Equal(t, "true", state("pausable"))
	require.Equal(t, "unset", state("plain"), "servers without the capability are skipped")
	require.NoError(t, m.SetPaused(ctx, false))
	require.Equal(t, "false", state("pausable"))
}

func TestSetPausedFailure(t *testing.T) {
	m := startAndWait(t, []ServerConfig{
		serverCmd(t, "refuser", "good", map[string]string{"MCPCONN_PAUSE": "fail"}),
		serverCmd(t, "pausable", "good", map[string]string{"MCPCONN_PAUSE": "ok"}),
	}, Hooks{})
	err := m.SetPaused(context.Background(), true)
	require.Error(t, err)
	require.Contains(t, err.Error(), "MCP server `refuser` rejected codex/out-of-band-elicitation-state/update")
	require.Contains(t, err.Error(), "pause update refused")
	require.NotContains(t, err.Error(), "pausable")
}

// groupMembers lists the live (non-zombie) processes whose process group is pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		// fields[0]=state, [1]=ppid, [2]=pgrp
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestCloseKillsProcessGroup(t *testing.T) {
	m := startAndWait(t, []ServerConfig{serverCmd(t, "good", "good", nil)}, Hooks{})
	res, err := m.CallTool(context.Background(), nil, "good", "spawn", nil, nil)
	require.NoError(t, err)
	var blocks []struct{ Text string }
	require.NoError(t, json.Unmarshal(res.Content, &blocks))
	pgid, err := strconv.Atoi(blocks[0].Text)
	require.NoError(t, err)
	require.Len(t, groupMembers(t, pgid), 2, "server and its grandchild share the group")

	start := time.Now()
	m.Close()
	require.Less(t, time.Since(start), 20*time.Second)
	require.Eventually(t, func() bool { return len(groupMembers(t, pgid)) == 0 }, time.Minute, 50*time.Millisecond)
	m.Close() // idempotent
}

func TestResourceFunctions(t *testing.T) {
	m := startAndWait(t, []ServerConfig{serverCmd(t, "a", "good", nil), serverCmd(t, "b", "good", nil)}, Hooks{})
	ctx := context.Background()

	out, err := m.ResourceToolCall(ctx, ToolListResources, nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"resources":[
		{"server":"a","uri":"file:///hello.txt","name":"hello","mimeType":"text/plain"},
		{"server":"b","uri":"file:///hello.txt","name":"hello","mimeType":"text/plain"}]}`, out)

	out, err = m.ResourceToolCall(ctx, ToolListResources, json.RawMessage(`{"server":"a"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"server":"a","resources":[{"server":"a","uri":"file:///hello.txt","name":"hello","mimeType":"text/plain"}]}`, out)
	require.True(t, strings.HasPrefix(out, `{"server":"a","resources":[{"server":"a",`), "member order as the reference: %s", out)

	out, err = m.ResourceToolCall(ctx, ToolListResourceTemplates, json.RawMessage(`{"server":"b"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"server":"b","resourceTemplates":[{"server":"b","uriTemplate":"file:///{name}","name":"files"}]}`, out)

	out, err = m.ResourceToolCall(ctx, ToolReadResource, json.RawMessage(`{"server":"a","uri":"file:///hello.txt"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"server":"a","uri":"file:///hello.txt","contents":[{"uri":"file:///hello.txt","mimeType":"text/plain","text":"hello"}]}`, out)

	for _, tc := range []struct {
		name, args, err string
	}{
		{ToolListResources, `{"cursor":"x"}`, "cursor can only be used when a server is specified"},
		{ToolListResources, `{"server":"zzz"}`, "unknown MCP server `zzz`"},
		{ToolListResources, `[1,2]`, "failed to parse function arguments"},
		{ToolReadResource, `{"server":"a"}`, "read_mcp_resource requires `server` and `uri`"},
		{ToolReadResource, `{"server":"a","uri":"other://missing"}`, "resources/read failed for `a`"},
		{"bogus", `{}`, "unknown MCP resource function `bogus`"},
	} {
		_, err := m.ResourceToolCall(ctx, tc.name, json.RawMessage(tc.args))
		require.ErrorContains(t, err, tc.err, "%s %s", tc.name, tc.args)
	}
	tool, ok := m.Tool("a", "echo")
	require.True(t, ok)
	require.Contains(t, string(tool), `"readOnlyHint":true`)
	_, ok = m.Tool("a", "nope")
	require.False(t, ok)
	_, ok = m.Tool("zzz", "echo")
	require.False(t, ok)
}

func TestCloseKillsStubbornServer(t *testing.T) {
	oldStdin, oldTerm := stdinGrace, termGrace
	stdinGrace, termGrace = 300*time.Millisecond, 300*time.Millisecond
	t.Cleanup(func() { stdinGrace, termGrace = oldStdin, oldTerm })

	m := startAndWait(t, []ServerConfig{serverCmd(t, "stubborn", "stubborn", nil)}, Hooks{})
	res, err := m.CallTool(context.Background(), nil, "stubborn", "spawn", nil, nil)
	require.NoError(t, err)
	var blocks []struct{ Text string }
	require.NoError(t, json.Unmarshal(res.Content, &blocks))
	pgid, err := strconv.Atoi(blocks[0].Text)
	require.NoError(t, err)
	require.NotEmpty(t, groupMembers(t, pgid))
	m.Close()
	require.Eventually(t, func() bool { return len(groupMembers(t, pgid)) == 0 }, time.Minute, 50*time.Millisecond)
}

// TestAwaitProgressEnds: a finished call waits for progress read but not yet handled only until it
// is handled, its ctx ends or the Manager closes.
func TestAwaitProgressEnds(t *testing.T) {
	raw := newRawCapture()
	raw.progress[7] = 1
	waitReturns := func(ctx context.Context, stop <-chan struct{}) <-chan struct{} {
		done := make(chan struct{})
		go func() { raw.awaitProgress(ctx, stop, 7); close(done) }()
		return done
	}
	requireDone := func(done <-chan struct{}) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("awaitProgress did not return")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := waitReturns(ctx, nil)
	cancel()
	requireDone(done)
	stop := make(chan struct{})
	done = waitReturns(context.Background(), stop)
	close(stop)
	requireDone(done)
	done = waitReturns(context.Background(), nil)
	raw.progressHandled(7)
	requireDone(done)
	require.Empty(t, raw.progress)
	raw.progressHandled(7) // a notification that was never counted changes nothing
	require.Empty(t, raw.progress)
	raw.awaitProgress(context.Background(), nil, 8) // nothing pending: returns at once
}
