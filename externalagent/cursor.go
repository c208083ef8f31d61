package externalagent

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	protocol "appserver/protocol/v2"
)

// Cursor's files, as the reference's Cursor source reads them.
const (
	cursorDirName  = ".cursor"
	cursorRules    = ".cursorrules"
	cursorMCPFile  = "mcp.json"
	cursorHookFile = "hooks.json"
)

// cursorHookEvents maps Cursor's hook events to Codex's, in the order the migration lists them; Cursor's
// other events have no Codex counterpart and are dropped.
var cursorHookEvents = [][2]string{
	{"beforeSubmitPrompt", "UserPromptSubmit"}, {"stop", "Stop"}, {"sessionStart", "SessionStart"},
	{"preToolUse", "PreToolUse"}, {"postToolUse", "PostToolUse"}, {"subagentStop", "SubagentStop"},
	{"preCompact", "PreCompact"}, {"subagentStart", "SubagentStart"},
}

// UseSource selects the agent migrated from: "cursor" (any case) is Cursor, anything else Claude Code.
func (s *Service) UseSource(name string) {
	s.cursor = strings.EqualFold(strings.TrimSpace(name), "cursor")
	dir := sourceDirName
	if s.cursor {
		dir = cursorDirName
	}
	s.SourceHome = filepath.Join(filepath.Dir(s.SourceHome), dir)
}

// rewrite renames the source agent in migrated text (Claude Code or Cursor → Codex, its instructions file
// → AGENTS.md).
func (s *Service) rewrite(text string) string {
	if !s.cursor {
		return rewriteTerms(text)
	}
	text = replaceWordHyphen(text, cursorRules, "AGENTS.md")
	return replaceWordHyphen(text, "cursor", "Codex")
}

// replaceWordHyphen is replaceWord where a hyphen also joins words ("cursor-agent" stays).
func replaceWordHyphen(input, needle, repl string) string {
	return replaceBounded(input, needle, repl, func(b byte) bool { return b == '-' || isWordByte(b) })
}

// cursorMCPPath is the scope's Cursor MCP file (~/.cursor/mcp.json or <repo>/.cursor/mcp.json).
func cursorMCPPath(sc scope) string { return filepath.Join(sc.sourceDir, cursorMCPFile) }

// cursorMCPServers reads the scope's Cursor MCP servers converted to Codex's form (nil without any).
func cursorMCPServers(sc scope) (map[string]any, error) {
	file := cursorMCPPath(sc)
	if !isFile(file) {
		return nil, nil
	}
	doc, err := readJSONObject(file)
	if err != nil {
		return nil, err
	}
	servers := map[string]any{}
	addServers(servers, doc, true)
	return buildMCPConfig(servers, nil), nil
}

// cursorHookMigration converts the scope's hooks.json ({"hooks": {event: [{command, timeout, matcher}]}}) to
// Codex's {event: [groups]}, one group per hook, matchers kept where Codex takes them.
func cursorHookMigration(sc scope) (object, error) {
	file := filepath.Join(sc.sourceDir, cursorHookFile)
	m, ok, err := readHookSettings(file)
	if err != nil || !ok {
		return nil, err
	}
	cfg, _ := m["hooks"].(map[string]any)
	var out object
	for _, ev := range cursorHookEvents {
		list, _ := cfg[ev[0]].([]any)
		var groups []any
		for _, h := range list {
			entry, ok := h.(map[string]any)
			if !ok {
				continue
			}
			hook := map[string]any{"type": "command"}
			for _, k := range []string{"command", "timeout"} {
				if v, ok := entry[k]; ok {
					hook[k] = v
				}
			}
			group := map[string]any{"hooks": []any{hook}}
			if mt, ok := entry["matcher"]; ok {
				group["matcher"] = mt
			}
			if g := convertHookGroup(ev[1], group, filepath.Dir(sc.targetHooks)); g != nil {
				groups = append(groups, g)
			}
		}
		if len(groups) > 0 {
			out = append(out, field{ev[1], groups})
		}
	}
	return out, nil
}

