package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// TestTurnCwdDoesNotLoadProjectConfig pins the reference (0.169.0): `turn/start` with a `cwd` in another
// project does not load that project's .codex/config.toml for the turn, trusted or not, and one that does
// not parse fails nothing; the same trusted file does apply to a thread started there (developer_instructions
// included: the reference sends config.toml's as a developer message).
func TestTurnCwdDoesNotLoadProjectConfig(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "codex_home")
	proj := func(n string) string { return filepath.Join(base, "proj", n) }
	trust := ""
	for _, n := range []string{"A", "B", "D"} {
		trust += "[projects." + string(mustJSON(t, proj(n))) + "]\ntrust_level = \"trusted\"\n"
	}
	for n, text := range map[string]string{
		"A": "",
		"B": "model = \"proj-b-model\"\ndeveloper_instructions = \"PROJECT-B-DEV\"\nmodel_reasoning_effort = \"high\"\n",
		"C": "model = \"proj-c-model\"\ndeveloper_instructions = \"PROJECT-C-DEV\"\nmodel_reasoning_effort = \"low\"\n", // untrusted
		"D": "developer_instructions = [broken\n",                                                                       // trusted, does not parse
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(proj(n), ".git"), 0o755))
		if text != "" {
			require.NoError(t, os.MkdirAll(filepath.Join(proj(n), ".codex"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(proj(n), ".codex", "config.toml"), []byte(text), 0o600))
		}
	}
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Home: home, Model: mm, Config: trust})
	c.Initialize(false)

	// sent reports whether the last model request carried a PROJECT-* instruction, its model and reasoning effort.
	sent := func() (project bool, model, effort any) {
		reqs := mm.ResponseRequests()
		body := reqs[len(reqs)-1].Body
		b, err := json.Marshal(body["input"])
		require.NoError(t, err)
		reasoning, _ := body["reasoning"].(map[string]any)
		return strings.Contains(string(b), "PROJECT-"), body["model"], reasoning["effort"]
	}
	turn := func(tid string, params map[string]any) {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
		params["threadId"] = tid
		params["input"] = []any{map[string]any{"type": "text", "text": "hi"}}
		c.Result("turn/start", params, nil)
		c.WaitTurnCompleted()
	}

	tid := c.StartThread(map[string]any{"cwd": proj("A")})
	for _, n := range []string{"B", "C", "D"} {
		turn(tid, map[string]any{"cwd": proj(n)})
		project, model, effort := sent()
		require.False(t, project, "turn moved into %s", n)
		require.Equal(t, "mock-model", model, "turn moved into %s", n)
		require.Nil(t, effort, "turn moved into %s", n)
	}

	// The control: a thread started in B has B's configuration, its developer_instructions included (unless
	// the client gives its own, even empty).
	tidB := c.StartThread(map[string]any{"cwd": proj("B")})
	turn(tidB, map[string]any{})
	project, model, effort := sent()
	require.True(t, project)
	require.Equal(t, "proj-b-model", model)
	require.Equal(t, "high", effort)
	turn(c.StartThread(map[string]any{"cwd": proj("B"), "developerInstructions": ""}), map[string]any{})
	project, _, _ = sent()
	require.False(t, project)
}
