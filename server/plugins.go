package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"appserver/jsonrpc"
	"appserver/plugins"
	protocol "appserver/protocol/v2"
)

// addPluginRoutes registers plugin/*, app/* and marketplace/*: empty local catalogues (appserver installs
// no plugins), the reference's checks of local marketplace files and its errors for remote-only operations.
func (s *Server) addPluginRoutes(r map[string]route) {
	empty := func(v any) route {
		return func(context.Context, *connection, *jsonrpc.Request, any) (any, error) { return v, nil }
	}
	remote := func(op string) route {
		return func(context.Context, *connection, *jsonrpc.Request, any) (any, error) {
			return nil, jsonrpc.InvalidRequest(plugins.RemoteError(op).Error())
		}
	}
	r[protocol.MethodPluginList] = handle(func(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.PluginListParams) (any, error) {
		ms, errs := s.localMarketplaces(pluginCwds(p.Cwds), false)
		return protocol.PluginListResponse{Marketplaces: ms, MarketplaceLoadErrors: errs, FeaturedPluginIds: []string{}}, nil
	})
	r[protocol.MethodPluginInstalled] = handle(func(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.PluginInstalledParams) (any, error) {
		ms, errs := s.localMarketplaces(pluginCwds(p.Cwds), true)
		return protocol.PluginInstalledResponse{Marketplaces: ms, MarketplaceLoadErrors: errs}, nil
	})
	r[protocol.MethodPluginSearch] = empty(map[string]any{"data": []any{}, "nextCursor": nil})
	r[protocol.MethodPluginReconcile] = empty(map[string]any{"changedPlugins": []any{}, "failedRemotePluginIds": []any{}, "failedMaterializationRemotePluginIds": []any{}})
	r[protocol.MethodMarketplaceUpgrade] = empty(map[string]any{"selectedMarketplaces": []any{}, "upgradedRoots": []any{}, "errors": []any{}})
	r[protocol.MethodAppList] = empty(map[string]any{"data": []any{}, "nextCursor": nil})
	r[protocol.MethodAppInstalled] = empty(map[string]any{"apps": []any{}})
	r[protocol.MethodAppRead] = handle(func(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.AppsReadParams) (any, error) {
		missing := append([]string{}, p.AppIds...)
		return map[string]any{"apps": []any{}, "missingAppIds": missing}, nil
	})
	r[protocol.MethodPluginSkillRead] = remote("read remote plugin skill details")
	r[protocol.MethodPluginShareSave] = remote("save remote plugin share")
	r[protocol.MethodPluginShareUpdateTargets] = remote("update remote plugin share targets")
	r[protocol.MethodPluginShareList] = remote("list remote plugin shares")
	r[protocol.MethodPluginShareCheckout] = remote("checkout plugin share")
	r[protocol.MethodPluginShareDelete] = remote("delete remote plugin share")
	r[protocol.MethodPluginUninstall] = handle(s.pluginUninstall)
	r[protocol.MethodPluginRead] = handle(func(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.PluginReadParams) (any, error) {
		m, pl, err := localPlugin("plugin/read", p.MarketplacePath, p.RemoteMarketplaceName, p.PluginName, "read remote plugin details")
		if err != nil {
			return nil, err
		}
		return protocol.PluginReadResponse{Plugin: protocol.PluginDetail{
			MarketplaceName: m.Name, MarketplacePath: ptr(m.Path), Summary: s.pluginSummary(pl, plugins.EnabledIDs(s.currentConfig().Raw())),
			Description: optString(pl.Manifest.Description), Skills: []protocol.SkillSummary{}, Hooks: []protocol.PluginHookSummary{},
			Apps: []protocol.AppSummary{}, AppTemplates: []protocol.AppTemplateSummary{}, McpServers: []string{},
		}}, nil
	})
	r[protocol.MethodPluginInstall] = handle(s.pluginInstall)
	r[protocol.MethodMarketplaceAdd] = handle(s.marketplaceAdd)
	r[protocol.MethodMarketplaceRemove] = handle(s.marketplaceRemove)
}

