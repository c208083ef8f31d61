package config

import (
	"encoding/json"
)

// LayerSource identifies a configuration layer (schema ConfigLayerSource).
type LayerSource struct {
	Type           string  // SourceSystem, SourceUser, SourceProject, SourceSessionFlags
	File           string  // system and user layers
	Profile        *string // user layers: selected profile name, null otherwise
	DotCodexFolder string  // project layers
}

// MarshalJSON emits exactly the fields the schema defines for Type.
func (s LayerSource) MarshalJSON() ([]byte, error) {
	m := map[string]any{"type": s.Type}
	switch s.Type {
	case SourceSystem:
		m["file"] = s.File
	case SourceUser:
		m["file"] = s.File
		m["profile"] = s.Profile
	case SourceProject:
		m["dotCodexFolder"] = s.DotCodexFolder
	}
	return json.Marshal(m)
}

// LayerMetadata is a config/read origin entry (schema ConfigLayerMetadata).
type LayerMetadata struct {
	Name    LayerSource `json:"name"`
	Version string      `json:"version"`
}

// Layer is one entry of config/read's `layers` (schema ConfigLayer).
type Layer struct {
	Name           LayerSource    `json:"name"`
	Version        string         `json:"version"`
	Config         map[string]any `json:"config"`
	DisabledReason *string        `json:"disabledReason,omitempty"`
}

// ReadResult is the config/read response (schema ConfigReadResponse).
type ReadResult struct {
	Config  map[string]any           `json:"config"`
	Origins map[string]LayerMetadata `json:"origins"`
	Layers  []Layer                  `json:"layers,omitempty"`
}

// ReadResponse renders config/read: the effective config (snake_case
// keys, reference defaults filled in, unknown top-level keys dropped), the
// origin of every leaf key (dotted, array elements by index), and with
// includeLayers every layer, highest precedence first. A non-empty cwd adds
// that directory's project layers.
func (c *Config) ReadResponse(includeLayers bool, cwd string) (*ReadResult, error) {
	cfg := c
	var err error
	switch {
	case cwd != "":
		cfg, err = c.ForCwd(cwd)
	case c.pathBase != c.CodexHome && c.hasRelativeOverridePath():
		// without a cwd, the reference resolves the overrides' relative paths against CODEX_HOME
		cfg, err = compose(c.CodexHome, c.layers, c.CodexHome)
	}
	if err != nil {
		return nil, err
	}
	// Paths read resolved, in every layer and the effective config.
	shown := make([]*layer, len(cfg.layers))
	for i, l := range cfg.layers {
		shown[i] = l
		if raw, rel := resolvedPaths(l.raw, cfg.layerBase(cfg.layers, l)); rel {
			cp := *l
			cp.raw = raw
			shown[i] = &cp
		}
	}
	res := &ReadResult{
		Config:  jsonReady(configView(mergeLayers(shown))).(map[string]any),
		Origins: map[string]LayerMetadata{},
	}
	leaves(cfg.effective, nil, func(path []string) {
		if l, _ := originLayer(shown, path); l != nil {
			res.Origins[joinKey(path)] = LayerMetadata{Name: l.sourceInfo(), Version: l.version()}
		}
	})
	if includeLayers {
		res.Layers = []Layer{}
		for i := len(cfg.layers) - 1; i >= 0; i-- {
			l := shown[i]
			out := Layer{Name: l.sourceInfo(), Version: l.version(), Config: jsonReady(deepCopy(l.raw)).(map[string]any)}
			if l.disabled != "" {
				reason := l.disabled
				out.DisabledReason = &reason
			}
			res.Layers = append(res.Layers, out)
		}
	}
	return res, nil
}

func (l *layer) sourceInfo() LayerSource {
	s := LayerSource{Type: l.source}
	switch l.source {
	case SourceSystem:
		s.File = l.file
	case SourceUser:
		s.File = l.file
	case SourceProject:
		s.DotCodexFolder = l.file
	}
	return s
}

// nullDefaultKeys are the top-level keys the reference reports as null when unset.
var nullDefaultKeys = []string{
	"model", "review_model", "model_context_window", "model_auto_compact_token_limit",
	"model_auto_compact_token_limit_scope", "model_provider", "approval_policy", "approvals_reviewer",
	"sandbox_mode", "sandbox_workspace_write", "forced_chatgpt_workspace_id", "forced_login_method",
	"web_search", "client_search_provider", "tools", "instructions", "developer_instructions",
	"compact_prompt", "model_reasoning_effort", "model_reasoning_summary", "model_verbosity",
	"service_tier", "analytics", "apps", "browser_use", "computer_use", "desktop", "cloud",
	"show_raw_agent_reasoning", "sqlite_home", "plan_mode_reasoning_effort",
	"experimental_use_unified_exec_tool", "experimental_realtime_webrtc_call_base_url",
	"mcp_enterprise_managed_auth", "mcp_optional_startup_grace_ms", "model_instructions_file",
	"mcp_oauth_callback_url", "profile", "model_catalog_json", "audio", "experimental_realtime_ws_model",
	"experimental_compact_prompt_file", "log_dir", "projects", "feedback", "check_for_update_on_startup",
	"oss_provider", "js_repl_node_path", "experimental_realtime_ws_base_url",
	"experimental_realtime_ws_backend_prompt", "agents", "ghost_snapshot", "goals", "permissions", "hooks",
	"experimental_thread_store_endpoint", "experimental_realtime_ws_startup_context", "default_permissions",
	"experimental_realtime_start_instructions", "realtime", "tool_suggest", "tool_output_token_limit",
	"notice", "notify", "otel", "thread_unload_delay_secs", "tui", "skills", "responses_api_metadata",
	"suppress_unstable_features_warning", "personality", "experimental_thread_store",
	"apps_mcp_product_sku", "openai_base_url", "auto_review", "daybreak", "mcp_oauth_callback_port",
	"orchestrator", "model_post_turn_compact_threshold_percent", "js_repl_node_module_dirs",
	"allow_symlinked_codex_home", "memories", "windows", "disable_paste_burst",
}

