package externalagent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	protocol "appserver/protocol/v2"
)

// DetectOptions selects where to look: the home, and the repositories of zero or more working directories.
type DetectOptions struct {
	IncludeHome bool
	Cwds        []string
	// MaxSessions and MaxSessionAgeDays bound the home's detected sessions (nil: the defaults).
	MaxSessions       *uint32
	MaxSessionAgeDays *uint32
	// Now, when set, is the clock session ages are measured against.
	Now func() time.Time
	// IncludeMemory adds the home's memory files (the reference's external_agent_memory_import feature).
	IncludeMemory bool
}

// Detect lists what could be imported, in the reference's order: the home's config, MCP servers, hooks,
// skills, commands, subagents, instructions and plugins not yet in Codex's files, its recent sessions, the
// same per cwd's repository, and last the home's memories (when IncludeMemory).
func (s *Service) Detect(opts DetectOptions) ([]protocol.ExternalAgentConfigMigrationItem, error) {
	items := []protocol.ExternalAgentConfigMigrationItem{}
	if opts.IncludeHome {
		if err := s.detectScope(s.homeScope(), &items); err != nil {
			return nil, err
		}
		sessions, err := s.detectSessions(opts)
		if err != nil {
			return nil, err
		}
		if len(sessions) > 0 {
			d := details()
			d.Sessions = sessions
			items = append(items, protocol.ExternalAgentConfigMigrationItem{ItemType: TypeSessions,
				Description: fmt.Sprintf("Migrate recent sessions from %s", filepath.Join(s.SourceHome, "projects")), Details: d})
		}
	}
	for _, cwd := range opts.Cwds {
		repo, ok, err := findRepoRoot(cwd)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if err := s.detectScope(s.repoScope(repo), &items); err != nil {
			return nil, err
		}
	}
	if opts.IncludeHome && opts.IncludeMemory && !s.cursor {
		keys, err := s.detectMemory()
		if err != nil {
			return nil, err
		}
		if len(keys) > 0 {
			d := details()
			d.Memory = keys
			items = append(items, protocol.ExternalAgentConfigMigrationItem{ItemType: TypeMemory,
				Description: fmt.Sprintf("Import memory files from %s to %s", filepath.Join(s.SourceHome, "projects"), s.memoryTarget()), Details: d})
		}
	}
	return items, nil
}

// details returns migration details with every list present (empty), as the reference writes them.
func details() *protocol.MigrationDetails {
	return &protocol.MigrationDetails{
		Commands: []protocol.CommandMigration{}, Hooks: []protocol.HookMigration{}, McpServers: []protocol.McpServerMigration{},
		Plugins: []protocol.PluginsMigration{}, Sessions: []protocol.SessionMigration{}, Skills: []protocol.SkillMigration{},
		Subagents: []protocol.SubagentMigration{},
	}
}

// mcpSettings is the settings that enable or disable MCP servers: the scope's own, or (a repository
// without any) the home's, ignoring a malformed home file.
func (s *Service) mcpSettings(sc scope, own map[string]any, ok bool) map[string]any {
	if ok || sc.repo == "" {
		return own
	}
	home, _, err := effectiveSettings(filepath.Join(s.SourceHome, "settings.json"))
	if err != nil {
		return nil
	}
	return home
}

func (s *Service) detectScope(sc scope, items *[]protocol.ExternalAgentConfigMigrationItem) error {
	var cwd *string
	if sc.repo != "" {
		r := sc.repo
		cwd = &r
	}
	add := func(t ItemType, desc string, d *protocol.MigrationDetails) {
		*items = append(*items, protocol.ExternalAgentConfigMigrationItem{ItemType: t, Description: desc, Cwd: cwd, Details: d})
	}
	if s.cursor {
		return s.detectCursorScope(sc, add)
	}
	settings, haveSettings, err := effectiveSettings(sc.sourceSettings)
	if err != nil {
		return err
	}
	if haveSettings {
		if migrated := buildConfig(settings); len(migrated) > 0 {
			existing, err := readTOML(sc.targetConfig)
			if err != nil {
				return err
			}
			if len(missingEdits(existing, migrated, nil)) > 0 {
				add(TypeConfig, fmt.Sprintf("Migrate %s into %s", sc.sourceSettings, sc.targetConfig), nil)
			}
		}
	}

	names, err := s.missingMCPServers(sc, settings, haveSettings)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		d := details()
		for _, n := range names {
			d.McpServers = append(d.McpServers, protocol.McpServerMigration{Name: n})
		}
		add(TypeMCP, fmt.Sprintf("Migrate MCP servers from %s into %s", sc.mcpRoot, sc.targetConfig), d)
	}

	hookMig, err := hookMigration(sc.sourceDir, filepath.Dir(sc.targetHooks))
	if err != nil {
		return err
	}
	if err := detectHooks(sc, hookMig, add); err != nil {
		return err
	}

	if err := s.detectFiles(sc, add); err != nil {
		return err
	}

	doc, err := docSource(sc)
	if err != nil {
		return err
	}
	if doc != "" {
		empty, err := isMissingOrEmpty(sc.targetDoc)
		if err != nil {
			return err
		}
		if empty {
			add(TypeAgentsMD, fmt.Sprintf("Migrate %s to %s", doc, sc.targetDoc), nil)
		}
	}

	if haveSettings && sc.repo == "" { // the reference migrates plugins for the home only
		if groups := s.pluginMigrations(sc, settings); len(groups) > 0 {
			d := details()
			d.Plugins = groups
			add(TypePlugins, fmt.Sprintf("Migrate enabled plugins from %s", sc.sourceSettings), d)
		}
	}
	return nil
}

