package externalagent

import (
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
)

// fixture is a user home with a Claude Code layout, a CODEX_HOME and a git repository.
type fixture struct {
	root, home, codex, repo string
	svc                     *Service
}

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func newFixture(t *testing.T) *fixture {
	root := t.TempDir()
	f := &fixture{root: root, home: filepath.Join(root, "home"), codex: filepath.Join(root, "codex"), repo: filepath.Join(root, "repo")}
	require.NoError(t, os.MkdirAll(f.codex, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(f.repo, ".git"), 0o755))
	f.svc = New(f.codex, f.home)
	f.gitRewrites(t, nil)
	return f
}

// gitRewrites points git (for this test) at a global config that rewrites each URL prefix to its local
// replacement and sends every other GitHub URL to an unreachable local port: tests never reach the network.
func (f *fixture) gitRewrites(t *testing.T, rewrites map[string]string) {
	t.Helper()
	cfg := "[url \"https://127.0.0.1:1/\"]\n\tinsteadOf = https://github.com/\n"
	for from, to := range rewrites {
		cfg += fmt.Sprintf("[url %q]\n\tinsteadOf = %s\n", to, from)
	}
	path := filepath.Join(f.root, "gitconfig")
	write(t, path, cfg)
	t.Setenv("GIT_CONFIG_GLOBAL", path)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
}

func (f *fixture) claude(rel string) string { return filepath.Join(f.home, ".claude", rel) }

// full writes one of everything the home scope can migrate.
func (f *fixture) full(t *testing.T) {
	write(t, f.claude("settings.json"), `{"env":{"FOO":"bar","N":3,"B":true,"NULL":null},"sandbox":{"enabled":true},
	  "hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo stop"}]}],
	           "PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"python3 ~/.claude/hooks/check.py","timeout":5,"statusMessage":"Claude checks"}]}],
	           "UserPromptSubmit":[{"matcher":"dropped","hooks":[{"command":"echo <&>","timeoutSec":"7"},{"type":"prompt","prompt":"x"}]}]}}`)
	write(t, f.claude("hooks/check.py"), "print(1)\n")
	write(t, f.claude("CLAUDE.md"), "# Claude notes\nUse Claude Code. See CLAUDE.md; claudette stays.\n")
	write(t, f.claude("skills/myskill/SKILL.md"), "---\nname: myskill\ndescription: claude stuff\n---\nBody for Claude.\n")
	write(t, f.claude("skills/myskill/notes.txt"), "claude\n")
	write(t, f.claude("commands/pr/review.md"), "---\ndescription: Review a PR\n---\nReview with Claude.\n")
	write(t, f.claude("commands/plain.md"), "no front matter\n")
	write(t, f.claude("commands/deploy.md"), "---\ndescription: Deploy\n---\nDeploy $ARGUMENTS\n")
	write(t, f.claude("commands/README.md"), "# readme\n")
	write(t, f.claude("agents/reviewer.md"), "---\nname: reviewer\ndescription: Reviews for Claude\npermissionMode: acceptEdits\neffort: max\n---\nReview like Claude Code.\nSecond \"line\".\n")
	write(t, f.claude("agents/nodesc.md"), "---\nname: nodesc\n---\nbody\n")
	write(t, filepath.Join(f.home, ".claude.json"), `{"mcpServers":{
	  "docs":{"command":"npx","args":["-y","docs"],"env":{"TOKEN":"${TOKEN}","MODE":"x"}},
	  "remote":{"type":"http","url":"https://example.com/mcp","headers":{"Authorization":"Bearer ${API_KEY}","X-Team":"a","X-Env":"${TEAM}"}},
	  "sse":{"type":"sse","url":"https://e/sse"},
	  "placeholder":{"command":"x","args":["${HOME}/x"]},
	  "off":{"command":"y","disabled":true}},
	  "projects":{"`+f.repo+`":{"mcpServers":{"projsrv":{"command":"proj"},"shared":{"command":"home-version"}}}}}`)
}

