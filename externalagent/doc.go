// Package externalagent finds another coding agent's configuration (Claude Code: ~/.claude, a repo's
// .claude/, CLAUDE.md, .mcp.json, ~/.claude.json) and imports it into Codex's layout: config.toml keys,
// MCP servers, hooks.json, skills, commands (as skills), subagents and AGENTS.md. It also keeps the
// history of completed imports. Existing Codex entries always win: an import only adds what is missing.
package externalagent
