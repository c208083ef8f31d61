package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	protocol "appserver/protocol/v2"
)

// claudeHome points HOME at a fresh directory with a small Claude Code layout and returns it.
func claudeHome(t *testing.T) string {
	home := t.TempDir()
	t.Setenv("HOME", home)
	files := map[string]string{
		".claude/settings.json":      `{"env":{"FOO":"bar"},"hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo stop"}]}]}}`,
		".claude/CLAUDE.md":          "Use Claude Code.\n",
		".claude/skills/s1/SKILL.md": "---\nname: s1\ndescription: d\n---\nb\n",
		".claude/commands/review.md": "---\ndescription: Review\n---\nReview it.\n",
		".claude/agents/helper.md":   "---\nname: helper\ndescription: Helps\n---\nHelp.\n",
		".claude.json":               `{"mcpServers":{"docs":{"command":"docs-mcp"}}}`,
	}
	for rel, content := range files {
		p := filepath.Join(home, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return home
}

func TestExternalAgentDetectAndImport(t *testing.T) {
	home := claudeHome(t)
	c := apptest.Start(t, apptest.Options{Config: "# keep me\n"})
	c.Initialize(true)

	var empty protocol.ExternalAgentConfigDetectResponse
	raw := c.Result("externalAgentConfig/detect", map[string]any{}, &empty)
	require.JSONEq(t, `{"items":[],"connectors":[]}`, string(raw))

	var det protocol.ExternalAgentConfigDetectResponse
	c.Result("externalAgentConfig/detect", map[string]any{"includeHome": true, "cwds": []string{c.Work}}, &det)
	var types []protocol.ExternalAgentConfigMigrationItemType
	for _, it := range det.Items {
		types = append(types, it.ItemType)
	}
	require.Equal(t, []protocol.ExternalAgentConfigMigrationItemType{"CONFIG", "MCP_SERVER_CONFIG", "HOOKS", "SKILLS", "COMMANDS", "SUBAGENTS", "AGENTS_MD"}, types)
	require.Equal(t, "Migrate "+filepath.Join(home, ".claude", "CLAUDE.md")+" to "+filepath.Join(c.Home, "AGENTS.md"), det.Items[6].Description)

	mark := c.Mark()
	var resp protocol.ExternalAgentConfigImportResponse
	c.Result("externalAgentConfig/import", map[string]any{"migrationItems": det.Items}, &resp)
	require.Regexp(t, `^[0-9a-f-]{36}$`, resp.ImportID)
	done := c.WaitNotification("externalAgentConfig/import/completed", nil)
	var progress []string
	for _, m := range c.Since(mark) {
		if m.Method == "externalAgentConfig/import/progress" {
			var p protocol.ExternalAgentConfigImportProgressNotification
			require.NoError(t, json.Unmarshal(m.Params, &p))
			require.Equal(t, resp.ImportID, p.ImportID)
			require.Len(t, p.ItemTypeResults, 1)
			require.Len(t, p.ItemTypeResults[0].Successes, 1)
			progress = append(progress, string(p.ItemTypeResults[0].ItemType))
		}
	}
	require.Equal(t, []string{"CONFIG", "MCP_SERVER_CONFIG", "HOOKS", "SKILLS", "COMMANDS", "SUBAGENTS", "AGENTS_MD"}, progress)
	var completed protocol.ExternalAgentConfigImportCompletedNotification
	require.NoError(t, json.Unmarshal(done.Params, &completed))
	var grouped []string
	for _, g := range completed.ItemTypeResults {
		grouped = append(grouped, string(g.ItemType))
	}
	require.Equal(t, []string{"CONFIG", "SKILLS", "AGENTS_MD", "MCP_SERVER_CONFIG", "SUBAGENTS", "HOOKS", "COMMANDS"}, grouped)

	cfg, err := os.ReadFile(filepath.Join(c.Home, "config.toml"))
	require.NoError(t, err)
	require.Contains(t, string(cfg), "# keep me\n")
	require.Contains(t, string(cfg), "[mcp_servers.docs]\ncommand = \"docs-mcp\"\n")
	require.Contains(t, string(cfg), "FOO = \"bar\"")
	require.FileExists(t, filepath.Join(c.Home, "hooks.json"))
	require.FileExists(t, filepath.Join(filepath.Dir(c.Home), ".agents", "skills", "source-command-review", "SKILL.md"))
	c.Result("externalAgentConfig/detect", map[string]any{"includeHome": true}, &det)
	require.Empty(t, det.Items, "everything imported")

	var hist protocol.ExternalAgentConfigImportHistoriesReadResponse
	c.Result("externalAgentConfig/import/readHistories", nil, &hist)
	require.Len(t, hist.Data, 1)
	require.Equal(t, resp.ImportID, hist.Data[0].ImportID)
	require.Nil(t, hist.Data[0].ProviderID)
	require.Len(t, hist.Data[0].Successes, 7)
	require.Empty(t, hist.Data[0].Failures)
	require.Empty(t, hist.Connectors)
}

func TestExternalAgentImportEdges(t *testing.T) {
	claudeHome(t)
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)

	// No items: an id, no notifications and no history.
	mark := c.Mark()
	var resp protocol.ExternalAgentConfigImportResponse
	c.Result("externalAgentConfig/import", map[string]any{"migrationItems": []any{}}, &resp)
	require.NotEmpty(t, resp.ImportID)
	var hist protocol.ExternalAgentConfigImportHistoriesReadResponse
	c.Result("externalAgentConfig/import/readHistories", map[string]any{}, &hist)
	require.Empty(t, hist.Data)
	for _, m := range c.Since(mark) {
		require.NotContains(t, m.Method, "externalAgentConfig/")
	}

	requireError(t, c.Request("externalAgentConfig/import", map[string]any{"migrationItems": []any{map[string]any{"itemType": "MEMORY", "description": "m"}}}),
		-32600, "external agent memory import is disabled")
	requireError(t, c.Request("externalAgentConfig/import", map[string]any{}), -32600, "Invalid request: missing field `migrationItems`")
	requireErrorMatch(t, c.Request("externalAgentConfig/import", map[string]any{"migrationItems": []any{map[string]any{"itemType": "NOPE", "description": "x"}}}), -32600, "^Invalid request: unknown variant `NOPE`, expected one of `AGENTS_MD`, ")

	// A failing item is reported, not raised.
	c.Result("externalAgentConfig/import", map[string]any{"migrationItems": []any{map[string]any{"itemType": "PLUGINS", "description": "p"}}}, &resp)
	done := c.WaitNotification("externalAgentConfig/import/completed", nil)
	require.JSONEq(t, `{"importId":"`+resp.ImportID+`","itemTypeResults":[{"itemType":"PLUGINS","successes":[],"failures":[{"itemType":"PLUGINS","errorType":null,"subErrorType":null,"failureStage":"plugin_import","message":"plugins migration item is missing details","cwd":null,"source":null}]}]}`, string(done.Params))

	// A broken config.toml fails detection with the parse error.
	repo := filepath.Join(c.Work, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".claude"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".codex"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".claude", "settings.json"), []byte(`{"env":{"A":"1"}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".codex", "config.toml"), []byte("x = = 1\n"), 0o644))
	m := c.Request("externalAgentConfig/detect", map[string]any{"cwds": []string{repo}})
	require.NotNil(t, m.Error)
	require.Equal(t, -32603, m.Error.Code)
	require.Contains(t, m.Error.Message, "invalid existing config.toml: TOML parse error at line 1, column ")
}

func TestExternalAgentRecordHistory(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	var rec protocol.ExternalAgentConfigImportHistoryRecordResponse
	c.Result("externalAgentConfig/import/recordHistory", map[string]any{"providerId": "prov-1", "itemTypeResults": []any{
		map[string]any{"itemType": "CONFIG", "successes": []any{map[string]any{"itemType": "CONFIG", "cwd": "/x", "source": "a", "target": "b"}},
			"failures": []any{map[string]any{"itemType": "SKILLS", "failureStage": "s", "message": "boom", "errorType": "et", "subErrorType": "set"}}},
		map[string]any{"itemType": "SESSIONS", "successes": []any{map[string]any{"itemType": "SESSIONS", "title": "T", "source": "/p.jsonl"}}, "failures": []any{}},
	}}, &rec)
	require.Regexp(t, `^[0-9a-f-]{36}$`, rec.ImportID)

	requireError(t, c.Request("externalAgentConfig/import/recordHistory", map[string]any{"itemTypeResults": []any{}}), -32600, "Invalid request: missing field `providerId`")
	m := c.Request("externalAgentConfig/import/recordHistory", map[string]any{"providerId": "p", "itemTypeResults": []any{map[string]any{"itemType": "BOGUS", "successes": []any{}, "failures": []any{}}}})
	require.NotNil(t, m.Error)
	require.Equal(t, -32600, m.Error.Code)
	require.Equal(t, "Invalid request: unknown variant `BOGUS`, expected one of `AGENTS_MD`, `CONFIG`, `SKILLS`, `PLUGINS`, `MCP_SERVER_CONFIG`, `SUBAGENTS`, `HOOKS`, `COMMANDS`, `MEMORY`, `SESSIONS`", m.Error.Message)

	raw := c.Request("externalAgentConfig/import/readHistories", nil).Result
	var hist protocol.ExternalAgentConfigImportHistoriesReadResponse
	require.NoError(t, json.Unmarshal(raw, &hist))
	require.Len(t, hist.Data, 1)
	got, err := json.Marshal(hist.Data[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"importId":"`+rec.ImportID+`","providerId":"prov-1","completedAtMs":`+jsonInt(hist.Data[0].CompletedAtMs)+`,
	  "successes":[{"itemType":"CONFIG","cwd":"/x","source":"a","target":"b","title":null},{"itemType":"SESSIONS","cwd":null,"source":"/p.jsonl","target":null,"title":"T"}],
	  "failures":[{"itemType":"SKILLS","errorType":"et","subErrorType":"set","failureStage":"s","message":"boom","cwd":null,"source":null}]}`, string(got))
}

func jsonInt(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestExternalAgentSessionImport(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	at := time.Now().Add(-time.Hour).UTC()
	line := func(typ string, content any, off time.Duration) string {
		b, _ := json.Marshal(map[string]any{"type": typ, "cwd": c.Work, "timestamp": at.Add(off).Format(time.RFC3339Nano), "message": map[string]any{"role": typ, "content": content}})
		return string(b) + "\n"
	}
	session := filepath.Join(home, ".claude", "projects", "-w", "0b7c9f0e-1111-4111-8111-111111111111.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(session), 0o755))
	require.NoError(t, os.WriteFile(session, []byte(line("user", "Fix the bug", 0)+
		line("assistant", []map[string]any{{"type": "text", "text": "Done."}, {"type": "tool_use", "id": "t", "name": "Bash", "input": map[string]any{"command": "go test"}}}, time.Minute)+
		`{"type":"custom-title","customTitle":"Bug hunt"}`+"\n"), 0o644))

	title := "Bug hunt"
	var det protocol.ExternalAgentConfigDetectResponse
	c.Result("externalAgentConfig/detect", map[string]any{"includeHome": true, "maxSessions": 5, "maxSessionAgeDays": 2}, &det)
	require.Len(t, det.Items, 1)
	require.Equal(t, protocol.ExternalAgentConfigMigrationItemTypeSESSIONS, det.Items[0].ItemType)
	require.Equal(t, []protocol.SessionMigration{{Path: session, Cwd: c.Work, Title: &title}}, det.Items[0].Details.Sessions)
	c.Result("externalAgentConfig/detect", map[string]any{"includeHome": true, "maxSessionAgeDays": 0}, &det)
	require.Empty(t, det.Items)

	c.Result("externalAgentConfig/detect", map[string]any{"includeHome": true}, &det)
	var resp protocol.ExternalAgentConfigImportResponse
	before := time.Now().Unix()
	c.Result("externalAgentConfig/import", map[string]any{"migrationItems": det.Items}, &resp)
	done := c.WaitNotification("externalAgentConfig/import/completed", nil)
	var completed protocol.ExternalAgentConfigImportCompletedNotification
	require.NoError(t, json.Unmarshal(done.Params, &completed))
	require.Len(t, completed.ItemTypeResults, 1)
	succ := completed.ItemTypeResults[0].Successes
	require.Len(t, succ, 1)
	require.Equal(t, "Bug hunt", *succ[0].Title)
	require.Equal(t, session, *succ[0].Source)
	threadID := *succ[0].Target

	var list protocol.ThreadListResponse
	c.Result("thread/list", map[string]any{}, &list)
	require.Len(t, list.Data, 1)
	require.Equal(t, threadID, list.Data[0].ID)
	require.Equal(t, "Bug hunt", *list.Data[0].Name)
	require.Equal(t, "Fix the bug", list.Data[0].Preview)
	// As the reference: the thread was created and updated at the import, its recency is the transcript's end;
	// a full read shows the transcript's span.
	start, end := at.Unix(), at.Add(time.Minute).Unix()
	imported := list.Data[0].CreatedAt
	require.GreaterOrEqual(t, imported, before)
	require.Equal(t, imported, list.Data[0].UpdatedAt)
	require.Equal(t, end, *list.Data[0].RecencyAt)

	var read protocol.ThreadReadResponse
	c.Result("thread/read", map[string]any{"threadId": threadID}, &read)
	require.Equal(t, []int64{imported, imported, end}, []int64{read.Thread.CreatedAt, read.Thread.UpdatedAt, *read.Thread.RecencyAt})
	c.Result("thread/read", map[string]any{"threadId": threadID, "includeTurns": true}, &read)
	require.Equal(t, []int64{start, end, end}, []int64{read.Thread.CreatedAt, read.Thread.UpdatedAt, *read.Thread.RecencyAt})
	require.Len(t, read.Thread.Turns, 1)
	turn := read.Thread.Turns[0]
	require.Equal(t, "external-import-turn-1", turn.ID)
	raw, err := json.Marshal(turn.Items)
	require.NoError(t, err)
	var items []map[string]any
	require.NoError(t, json.Unmarshal(raw, &items))
	require.Len(t, items, 3)
	require.Equal(t, "userMessage", items[0]["type"])
	require.Equal(t, "Done.\n\n[external_agent_tool_call: Bash]\ncommand: go test\n[/external_agent_tool_call]", items[1]["text"])
	require.Equal(t, "<EXTERNAL SESSION IMPORTED>", items[2]["text"])

	var resumed protocol.ThreadResumeResponse
	c.Result("thread/resume", map[string]any{"threadId": threadID}, &resumed)
	require.Equal(t, []int64{imported, end}, []int64{resumed.Thread.CreatedAt, *resumed.Thread.RecencyAt})

	c.Result("externalAgentConfig/detect", map[string]any{"includeHome": true}, &det)
	require.Empty(t, det.Items, "imported sessions are not offered again")
}

func TestExternalAgentMemoryImport(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	c := apptest.Start(t, apptest.Options{Config: "[features]\nexternal_agent_memory_import = true\n"})
	c.Initialize(true)
	proj := filepath.Join(home, ".claude", "projects", "-w")
	require.NoError(t, os.MkdirAll(filepath.Join(proj, "memory"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(proj, "memory", "MEMORY.md"), []byte("# notes\n"), 0o644))
	b, _ := json.Marshal(map[string]any{"type": "user", "cwd": c.Work, "timestamp": "2020-01-01T00:00:00Z", "message": map[string]any{"role": "user", "content": "q"}})
	require.NoError(t, os.WriteFile(filepath.Join(proj, "old.jsonl"), append(b, '\n'), 0o644))
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, os.Chtimes(filepath.Join(proj, "old.jsonl"), old, old))

	var det protocol.ExternalAgentConfigDetectResponse
	c.Result("externalAgentConfig/detect", map[string]any{"includeHome": true}, &det)
	require.Len(t, det.Items, 1)
	require.Equal(t, protocol.ExternalAgentConfigMigrationItemTypeMEMORY, det.Items[0].ItemType)
	require.Equal(t, []string{"-w"}, det.Items[0].Details.Memory)

	var resp protocol.ExternalAgentConfigImportResponse
	c.Result("externalAgentConfig/import", map[string]any{"migrationItems": det.Items}, &resp)
	done := c.WaitNotification("externalAgentConfig/import/completed", nil)
	target := filepath.Join(c.Home, "memories_v2", "extensions", "external_agent_import", "resources")
	require.JSONEq(t, `{"importId":"`+resp.ImportID+`","itemTypeResults":[{"itemType":"MEMORY","successes":[{"itemType":"MEMORY","cwd":null,"source":"-w","target":"`+target+`","title":null}],"failures":[]}]}`, string(done.Params))
	require.FileExists(t, filepath.Join(target, "-w", "MEMORY.md"))
}

func TestExternalAgentCursorSource(t *testing.T) {
	home := claudeHome(t)
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".cursor"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".cursor", "mcp.json"), []byte(`{"mcpServers":{"cur":{"command":"cur-mcp"}}}`), 0o644))
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)

	var det protocol.ExternalAgentConfigDetectResponse
	c.Result("externalAgentConfig/detect", map[string]any{"includeHome": true, "migrationSource": "cursor"}, &det)
	require.Len(t, det.Items, 1, "Claude Code's files are not Cursor's")
	require.Equal(t, "Migrate MCP servers from "+filepath.Join(home, ".cursor", "mcp.json")+" into "+filepath.Join(c.Home, "config.toml"), det.Items[0].Description)

	var resp protocol.ExternalAgentConfigImportResponse
	c.Result("externalAgentConfig/import", map[string]any{"migrationSource": "cursor", "migrationItems": det.Items}, &resp)
	done := c.WaitNotification("externalAgentConfig/import/completed", nil)
	require.JSONEq(t, `{"importId":"`+resp.ImportID+`","itemTypeResults":[{"itemType":"MCP_SERVER_CONFIG","successes":[{"itemType":"MCP_SERVER_CONFIG","cwd":null,"source":"cur","target":"cur","title":null}],"failures":[]}]}`, string(done.Params))
	cfg, err := os.ReadFile(filepath.Join(c.Home, "config.toml"))
	require.NoError(t, err)
	require.Contains(t, string(cfg), "[mcp_servers.cur]\ncommand = \"cur-mcp\"\n")
	require.NotContains(t, string(cfg), "docs-mcp")
}
