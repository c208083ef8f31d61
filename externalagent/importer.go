package externalagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"appserver/configedit"
	protocol "appserver/protocol/v2"
)

// Result is one migration item's outcome.
type Result struct {
	Type      ItemType
	cwd       *string
	Successes []protocol.ExternalAgentConfigImportItemTypeSuccess
	Failures  []protocol.ExternalAgentConfigImportItemTypeFailure
}

func newResult(t ItemType, cwd *string) Result {
	return Result{Type: t, cwd: cwd, Successes: []protocol.ExternalAgentConfigImportItemTypeSuccess{}, Failures: []protocol.ExternalAgentConfigImportItemTypeFailure{}}
}

func (r *Result) success(source, target string) {
	r.Successes = append(r.Successes, protocol.ExternalAgentConfigImportItemTypeSuccess{ItemType: r.Type, Cwd: r.cwd, Source: &source, Target: &target})
}

func (r *Result) failure(stage, msg string, errorType, subErrorType, source *string) {
	r.Failures = append(r.Failures, protocol.ExternalAgentConfigImportItemTypeFailure{ItemType: r.Type, Cwd: r.cwd, FailureStage: stage,
		Message: msg, ErrorType: errorType, SubErrorType: subErrorType, Source: source})
}

// TypeResult is the wire form of r.
func (r Result) TypeResult() protocol.ExternalAgentConfigImportTypeResult {
	return protocol.ExternalAgentConfigImportTypeResult{ItemType: r.Type, Successes: r.Successes, Failures: r.Failures}
}

// Outcome is an import's results: Immediate ones (one per item, in order, the sessions check first) and
// Later ones (what the reference finishes in the background: remote plugins, sessions).
type Outcome struct {
	Immediate []Result
	Later     []Result
}

// Group merges results by item type, in the reference's type order, for the completed notification.
func Group(results []Result) []protocol.ExternalAgentConfigImportTypeResult {
	out := []protocol.ExternalAgentConfigImportTypeResult{}
	for _, t := range resultOrder {
		found := false
		g := protocol.ExternalAgentConfigImportTypeResult{ItemType: t, Successes: []protocol.ExternalAgentConfigImportItemTypeSuccess{}, Failures: []protocol.ExternalAgentConfigImportItemTypeFailure{}}
		for _, r := range results {
			if r.Type == t {
				found = true
				g.Successes = append(g.Successes, r.Successes...)
				g.Failures = append(g.Failures, r.Failures...)
			}
		}
		if found {
			out = append(out, g)
		}
	}
	return out
}

// NeedsReload reports whether importing items may change what a running server loaded (config, skills,
// MCP servers, hooks, plugins).
func NeedsReload(items []protocol.ExternalAgentConfigMigrationItem) bool {
	for _, it := range items {
		switch it.ItemType {
		case TypeConfig, TypeSkills, TypeMCP, TypeHooks, TypeCommands, TypePlugins:
			return true
		}
	}
	return false
}

// Import carries out the items: each adds only what its target lacks. Failures are reported in the
// results, never as an error.
func (s *Service) Import(ctx context.Context, items []protocol.ExternalAgentConfigMigrationItem) Outcome {
	immediate, finish := s.Start(items)
	return Outcome{Immediate: immediate, Later: finish(ctx)}
}

// Start carries out what the reference does before it answers (every item but session imports and
// plugins from remote marketplaces) and returns finish, which does the rest: a caller answers the request
// between the two, so a slow clone or a long transcript never holds up the answer.
func (s *Service) Start(items []protocol.ExternalAgentConfigMigrationItem) (immediate []Result, finish func(context.Context) []Result) {
	var later []func(context.Context) *Result
	if check, sessions, ok := s.checkSessions(items); ok {
		immediate = append(immediate, check)
		if sessions != nil {
			later = append(later, sessions)
		}
	}
	for _, it := range items {
		if it.ItemType == TypeSessions {
			continue
		}
		var cwd *string
		if it.Cwd != nil {
			c := *it.Cwd
			cwd = &c
		}
		r := newResult(it.ItemType, cwd)
		switch {
		case it.ItemType == TypeMemory:
			s.importMemory(it, &r)
		case it.ItemType == TypePlugins && s.cursor:
			s.importCursorPlugins(it, &r)
		case it.ItemType == TypePlugins:
			if remote := s.importPlugins(it, &r); remote != nil {
				later = append(later, remote)
			}
		default:
			if err := s.importItem(it, &r); err != nil {
				msg := err.Error()
				et := "external_agent_config_import_error"
				if strings.Contains(msg, "invalid existing config.toml") {
					et = "invalid_existing_config"
				}
				r.failure("import_request_failed", msg, &et, nil, nil)
			}
		}
		immediate = append(immediate, r)
	}
	return immediate, func(ctx context.Context) []Result {
		var out []Result
		for _, f := range later {
			if r := f(ctx); r != nil {
				out = append(out, *r)
			}
		}
		return out
	}
}