// localPlugin finds the plugin a plugin/read or plugin/install names: exactly one of a local marketplace
// file or a remote catalogue (which needs a ChatGPT login).
func localPlugin(method string, path, remoteName *string, name, remoteOp string) (plugins.Marketplace, plugins.Plugin, error) {
	if (path == nil) == (remoteName == nil) {
		return plugins.Marketplace{}, plugins.Plugin{}, jsonrpc.InvalidRequest(method + " requires exactly one of marketplacePath or remoteMarketplaceName")
	}
	if remoteName != nil {
		return plugins.Marketplace{}, plugins.Plugin{}, jsonrpc.InvalidRequest(plugins.RemoteError(remoteOp).Error())
	}
	m, err := plugins.ReadMarketplace(*path)
	if err != nil {
		return plugins.Marketplace{}, plugins.Plugin{}, jsonrpc.InvalidRequest(err.Error())
	}
	for _, p := range m.Plugins {
		if p.Name == name {
			return m, p, nil
		}
	}
	return plugins.Marketplace{}, plugins.Plugin{}, jsonrpc.InvalidRequest(fmt.Sprintf("plugin `%s` was not found in marketplace `%s`", name, m.Name))
}

// pluginCwds is the cwds of a plugin listing, or the server's working directory.
func pluginCwds(cwds []string) []string { return requestCwds(cwds) }

// localMarketplaces lists the local marketplaces with each plugin's installed/enabled state; installedOnly
// keeps only installed plugins (and marketplaces that have some).
func (s *Server) localMarketplaces(cwds []string, installedOnly bool) ([]protocol.PluginMarketplaceEntry, []protocol.MarketplaceLoadErrorInfo) {
	home, _ := os.UserHomeDir()
	ms, loadErrs := plugins.Discover(home, cwds)
	enabled := plugins.EnabledIDs(s.currentConfig().Raw())
	out := []protocol.PluginMarketplaceEntry{}
	for _, m := range ms {
		e := protocol.PluginMarketplaceEntry{Name: m.Name, Path: ptr(m.Path), Plugins: []protocol.PluginSummary{}}
		if m.DisplayName != "" {
			e.Interface = &protocol.MarketplaceInterface{DisplayName: ptr(m.DisplayName)}
		}
		for _, p := range m.Plugins {
			sum := s.pluginSummary(p, enabled)
			if installedOnly && !sum.Installed {
				continue
			}
			e.Plugins = append(e.Plugins, sum)
		}
		if installedOnly && len(e.Plugins) == 0 {
			continue
		}
		out = append(out, e)
	}
	errs := []protocol.MarketplaceLoadErrorInfo{}
	for _, le := range loadErrs {
		errs = append(errs, protocol.MarketplaceLoadErrorInfo{MarketplacePath: le.Path, Message: le.Message})
	}
	return out, errs
}

func (s *Server) pluginSummary(p plugins.Plugin, enabled map[string]bool) protocol.PluginSummary {
	installed := plugins.Installed(s.cfg.CodexHome, p)
	m := p.Manifest
	in := &protocol.PluginInterface{DisplayName: optString(m.Interface.DisplayName), ShortDescription: optString(m.Interface.ShortDescription),
		LongDescription: optString(m.Interface.LongDescription), DeveloperName: optString(m.Interface.DeveloperName),
		Category: optString(m.Interface.Category), Capabilities: m.Interface.Capabilities, WebsiteURL: optString(m.Interface.WebsiteURL),
		PrivacyPolicyURL: optString(m.Interface.PrivacyPolicyURL), TermsOfServiceURL: optString(m.Interface.TermsURL),
		BrandColor: optString(m.Interface.BrandColor), DefaultPrompt: m.Interface.DefaultPrompt,
		Screenshots: []protocol.AbsolutePathBuf{}, ScreenshotUrls: []string{}}
	if in.Capabilities == nil {
		in.Capabilities = []string{}
	}
	if in.Category == nil && p.Category != "" {
		in.Category = ptr(p.Category)
	}
	keywords := m.Keywords
	if keywords == nil {
		keywords = []string{}
	}
	return protocol.PluginSummary{ID: p.ID(), Name: p.Name, LocalVersion: optString(m.Version), Source: protocol.PluginSource{Value: protocol.PluginSourceLocal{Path: p.SourcePath}},
		Installed: installed, Enabled: installed && enabled[p.ID()], InstallPolicy: protocol.PluginInstallPolicy(p.InstallPolicy),
		AuthPolicy: protocol.PluginAuthPolicy(p.AuthPolicy), Availability: ptr(protocol.PluginAvailability("AVAILABLE")), Interface: in, Keywords: keywords}
}

