package externalagent

import (
	"os"
	"path/filepath"
	"strings"
)

// readMCPServers collects the source's MCP server definitions for root: root/.mcp.json, then
// root/.claude.json (its top level and its projects entry for root) overwrite by name; the home's
// ~/.claude.json projects entry for root (when root is not the home) only adds names not seen yet.
func readMCPServers(root, sourceHome string) (map[string]any, error) {
	servers := map[string]any{}
	for _, name := range []string{sourceMCPFile, sourceStateFile} {
		file := filepath.Join(root, name)
		if !isFile(file) {
			continue
		}
		doc, err := readJSONObject(file)
		if err != nil {
			return nil, err
		}
		addServers(servers, doc, true)
		if name == sourceStateFile {
			if projects, ok := doc["projects"].(map[string]any); ok {
				for _, p := range sortedKeys(projects) {
					if samePath(p, root) {
						if pm, ok := projects[p].(map[string]any); ok {
							addServers(servers, pm, true)
						}
					}
				}
			}
		}
	}
	if sourceHome != "" {
		homeRoot := filepath.Dir(sourceHome)
		if homeRoot != root {
			file := filepath.Join(homeRoot, sourceStateFile)
			if isFile(file) {
				doc, err := readJSONObject(file)
				if err != nil {
					return nil, err
				}
				if projects, ok := doc["projects"].(map[string]any); ok {
					for _, p := range sortedKeys(projects) {
						if samePath(p, root) {
							if pm, ok := projects[p].(map[string]any); ok {
								addServers(servers, pm, false)
							}
						}
					}
				}
			}
		}
	}
	return servers, nil
}

func readJSONObject(file string) (map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	v, err := decodeJSON(b)
	if err != nil {
		return nil, invalidf("invalid MCP config: %v", err)
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

func addServers(dst map[string]any, doc map[string]any, overwrite bool) {
	ms, ok := doc["mcpServers"].(map[string]any)
	if !ok {
		return
	}
	for name, cfg := range ms {
		if _, seen := dst[name]; seen && !overwrite {
			continue
		}
		dst[name] = cfg
	}
}

// samePath reports whether a projects key names root (literally or after resolving both).
func samePath(p, root string) bool {
	if p == root {
		return true
	}
	a, err1 := filepath.EvalSymlinks(p)
	b, err2 := filepath.EvalSymlinks(root)
	return err1 == nil && err2 == nil && a == b
}

// buildMCPConfig converts source MCP servers to config.toml's mcp_servers tables, leaving out disabled
// servers, unsupported transports and values with ${VAR} placeholders Codex cannot express.
func buildMCPConfig(servers map[string]any, settings map[string]any) map[string]any {
	enabled := stringList(settings["enabledMcpjsonServers"])
	disabled := map[string]bool{}
	for _, n := range stringList(settings["disabledMcpjsonServers"]) {
		disabled[n] = true
	}
	out := map[string]any{}
	for _, name := range sortedKeys(servers) {
		cfg, ok := servers[name].(map[string]any)
		if !ok || serverDisabled(name, cfg, enabled, disabled) {
			continue
		}
		if t := mcpTable(cfg); t != nil {
			out[name] = t
		}
	}
	return out
}

func serverDisabled(name string, cfg map[string]any, enabled []string, disabled map[string]bool) bool {
	if v, ok := cfg["enabled"].(bool); ok && !v {
		return true
	}
	if v, ok := cfg["disabled"].(bool); ok && v {
		return true
	}
	if len(enabled) > 0 {
		found := false
		for _, e := range enabled {
			found = found || e == name
		}
		if !found {
			return true
		}
	}
	return disabled[name]
}

func mcpTable(cfg map[string]any) map[string]any {
	t := map[string]any{}
	transport, hasType := cfg["type"].(string)
	if cmd, ok := jsonScalar(cfg["command"]); ok {
		if hasType && transport != "stdio" {
			return nil
		}
		if hasPlaceholder(cmd) {
			return nil
		}
		t["command"] = cmd
		if raw, ok := cfg["args"]; ok {
			args := stringList(raw)
			list := make([]any, 0, len(args))
			for _, a := range args {
				if hasPlaceholder(a) {
					return nil
				}
				list = append(list, a)
			}
			if len(list) > 0 {
				t["args"] = list
			}
		}
		if env, ok := cfg["env"].(map[string]any); ok {
			static := map[string]any{}
			var vars []any
			for _, k := range sortedKeys(env) {
				val, ok := jsonScalar(env[k])
				if !ok {
					val = compactJSON(env[k])
				}
				if name, ok := parsePlaceholder(val); ok && name == k {
					vars = append(vars, k)
				} else if hasPlaceholder(val) {
					return nil
				} else {
					static[k] = val
				}
			}
			if len(vars) > 0 {
				t["env_vars"] = vars
			}
			if len(static) > 0 {
				t["env"] = static
			}
		}
		return t
	}
	url, ok := jsonScalar(cfg["url"])
	if !ok {
		return nil
	}
	if hasType && transport != "http" && transport != "streamable_http" {
		return nil
	}
	if hasPlaceholder(url) {
		return nil
	}
	t["url"] = url
	if headers, ok := cfg["headers"].(map[string]any); ok {
		static := map[string]any{}
		envHeaders := map[string]any{}
		for _, k := range sortedKeys(headers) {
			val, ok := jsonScalar(headers[k])
			if !ok {
				val = compactJSON(headers[k])
			}
			if strings.EqualFold(k, "authorization") {
				if rest, ok := strings.CutPrefix(val, "Bearer "); ok {
					if name, ok := parsePlaceholder(rest); ok {
						t["bearer_token_env_var"] = name
						continue
					}
				}
			}
			if name, ok := parsePlaceholder(val); ok {
				envHeaders[k] = name
			} else if hasPlaceholder(val) {
				return nil
			} else {
				static[k] = val
			}
		}
		if len(static) > 0 {
			t["http_headers"] = static
		}
		if len(envHeaders) > 0 {
			t["env_http_headers"] = envHeaders
		}
	}
	return t
}

// parsePlaceholder returns NAME for a value that is exactly ${NAME} or ${NAME:-default}.
func parsePlaceholder(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, "${")
	if !ok {
		return "", false
	}
	inner, ok = strings.CutSuffix(inner, "}")
	if !ok {
		return "", false
	}
	if i := strings.Index(inner, ":-"); i >= 0 {
		inner = inner[:i]
	}
	if inner == "" {
		return "", false
	}
	for i, c := range inner {
		alpha := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !alpha && (i == 0 || c < '0' || c > '9') {
			return "", false
		}
	}
	return inner, true
}

func hasPlaceholder(v string) bool { return strings.Contains(v, "${") }

// stringList reads a JSON string list (a single scalar counts as one element).
func stringList(v any) []string {
	if arr, ok := v.([]any); ok {
		var out []string
		for _, e := range arr {
			if s, ok := jsonScalar(e); ok {
				out = append(out, s)
			}
		}
		return out
	}
	if s, ok := jsonScalar(v); ok {
		return []string{s}
	}
	return nil
}