// valueDefaults are the non-null top-level defaults the reference reports.
func valueDefaults() tree {
	return tree{
		"include_environment_context_time": true,
		"project_doc_max_bytes":            int64(32768),
		"include_permissions_instructions": true,
		"shell_environment_policy": tree{
			"inherit": nil, "ignore_default_excludes": nil, "exclude": nil, "set": nil,
			"include_only": nil, "filters": nil, "experimental_use_profile": nil,
		},
		"mcp_servers":                             tree{},
		"file_opener":                             "vscode",
		"background_terminal_max_timeout":         DefaultBackgroundTerminalMaxTimeout.Milliseconds(),
		"marketplaces":                            tree{},
		"chatgpt_base_url":                        "https://chatgpt.com/backend-api/",
		"project_root_markers":                    []any{".git"},
		"features":                                defaultFeaturesTree(),
		"profiles":                                tree{},
		"plugins":                                 tree{},
		"include_environment_context":             true,
		"cli_auth_credentials_store":              "file",
		"include_apps_instructions":               true,
		"history":                                 tree{"persistence": "save-all", "max_bytes": nil},
		"mcp_oauth_credentials_store":             "auto",
		"allow_login_shell":                       true,
		"model_providers":                         tree{},
		"project_doc_fallback_filenames":          []any{},
		"hide_agent_reasoning":                    false,
		"include_collaboration_mode_instructions": true,
	}
}

// providerNullKeys are the per-provider keys reported as null when unset.
var providerNullKeys = []string{
	"name", "base_url", "model_catalog_url", "env_key", "env_key_instructions", "experimental_bearer_token",
	"auth", "gateway_oauth", "aws", "project_id", "location", "credential_file", "wire_api", "capabilities",
	"query_params", "http_headers", "env_http_headers", "request_max_retries", "stream_max_retries",
	"stream_idle_timeout_ms", "websocket_connect_timeout_ms",
}

// configView builds config/read's `config` from the effective tree.
func configView(eff tree) tree {
	out := valueDefaults()
	for _, k := range nullDefaultKeys {
		out[k] = nil
	}
	for k, v := range eff {
		def, known := out[k]
		if !known && k != ownTopLevelKeys {
			continue // the reference drops unknown top-level keys here (ours only when set)
		}
		if dm, ok := def.(tree); ok {
			if vm, ok := v.(tree); ok {
				merged := deepCopy(dm)
				mergeInto(merged, vm)
				out[k] = merged
				continue
			}
		}
		out[k] = deepCopyValue(v)
	}
	if tools, ok := eff["tools"].(tree); ok {
		out["tools"] = toolsView(tools)
	}
	if user, ok := eff["features"].(tree); ok {
		// a [features] table reads with its typed network_proxy entry (null when unset)
		if _, set := user["network_proxy"]; !set {
			out["features"].(tree)["network_proxy"] = nil
		}
	}
	if providers, ok := out["model_providers"].(tree); ok {
		for id, p := range providers {
			pt, ok := p.(tree)
			if !ok {
				continue
			}
			full := tree{"requires_openai_auth": false, "supports_websockets": false, "supports_standalone_web_search": false}
			for _, k := range providerNullKeys {
				full[k] = nil
			}
			mergeInto(full, pt)
			providers[id] = full
		}
	}
	if servers, ok := out["mcp_servers"].(tree); ok {
		for _, s := range servers {
			st, ok := s.(tree)
			if !ok {
				continue
			}
			for k, v := range map[string]any{"enabled": true, "tool_timeout_sec": nil, "environment_id": "local"} {
				if _, set := st[k]; !set {
					st[k] = v
				}
			}
		}
	}
	return out
}

// reportedFeatureDefaults are the `[features]` entries config/read reports when the configuration leaves
// them unset: the reference's own list (not the features appserver consults, see DefaultFeatures).
var reportedFeatureDefaults = map[string]bool{
	"api_key_cyber_access_programs": true, "api_key_model_discovery": true, "auth_elicitation": true,
	"background_paginated_rollout_migration": false, "codex_apps_mcp_2026_07_28": false,
	"daybreak_program_propagation": false, "mcp_2026_07_28": false, "mcp_connection_sharing": false,
	"mcp_lazy_stdio_startup": false, "memories": false, "mentions_v2": true, "remote_control": false,
	"remote_plugin": true, "tool_suggest": true, "windows_sandbox_service": false,
}

func defaultFeaturesTree() tree {
	t := tree{}
	for k, v := range reportedFeatureDefaults {
		t[k] = v
	}
	return t
}