// pluginInstall copies a local marketplace's plugin into the cache and enables it in config.toml.
func (s *Server) pluginInstall(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.PluginInstallParams) (any, error) {
	_, pl, err := localPlugin("plugin/install", p.MarketplacePath, p.RemoteMarketplaceName, p.PluginName, "read remote plugin details before install")
	if err != nil {
		return nil, err
	}
	if err := plugins.Install(s.cfg.CodexHome, pl); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to install plugin: %v", err)
	}
	if _, err := s.writeUserConfig(nil, nil, []protocol.ConfigEdit{{KeyPath: "plugins." + quoteKey(pl.ID()), MergeStrategy: protocol.MergeStrategyUpsert, Value: []byte(`{"enabled":true}`)}}); err != nil {
		return nil, err
	}
	return protocol.PluginInstallResponse{AuthPolicy: protocol.PluginAuthPolicy(pl.AuthPolicy), AppsNeedingAuth: []protocol.AppSummary{}}, nil
}

// pluginUninstall removes a locally installed plugin (cache and config entry); other ids belong to the
// remote catalogue.
func (s *Server) pluginUninstall(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.PluginUninstallParams) (any, error) {
	_, configured := plugins.EnabledIDs(s.currentConfig().Raw())[p.PluginID]
	name, market, ok := strings.Cut(p.PluginID, "@")
	cached := ok && plugins.Installed(s.cfg.CodexHome, plugins.Plugin{Name: name, Marketplace: market})
	if !configured && !cached {
		return nil, jsonrpc.InvalidRequest(plugins.RemoteError("resolve remote plugin before uninstall").Error())
	}
	if err := plugins.Uninstall(s.cfg.CodexHome, p.PluginID); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to uninstall plugin: %v", err)
	}
	if configured {
		if _, err := s.writeUserConfig(nil, nil, []protocol.ConfigEdit{{KeyPath: "plugins." + quoteKey(p.PluginID), MergeStrategy: protocol.MergeStrategyReplace, Value: []byte("null")}}); err != nil {
			return nil, err
		}
	}
	return struct{}{}, nil
}

func (s *Server) marketplaceAdd(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.MarketplaceAddParams) (any, error) {
	switch plugins.ClassifySource(p.Source) {
	case plugins.SourceLocal:
		path := p.Source
		if !filepath.IsAbs(path) {
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
		}
		if err := plugins.CheckMarketplaceFile(path); err != nil {
			return nil, jsonrpc.InvalidRequest(err.Error())
		}
		return nil, jsonrpc.InvalidRequest("marketplace/add of a local marketplace is not supported by appserver")
	case plugins.SourceGitHub, plugins.SourceGitURL:
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "marketplace/add from git (%s) is not supported by appserver", p.Source)
	}
	return nil, jsonrpc.InvalidRequest(plugins.ErrInvalidSource.Error())
}

// marketplaceRemove drops a `[marketplaces.<name>]` entry from the user config.
func (s *Server) marketplaceRemove(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.MarketplaceRemoveParams) (any, error) {
	ms, _ := s.currentConfig().Raw()["marketplaces"].(map[string]any)
	if _, ok := ms[p.MarketplaceName]; !ok {
		return nil, jsonrpc.InvalidRequest(fmt.Sprintf("marketplace `%s` is not configured or installed", p.MarketplaceName))
	}
	if _, err := s.writeUserConfig(nil, nil, []protocol.ConfigEdit{{KeyPath: "marketplaces." + quoteKey(p.MarketplaceName), MergeStrategy: protocol.MergeStrategyReplace, Value: []byte("null")}}); err != nil {
		return nil, err
	}
	return map[string]any{"marketplaceName": p.MarketplaceName, "installedRoot": nil}, nil
}

// quoteKey quotes a key-path segment that holds a dot.
func quoteKey(k string) string { return `"` + k + `"` }