// detectCursorScope lists what a Cursor scope can migrate: MCP servers, hooks, skills, commands, subagents
// and (repositories) .cursorrules, in the reference's order.
func (s *Service) detectCursorScope(sc scope, add func(ItemType, string, *protocol.MigrationDetails)) error {
	migrated, err := cursorMCPServers(sc)
	if err != nil {
		return err
	}
	if len(migrated) > 0 {
		existing, err := readTOML(sc.targetConfig)
		if err != nil {
			return err
		}
		if names := missingServerNames(existing, migrated); len(names) > 0 {
			d := details()
			for _, n := range names {
				d.McpServers = append(d.McpServers, protocol.McpServerMigration{Name: n})
			}
			add(TypeMCP, fmt.Sprintf("Migrate MCP servers from %s into %s", cursorMCPPath(sc), sc.targetConfig), d)
		}
	}
	hookMig, err := cursorHookMigration(sc)
	if err != nil {
		return err
	}
	if err := detectHooks(sc, hookMig, add); err != nil {
		return err
	}
	if err := s.detectFiles(sc, add); err != nil {
		return err
	}
	if src := cursorDoc(sc); src != "" {
		empty, err := isMissingOrEmpty(sc.targetDoc)
		if err != nil {
			return err
		}
		if empty {
			add(TypeAgentsMD, fmt.Sprintf("Migrate %s to %s", src, sc.targetDoc), nil)
		}
	}
	if sc.repo == "" {
		if groups := s.cursorCachedPlugins(); len(groups) > 0 {
			configured := map[string]bool{}
			if cfg, err := readTOML(filepath.Join(s.CodexHome, "config.toml")); err == nil {
				if p, ok := cfg["plugins"].(map[string]any); ok {
					for k := range p {
						configured[k] = true
					}
				}
			}
			var left []protocol.PluginsMigration
			for _, g := range groups {
				var names []string
				for _, n := range g.PluginNames {
					if !configured[n+"@"+g.MarketplaceName] {
						names = append(names, n)
					}
				}
				if len(names) > 0 {
					left = append(left, protocol.PluginsMigration{MarketplaceName: g.MarketplaceName, PluginNames: names})
				}
			}
			if len(left) > 0 {
				d := details()
				d.Plugins = left
				add(TypePlugins, fmt.Sprintf("Migrate cached plugins from %s", filepath.Join(s.SourceHome, "plugins", "cache")), d)
			}
		}
	}
	return nil
}

// cursorMarketplace is the folder of a Cursor marketplace the user added.
func (s *Service) cursorMarketplace(name string) string {
	return filepath.Join(s.SourceHome, "plugins", "marketplaces", name)
}

// cursorCachedPlugins groups the plugins in Cursor's plugin cache (plugins/cache/<market>/<plugin>) that
// their marketplace's catalogue lists, by marketplace (both sorted).
func (s *Service) cursorCachedPlugins() []protocol.PluginsMigration {
	cache := filepath.Join(s.SourceHome, "plugins", "cache")
	markets, err := subdirNames(cache)
	if err != nil {
		return nil
	}
	var out []protocol.PluginsMigration
	for _, m := range markets {
		if strings.HasPrefix(m, ".") {
			continue
		}
		_, catalogue, err := localCatalogue(s.cursorMarketplace(m))
		if err != nil {
			continue
		}
		names, _ := subdirNames(filepath.Join(cache, m))
		var found []string
		for _, n := range names {
			if _, ok := catalogue[n]; ok && !strings.HasPrefix(n, ".") {
				found = append(found, n)
			}
		}
		if len(found) > 0 {
			sort.Strings(found)
			out = append(out, protocol.PluginsMigration{MarketplaceName: m, PluginNames: found})
		}
	}
	return out
}

// importCursorPlugins installs the item's plugins from their Cursor marketplaces (home only).
func (s *Service) importCursorPlugins(it protocol.ExternalAgentConfigMigrationItem, r *Result) {
	if it.Details == nil {
		r.failure("plugin_import", "plugins migration item is missing details", nil, nil, nil)
		return
	}
	if deref(it.Cwd) != "" {
		r.failure("plugin_import", "repository-scoped plugin migration is not allowed", nil, nil, nil)
		return
	}
	for _, g := range it.Details.Plugins {
		root := s.cursorMarketplace(g.MarketplaceName)
		if isDir(root) {
			s.installLocalPlugins(g.MarketplaceName, root, g.PluginNames, r)
			continue
		}
		for _, name := range g.PluginNames {
			id := name + "@" + g.MarketplaceName
			r.failure("plugin_import", "external agent plugin marketplace source was not found: "+g.MarketplaceName, nil, nil, &id)
		}
	}
}

// cursorDoc is a repository's .cursorrules when it has content ("" otherwise, and for the home).
func cursorDoc(sc scope) string {
	if sc.repo == "" {
		return ""
	}
	src := filepath.Join(sc.repo, cursorRules)
	if ok, err := isNonEmptyFile(src); err != nil || !ok {
		return ""
	}
	return src
}

// importCursorMCP adds the scope's Cursor MCP servers its config lacks.
func (s *Service) importCursorMCP(sc scope, r *Result) error {
	migrated, err := cursorMCPServers(sc)
	if err != nil || len(migrated) == 0 {
		return err
	}
	if err := s.addMissingMCPServers(sc.targetConfig, sc.repo == "", migrated, r); err != nil {
		return err
	}
	return nil
}

// importCursorHooks writes the scope's hooks.json from Cursor's when it is missing or empty.
func importCursorHooks(sc scope, r *Result) error {
	m, err := cursorHookMigration(sc)
	if err != nil || len(m) == 0 {
		return err
	}
	empty, err := isMissingOrEmpty(sc.targetHooks)
	if err != nil || !empty {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(sc.targetHooks), 0o755); err != nil {
		return err
	}
	b, err := indentJSON(object{{"hooks", m}})
	if err != nil {
		return err
	}
	if err := os.WriteFile(sc.targetHooks, b, 0o644); err != nil {
		return err
	}
	for _, n := range hookEventNames(m) {
		r.success(n, n)
	}
	return nil
}
