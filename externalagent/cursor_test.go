package externalagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

func TestCursorSource(t *testing.T) {
	f := newFixture(t)
	f.full(t) // Claude Code's files are ignored for Cursor
	cur := func(rel string) string { return filepath.Join(f.home, ".cursor", rel) }
	write(t, cur("mcp.json"), `{"mcpServers":{"docs":{"command":"npx","args":["docs"]},"remote":{"url":"https://x/mcp"}}}`)
	write(t, cur("hooks.json"), `{"version":1,"hooks":{"beforeShellExecution":[{"command":"echo shell"}],"stop":[{"command":"echo stop","matcher":"x"}],
	  "preToolUse":[{"command":"echo pre","timeout":3,"matcher":"Shell"}],"beforeSubmitPrompt":[{"command":"echo prompt"}]}}`)
	write(t, cur("skills/sk/SKILL.md"), "---\nname: sk\ndescription: Cursor skill for Claude\n---\nUse Cursor. See .cursorrules; cursor-agent stays.\n")
	write(t, cur("commands/cmd.md"), "Do it in Cursor\n")
	write(t, cur("agents/ag.md"), "---\nname: ag\ndescription: Cursor agent\nreadonly: true\n---\nBe like Cursor\n")
	write(t, filepath.Join(f.repo, ".cursorrules"), "Cursor rules; Claude Code; .cursorrules\n")
	write(t, filepath.Join(f.repo, ".cursor", "mcp.json"), `{"mcpServers":{"pm":{"command":"pm"}}}`)
	f.svc.UseSource("Cursor")

	items, err := f.svc.Detect(DetectOptions{IncludeHome: true, Cwds: []string{f.repo}, IncludeMemory: true})
	require.NoError(t, err)
	require.Equal(t, []ItemType{TypeMCP, TypeHooks, TypeSkills, TypeCommands, TypeSubagents, TypeMCP, TypeAgentsMD}, itemTypes(items))
	require.Equal(t, "Migrate MCP servers from "+cur("mcp.json")+" into "+filepath.Join(f.codex, "config.toml"), items[0].Description)
	require.Equal(t, []protocol.HookMigration{{Name: "UserPromptSubmit"}, {Name: "Stop"}, {Name: "PreToolUse"}}, items[1].Details.Hooks)
	require.Equal(t, "Migrate skills from "+cur("skills")+" to "+filepath.Join(f.root, ".agents", "skills"), items[2].Description)
	require.Equal(t, "Migrate "+filepath.Join(f.repo, ".cursorrules")+" to "+filepath.Join(f.repo, "AGENTS.md"), items[6].Description)

	out := f.svc.Import(context.Background(), items)
	for _, r := range out.Immediate {
		require.Empty(t, r.Failures, "%s", r.Type)
		require.NotEmpty(t, r.Successes, "%s", r.Type)
	}
	require.Contains(t, read(t, filepath.Join(f.codex, "config.toml")), "[mcp_servers.remote]\nurl = \"https://x/mcp\"\n")
	require.Contains(t, read(t, filepath.Join(f.repo, ".codex", "config.toml")), "[mcp_servers.pm]\ncommand = \"pm\"\n")
	require.JSONEq(t, `{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo prompt"}]}],"Stop":[{"hooks":[{"type":"command","command":"echo stop"}]}],
	  "PreToolUse":[{"matcher":"Shell","hooks":[{"type":"command","command":"echo pre","timeout":3}]}]}}`, read(t, filepath.Join(f.codex, "hooks.json")))
	require.Equal(t, "---\nname: sk\ndescription: Codex skill for Claude\n---\nUse Codex. See AGENTS.md; cursor-agent stays.\n", read(t, filepath.Join(f.root, ".agents", "skills", "sk", "SKILL.md")))
	require.Contains(t, read(t, filepath.Join(f.root, ".agents", "skills", "source-command-cmd", "SKILL.md")), "Do it in Codex\n")
	require.Equal(t, "name = \"ag\"\ndescription = \"Codex agent\"\ndeveloper_instructions = \"Be like Codex\"\n", read(t, filepath.Join(f.codex, "agents", "ag.toml")))
	require.Equal(t, "Codex rules; Claude Code; AGENTS.md\n", read(t, filepath.Join(f.repo, "AGENTS.md")))

	// Cursor sessions: agent-transcripts (one folder deep), cwd decoded from the project key.
	proj := filepath.Join(f.root, "my-proj.v2")
	require.NoError(t, os.MkdirAll(proj, 0o755))
	key := strings.ReplaceAll(strings.TrimPrefix(proj, "/"), "/", "-")
	lines := `{"role":"user","message":{"content":[{"type":"text","text":"<timestamp>x</timestamp>\n<user_query>\nhello cursor\nline2\n</user_query>"}]}}
{"role":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Shell","input":{"command":"ls"}}]}}
{"role":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a.go"}]}}
`
	top := cur("projects/" + key + "/agent-transcripts/a.jsonl")
	nested := cur("projects/" + key + "/agent-transcripts/b/b.jsonl")
	write(t, top, lines)
	write(t, nested, lines)
	write(t, cur("projects/"+key+"/agent-transcripts/b/subagents/c.jsonl"), lines)
	write(t, cur("projects/no-such-dir-anywhere/agent-transcripts/d.jsonl"), lines)
	items, err = f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Equal(t, TypeSessions, items[len(items)-1].ItemType)
	require.Equal(t, "Migrate recent sessions from "+cur("projects"), items[len(items)-1].Description)
	sessions := items[len(items)-1].Details.Sessions
	require.ElementsMatch(t, []string{top, nested}, []string{sessions[0].Path, sessions[1].Path})
	require.Equal(t, proj, sessions[0].Cwd)
	require.Equal(t, "hello cursor", *sessions[0].Title)

	var made []string
	f.svc.CreateThread = func(cwd, name, preview string, write func(*rollout.Recorder) error) (string, error) {
		require.Equal(t, proj, cwd)
		require.Equal(t, "", name, "the title is the preview's first line")
		require.Equal(t, "hello cursor\nline2", preview)
		made = append(made, cwd)
		return "thread-1", nil
	}
	out = f.svc.Import(context.Background(), []protocol.ExternalAgentConfigMigrationItem{{ItemType: TypeSessions, Details: &protocol.MigrationDetails{Sessions: []protocol.SessionMigration{{Path: top, Cwd: "/no/such/dir"}}}}})
	require.Empty(t, out.Later, "a Cursor session imports into the selection's cwd, which must exist")
	out = f.svc.Import(context.Background(), []protocol.ExternalAgentConfigMigrationItem{{ItemType: TypeSessions, Details: &protocol.MigrationDetails{Sessions: []protocol.SessionMigration{{Path: top, Cwd: proj}}}}})
	require.Len(t, out.Later, 1)
	require.Empty(t, out.Later[0].Failures)
	require.Len(t, made, 1)
	tr, ok, err := f.svc.readTranscript(top)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{"hi\n\n[external_agent_tool_call: Shell]\ncommand: ls\n[/external_agent_tool_call]",
		"[external_agent_tool_result]\na.go\n[/external_agent_tool_result]"}, tr.Turns[0].Agent)
	f.svc.UseSource("something")
	require.Equal(t, filepath.Join(f.home, ".claude"), f.svc.SourceHome)
}