// detectFiles lists the scope's skills, commands and subagents that the target lacks.
func (s *Service) detectFiles(sc scope, add func(ItemType, string, *protocol.MigrationDetails)) error {
	srcSkills := filepath.Join(sc.sourceDir, "skills")
	skills, err := missingSkills(srcSkills, sc.targetSkills)
	if err != nil {
		return err
	}
	if len(skills) > 0 {
		d := details()
		for _, n := range skills {
			d.Skills = append(d.Skills, protocol.SkillMigration{Name: n})
		}
		add(TypeSkills, fmt.Sprintf("Migrate skills from %s to %s", srcSkills, sc.targetSkills), d)
	}

	srcCommands := filepath.Join(sc.sourceDir, "commands")
	cmds, err := missingCommands(srcCommands, sc.targetSkills)
	if err != nil {
		return err
	}
	if len(cmds) > 0 {
		d := details()
		for _, n := range cmds {
			d.Commands = append(d.Commands, protocol.CommandMigration{Name: n})
		}
		add(TypeCommands, fmt.Sprintf("Migrate commands from %s to %s", srcCommands, sc.targetSkills), d)
	}

	srcAgents := filepath.Join(sc.sourceDir, "agents")
	agents, err := missingSubagents(srcAgents, sc.targetAgents)
	if err != nil {
		return err
	}
	if len(agents) > 0 {
		d := details()
		for _, n := range agents {
			d.Subagents = append(d.Subagents, protocol.SubagentMigration{Name: n})
		}
		add(TypeSubagents, fmt.Sprintf("Migrate subagents from %s to %s", srcAgents, sc.targetAgents), d)
	}
	return nil
}

// missingMCPServers lists the convertible source MCP servers the target config does not define yet.
func (s *Service) missingMCPServers(sc scope, settings map[string]any, haveSettings bool) ([]string, error) {
	servers, err := readMCPServers(sc.mcpRoot, s.SourceHome)
	if err != nil {
		return nil, err
	}
	migrated := buildMCPConfig(servers, s.mcpSettings(sc, settings, haveSettings))
	if len(migrated) == 0 {
		return nil, nil
	}
	existing, err := readTOML(sc.targetConfig)
	if err != nil {
		return nil, err
	}
	return missingServerNames(existing, migrated), nil
}

// missingServerNames lists migrated's servers absent from existing's mcp_servers (none when mcp_servers
// is not a table), sorted.
func missingServerNames(existing, migrated map[string]any) []string {
	cur, has := existing["mcp_servers"]
	curTable, isTable := cur.(map[string]any)
	if has && !isTable {
		return nil
	}
	var out []string
	for _, n := range sortedKeys(migrated) {
		if _, ok := curTable[n]; !ok {
			out = append(out, n)
		}
	}
	return out
}

// Marketplaces of the source agent that need no declaration, with their GitHub repositories.
var builtinMarketplaces = map[string]string{
	"claude-plugins-official": "anthropics/claude-plugins-official",
	"claude-code-plugins":     "anthropics/claude-code",
}

// knownMarketplacesFile is the source agent's registry of added marketplaces, under its home.
var knownMarketplacesFile = filepath.Join("plugins", "known_marketplaces.json")

// enabledPlugins lists the "plugin@marketplace" keys enabled in settings.
func enabledPlugins(settings map[string]any) [][2]string {
	m, _ := settings["enabledPlugins"].(map[string]any)
	var out [][2]string
	for _, k := range sortedKeys(m) {
		if on, _ := m[k].(bool); !on {
			continue
		}
		name, market, ok := strings.Cut(k, "@")
		if !ok || name == "" || market == "" || strings.Contains(market, "@") {
			continue
		}
		out = append(out, [2]string{name, market})
	}
	return out
}

// marketSource is where a marketplace comes from: a local folder, a git URL or a GitHub owner/repo, and the
// git ref to check out ("" for the default branch).
type marketSource struct {
	src, ref string
}

