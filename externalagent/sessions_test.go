package externalagent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

// sessionLine is one transcript line of the source agent.
func sessionLine(typ, cwd string, at time.Time, content any, extra map[string]any) string {
	m := map[string]any{"type": typ, "cwd": cwd, "timestamp": at.UTC().Format(time.RFC3339Nano), "message": map[string]any{"role": typ, "content": content}}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// session writes a transcript under the projects folder with the given mtime and returns its path.
func (f *fixture) session(t *testing.T, name string, mod time.Time, lines ...string) string {
	path := f.claude(filepath.Join("projects", "-p", name+".jsonl"))
	write(t, path, strings.Join(lines, "\n")+"\n")
	require.NoError(t, os.Chtimes(path, mod, mod))
	return path
}

func sessionNames(ss []protocol.SessionMigration) []string {
	var out []string
	for _, s := range ss {
		out = append(out, strings.TrimSuffix(filepath.Base(s.Path), ".jsonl"))
	}
	return out
}

func u32(n uint32) *uint32 { return &n }

func TestDetectSessions(t *testing.T) {
	f := newFixture(t)
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	cwd := f.repo
	at := func(ago time.Duration) time.Time { return now.Add(-ago) }
	f.session(t, "custom", at(time.Minute),
		sessionLine("user", cwd, at(time.Hour), "first prompt", nil),
		`{"type":"ai-title","aiTitle":"AI title"}`, `{"type":"custom-title","customTitle":"Custom title"}`)
	f.session(t, "ai", at(2*time.Minute), `{"type":"summary","summary":"ignored"}`,
		sessionLine("user", cwd, at(time.Hour), "<command-name>/clear</command-name>", map[string]any{"isMeta": true}),
		sessionLine("user", cwd, at(time.Hour), []map[string]any{{"type": "text", "text": "prompt"}}, nil),
		`{"type":"ai-title","aiTitle":"AI title"}`)
	f.session(t, "long", at(3*time.Minute), sessionLine("user", cwd, at(time.Hour), "  "+strings.Repeat("é", 130)+"  ", nil))
	f.session(t, "notitle", at(4*time.Minute), sessionLine("assistant", cwd, at(time.Hour), "only the assistant", nil))
	f.session(t, "gonecwd", at(5*time.Minute), sessionLine("user", filepath.Join(f.root, "gone"), at(time.Hour), "x", nil))
	f.session(t, "nocwd", at(6*time.Minute), sessionLine("user", "", at(time.Hour), "x", nil))
	f.session(t, "empty", at(7*time.Minute))
	f.session(t, "day29", at(29*day), sessionLine("user", cwd, at(29*day), "old", nil))
	f.session(t, "day31", at(31*day), sessionLine("user", cwd, at(time.Minute), "fresh lines, old file", nil))
	write(t, f.claude("projects/top.jsonl"), sessionLine("user", cwd, now, "not in a project folder", nil)+"\n")

	clock := func() time.Time { return now }
	items, err := f.svc.Detect(DetectOptions{IncludeHome: true, Now: clock})
	require.NoError(t, err)
	require.Len(t, items, 1)
	it := items[0]
	require.Equal(t, TypeSessions, it.ItemType)
	require.Nil(t, it.Cwd)
	require.Equal(t, "Migrate recent sessions from "+f.claude("projects"), it.Description)
	ss := it.Details.Sessions
	require.Equal(t, []string{"custom", "ai", "long", "notitle", "day29"}, sessionNames(ss), "newest first, 30 days, existing cwds only")
	require.Equal(t, "Custom title", *ss[0].Title)
	require.Equal(t, "AI title", *ss[1].Title)
	require.Equal(t, strings.Repeat("é", 117)+"...", *ss[2].Title)
	require.Nil(t, ss[3].Title)
	require.Equal(t, cwd, ss[0].Cwd)

	// The count limit applies before unusable sessions are dropped, as the reference's does.
	items, err = f.svc.Detect(DetectOptions{IncludeHome: true, Now: clock, MaxSessions: u32(6)})
	require.NoError(t, err)
	require.Equal(t, []string{"custom", "ai", "long", "notitle"}, sessionNames(items[0].Details.Sessions))
	items, err = f.svc.Detect(DetectOptions{IncludeHome: true, Now: clock, MaxSessionAgeDays: u32(40)})
	require.NoError(t, err)
	require.Equal(t, []string{"custom", "ai", "long", "notitle", "day29", "day31"}, sessionNames(items[0].Details.Sessions))
	items, err = f.svc.Detect(DetectOptions{IncludeHome: true, Now: clock, MaxSessionAgeDays: u32(0)})
	require.NoError(t, err)
	require.Empty(t, items)
	items, err = f.svc.Detect(DetectOptions{Cwds: []string{f.repo}, Now: clock})
	require.NoError(t, err)
	require.Empty(t, items, "sessions are home-scoped")

	// The default limit is 50 transcripts.
	for i := 0; i < 60; i++ {
		f.session(t, fmt.Sprintf("n%02d", i), at(time.Hour+time.Duration(i)*time.Minute), sessionLine("user", cwd, at(time.Hour), "q", nil))
	}
	items, err = f.svc.Detect(DetectOptions{IncludeHome: true, Now: clock})
	require.NoError(t, err)
	require.Len(t, items[0].Details.Sessions, 50-3, "gonecwd, nocwd and empty take their places")
}

func TestReadTranscript(t *testing.T) {
	f := newFixture(t)
	base := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	cwd := f.repo
	path := f.session(t, "s", base,
		sessionLine("assistant", cwd, at(0), "before any prompt: dropped", nil),
		sessionLine("user", cwd, at(1), "Fix <it>", nil),
		sessionLine("assistant", cwd, at(2), []map[string]any{{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Looking."},
			{"type": "tool_use", "id": "t1", "name": "Bash", "input": json.RawMessage(`{"command":"ls","description":"list"}`)}}, nil),
		sessionLine("user", cwd, at(3), []map[string]any{{"type": "tool_result", "tool_use_id": "t1", "content": "a.go"}}, nil),
		sessionLine("assistant", cwd, at(4), []map[string]any{{"type": "tool_use", "id": "t2", "name": "Read", "input": map[string]any{"file_path": "/a.go"}},
			{"type": "tool_use", "id": "t3", "name": "Task", "input": map[string]any{"description": "sub", "prompt": "p"}},
			{"type": "tool_use", "id": "t4", "name": "mcp__gh__issue", "input": json.RawMessage(`{"z": 1, "a": [1, 2]}`)}}, nil),
		sessionLine("user", cwd, at(5), []map[string]any{{"type": "tool_result", "tool_use_id": "t2", "is_error": true, "content": []map[string]any{{"type": "text", "text": "no"}, {"type": "text", "text": "such"}}}}, nil),
		sessionLine("user", cwd, at(6), "side", map[string]any{"isSidechain": true}),
		sessionLine("user", cwd, at(7), []map[string]any{{"type": "text", "text": "look"}, {"type": "image", "source": map[string]any{}}}, nil),
		sessionLine("assistant", cwd, at(8), "plain reply", nil),
		sessionLine("assistant", cwd, at(9), "side reply", map[string]any{"isSidechain": true}),
		"not json",
	)
	tr, ok, err := ReadTranscript(path)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "Fix <it>", tr.Preview)
	require.Equal(t, "", tr.Name)
	require.Equal(t, at(8).Unix(), tr.LastAt)
	require.Equal(t, []TranscriptTurn{
		{StartedAt: at(1).Unix(), User: "Fix <it>", Agent: []string{
			"Looking.\n\n[external_agent_tool_call: Bash]\ndescription: list\ncommand: ls\n[/external_agent_tool_call]",
			"[external_agent_tool_result]\na.go\n[/external_agent_tool_result]",
			"[external_agent_tool_call: Read]\nfile: /a.go\n[/external_agent_tool_call]\n\n[external_agent_tool_call: Task]\ndescription: sub\n[/external_agent_tool_call]\n\n" +
				"[external_agent_tool_call: mcp__gh__issue]\ninput: {\"z\":1,\"a\":[1,2]}\n[/external_agent_tool_call]",
			"[external_agent_tool_result: error]\nno\nsuch\n[/external_agent_tool_result]",
		}},
		{StartedAt: at(7).Unix(), User: "look\n\n[external unsupported block: image]", Agent: []string{"plain reply"}},
	}, tr.Turns)

	// The token estimate covers the messages up to the last assistant one: none, none.
	require.Equal(t, int64(0), Transcript{Turns: []TranscriptTurn{{User: "main q"}}}.ApproxTokens())
	require.Equal(t, int64(3), Transcript{Turns: []TranscriptTurn{{User: "1234", Agent: []string{"12345"}}, {User: "ignored"}}}.ApproxTokens())
}

// recordsOf returns a rollout's records as (type, payload type) pairs and the decoded payloads.
func recordsOf(t *testing.T, path string) ([]string, []map[string]any) {
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	var kinds []string
	var payloads []map[string]any
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Type    string         `json:"type"`
			Payload map[string]any `json:"payload"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		k := rec.Type
		if pt, ok := rec.Payload["type"].(string); ok {
			k += ":" + pt
		}
		kinds = append(kinds, k)
		payloads = append(payloads, rec.Payload)
	}
	return kinds, payloads
}

func TestImportSessions(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	cwd := f.repo
	path := f.session(t, "s1", now.Add(-time.Minute),
		sessionLine("user", cwd, now.Add(-time.Hour), "Fix the bug", nil),
		sessionLine("assistant", cwd, now.Add(-time.Hour+time.Minute), []map[string]any{{"type": "text", "text": "Fixed."}}, nil),
		sessionLine("user", cwd, now.Add(-30*time.Minute), "Thanks", nil),
		`{"type":"custom-title","customTitle":"Bug hunt"}`)
	type created struct{ cwd, name, preview, path string }
	var made []created
	f.svc.CreateThread = func(cwd, name, preview string, write func(*rollout.Recorder) error) (string, error) {
		id := fmt.Sprintf("thread-%d", len(made)+1)
		rec, err := rollout.Create(f.codex, rollout.SessionMeta{ID: id, Cwd: cwd, HistoryMode: "legacy"}, time.Now())
		require.NoError(t, err)
		require.NoError(t, write(rec))
		require.NoError(t, rec.Close())
		made = append(made, created{cwd, name, preview, rec.Path()})
		return id, nil
	}
	items, err := f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Len(t, items, 1)

	out := f.svc.Import(context.Background(), items)
	require.Len(t, out.Immediate, 1)
	require.Empty(t, out.Immediate[0].Successes)
	require.Len(t, out.Later, 1)
	require.Empty(t, out.Later[0].Failures)
	title := "Bug hunt"
	src, target := path, "thread-1"
	require.Equal(t, []protocol.ExternalAgentConfigImportItemTypeSuccess{{ItemType: TypeSessions, Cwd: &cwd, Source: &src, Target: &target, Title: &title}}, out.Later[0].Successes)
	require.Len(t, made, 1)
	require.Equal(t, created{cwd, "Bug hunt", "Fix the bug", made[0].path}, made[0])

	kinds, payloads := recordsOf(t, made[0].path)
	require.Equal(t, []string{"session_meta",
		"event_msg:task_started", "event_msg:user_message", "response_item:message", "event_msg:agent_message", "response_item:message", "event_msg:task_complete",
		"event_msg:task_started", "event_msg:user_message", "response_item:message", "event_msg:agent_message", "event_msg:token_count", "event_msg:task_complete"}, kinds)
	require.Equal(t, map[string]any{"type": "task_started", "turn_id": "external-import-turn-1", "started_at": float64(now.Add(-time.Hour).Unix()),
		"model_context_window": nil, "collaboration_mode_kind": "default"}, payloads[1])
	require.Equal(t, map[string]any{"type": "user_message", "message": "Fix the bug", "local_images": []any{}, "local_audio": []any{}, "text_elements": []any{}}, payloads[2])
	require.Equal(t, map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "Fixed."}}}, payloads[5])
	require.NotContains(t, payloads[6], "completed_at", "only the last turn records its completion")
	require.Equal(t, map[string]any{"type": "agent_message", "message": "<EXTERNAL SESSION IMPORTED>", "phase": nil, "memory_citation": nil}, payloads[10])
	require.Equal(t, float64(5), payloads[11]["info"].(map[string]any)["total_token_usage"].(map[string]any)["total_tokens"], "ceil(17 bytes / 4)")
	require.Equal(t, float64(now.Add(-30*time.Minute).Unix()), payloads[12]["completed_at"])

	// The rollout reads back as two completed turns.
	th, err := rollout.ReadFile(made[0].path)
	require.NoError(t, err)
	require.Len(t, th.Turns, 2)
	require.Equal(t, "external-import-turn-2", th.Turns[1].ID)

	// The ledger records the import; the session is not offered again until it changes.
	var led ledger
	require.NoError(t, json.Unmarshal([]byte(read(t, filepath.Join(f.codex, SessionLedgerFile))), &led))
	require.Len(t, led.Records, 1)
	require.Equal(t, "thread-1", led.Records[0].ImportedThreadID)
	require.Equal(t, path, led.Records[0].SourcePath)
	detected := items
	items, err = f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Empty(t, items)
	out = f.svc.Import(context.Background(), detected)
	require.Empty(t, out.Later, "importing it again does nothing")
	require.Len(t, made, 1)
	write(t, path, read(t, path)+sessionLine("user", cwd, now, "more", nil)+"\n")
	items, err = f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Len(t, items, 1)
	out = f.svc.Import(context.Background(), items)
	require.Len(t, out.Later[0].Successes, 1, "a changed session imports again")
	require.Len(t, made, 2)
}

func TestImportLocalPlugins(t *testing.T) {
	f := newFixture(t)
	market := filepath.Join(f.root, "mkt")
	write(t, filepath.Join(market, ".claude-plugin", "marketplace.json"), `{"name":"my-market","plugins":[{"name":"localplug","source":"./plugins/localplug"},{"name":"escape","source":"../x"}]}`)
	write(t, filepath.Join(market, "plugins", "localplug", ".claude-plugin", "plugin.json"), `{"name":"localplug","version":"1.2.0"}`)
	write(t, filepath.Join(market, "plugins", "localplug", "skills", "hello", "SKILL.md"), "---\nname: hello\ndescription: d\n---\nhi\n")
	write(t, f.claude("settings.json"), `{"enabledPlugins":{"localplug@my-market":true,"gone@my-market":true,"escape@my-market":true,"r@claude-plugins-official":true},
	  "extraKnownMarketplaces":{"my-market":{"source":{"source":"directory","path":"`+market+`"}}}}`)
	write(t, filepath.Join(f.codex, "config.toml"), "model = \"m\"\n")

	items, err := f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, []protocol.PluginsMigration{{MarketplaceName: "claude-plugins-official", PluginNames: []string{"r"}},
		{MarketplaceName: "my-market", PluginNames: []string{"escape", "gone", "localplug"}}}, items[0].Details.Plugins)

	out := f.svc.Import(context.Background(), items)
	require.Len(t, out.Immediate, 1)
	now := out.Immediate[0]
	id := "localplug@my-market"
	require.Equal(t, []protocol.ExternalAgentConfigImportItemTypeSuccess{{ItemType: TypePlugins, Source: &id, Target: &id}}, now.Successes)
	require.Len(t, now.Failures, 2)
	for i, n := range []string{"escape", "gone"} {
		require.Equal(t, fmt.Sprintf("plugin `%s` was not found in marketplace `my-market`", n), now.Failures[i].Message)
		require.Equal(t, "plugin_not_found", *now.Failures[i].ErrorType)
		require.Equal(t, n+"@my-market", *now.Failures[i].Source)
	}
	require.Len(t, out.Later, 1, "remote marketplaces are reported later")
	require.Equal(t, "r@claude-plugins-official", *out.Later[0].Failures[0].Source)

	require.Equal(t, "model = \"m\"\n\n[marketplaces.my-market]\nsource_type = \"local\"\nsource = \""+market+"\"\n\n[plugins.\"localplug@my-market\"]\nenabled = true\n",
		read(t, filepath.Join(f.codex, "config.toml")))
	require.FileExists(t, filepath.Join(f.codex, "plugins", "cache", "my-market", "localplug", "1.2.0", "skills", "hello", "SKILL.md"))

	// Installed plugins are not offered again.
	items, err = f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Equal(t, []protocol.PluginsMigration{{MarketplaceName: "claude-plugins-official", PluginNames: []string{"r"}},
		{MarketplaceName: "my-market", PluginNames: []string{"escape", "gone"}}}, items[0].Details.Plugins)
}

func TestMemoryImport(t *testing.T) {
	f := newFixture(t)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	f.session(t, "s", old, sessionLine("user", f.repo, old, "q", nil))
	write(t, f.claude("projects/-p/memory/MEMORY.md"), "# index\n")
	write(t, f.claude("projects/-p/memory/sub/deep.md"), "# deep\n")
	write(t, f.claude("projects/-p/memory/notes.txt"), "not markdown\n")
	write(t, f.claude("projects/-nosessions/memory/MEMORY.md"), "# no cwd\n")

	items, err := f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Empty(t, items, "memory needs the feature")
	items, err = f.svc.Detect(DetectOptions{IncludeHome: true, IncludeMemory: true})
	require.NoError(t, err)
	require.Len(t, items, 1)
	target := filepath.Join(f.codex, "memories_v2", "extensions", "external_agent_import", "resources")
	require.Equal(t, "Import memory files from "+f.claude("projects")+" to "+target, items[0].Description)
	require.Equal(t, []string{"-p"}, items[0].Details.Memory)

	items[0].Details.Memory = []string{"-nosessions", "-p", "-absent"}
	out := f.svc.Import(context.Background(), items)
	require.Len(t, out.Immediate, 1)
	r := out.Immediate[0]
	src := "-p"
	require.Equal(t, []protocol.ExternalAgentConfigImportItemTypeSuccess{{ItemType: TypeMemory, Source: &src, Target: &target}}, r.Successes)
	require.Len(t, r.Failures, 2)
	require.Equal(t, "selected memory was not found: -absent", r.Failures[0].Message)
	require.Equal(t, "memory_import", r.Failures[0].FailureStage)
	require.Equal(t, "selected memory was not found: -nosessions", r.Failures[1].Message)
	require.JSONEq(t, `{"cwd":"`+f.repo+`"}`, read(t, filepath.Join(target, "-p", "scope.json")))
	require.Equal(t, "# deep\n", read(t, filepath.Join(target, "-p", "sub", "deep.md")))
	require.NoFileExists(t, filepath.Join(target, "-p", "notes.txt"))
	require.FileExists(t, filepath.Join(filepath.Dir(target), "instructions.md"))

	items, err = f.svc.Detect(DetectOptions{IncludeHome: true, IncludeMemory: true})
	require.NoError(t, err)
	require.Empty(t, items, "imported memories are not offered again")
}

func TestPluginMarketplaceRegistry(t *testing.T) {
	f := newFixture(t)
	market := f.claude("plugins/marketplaces/reg-market")
	write(t, filepath.Join(market, ".claude-plugin", "marketplace.json"), `{"name":"reg-market","plugins":[{"name":"regplug","source":"./plugins/regplug"}]}`)
	write(t, filepath.Join(market, "plugins", "regplug", ".claude-plugin", "plugin.json"), `{"name":"regplug","version":"2.0.0"}`)
	write(t, f.claude("plugins/known_marketplaces.json"), `{"loc-only":{"installLocation":"`+market+`"},
	  "cloned":{"source":{"source":"github","repo":"someone/cloned"},"installLocation":"`+market+`"},
	  "str-market":{"source":"someone/str"},"bad":5}`)
	write(t, f.claude("settings.json"), `{"enabledPlugins":{"regplug@loc-only":true,"c@cloned":true,"x@str-market":true,"y@bad":true,"z@claude-code-plugins":true}}`)

	items, err := f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, []protocol.PluginsMigration{{MarketplaceName: "claude-code-plugins", PluginNames: []string{"z"}}, {MarketplaceName: "cloned", PluginNames: []string{"c"}},
		{MarketplaceName: "loc-only", PluginNames: []string{"regplug"}}, {MarketplaceName: "str-market", PluginNames: []string{"x"}}}, items[0].Details.Plugins)

	// The registry's local copy is used only without a source; config and cache use the marketplace's own name.
	out := f.svc.Import(context.Background(), items)
	id := "regplug@loc-only"
	require.Equal(t, []protocol.ExternalAgentConfigImportItemTypeSuccess{{ItemType: TypePlugins, Source: &id, Target: &id}}, out.Immediate[0].Successes)
	require.Empty(t, out.Immediate[0].Failures)
	require.Len(t, out.Later, 1)
	require.Len(t, out.Later[0].Failures, 3)
	require.Contains(t, out.Later[0].Failures[0].Message, "git clone https://github.com/anthropics/claude-code.git ")
	require.Contains(t, out.Later[0].Failures[1].Message, "git clone https://github.com/someone/cloned.git ")
	require.Contains(t, out.Later[0].Failures[2].Message, "git clone https://github.com/someone/str.git ")
	require.Equal(t, "[marketplaces.reg-market]\nsource_type = \"local\"\nsource = \""+market+"\"\n\n[plugins.\"regplug@reg-market\"]\nenabled = true\n",
		read(t, filepath.Join(f.codex, "config.toml")))
	require.DirExists(t, filepath.Join(f.codex, "plugins", "cache", "reg-market", "regplug", "2.0.0"))
}

func TestDetectOrderWithSessionsAndMemory(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	write(t, filepath.Join(f.repo, "CLAUDE.md"), "repo doc\n")
	write(t, f.claude("CLAUDE.md"), "home doc\n")
	f.session(t, "s", now, sessionLine("user", f.repo, now, "q", nil))
	write(t, f.claude("projects/-p/memory/MEMORY.md"), "# m\n")
	items, err := f.svc.Detect(DetectOptions{IncludeHome: true, Cwds: []string{f.repo}, IncludeMemory: true})
	require.NoError(t, err)
	require.Equal(t, []ItemType{TypeAgentsMD, TypeSessions, TypeAgentsMD, TypeMemory}, itemTypes(items), "home, its sessions, repositories, memories")
}

func TestTranscriptTitles(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	for _, tc := range []struct {
		name                   string
		first                  any
		title, threadName, pre string
		turns                  int
	}{
		{"multiline", "  line one\nline two  ", "line one", "", "line one\nline two", 2},
		{"blank lines first", "\n\n  \t spaced   words \n", "spaced   words", "", "spaced   words", 2},
		{"unsupported first", []map[string]any{{"type": "image"}, {"type": "text", "text": "after"}}, "[external unsupported block: image]", "", "[external unsupported block: image]\n\nafter", 2},
		{"slash command", "<command-message>init</command-message>\n<command-name>/init</command-name>", "second", "second", "<command-message>init</command-message>\n<command-name>/init</command-name>", 2},
		{"whitespace only", "   ", "second", "", "second", 1},
		{"tool result only", []map[string]any{{"type": "tool_result", "tool_use_id": "x", "content": "r"}}, "second", "", "second", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := f.session(t, strings.ReplaceAll(tc.name, " ", "-"), now, sessionLine("user", f.repo, now, tc.first, nil), sessionLine("user", f.repo, now, "second", nil))
			tr, ok, err := ReadTranscript(path)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, tc.title, *tr.Title)
			require.Equal(t, tc.threadName, tr.Name)
			require.Equal(t, tc.pre, tr.Preview)
			require.Len(t, tr.Turns, tc.turns)
		})
	}
}

func TestRepoPluginsAreNotMigrated(t *testing.T) {
	f := newFixture(t)
	market := filepath.Join(f.root, "mkt")
	write(t, filepath.Join(market, ".claude-plugin", "marketplace.json"), `{"name":"m","plugins":[{"name":"p","source":"./p"}]}`)
	write(t, filepath.Join(f.repo, ".claude", "settings.json"), `{"enabledPlugins":{"p@m":true},"extraKnownMarketplaces":{"m":{"source":{"source":"directory","path":"`+market+`"}}}}`)
	items, err := f.svc.Detect(DetectOptions{Cwds: []string{f.repo}})
	require.NoError(t, err)
	require.Empty(t, items)
	repo := f.repo
	out := f.svc.Import(context.Background(), []protocol.ExternalAgentConfigMigrationItem{{ItemType: TypePlugins, Cwd: &repo,
		Details: &protocol.MigrationDetails{Plugins: []protocol.PluginsMigration{{MarketplaceName: "m", PluginNames: []string{"p"}}}}}})
	require.Empty(t, out.Later)
	require.Equal(t, []protocol.ExternalAgentConfigImportItemTypeFailure{{ItemType: TypePlugins, Cwd: &repo, FailureStage: "plugin_import",
		Message: "repository-scoped plugin migration is not allowed"}}, out.Immediate[0].Failures)
	require.NoFileExists(t, filepath.Join(f.codex, "config.toml"))
}