func itemTypes(items []protocol.ExternalAgentConfigMigrationItem) []ItemType {
	var out []ItemType
	for _, it := range items {
		out = append(out, it.ItemType)
	}
	return out
}

func TestDetectHome(t *testing.T) {
	f := newFixture(t)
	f.full(t)
	items, err := f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Equal(t, []ItemType{TypeConfig, TypeMCP, TypeHooks, TypeSkills, TypeCommands, TypeSubagents, TypeAgentsMD}, itemTypes(items))
	for _, it := range items {
		require.Nil(t, it.Cwd)
	}
	require.Equal(t, "Migrate "+f.claude("settings.json")+" into "+filepath.Join(f.codex, "config.toml"), items[0].Description)
	require.Nil(t, items[0].Details)
	require.Equal(t, "Migrate MCP servers from "+f.home+" into "+filepath.Join(f.codex, "config.toml"), items[1].Description)
	require.Equal(t, []protocol.McpServerMigration{{Name: "docs"}, {Name: "remote"}}, items[1].Details.McpServers)
	require.Equal(t, []protocol.HookMigration{{Name: "PreToolUse"}, {Name: "UserPromptSubmit"}, {Name: "Stop"}}, items[2].Details.Hooks)
	require.Equal(t, "Migrate skills from "+f.claude("skills")+" to "+filepath.Join(f.root, ".agents", "skills"), items[3].Description)
	require.Equal(t, []protocol.SkillMigration{{Name: "myskill"}}, items[3].Details.Skills)
	require.Equal(t, []protocol.CommandMigration{{Name: "source-command-plain"}, {Name: "source-command-pr-review"}}, items[4].Details.Commands)
	require.Equal(t, []protocol.SubagentMigration{{Name: "reviewer"}}, items[5].Details.Subagents)
	require.Equal(t, "Migrate "+f.claude("CLAUDE.md")+" to "+filepath.Join(f.codex, "AGENTS.md"), items[6].Description)

	// Details list every kind (empty) but memory, as the reference writes them.
	raw, err := json.Marshal(items[1].Details)
	require.NoError(t, err)
	require.JSONEq(t, `{"commands":[],"hooks":[],"mcpServers":[{"name":"docs"},{"name":"remote"}],"plugins":[],"sessions":[],"skills":[],"subagents":[]}`, string(raw))

	none, err := f.svc.Detect(DetectOptions{})
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestDetectRepo(t *testing.T) {
	f := newFixture(t)
	f.full(t)
	write(t, filepath.Join(f.repo, ".mcp.json"), `{"mcpServers":{"shared":{"command":"repo-version"}}}`)
	write(t, filepath.Join(f.repo, ".claude", "CLAUDE.md"), "nested claude doc\n")
	write(t, filepath.Join(f.repo, ".claude", "settings.json"), `{"env":{"REPO":"1"}}`)
	write(t, filepath.Join(f.repo, ".claude", "commands", "x.md"), "x\n")
	sub := filepath.Join(f.repo, "a", "b")
	require.NoError(t, os.MkdirAll(sub, 0o755))

	items, err := f.svc.Detect(DetectOptions{Cwds: []string{sub, filepath.Join(f.root, "missing")}})
	require.NoError(t, err)
	require.Equal(t, []ItemType{TypeConfig, TypeMCP, TypeCommands, TypeAgentsMD}, itemTypes(items))
	for _, it := range items {
		require.Equal(t, f.repo, *it.Cwd)
	}
	require.Equal(t, "Migrate MCP servers from "+f.repo+" into "+filepath.Join(f.repo, ".codex", "config.toml"), items[1].Description)
	require.Equal(t, []protocol.McpServerMigration{{Name: "projsrv"}, {Name: "shared"}}, items[1].Details.McpServers)
	require.Equal(t, "Migrate "+filepath.Join(f.repo, ".claude", "CLAUDE.md")+" to "+filepath.Join(f.repo, "AGENTS.md"), items[3].Description)

	// A repo-level CLAUDE.md wins over .claude/CLAUDE.md.
	write(t, filepath.Join(f.repo, "CLAUDE.md"), "top doc\n")
	items, err = f.svc.Detect(DetectOptions{Cwds: []string{f.repo}})
	require.NoError(t, err)
	require.Equal(t, "Migrate "+filepath.Join(f.repo, "CLAUDE.md")+" to "+filepath.Join(f.repo, "AGENTS.md"), items[len(items)-1].Description)
}

func TestDetectSkipsWhatExists(t *testing.T) {
	f := newFixture(t)
	f.full(t)
	write(t, filepath.Join(f.codex, "config.toml"), "sandbox_mode = \"read-only\"\n[shell_environment_policy]\ninherit = \"all\"\n[shell_environment_policy.set]\nFOO = \"x\"\nN = \"1\"\nB = \"0\"\n[mcp_servers.docs]\ncommand = \"mine\"\n")
	write(t, filepath.Join(f.codex, "hooks.json"), "{}\n")
	write(t, filepath.Join(f.codex, "AGENTS.md"), "mine\n")
	write(t, filepath.Join(f.root, ".agents", "skills", "myskill", "SKILL.md"), "mine\n")
	write(t, filepath.Join(f.root, ".agents", "skills", "source-command-plain", "SKILL.md"), "mine\n")
	write(t, filepath.Join(f.codex, "agents", "reviewer.toml"), "name = \"mine\"\n")
	items, err := f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Equal(t, []ItemType{TypeMCP, TypeCommands}, itemTypes(items))
	require.Equal(t, []protocol.McpServerMigration{{Name: "remote"}}, items[0].Details.McpServers)
	require.Equal(t, []protocol.CommandMigration{{Name: "source-command-pr-review"}}, items[1].Details.Commands)

	// An empty AGENTS.md or hooks.json counts as missing.
	write(t, filepath.Join(f.codex, "AGENTS.md"), "  \n")
	write(t, filepath.Join(f.codex, "hooks.json"), "")
	items, err = f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Equal(t, []ItemType{TypeMCP, TypeHooks, TypeCommands, TypeAgentsMD}, itemTypes(items))
}

func TestDetectErrors(t *testing.T) {
	f := newFixture(t)
	f.full(t)
	write(t, filepath.Join(f.codex, "config.toml"), "this is = = invalid\n")
	_, err := f.svc.Detect(DetectOptions{IncludeHome: true})
	require.ErrorContains(t, err, "invalid existing config.toml: TOML parse error at line 1, column 6\n  |\n1 | this is = = invalid\n  |      ^\n")

	g := newFixture(t)
	write(t, g.claude("settings.json"), "{not json")
	_, err = g.svc.Detect(DetectOptions{IncludeHome: true})
	require.Error(t, err)

	// A malformed settings.local.json is ignored for config but breaks the hooks scan (as in the reference);
	// a valid one overrides settings.json.
	h := newFixture(t)
	write(t, h.claude("settings.json"), `{"env":{"A":"1"}}`)
	write(t, h.claude("settings.local.json"), `{oops`)
	require.Equal(t, map[string]any{"shell_environment_policy": map[string]any{"inherit": "core", "set": map[string]any{"A": "1"}}},
		buildConfig(mustSettings(t, h.claude("settings.json"))))
	_, err = h.svc.Detect(DetectOptions{IncludeHome: true})
	require.ErrorContains(t, err, "invalid hooks settings")
	write(t, h.claude("settings.local.json"), `{"env":{"A":"2"},"sandbox":{"enabled":true}}`)
	require.Equal(t, map[string]any{"shell_environment_policy": map[string]any{"inherit": "core", "set": map[string]any{"A": "2"}}, "sandbox_mode": "workspace-write"},
		buildConfig(mustSettings(t, h.claude("settings.json"))))
}

func mustSettings(t *testing.T, path string) map[string]any {
	s, ok, err := effectiveSettings(path)
	require.NoError(t, err)
	require.True(t, ok)
	return s
}

func TestDetectPlugins(t *testing.T) {
	f := newFixture(t)
	mkt := filepath.Join(f.home, ".claude", "mkt")
	require.NoError(t, os.MkdirAll(mkt, 0o755))
	write(t, f.claude("settings.json"), `{"enabledPlugins":{"b@claude-plugins-official":true,"a@claude-plugins-official":true,"off@claude-plugins-official":false,
	  "loc@mine":true,"gone@missing":true,"x@nowhere":true,"done@claude-plugins-official":true,"bad":true},
	  "extraKnownMarketplaces":{"mine":{"source":{"source":"directory","path":"./mkt"}},"missing":{"source":{"path":"./nope"}}}}`)
	write(t, filepath.Join(f.codex, "config.toml"), "[plugins.\"done@claude-plugins-official\"]\nenabled = true\n")
	items, err := f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Equal(t, []ItemType{TypePlugins}, itemTypes(items))
	require.Equal(t, "Migrate enabled plugins from "+f.claude("settings.json"), items[0].Description)
	require.Equal(t, []protocol.PluginsMigration{{MarketplaceName: "claude-plugins-official", PluginNames: []string{"a", "b"}}, {MarketplaceName: "mine", PluginNames: []string{"loc"}}}, items[0].Details.Plugins)
}

func importAll(t *testing.T, f *fixture, cwd *string) Outcome {
	t.Helper()
	items, err := f.svc.Detect(DetectOptions{IncludeHome: cwd == nil, Cwds: func() []string {
		if cwd == nil {
			return nil
		}
		return []string{*cwd}
	}()})
	require.NoError(t, err)
	require.NotEmpty(t, items)
	return f.svc.Import(context.Background(), items)
}

func TestImportHome(t *testing.T) {
	f := newFixture(t)
	f.full(t)
	const existing = "# my settings\nmodel = \"m\" # keep this\nsandbox_mode = \"read-only\"\n\n# shell\n[shell_environment_policy]\ninherit = \"all\"\n"
	write(t, filepath.Join(f.codex, "config.toml"), existing)
	out := importAll(t, f, nil)
	require.Empty(t, out.Later)
	for _, r := range out.Immediate {
		require.Empty(t, r.Failures, r.Type)
		require.NotEmpty(t, r.Successes, r.Type)
	}
	cfg := read(t, filepath.Join(f.codex, "config.toml"))
	require.Contains(t, cfg, existing, "existing bytes and comments are kept")
	parsed, err := parseTOML([]byte(cfg))
	require.NoError(t, err)
	require.Equal(t, "read-only", parsed["sandbox_mode"], "existing keys win")
	require.Equal(t, map[string]any{"inherit": "all", "set": map[string]any{"FOO": "bar", "N": "3", "B": "true"}}, parsed["shell_environment_policy"])
	require.Equal(t, map[string]any{
		"docs":   map[string]any{"command": "npx", "args": []any{"-y", "docs"}, "env_vars": []any{"TOKEN"}, "env": map[string]any{"MODE": "x"}},
		"remote": map[string]any{"url": "https://example.com/mcp", "bearer_token_env_var": "API_KEY", "http_headers": map[string]any{"X-Team": "a"}, "env_http_headers": map[string]any{"X-Env": "TEAM"}},
	}, parsed["mcp_servers"])

	require.Equal(t, `{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "python3 '`+filepath.Join(f.codex, "hooks", "check.py")+`'",
            "timeout": 5,
            "statusMessage": "Codex checks"
          }
        ]
      }
    ],
    "UserPromptSubmit": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "echo <&>",
            "timeout": 7
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "echo stop"
          }
        ]
      }
    ]
  }
}
`, read(t, filepath.Join(f.codex, "hooks.json")))
	require.Equal(t, "print(1)\n", read(t, filepath.Join(f.codex, "hooks", "check.py")))
	require.Equal(t, "# Codex notes\nUse Codex. See AGENTS.md; claudette stays.\n", read(t, filepath.Join(f.codex, "AGENTS.md")))
	skills := filepath.Join(f.root, ".agents", "skills")
	require.Equal(t, "---\nname: myskill\ndescription: Codex stuff\n---\nBody for Codex.\n", read(t, filepath.Join(skills, "myskill", "SKILL.md")))
	require.Equal(t, "claude\n", read(t, filepath.Join(skills, "myskill", "notes.txt")), "only SKILL.md is rewritten")
	require.Equal(t, "---\nname: \"source-command-pr-review\"\ndescription: \"Review a PR\"\n---\n\n# source-command-pr-review\n\nUse this skill when the user asks to run the migrated source command `pr-review`.\n\n## Command Template\n\nReview with Codex.\n",
		read(t, filepath.Join(skills, "source-command-pr-review", "SKILL.md")))
	require.Contains(t, read(t, filepath.Join(skills, "source-command-plain", "SKILL.md")), "description: \"Migrated source command `plain`\"")
	require.NoDirExists(t, filepath.Join(skills, "source-command-deploy"))
	require.Equal(t, "name = \"reviewer\"\ndescription = \"Reviews for Codex\"\nmodel_reasoning_effort = \"xhigh\"\nsandbox_mode = \"workspace-write\"\ndeveloper_instructions = \"\"\"\nReview like Codex.\nSecond \"line\".\"\"\"\n",
		read(t, filepath.Join(f.codex, "agents", "reviewer.toml")))
	require.NoFileExists(t, filepath.Join(f.codex, "agents", "nodesc.toml"))

	// Everything is in place: nothing left to detect, and a second import changes nothing.
	items, err := f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Empty(t, items)
	before := read(t, filepath.Join(f.codex, "config.toml"))
	again := f.svc.Import(context.Background(), []protocol.ExternalAgentConfigMigrationItem{{ItemType: TypeConfig}, {ItemType: TypeMCP}, {ItemType: TypeHooks},
		{ItemType: TypeSkills}, {ItemType: TypeCommands}, {ItemType: TypeSubagents}, {ItemType: TypeAgentsMD}})
	for _, r := range again.Immediate {
		require.Empty(t, r.Successes, r.Type)
		require.Empty(t, r.Failures, r.Type)
	}
	require.Equal(t, before, read(t, filepath.Join(f.codex, "config.toml")))
}

func TestImportRepoAndConflicts(t *testing.T) {
	f := newFixture(t)
	f.full(t)
	write(t, filepath.Join(f.repo, ".mcp.json"), `{"mcpServers":{"shared":{"command":"repo-version"},"mine":{"command":"theirs"}}}`)
	write(t, filepath.Join(f.repo, ".claude", "settings.json"), `{"env":{"REPO":"1"}}`)
	write(t, filepath.Join(f.repo, "CLAUDE.md"), "Repo Claude doc\n")
	write(t, filepath.Join(f.repo, ".claude", "skills", "rs", "SKILL.md"), "x\n")
	write(t, filepath.Join(f.repo, ".codex", "config.toml"), "# project\n[mcp_servers.mine]\ncommand = \"ours\" # mine\n")
	repo := f.repo
	out := importAll(t, f, &repo)
	var mcp Result
	for _, r := range out.Immediate {
		require.Empty(t, r.Failures)
		require.Equal(t, f.repo, *r.cwd)
		if r.Type == TypeMCP {
			mcp = r
		}
	}
	require.Len(t, mcp.Successes, 2)
	require.Equal(t, "projsrv", *mcp.Successes[0].Source)
	require.Equal(t, "shared", *mcp.Successes[1].Source)
	cfg := read(t, filepath.Join(f.repo, ".codex", "config.toml"))
	require.Contains(t, cfg, "# project\n[mcp_servers.mine]\ncommand = \"ours\" # mine\n")
	parsed, err := parseTOML([]byte(cfg))
	require.NoError(t, err)
	servers := parsed["mcp_servers"].(map[string]any)
	require.Equal(t, "ours", servers["mine"].(map[string]any)["command"])
	require.Equal(t, "repo-version", servers["shared"].(map[string]any)["command"], "the repo's .mcp.json wins over the home's project entry")
	require.Equal(t, "Repo Codex doc\n", read(t, filepath.Join(f.repo, "AGENTS.md")))
	require.FileExists(t, filepath.Join(f.repo, ".agents", "skills", "rs", "SKILL.md"))
	require.NoFileExists(t, filepath.Join(f.codex, "AGENTS.md"), "a repo import leaves the home alone")

	// A cwd that does not exist imports nothing.
	missing := filepath.Join(f.root, "missing")
	none := f.svc.Import(context.Background(), []protocol.ExternalAgentConfigMigrationItem{{ItemType: TypeConfig, Cwd: &missing}})
	require.Empty(t, none.Immediate[0].Successes)
	require.Empty(t, none.Immediate[0].Failures)
}

func TestImportFailures(t *testing.T) {
	f := newFixture(t)
	f.full(t)
	write(t, filepath.Join(f.repo, ".claude", "settings.json"), `{"env":{"REPO":"1"}}`)
	write(t, filepath.Join(f.repo, ".codex", "config.toml"), "this is = = invalid\n")
	write(t, f.claude("settings.json"), `{"enabledPlugins":{"p@claude-plugins-official":true}}`)
	repo := f.repo
	out := f.svc.Import(context.Background(), []protocol.ExternalAgentConfigMigrationItem{
		{ItemType: TypeConfig, Cwd: &repo},
		{ItemType: TypePlugins},
		{ItemType: TypePlugins, Details: &protocol.MigrationDetails{Plugins: []protocol.PluginsMigration{{MarketplaceName: "claude-plugins-official", PluginNames: []string{"p"}}, {MarketplaceName: "nowhere", PluginNames: []string{"q"}}}}},
		{ItemType: TypeSessions, Details: &protocol.MigrationDetails{Sessions: []protocol.SessionMigration{{Path: "/nope.jsonl", Cwd: "/"}}}},
	})
	require.Len(t, out.Immediate, 4)
	sess := out.Immediate[0]
	require.Equal(t, TypeSessions, sess.Type)
	require.Equal(t, "external agent session was not detected for import: /nope.jsonl", sess.Failures[0].Message)
	require.Equal(t, "session_not_detected", *sess.Failures[0].SubErrorType)

	cfg := out.Immediate[1]
	require.Len(t, cfg.Failures, 1)
	require.Equal(t, "invalid_existing_config", *cfg.Failures[0].ErrorType)
	require.Equal(t, "import_request_failed", cfg.Failures[0].FailureStage)
	require.Contains(t, cfg.Failures[0].Message, "invalid existing config.toml: TOML parse error at line 1, column 6")
	require.Equal(t, f.repo, *cfg.Failures[0].Cwd)
	require.Equal(t, "this is = = invalid\n", read(t, filepath.Join(f.repo, ".codex", "config.toml")))

	require.Equal(t, "plugins migration item is missing details", out.Immediate[2].Failures[0].Message)
	require.Empty(t, out.Immediate[3].Failures, "remote marketplaces are reported later")
	require.Len(t, out.Later, 1)
	later := out.Later[0].Failures
	require.Len(t, later, 2)
	require.Equal(t, "p@claude-plugins-official", *later[0].Source)
	require.True(t, strings.HasPrefix(later[0].Message, "git clone https://github.com/anthropics/claude-plugins-official.git "+f.codex+"/.tmp/marketplaces/.staging/marketplace-linux-"), later[0].Message)
	require.Equal(t, "external agent plugin marketplace source was not found: nowhere", later[1].Message)

	grouped := Group(append(out.Immediate, out.Later...))
	var order []ItemType
	for _, g := range grouped {
		order = append(order, g.ItemType)
	}
	require.Equal(t, []ItemType{TypeConfig, TypePlugins, TypeSessions}, order)
	require.Len(t, grouped[1].Failures, 3)

	// A session under the source's projects folder passes the check; one without any conversation is skipped
	// silently, and a server without a thread creator fails the others.
	session := f.claude("projects/p/s.jsonl")
	write(t, session, "{}\n")
	out = f.svc.Import(context.Background(), []protocol.ExternalAgentConfigMigrationItem{{ItemType: TypeSessions, Details: &protocol.MigrationDetails{Sessions: []protocol.SessionMigration{{Path: session}, {Path: session}}}}})
	require.Len(t, out.Immediate, 1)
	require.Empty(t, out.Immediate[0].Failures)
	require.Empty(t, out.Later)
	write(t, session, `{"type":"user","cwd":"/","message":{"role":"user","content":"hi"}}`+"\n")
	out = f.svc.Import(context.Background(), []protocol.ExternalAgentConfigMigrationItem{{ItemType: TypeSessions, Details: &protocol.MigrationDetails{Sessions: []protocol.SessionMigration{{Path: session}, {Path: session}}}}})
	require.Len(t, out.Later, 1)
	require.Len(t, out.Later[0].Failures, 1, "duplicates count once")
	require.Equal(t, "session_import", out.Later[0].Failures[0].FailureStage)
}

func TestRewriteAndHookCommands(t *testing.T) {
	require.Equal(t, "Codex, Codex, Codex and AGENTS.md; claudette, my_claude", rewriteTerms("Claude Code, claude-code, CLAUDE and claude.md; claudette, my_claude"))
	for in, want := range map[string]string{
		"python3 ~/.claude/hooks/a.py":                    "python3 '/t/hooks/a.py'",
		"bash \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/a.sh": "bash '/t/hooks/a.sh'",
		"bash \"$DIR/.claude/hooks/a.sh\"":                "bash '/t/hooks/a.sh'",
		"bash '.claude/hooks/it''s.sh'":                   "bash '/t/hooks/it''s.sh'",
		"bash '.claude/hooks/a.sh'":                       "bash '/t/hooks/a.sh'",
		"X=.claude/hooks/a.sh run":                        "X=.claude/hooks/a.sh run",
		"sh .claude/hooks/*.sh":                           "sh .claude/hooks/*.sh",
		"cmd %CLAUDE_PROJECT_DIR%\\.claude\\hooks\\a":     "cmd %CLAUDE_PROJECT_DIR%\\.claude\\hooks\\a",
		"echo plain": "echo plain",
	} {
		require.Equal(t, want, rewriteHookCommand(in, "/t"), in)
	}
}

func TestHistory(t *testing.T) {
	dir := t.TempDir()
	h := NewHistory(dir)
	now := time.UnixMilli(1000)
	h.now = func() time.Time { return now }
	list, err := h.List(context.Background())
	require.NoError(t, err)
	require.Empty(t, list)

	src := "a"
	_, err = h.Record("b-id", nil, []protocol.ExternalAgentConfigImportItemTypeSuccess{{ItemType: TypeConfig, Source: &src}}, nil)
	require.NoError(t, err)
	prov := "prov"
	_, err = h.Record("a-id", &prov, nil, []protocol.ExternalAgentConfigImportItemTypeFailure{{ItemType: TypeSkills, FailureStage: "s", Message: "m"}})
	require.NoError(t, err)
	now = time.UnixMilli(2000)
	_, err = h.Record("c-id", nil, nil, nil)
	require.NoError(t, err)
	// A torn line is skipped.
	f, err := os.OpenFile(filepath.Join(dir, HistoryFile), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("{\"importId\":\"torn")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	list, err = NewHistory(dir).List(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 3)
	require.Equal(t, []string{"c-id", "a-id", "b-id"}, []string{list[0].ImportID, list[1].ImportID, list[2].ImportID}, "newest first, ties by id")
	require.Equal(t, int64(2000), list[0].CompletedAtMs)
	require.Equal(t, "prov", *list[1].ProviderID)
	require.Nil(t, list[2].ProviderID)
	require.Equal(t, "a", *list[2].Successes[0].Source)
	raw, err := json.Marshal(list[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"importId":"c-id","providerId":null,"completedAtMs":2000,"successes":[],"failures":[]}`, string(raw))
}
