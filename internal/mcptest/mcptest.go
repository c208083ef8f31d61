// Package mcptest is a small MCP server built from the Go SDK for the server's integration tests: it
// runs over stdio (cmd/mcptestserver) or streamable HTTP (NewServer behind an http.Handler).
package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"appserver/mcpconn"
)

var objSchema = map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string", "title": "Text"}}}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// NewServer returns the test server. Tools: echo (read-only), add (not read-only), ask (form
// elicitation), askurl (url elicitation), hang (never answers), crash (exits), progress (one
// progress notification).
// With pause "ok", "fail", "fail-resume" or "hang" it also advertises the out-of-band elicitation
// state capability and accepts its updates (reporting the state through the tool pausestate and, when
// MCPTEST_PAUSEFILE is set, in that file), rejects them, rejects only {paused:false}, or never answers.
func NewServer(name, pause string) *mcp.Server {
	opts := &mcp.ServerOptions{Instructions: "Test server " + name + ".", HasTools: true, HasResources: true}
	if pause != "" {
		opts.Capabilities = &mcp.ServerCapabilities{
			Experimental: map[string]any{mcpconn.PauseCapability: map[string]any{"version": "1.0.0"}},
			Tools:        &mcp.ToolCapabilities{},
			Resources:    &mcp.ResourceCapabilities{},
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "0.1.0"}, opts)
	var state atomic.Value
	state.Store("unset")
	if pause != "" {
		_ = mcp.AddReceivingCustomMethod(srv, mcpconn.PauseCapability+"/update", func(ctx context.Context, _ *mcp.ServerSession, p *pausedParams) (*emptyResult, error) {
			switch {
			case pause == "fail":
				return nil, errors.New("pause update refused")
			case pause == "hang":
				<-ctx.Done()
				return nil, ctx.Err()
			case pause == "fail-resume" && !p.Paused:
				return nil, errors.New("resume update refused")
			}
			state.Store(strconv.FormatBool(p.Paused))
			if f := os.Getenv(EnvPauseFile); f != "" {
				_ = os.WriteFile(f, []byte(strconv.FormatBool(p.Paused)), 0o644)
			}
			return &emptyResult{}, nil
		})
	}
	srv.AddTool(&mcp.Tool{Name: "pausestate", InputSchema: objSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(state.Load().(string)), nil
		})
	srv.AddTool(&mcp.Tool{Name: "echo", Title: "Echo", Description: "Echo the text.", InputSchema: objSchema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return text("echo: " + a.Text), nil
		})
	srv.AddTool(&mcp.Tool{Name: "add", Title: "Add", Description: "Add two numbers.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}},
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ A, B float64 }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return text(strconv.FormatFloat(a.A+a.B, 'f', -1, 64)), nil
		})
	srv.AddTool(&mcp.Tool{Name: "ask", Description: "Ask for a name.", InputSchema: objSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}})
			if err != nil {
				return text("elicit error: " + err.Error()), nil
			}
			b, _ := json.Marshal(res)
			return text(string(b)), nil
		})
	srv.AddTool(&mcp.Tool{Name: "askurl", InputSchema: objSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Open this", URL: "https://example.com/x", ElicitationID: "el-1"})
			if err != nil {
				return text("elicit error: " + err.Error()), nil
			}
			b, _ := json.Marshal(res)
			return text(string(b)), nil
		})
	srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: objSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	srv.AddTool(&mcp.Tool{Name: "crash", InputSchema: objSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	srv.AddTool(&mcp.Tool{Name: "progress", InputSchema: objSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// The result follows at once: the client must still report the progress before the call ends.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Message: "half way", Progress: 1, Total: 2})
			return text("done"), nil
		})
	srv.AddResource(&mcp.Resource{URI: "file:///hello.txt", Name: "hello", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello"}}}, nil
		})
	return srv
}

type pausedParams struct {
	mcp.ParamsBase
	Paused bool `json:"paused"`
}

type emptyResult struct {
	mcp.ResultBase
}

func ptr[T any](v T) *T { return &v }

// Environment of the stdio server: its behaviour and where it records its pid.
const (
	EnvMode   = "MCPTEST_MODE"   // "" (serve), "noinit" (never answers), "exit" (exits at once)
	EnvPidDir = "MCPTEST_PIDDIR" // a file named after the pid is created there
	EnvName   = "MCPTEST_NAME"   // serverInfo.name
	EnvPause  = "MCPTEST_PAUSE"  // "ok", "fail", "fail-resume" or "hang": see NewServer
	// EnvGate names a file the server waits for before it answers anything (a slow startup).
	EnvGate = "MCPTEST_GATE"
	// EnvPauseFile names a file the last accepted pause state is written to ("true"/"false").
	EnvPauseFile = "MCPTEST_PAUSEFILE"
)

// ExitErrors are the two right startup errors of the stdio server named name in mode "exit", as the
// reference words them. Which one it gets depends on timing, in the reference as in ours: the
// initialize write fails with EPIPE when the server had already exited, otherwise reading the
// response sees EOF.
func ExitErrors(name string) []string {
	const epipe = "Send message error Transport [codex_rmcp_client::tool_list_changes::ToolListChanges<codex_rmcp_client::ordered_byte_transport::OrderedByteTransport<codex_rmcp_client::stdio_server_launcher::StdioServerTransport>>] error: Broken pipe (os error 32), when send initialize request"
	prefix := "MCP client for `" + name + "` failed to start: MCP startup failed: handshaking with MCP server failed: "
	return []string{
		prefix + "connection closed: initialize response: connection closed: initialize response",
		prefix + epipe + ": " + epipe,
	}
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary builds cmd/mcptestserver once per test process and returns its path. The binary lives in
// the user cache directory (one file, replaced atomically), so test runs leave nothing behind.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		dir = filepath.Join(dir, "appserver-mcptest")
		if buildErr = os.MkdirAll(dir, 0o755); buildErr != nil {
			return
		}
		tmp := filepath.Join(dir, fmt.Sprintf("mcptestserver.%d", os.Getpid()))
		out, err := exec.Command("go", "build", "-o", tmp, "appserver/internal/mcptest/cmd/mcptestserver").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build mcptestserver: %v\n%s", err, out)
			return
		}
		buildPath = filepath.Join(dir, "mcptestserver")
		buildErr = os.Rename(tmp, buildPath)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}
