package server

import (
	"context"
	"fmt"
	"path/filepath"

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
	r[protocol.MethodPluginList] = empty(map[string]any{"marketplaces": []any{}, "marketplaceLoadErrors": []any{}, "featuredPluginIds": []any{}})
	r[protocol.MethodPluginInstalled] = empty(map[string]any{"marketplaces": []any{}, "marketplaceLoadErrors": []any{}})
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
	r[protocol.MethodPluginUninstall] = remote("resolve remote plugin before uninstall")
	r[protocol.MethodPluginRead] = handle(func(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.PluginReadParams) (any, error) {
		return nil, pluginSource("plugin/read", p.MarketplacePath, p.RemoteMarketplaceName, "read remote plugin details")
	})
	r[protocol.MethodPluginInstall] = handle(func(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.PluginInstallParams) (any, error) {
		return nil, pluginSource("plugin/install", p.MarketplacePath, p.RemoteMarketplaceName, "read remote plugin details before install")
	})
	r[protocol.MethodMarketplaceAdd] = handle(s.marketplaceAdd)
	r[protocol.MethodMarketplaceRemove] = handle(s.marketplaceRemove)
}

// pluginSource checks the marketplace a plugin/read or plugin/install names: exactly one of a local file
// (checked, then refused: appserver installs no plugins) or a remote catalogue (needs a ChatGPT login).
func pluginSource(method string, path, remoteName *string, remoteOp string) error {
	if (path == nil) == (remoteName == nil) {
		return jsonrpc.InvalidRequest(method + " requires exactly one of marketplacePath or remoteMarketplaceName")
	}
	if remoteName != nil {
		return jsonrpc.InvalidRequest(plugins.RemoteError(remoteOp).Error())
	}
	if err := plugins.CheckMarketplaceFile(*path); err != nil {
		return jsonrpc.InvalidRequest(err.Error())
	}
	return jsonrpc.InvalidRequest(method + " from a local marketplace is not supported by appserver")
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
