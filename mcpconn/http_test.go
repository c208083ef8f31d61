package mcpconn

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

func TestStreamableHTTP(t *testing.T) {
	srv := newTestServer("")
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var rejected atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Static") != "1" || r.Header.Get("X-From-Env") != "envval" {
			rejected.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	require.True(t, strings.HasPrefix(ts.URL, "http://127.0.0.1:"))

	t.Setenv("MCPCONN_TEST_TOKEN", "s3cret")
	t.Setenv("MCPCONN_TEST_HDR", "envval")
	good := ServerConfig{Name: "web", URL: ts.URL, BearerTokenEnvVar: "MCPCONN_TEST_TOKEN", Enabled: true,
		HTTPHeaders: map[string]string{"X-Static": "1"}, EnvHTTPHeaders: map[string]string{"X-From-Env": "MCPCONN_TEST_HDR"}}
	noauth := ServerConfig{Name: "noauth", URL: ts.URL, Enabled: true}
	rec := &recorder{}
	m := startAndWait(t, []ServerConfig{good, noauth}, Hooks{
		OnStatus: rec.hooks().OnStatus,
		Elicit: func(context.Context, ElicitationRequest) (ElicitationResult, error) {
			return ElicitationResult{Action: "accept", Content: json.RawMessage(`{"name":"Bob"}`)}, nil
		}})
	statuses, errs := rec.snapshot()
	require.Contains(t, statuses, "web:ready")
	require.Contains(t, statuses, "noauth:failed")
	require.True(t, strings.HasPrefix(errs["noauth"], "MCP client for `noauth` failed to start: MCP startup failed: handshaking with MCP server failed: "), errs["noauth"])
	require.Positive(t, rejected.Load())

	res, err := m.CallTool(context.Background(), nil, "web", "echo", json.RawMessage(`{"text":"over http"}`), nil)
	require.NoError(t, err)
	require.JSONEq(t, `[{"type":"text","text":"echo: over http"}]`, string(res.Content))

	res, err = m.CallTool(context.Background(), nil, "web", "ask", nil, nil)
	require.NoError(t, err)
	require.Contains(t, string(res.Content), "Bob")

	st := m.Statuses(context.Background())
	require.Equal(t, "web", st[1].Name)
	require.NotNil(t, st[1].HTTPOrigin)
	require.Equal(t, ts.URL, *st[1].HTTPOrigin)
	require.Len(t, st[1].Resources, 1)
	require.JSONEq(t, `{"name":"echo","title":"Echo","description":"Echo the text.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},"annotations":{"readOnlyHint":true}}`, string(st[1].Tools["echo"]))

	raw, err := m.ReadResource(context.Background(), "web", "file:///hello.txt")
	require.NoError(t, err)
	require.JSONEq(t, `{"contents":[{"uri":"file:///hello.txt","mimeType":"text/plain","text":"hello"}]}`, string(raw))
	m.Close()
}