func TestCursorPlugins(t *testing.T) {
	f := newFixture(t)
	cur := func(rel string) string { return filepath.Join(f.home, ".cursor", rel) }
	market := cur("plugins/marketplaces/mk")
	write(t, filepath.Join(market, ".cursor-plugin", "marketplace.json"), `{"name":"mk","plugins":[{"name":"p1","source":"./plugins/p1"}]}`)
	write(t, filepath.Join(market, "plugins", "p1", ".cursor-plugin", "plugin.json"), `{"name":"p1","version":"1.0.0"}`)
	write(t, cur("plugins/cache/mk/p1/abc/.cursor-plugin/plugin.json"), `{"name":"p1"}`)
	write(t, cur("plugins/cache/mk/p3/v1/.cursor-plugin/plugin.json"), `{"name":"p3"}`)
	write(t, cur("plugins/cache/mk/.trash/x/.cursor-plugin/plugin.json"), `{"name":"x"}`)
	write(t, cur("plugins/cache/nomarket/p2/v1/.cursor-plugin/plugin.json"), `{"name":"p2"}`)
	f.svc.UseSource("cursor")

	items, err := f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, "Migrate cached plugins from "+cur("plugins/cache"), items[0].Description)
	require.Equal(t, []protocol.PluginsMigration{{MarketplaceName: "mk", PluginNames: []string{"p1"}}}, items[0].Details.Plugins)

	items[0].Details.Plugins = []protocol.PluginsMigration{{MarketplaceName: "mk", PluginNames: []string{"p1", "p3"}}, {MarketplaceName: "nomarket", PluginNames: []string{"p2"}}}
	out := f.svc.Import(context.Background(), items)
	require.Empty(t, out.Later)
	r := out.Immediate[0]
	id := "p1@mk"
	require.Equal(t, []protocol.ExternalAgentConfigImportItemTypeSuccess{{ItemType: TypePlugins, Source: &id, Target: &id}}, r.Successes)
	require.Len(t, r.Failures, 2)
	require.Equal(t, "plugin `p3` was not found in marketplace `mk`", r.Failures[0].Message)
	require.Equal(t, "external agent plugin marketplace source was not found: nomarket", r.Failures[1].Message)
	require.Equal(t, "[marketplaces.mk]\nsource_type = \"local\"\nsource = \""+market+"\"\n\n[plugins.\"p1@mk\"]\nenabled = true\n", read(t, filepath.Join(f.codex, "config.toml")))
	require.DirExists(t, filepath.Join(f.codex, "plugins", "cache", "mk", "p1", "1.0.0"))

	items, err = f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Empty(t, items, "installed plugins are not offered again")
}
