package mcpconn

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as the MCP servers under test: with MCPCONN_TEST_SERVER set it runs the
// selected behaviour on stdin/stdout instead of the tests.
const serverEnv = "MCPCONN_TEST_SERVER"

func TestMain(m *testing.M) {
	switch os.Getenv(serverEnv) {
	case "":
		os.Exit(m.Run())
	case "good":
		srv := newTestServer(os.Getenv("MCPCONN_PAUSE"))
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, io.EOF) {
			fmt.Fprintln(os.Stderr, "server:", err)
		}
		os.Exit(0)
	case "stubborn": // ignores SIGTERM and outlives its stdin
		signal.Ignore(syscall.SIGTERM)
		_ = newTestServer("").Run(context.Background(), &mcp.StdioTransport{})
		time.Sleep(time.Hour)
	case "noinit": // reads requests, never answers; with MCPCONN_READFILE it creates that file once one arrived
		in := bufio.NewReader(os.Stdin)
		if _, err := in.ReadBytes('\n'); err == nil {
			if f := os.Getenv("MCPCONN_READFILE"); f != "" {
				_ = os.WriteFile(f, nil, 0o644)
			}
		}
		_, _ = io.Copy(io.Discard, in)
		time.Sleep(time.Hour)
	case "exit":
		os.Exit(3)
	}
	os.Exit(2)
}

// serverCmd returns a ServerConfig that runs this test binary as the given server behaviour.
func serverCmd(t *testing.T, name, behaviour string, env map[string]string) ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{serverEnv: behaviour}
	for k, v := range env {
		e[k] = v
	}
	return ServerConfig{Name: name, Command: exe, Env: e, Enabled: true, StartupTimeout: 20 * time.Second, ToolTimeout: 20 * time.Second}
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

var objSchema = map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}

// newTestServer builds the Go SDK server used over stdio and streamable HTTP. pause selects the
// out-of-band elicitation state capability: "" none, "ok" accept updates, "fail" reject them.
func newTestServer(pause string) *mcp.Server {
	opts := &mcp.ServerOptions{Instructions: "Test server.", HasTools: true, HasResources: true}
	if os.Getenv("MCPCONN_NOINSTR") != "" {
		opts.Instructions = ""
	}
	if pause != "" {
		opts.Capabilities = &mcp.ServerCapabilities{
			Experimental: map[string]any{PauseCapability: map[string]any{"version": "1.0.0"}},
			Tools:        &mcp.ToolCapabilities{ListChanged: true},
			Resources:    &mcp.ResourceCapabilities{},
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test-mcp", Version: "0.1.0"}, opts)
	var pausedState atomic.Value
	pausedState.Store("unset")
	if pause != "" {
		_ = mcp.AddReceivingCustomMethod(srv, pauseMethod, func(_ context.Context, _ *mcp.ServerSession, p *pausedParams) (*emptyResult, error) {
			if pause == "fail" {
				return nil, errors.New("pause update refused")
			}
			pausedState.Store(strconv.FormatBool(p.Paused))
			return &emptyResult{}, nil
		})
	}
	readOnly := true
	srv.AddTool(&mcp.Tool{Name: "echo", Title: "Echo", Description: "Echo the text.", InputSchema: objSchema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return textResult("echo: " + a.Text), nil
		})
	srv.AddTool(&mcp.Tool{Name: "meta", InputSchema: objSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, _ := json.Marshal(req.Params.Meta)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}},
			StructuredContent: map[string]any{"ok": true}, IsError: true, Meta: mcp.Meta{"m": 1}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "ask", Description: "Ask for a name.", InputSchema: objSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}})
		if err != nil {
			return textResult("elicit error: " + err.Error()), nil
		}
		b, _ := json.Marshal(res)
		return textResult(string(b)), nil
	})
	srv.AddTool(&mcp.Tool{Name: "askurl", InputSchema: objSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Open this", URL: "https://example.com/x", ElicitationID: "el-1"})
		if err != nil {
			return textResult("elicit error: " + err.Error()), nil
		}
		b, _ := json.Marshal(res)
		return textResult(string(b)), nil
	})
	srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: objSchema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv.AddTool(&mcp.Tool{Name: "crash", InputSchema: objSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(3)
		return nil, nil
	})
	srv.AddTool(&mcp.Tool{Name: "spawn", InputSchema: objSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			return nil, err
		}
		return textResult(strconv.Itoa(os.Getpid())), nil
	})
	srv.AddTool(&mcp.Tool{Name: "progress", InputSchema: objSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// The result follows at once: the client must still report the progress before the call ends.
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Message: "half way", Progress: 1, Total: 2})
		return textResult("done"), nil
	})
	srv.AddTool(&mcp.Tool{Name: "pausestate", InputSchema: objSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(pausedState.Load().(string)), nil
	})
	srv.AddTool(&mcp.Tool{Name: "weird name.with/chars", InputSchema: objSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("weird"), nil
	})
	srv.AddResource(&mcp.Resource{URI: "file:///hello.txt", Name: "hello", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello"}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///{name}", Name: "files"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "t"}}}, nil
		})
	return srv
}