func (s *Service) importItem(it protocol.ExternalAgentConfigMigrationItem, r *Result) error {
	sc, ok, err := s.scopeFor(deref(it.Cwd))
	if err != nil || !ok {
		return err
	}
	home := sc.repo == ""
	if s.cursor {
		switch it.ItemType {
		case TypeConfig:
			return nil
		case TypeMCP:
			return s.importCursorMCP(sc, r)
		case TypeHooks:
			return importCursorHooks(sc, r)
		case TypeAgentsMD:
			src := cursorDoc(sc)
			if src == "" {
				return nil
			}
			empty, err := isMissingOrEmpty(sc.targetDoc)
			if err != nil || !empty {
				return err
			}
			if err := copyRewritten(src, sc.targetDoc, s.rewrite); err != nil {
				return err
			}
			r.success(src, sc.targetDoc)
			return nil
		}
	}
	switch it.ItemType {
	case TypeConfig:
		settings, ok, err := effectiveSettings(sc.sourceSettings)
		if err != nil || !ok {
			return err
		}
		migrated := buildConfig(settings)
		if len(migrated) == 0 {
			return nil
		}
		changed, err := s.applyMissing(sc.targetConfig, home, func(existing map[string]any) ([]configedit.Edit, error) {
			return missingEdits(existing, migrated, nil), nil
		})
		if err != nil {
			return err
		}
		if changed {
			r.success(sc.sourceSettings, sc.targetConfig)
		}
	case TypeMCP:
		settings, ok, err := effectiveSettings(sc.sourceSettings)
		if err != nil {
			return err
		}
		servers, err := readMCPServers(sc.mcpRoot, s.SourceHome)
		if err != nil {
			return err
		}
		migrated := buildMCPConfig(servers, s.mcpSettings(sc, settings, ok))
		if len(migrated) == 0 {
			return nil
		}
		if err := s.addMissingMCPServers(sc.targetConfig, home, migrated, r); err != nil {
			return err
		}
	case TypeHooks:
		names, err := importHooks(sc.sourceDir, sc.targetHooks)
		for _, n := range names {
			r.success(n, n)
		}
		return err
	case TypeSkills:
		names, err := importSkills(filepath.Join(sc.sourceDir, "skills"), sc.targetSkills, s.rewrite)
		for _, n := range names {
			r.success(n, n)
		}
		return err
	case TypeCommands:
		names, err := importCommands(filepath.Join(sc.sourceDir, "commands"), sc.targetSkills, s.rewrite)
		for _, n := range names {
			r.success(n, n)
		}
		return err
	case TypeSubagents:
		names, err := importSubagents(filepath.Join(sc.sourceDir, "agents"), sc.targetAgents, s.rewrite)
		for _, n := range names {
			r.success(n, n)
		}
		return err
	case TypeAgentsMD:
		src, err := docSource(sc)
		if err != nil || src == "" {
			return err
		}
		empty, err := isMissingOrEmpty(sc.targetDoc)
		if err != nil || !empty {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(sc.targetDoc), 0o755); err != nil {
			return err
		}
		if err := copyRewritten(src, sc.targetDoc, s.rewrite); err != nil {
			return err
		}
		r.success(src, sc.targetDoc)
	}
	return nil
}

