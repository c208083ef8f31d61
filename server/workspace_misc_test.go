package server_test

import (
	"archive/zip"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	protocol "appserver/protocol/v2"
)

func TestWorkspaceMiscMethods(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	tid := c.StartThread(nil)

	var diag protocol.ServerDiagnosticsResponse
	c.Result("server/diagnostics", map[string]any{}, &diag)
	require.NotZero(t, diag.Process.ID)
	require.NotNil(t, diag.Process.ResidentMemoryBytes)
	require.Nil(t, diag.Process.PhysicalFootprintBytes)
	require.Equal(t, []protocol.ServerDiagnosticsGauge{{Name: "app.requests.in_flight", Value: 1}, {Name: "core.threads.live", Value: 1}}, diag.Gauges)

	require.JSONEq(t, `{"v2ConsolidatedThreads":0,"v2Ready":true}`, string(c.Request("memory/status", map[string]any{}).Result))
	require.JSONEq(t, `{}`, string(c.Request("memory/reset", nil).Result))
	require.JSONEq(t, `{"summary":null}`, string(c.Request("thread/memory/read", map[string]any{"threadId": tid}).Result))
	require.JSONEq(t, `{}`, string(c.Request("thread/memoryMode/set", map[string]any{"threadId": tid, "mode": "disabled"}).Result))
	requireError(t, c.Request("thread/memory/read", map[string]any{"threadId": "00000000-0000-0000-0000-000000000000"}), -32600,
		"thread not found: 00000000-0000-0000-0000-000000000000")

	requireError(t, c.Request("feedback/save", map[string]any{"classification": "bug"}), -32600, "Invalid request: missing field `savePath`")
	out := filepath.Join(t.TempDir(), "feedback.zip")
	var fb protocol.FeedbackSaveResponse
	c.Result("feedback/save", map[string]any{"classification": "bug", "savePath": out, "threadId": tid, "reason": "broken", "tags": map[string]string{"k": "v"}}, &fb)
	require.Equal(t, out, string(fb.SavedPath))
	require.Equal(t, tid, fb.ThreadID)
	require.Nil(t, fb.PromptHash)
	zr, err := zip.OpenReader(out)
	require.NoError(t, err)
	defer zr.Close()
	require.Len(t, zr.File, 2)
	rc, err := zr.File[0].Open()
	require.NoError(t, err)
	raw, err := io.ReadAll(rc)
	require.NoError(t, err)
	var report struct {
		Message string            `json:"message"`
		Tags    map[string]string `json:"tags"`
	}
	require.NoError(t, json.Unmarshal(raw, &report))
	require.Equal(t, "[Bug]: Codex session "+tid, report.Message)
	require.Equal(t, map[string]string{"k": "v", "classification": "bug", "cli_version": "0.169.0", "reason": "broken", "session_source": "vscode", "thread_id": tid}, report.Tags)

	c.Result("feedback/save", map[string]any{"classification": "bug", "savePath": out}, &fb)
	require.Regexp(t, `^no-active-thread-[0-9a-f-]{36}$`, fb.ThreadID)
}