// entrySource is where a marketplace entry ({"source": "<s>" | {"repo"|"url"|"path": "<s>", "ref": "<r>"}})
// comes from (src "" when it names none).
func entrySource(entry map[string]any) marketSource {
	fields := entry
	if src, ok := entry["source"].(map[string]any); ok {
		fields = src
	}
	ref, _ := fields["ref"].(string)
	return marketSource{src: entrySourcePath(entry, fields), ref: strings.TrimSpace(ref)}
}

// entrySourcePath is the path, URL or repository an entry's source fields name.
func entrySourcePath(entry, fields map[string]any) string {
	var source string
	for _, k := range []string{"repo", "url", "path"} {
		if s, ok := fields[k].(string); ok {
			source = s
			break
		}
	}
	if source == "" {
		source, _ = entry["source"].(string)
	}
	return strings.TrimSpace(source)
}

// marketplaceSources maps marketplace names to where they come from: extraKnownMarketplaces entries
// (relative paths resolved against root), then the source agent's registry (an entry's source, else its
// installLocation folder), plus the built-in marketplaces an enabled plugin names.
func (s *Service) marketplaceSources(settings map[string]any, root string) map[string]marketSource {
	out := map[string]marketSource{}
	extra, _ := settings["extraKnownMarketplaces"].(map[string]any)
	for name, v := range extra {
		entry, ok := v.(map[string]any)
		if !ok {
			continue
		}
		source := entrySource(entry)
		if source.src == "" {
			continue
		}
		if p := source.src; p == "." || p == ".." || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") {
			source.src = filepath.Join(root, p)
		}
		out[name] = source
	}
	if b, err := os.ReadFile(filepath.Join(s.SourceHome, knownMarketplacesFile)); err == nil {
		var reg map[string]any
		if json.Unmarshal(b, &reg) == nil {
			for name, v := range reg {
				entry, ok := v.(map[string]any)
				if _, seen := out[name]; !ok || seen {
					continue
				}
				source := entrySource(entry)
				if source.src == "" {
					loc, _ := entry["installLocation"].(string)
					source = marketSource{src: strings.TrimSpace(loc)}
				}
				if source.src != "" {
					out[name] = source
				}
			}
		}
	}
	for _, p := range enabledPlugins(settings) {
		if repo, ok := builtinMarketplaces[p[1]]; ok {
			if _, seen := out[p[1]]; !seen {
				out[p[1]] = marketSource{src: repo}
			}
		}
	}
	return out
}

// pluginMigrations groups the enabled plugins whose marketplace is known and that the Codex config does
// not list under [plugins] yet, by marketplace (sorted; names sorted).
func (s *Service) pluginMigrations(sc scope, settings map[string]any) []protocol.PluginsMigration {
	configured := map[string]bool{}
	if home, err := readTOML(filepath.Join(s.CodexHome, "config.toml")); err == nil {
		if p, ok := home["plugins"].(map[string]any); ok {
			for k := range p {
				configured[k] = true
			}
		}
	} else {
		return nil // the reference skips plugin detection when the config does not load
	}
	root := sc.repo
	if root == "" {
		root = s.SourceHome
	}
	sources := s.marketplaceSources(settings, root)
	groups := map[string][]string{}
	for _, p := range enabledPlugins(settings) {
		if configured[p[0]+"@"+p[1]] {
			continue
		}
		if src, ok := sources[p[1]]; !ok || !loadableSource(src.src) {
			continue
		}
		groups[p[1]] = append(groups[p[1]], p[0])
	}
	var out []protocol.PluginsMigration
	for _, m := range sortedKeys(groups) {
		names := groups[m]
		sort.Strings(names)
		out = append(out, protocol.PluginsMigration{MarketplaceName: m, PluginNames: names})
	}
	return out
}

// loadableSource reports whether a marketplace source can be fetched: an existing local directory, a
// git URL or a GitHub owner/repo shorthand.
func loadableSource(src string) bool {
	if isDir(src) {
		return true
	}
	for _, p := range []string{"https://", "http://", "ssh://", "git@"} {
		if strings.HasPrefix(src, p) {
			return true
		}
	}
	if filepath.IsAbs(src) || strings.HasPrefix(src, ".") {
		return false
	}
	owner, repo, ok := strings.Cut(src, "/")
	return ok && owner != "" && repo != "" && !strings.Contains(repo, "/")
}

// detectHooks offers the hooks migration hookMig when it is not empty and the scope's hooks file is missing or
// empty.
func detectHooks(sc scope, hookMig object, add func(ItemType, string, *protocol.MigrationDetails)) error {
	if len(hookMig) == 0 {
		return nil
	}
	empty, err := isMissingOrEmpty(sc.targetHooks)
	if err != nil || !empty {
		return err
	}
	d := details()
	for _, n := range hookEventNames(hookMig) {
		d.Hooks = append(d.Hooks, protocol.HookMigration{Name: n})
	}
	add(TypeHooks, fmt.Sprintf("Migrate hooks from %s to %s", sc.sourceDir, sc.targetHooks), d)
	return nil
}