// importPlugins installs the item's plugins of local marketplace folders at once (home scope only) and
// returns the result of the others, which the reference reports later: git and GitHub marketplaces are
// cloned and installed from, unknown marketplaces and sources that do not resolve fail.
func (s *Service) importPlugins(it protocol.ExternalAgentConfigMigrationItem, r *Result) func(context.Context) *Result {
	if it.Details == nil {
		r.failure("plugin_import", "plugins migration item is missing details", nil, nil, nil)
		return nil
	}
	if deref(it.Cwd) != "" {
		r.failure("plugin_import", "repository-scoped plugin migration is not allowed", nil, nil, nil)
		return nil
	}
	var sources map[string]marketSource
	sc, ok, err := s.scopeFor(deref(it.Cwd))
	if err == nil && ok {
		if settings, ok, err := effectiveSettings(sc.sourceSettings); err == nil && ok {
			root := sc.repo
			if root == "" {
				root = s.SourceHome
			}
			sources = s.marketplaceSources(settings, root)
		}
	}
	var remote []protocol.PluginsMigration
	for _, g := range it.Details.Plugins {
		if src, known := sources[g.MarketplaceName]; known && isDir(src.src) {
			s.installLocalPlugins(g.MarketplaceName, src.src, g.PluginNames, r)
			continue
		}
		remote = append(remote, g)
	}
	if len(remote) == 0 {
		return nil
	}
	cwd := r.cwd
	return func(ctx context.Context) *Result {
		later := newResult(TypePlugins, cwd)
		for _, g := range remote {
			src, known := sources[g.MarketplaceName]
			if !known {
				failAll(&later, g.MarketplaceName, g.PluginNames, "external agent plugin marketplace source was not found: "+g.MarketplaceName)
				continue
			}
			s.installRemotePlugins(ctx, g.MarketplaceName, src, g.PluginNames, &later)
		}
		return &later
	}
}

// checkSessions validates the SESSIONS items' sessions (each must be a .jsonl file under the source's projects
// folder) and imports the valid ones as threads. ok is false when no session was selected. The check is
// reported at once, the imports later, as the reference reports its background session imports; a session
// without any conversation is skipped silently.
func (s *Service) checkSessions(items []protocol.ExternalAgentConfigMigrationItem) (Result, func(context.Context) *Result, bool) {
	var sessions []protocol.SessionMigration
	for _, it := range items {
		if it.ItemType == TypeSessions && it.Details != nil {
			sessions = append(sessions, it.Details.Sessions...)
		}
	}
	if len(sessions) == 0 {
		return Result{}, nil, false
	}
	check := newResult(TypeSessions, nil)
	var accepted []protocol.SessionMigration
	seen := map[string]bool{}
	for _, sess := range sessions {
		src := sess.Path
		canon, err := s.sessionSource(sess.Path)
		switch {
		case err != nil:
			sub := "failed_to_resolve_session_source_path"
			check.failure("session_source_path", err.Error(), nil, &sub, &src)
		case canon == "":
			sub := "session_not_detected"
			check.failure("session_missing", "external agent session was not detected for import: "+sess.Path, nil, &sub, &src)
		case !seen[canon]:
			seen[canon] = true
			accepted = append(accepted, sess)
		}
	}
	if len(accepted) == 0 {
		return check, nil, true
	}
	return check, func(context.Context) *Result {
		later := newResult(TypeSessions, nil)
		for _, sess := range accepted {
			src := sess.Path
			succ, ok, err := s.importSession(sess)
			switch {
			case err != nil:
				sub := "session_import_failed"
				later.failure("session_import", err.Error(), nil, &sub, &src)
			case ok:
				later.Successes = append(later.Successes, succ)
			}
		}
		if len(later.Failures) == 0 && len(later.Successes) == 0 {
			return nil
		}
		return &later
	}, true
}

// sessionSource resolves a session path that lies under the source's projects folder ("" otherwise).
func (s *Service) sessionSource(path string) (string, error) {
	if filepath.Ext(path) != ".jsonl" {
		return "", nil
	}
	canon, err := filepath.EvalSymlinks(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	root, err := filepath.EvalSymlinks(filepath.Join(s.SourceHome, "projects"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(root, canon); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", nil
	}
	return canon, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// addMissingMCPServers adds to config the migrated MCP servers it lacks, reporting each added one to r.
func (s *Service) addMissingMCPServers(config string, home bool, migrated map[string]any, r *Result) error {
	var names []string
	_, err := s.applyMissing(config, home, func(existing map[string]any) ([]configedit.Edit, error) {
		names = missingServerNames(existing, migrated)
		edits := make([]configedit.Edit, 0, len(names))
		for _, n := range names {
			edits = append(edits, configedit.Edit{Path: []string{"mcp_servers", n}, Value: migrated[n], Strategy: configedit.Replace})
		}
		return edits, nil
	})
	if err != nil {
		return err
	}
	for _, n := range names {
		r.success(n, n)
	}
	return nil
}
