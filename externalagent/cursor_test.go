package externalagent

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
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

	out := f.svc.Import(items)
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

	// Cursor sessions are not imported; anything else than "cursor" is Claude Code.
	session := cur("projects/p/agent-transcripts/s.jsonl")
	write(t, session, `{"role":"user","message":{"content":[{"type":"text","text":"<user_query>hi</user_query>"}]}}`+"\n")
	out = f.svc.Import([]protocol.ExternalAgentConfigMigrationItem{{ItemType: TypeSessions, Details: &protocol.MigrationDetails{Sessions: []protocol.SessionMigration{{Path: session}}}}})
	require.Len(t, out.Later, 1)
	require.Equal(t, "importing Cursor sessions is not supported by appserver", out.Later[0].Failures[0].Message)
	f.svc.UseSource("something")
	require.Equal(t, filepath.Join(f.home, ".claude"), f.svc.SourceHome)
}
