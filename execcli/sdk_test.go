package execcli_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/mockmodel"
)

// The @openai/codex-sdk test needs node and an installed SDK. It looks for the package in
// $APPSERVER_CODEX_SDK_DIR, else in <user cache>/appserver-codex-sdk; with APPSERVER_CODEX_SDK_INSTALL=1
// it installs it there from the npm registry first (`npm install --omit=optional @openai/codex-sdk`).
// Otherwise it is skipped: tests never reach the network on their own.
const sdkVersion = "0.163.0"

func sdkEntry(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; skipping the @openai/codex-sdk test")
	}
	dir := os.Getenv("APPSERVER_CODEX_SDK_DIR")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Skipf("no user cache dir (%v); set APPSERVER_CODEX_SDK_DIR", err)
		}
		dir = filepath.Join(cache, "appserver-codex-sdk")
	}
	entry := filepath.Join(dir, "node_modules", "@openai", "codex-sdk", "dist", "index.js")
	if _, err := os.Stat(entry); err == nil {
		return entry
	}
	if os.Getenv("APPSERVER_CODEX_SDK_INSTALL") != "1" {
		t.Skipf("@openai/codex-sdk is not installed in %s; set APPSERVER_CODEX_SDK_INSTALL=1 to install it with npm "+
			"(or APPSERVER_CODEX_SDK_DIR to a directory holding node_modules/@openai/codex-sdk)", dir)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed; cannot install @openai/codex-sdk")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private":true}`+"\n"), 0o644))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=optional",
		"@openai/codex-sdk@"+sdkVersion)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "npm install: %s", out)
	return entry
}

// sdkTurn is one turn as the SDK's Thread.run returned it (plus the thread id it saw).
type sdkTurn struct {
	ID            string            `json:"id"`
	FinalResponse string            `json:"finalResponse"`
	Items         []json.RawMessage `json:"items"`
	Usage         map[string]int64  `json:"usage"`
	Parsed        map[string]any    `json:"parsed"`
}

// TestCodexSDK runs the real @openai/codex-sdk with codexPathOverride pointing at appserver: a thread
// with a tool call, a second turn (resume), an output schema, a resumed Thread object and a failing
// turn. The expected values are what the same script printed against codex-cli 0.169.0.
func TestCodexSDK(t *testing.T) {
	entry := sdkEntry(t)
	e := newEnv(t, "")
	e.mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "echo from-tool"})}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("first answer", 2)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("second answer", 2)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(`{"answer":"42"}`, 2)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("fourth answer", 2)}},
		mockmodel.Response{HTTPStatus: 500, ErrorBody: map[string]any{"error": map[string]any{"message": "boom", "type": "server_error"}}},
	)
	script, err := filepath.Abs(filepath.Join("testdata", "sdk_thread.mjs"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, entry, binPath, e.work)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+e.home, "HOME="+t.TempDir())
	cmd.Dir = e.work
	out, err := cmd.Output()
	var stderr []byte
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	require.NoError(t, err, "node: %s", stderr)

	var got struct {
		Turns   []sdkTurn `json:"turns"`
		Failure string    `json:"failure"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Len(t, got.Turns, 4)
	id := got.Turns[0].ID
	require.NotEmpty(t, id)
	finals := []string{"first answer", "second answer", `{"answer":"42"}`, "fourth answer"}
	for i, turn := range got.Turns {
		require.Equal(t, id, turn.ID, "turn %d continues the thread", i)
		require.Equal(t, finals[i], turn.FinalResponse)
		require.Equal(t, map[string]int64{"input_tokens": 100 * int64(i+2), "cached_input_tokens": 0, "cache_write_input_tokens": 0,
			"output_tokens": 20 * int64(i+2), "reasoning_output_tokens": 0}, turn.Usage, "turn %d: the thread's usage so far", i)
	}
	require.Len(t, got.Turns[0].Items, 3)
	require.JSONEq(t, `{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'echo from-tool'","aggregated_output":"from-tool\n","exit_code":0,"status":"completed"}`,
		string(got.Turns[0].Items[1]))
	require.Equal(t, map[string]any{"answer": "42"}, got.Turns[2].Parsed)
	require.Equal(t, "We’re currently experiencing high demand, which may cause temporary errors.", got.Failure)

	reqs := e.mm.ResponseRequests()
	require.Len(t, reqs, 6)
	for i, r := range reqs {
		_, hasText := r.Body["text"]
		require.Equal(t, i == 3, hasText, "request %d: text.format only on the output-schema turn", i)
	}
}
