package externalagent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"appserver/configedit"
	"appserver/plugins"
)

// sourceMarketplaceFiles are where a local source marketplace keeps its catalogue, in lookup order.
var sourceMarketplaceFiles = []string{
	filepath.Join(".claude-plugin", "marketplace.json"),
	filepath.Join(".cursor-plugin", "marketplace.json"),
	filepath.Join(".agents", "plugins", "marketplace.json"),
	filepath.Join(".codex-plugin", "marketplace.json"),
	"marketplace.json",
}

// pluginManifestFiles are where a plugin keeps its manifest, in lookup order.
var pluginManifestFiles = []string{
	filepath.Join(".codex-plugin", "plugin.json"),
	filepath.Join(".claude-plugin", "plugin.json"),
	filepath.Join(".cursor-plugin", "plugin.json"),
}

// localCatalogue reads the local marketplace at root: its name and its plugins' folders by name (only
// entries whose source is a folder inside root).
func localCatalogue(root string) (string, map[string]string, error) {
	var data []byte
	var err error
	for _, f := range sourceMarketplaceFiles {
		if data, err = os.ReadFile(filepath.Join(root, f)); err == nil {
			break
		}
	}
	if err != nil {
		return "", nil, fmt.Errorf("invalid marketplace file `%s`: marketplace root does not contain a supported manifest", root)
	}
	var c struct {
		Name    string `json:"name"`
		Plugins []struct {
			Name   string          `json:"name"`
			Source json.RawMessage `json:"source"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return "", nil, fmt.Errorf("invalid marketplace manifest in %s: %v", root, err)
	}
	out := map[string]string{}
	for _, p := range c.Plugins {
		rel := plugins.SourcePath(p.Source, "local", "directory")
		if p.Name == "" || rel == "" {
			continue
		}
		dir := filepath.Clean(filepath.Join(root, rel))
		if dir != root && !strings.HasPrefix(dir, root+string(filepath.Separator)) {
			continue
		}
		out[p.Name] = dir
	}
	return c.Name, out, nil
}

// pluginVersion is the version a plugin's manifest declares ("local" without one), naming its cache folder.
func pluginVersion(dir string) string {
	for _, f := range pluginManifestFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		var m struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(b, &m) == nil && m.Version != "" {
			return m.Version
		}
	}
	return "local"
}

// registration is how config.toml's [marketplaces.<name>] records a marketplace's origin.
type registration struct {
	sourceType, source, ref string
}

// conflicts reports whether config.toml already registers the marketplace own from another origin.
func (s *Service) conflicts(own string, reg registration) bool {
	cfg, err := readTOML(filepath.Join(s.CodexHome, "config.toml"))
	if err != nil {
		return false // the config write reports it
	}
	markets, _ := cfg["marketplaces"].(map[string]any)
	m, ok := markets[own].(map[string]any)
	if !ok {
		return false
	}
	typ, _ := m["source_type"].(string)
	src, _ := m["source"].(string)
	ref, _ := m["ref"].(string)
	return typ != reg.sourceType || src != reg.source || ref != reg.ref
}

// failAll records msg as the failure of each of the marketplace's named plugins.
func failAll(r *Result, market string, names []string, msg string) {
	for _, n := range names {
		id := n + "@" + market
		r.failure("plugin_import", msg, nil, nil, &id)
	}
}

// installLocalPlugins installs the named plugins of the local marketplace the source agent calls market (at
// root), registered as a local source.
func (s *Service) installLocalPlugins(market, root string, names []string, r *Result) {
	s.installPlugins(market, root, registration{sourceType: "local", source: root}, names, r)
}

// installRemotePlugins fetches the git marketplace the source agent calls market into
// CODEX_HOME/.tmp/marketplaces/<name> and installs the named plugins from it, registered as a git source.
func (s *Service) installRemotePlugins(ctx context.Context, market string, ms marketSource, names []string, r *Result) {
	gs, err := gitSource(ms)
	if err != nil {
		failAll(r, market, names, err.Error())
		return
	}
	checkout, cleanup, err := s.fetchMarketplace(ctx, gs)
	defer cleanup()
	if err != nil {
		failAll(r, market, names, err.Error())
		return
	}
	own, _, err := localCatalogue(checkout)
	if err != nil {
		failAll(r, market, names, err.Error())
		return
	}
	reg := registration{sourceType: "git", source: gs.src, ref: gs.ref}
	if s.conflicts(own, reg) {
		failAll(r, market, names, conflictMessage(own))
		return
	}
	dest := filepath.Join(s.CodexHome, ".tmp", "marketplaces", own)
	if err := os.RemoveAll(dest); err == nil {
		err = os.Rename(checkout, dest)
	}
	if err != nil {
		failAll(r, market, names, err.Error())
		return
	}
	s.installPlugins(market, dest, reg, names, r)
}

func conflictMessage(own string) string {
	return fmt.Sprintf("marketplace '%s' is already added from a different source; remove it before adding this source", own)
}

// installPlugins installs the named plugins of the marketplace the source agent calls market (its catalogue
// at root) for the home: each is copied into CODEX_HOME's plugin cache and enabled in config.toml under the
// name the marketplace gives itself, the marketplace registered as reg unless it is already. Results name
// the plugins as the source agent does. Plugins absent from the marketplace fail with plugin_not_found; a
// marketplace registered from another origin fails them all.
func (s *Service) installPlugins(market, root string, reg registration, names []string, r *Result) {
	own, catalogue, err := localCatalogue(root)
	if err != nil {
		failAll(r, market, names, err.Error())
		return
	}
	if own == "" {
		own = market
	}
	if s.conflicts(own, reg) {
		failAll(r, market, names, conflictMessage(own))
		return
	}
	var found []string
	for _, n := range names {
		id := n + "@" + market
		dir, ok := catalogue[n]
		if !ok {
			et := "plugin_not_found"
			r.failure("plugin_import", fmt.Sprintf("plugin `%s` was not found in marketplace `%s`", n, own), &et, nil, &id)
			continue
		}
		p := plugins.Plugin{Name: n, Marketplace: own, SourcePath: dir}
		p.Manifest.Version = pluginVersion(dir)
		if err := plugins.Install(s.CodexHome, p); err != nil {
			r.failure("plugin_import", err.Error(), nil, nil, &id)
			continue
		}
		found = append(found, n)
	}
	if len(found) == 0 {
		return
	}
	_, err = s.applyMissing(filepath.Join(s.CodexHome, "config.toml"), true, func(existing map[string]any) ([]configedit.Edit, error) {
		var edits []configedit.Edit
		markets, _ := existing["marketplaces"].(map[string]any)
		if _, ok := markets[own]; !ok {
			edits = append(edits,
				configedit.Edit{Path: []string{"marketplaces", own, "source_type"}, Value: reg.sourceType, Strategy: configedit.Replace},
				configedit.Edit{Path: []string{"marketplaces", own, "source"}, Value: reg.source, Strategy: configedit.Replace})
			if reg.ref != "" {
				edits = append(edits, configedit.Edit{Path: []string{"marketplaces", own, "ref"}, Value: reg.ref, Strategy: configedit.Replace})
			}
		}
		for _, n := range found {
			edits = append(edits, configedit.Edit{Path: []string{"plugins", n + "@" + own, "enabled"}, Value: true, Strategy: configedit.Replace})
		}
		return edits, nil
	})
	for _, n := range found {
		id := n + "@" + market
		if err != nil {
			r.failure("plugin_import", err.Error(), nil, nil, &id)
			continue
		}
		r.success(id, id)
	}
}
