package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"

	"appserver/features"
)

// knownTopLevelKeys are the config.toml keys codex-cli 0.169.0 recognizes at the top level (the keys of
// its config/read answer), space-separated; strictSchema indexes them on first use.
const knownTopLevelKeys = `agents allow_login_shell allow_symlinked_codex_home analytics approval_policy
		approvals_reviewer apps apps_mcp_product_sku audio auto_review background_terminal_max_timeout browser_use
		chatgpt_base_url check_for_update_on_startup cli_auth_credentials_store client_search_provider cloud
		compact_prompt computer_use daybreak default_permissions desktop developer_instructions disable_paste_burst
		experimental_compact_prompt_file experimental_realtime_start_instructions
		experimental_realtime_webrtc_call_base_url experimental_realtime_ws_backend_prompt
		experimental_realtime_ws_base_url experimental_realtime_ws_model experimental_realtime_ws_startup_context
		experimental_thread_store experimental_thread_store_endpoint experimental_use_unified_exec_tool features
		feedback file_opener forced_chatgpt_workspace_id forced_login_method ghost_snapshot goals
		hide_agent_reasoning history hooks include_apps_instructions include_collaboration_mode_instructions
		include_environment_context include_environment_context_time include_permissions_instructions instructions
		js_repl_node_module_dirs js_repl_node_path log_dir marketplaces mcp_enterprise_managed_auth
		mcp_oauth_callback_port mcp_oauth_callback_url mcp_oauth_credentials_store mcp_optional_startup_grace_ms
		mcp_servers memories model model_auto_compact_token_limit model_auto_compact_token_limit_scope
		model_catalog_json model_context_window model_instructions_file model_post_turn_compact_threshold_percent
		model_provider model_providers model_reasoning_effort model_reasoning_summary model_verbosity notice notify
		openai_base_url orchestrator oss_provider otel permissions personality plan_mode_reasoning_effort plugins
		profile profiles project_doc_fallback_filenames project_doc_max_bytes project_root_markers projects realtime
		responses_api_metadata review_model sandbox_mode sandbox_workspace_write service_tier
		shell_environment_policy show_raw_agent_reasoning skills sqlite_home suppress_unstable_features_warning
		thread_unload_delay_secs tool_output_token_limit tool_suggest tools tui web_search windows`

// ownTopLevelKeys are appserver's own top-level settings, not reported as unknown.
const ownTopLevelKeys = "approval_timeout_ms"

// UnknownKey is a config.toml key this version does not recognize, with where it is.
type UnknownKey struct {
	File string
	Line int
	Key  string // dotted path, as the reference prints it (`features.x`, `mcp_servers.s.what`)
}

func (u UnknownKey) String() string {
	return fmt.Sprintf("%s:%d:1: unknown configuration field `%s`", u.File, u.Line, u.Key)
}

// UnknownKeyError is the --strict-config failure: the first unknown key of the file.
type UnknownKeyError struct{ UnknownKey }

func (e *UnknownKeyError) Error() string { return e.UnknownKey.String() }

// keySet is the known keys of one table: fixed names, and for a map of named entries (mcp_servers.<name>)
// the schema of every entry. A nil *keySet means the table is not checked.
type keySet struct {
	keys    map[string]*keySet // known key -> schema of its table (nil: a value or an unchecked table)
	entries *keySet            // for maps of named entries: each entry's schema
}

func names(list string, sub map[string]*keySet) *keySet {
	ks := &keySet{keys: map[string]*keySet{}}
	for _, k := range strings.Fields(list) {
		ks.keys[k] = sub[k]
	}
	return ks
}

// strictSchema is the nested part of the reference's config schema that --strict-config checks: tables
// whose keys were confirmed against codex-cli 0.169.0. Other tables are accepted as they are.
var strictSchema = sync.OnceValue(func() *keySet {
	feats := &keySet{keys: map[string]*keySet{}}
	for k := range DefaultFeatures {
		feats.keys[k] = nil
	}
	for _, f := range features.Catalogue() {
		feats.keys[f.Name] = nil
	}
	mcp := names(`command args env env_vars cwd url bearer_token_env_var bearer_token http_headers
		env_http_headers enabled required startup_timeout_sec startup_timeout_ms tool_timeout_sec enabled_tools
		disabled_tools tools environment_id oauth_resource scopes oauth supports_parallel_tool_calls
		default_tools_approval_mode startup_readiness tool_input_schema_max_bytes experimental_environment
		transport name auth`, map[string]*keySet{"tools": {entries: names("approval_mode output_token_limit", nil)}})
	provider := names(`name base_url model_catalog_url env_key env_key_instructions experimental_bearer_token
		auth gateway_oauth aws project_id location credential_file wire_api capabilities query_params
		http_headers env_http_headers request_max_retries stream_max_retries stream_idle_timeout_ms
		websocket_connect_timeout_ms requires_openai_auth supports_websockets supports_standalone_web_search
		network_wait_max_retries`, nil) // the last: appserver's own
	sub := map[string]*keySet{
		"features":                 feats,
		"mcp_servers":              {entries: mcp},
		"model_providers":          {entries: provider},
		"history":                  names("persistence max_bytes", nil),
		"sandbox_workspace_write":  names("writable_roots network_access exclude_tmpdir_env_var exclude_slash_tmp", nil),
		"shell_environment_policy": names("inherit ignore_default_excludes exclude set include_only experimental_use_profile", nil),
		"projects":                 {entries: names("trust_level", nil)},
		"tui": names(`notifications notification_method notification_condition animations screen_reader_detection_done
			effects rendering show_tooltips show_server_version_notice auto_recap disable_paste_burst question_esc_back
			raw_output_mode fullscreen_transcript collapse_turn_details sidebar_width_percent mouse_scroll_speed
			copy_on_select copy_on_select_clear_selection right_click_paste status_line status_line_use_colors
			terminal_title theme pet pet_anchor session_picker_view agents_overview_grouping resume_cwd keymap presets
			model_availability_nux terminal_resize_reflow_max_rows alternate_screen`, nil),
		"otel": names(`tool_result log_sse_deltas log_user_prompt log_agent_responses log_guardian_assessments
			environment exporter trace_exporter metrics_exporter span_attributes tracestate`, nil),
	}
	top := &keySet{keys: map[string]*keySet{}}
	for _, k := range strings.Fields(knownTopLevelKeys + " " + ownTopLevelKeys) {
		top.keys[k] = sub[k]
	}
	// A profile holds top-level settings (accepting all of them errs on the side of the user).
	top.keys["profiles"] = &keySet{entries: top}
	return top
})

// UnknownKeys lists the unrecognized keys of a config.toml file (missing file: none), in file order:
// top-level keys, and nested keys of the tables the reference checks (features, mcp_servers.<name> and
// its tools.<tool>, model_providers.<name>, history, sandbox_workspace_write, shell_environment_policy,
// projects.<path>, profiles.<name>, tui, otel).
func UnknownKeys(file string) ([]UnknownKey, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, nil // Load reports syntax errors with positions
	}
	pos := indexPositions(data)
	var out []UnknownKey
	var walk func(t map[string]any, ks *keySet, path []string)
	walk = func(t map[string]any, ks *keySet, path []string) {
		for k, v := range t {
			p := append(append([]string{}, path...), k)
			var next *keySet
			if ks.entries != nil {
				next = ks.entries
			} else {
				known, ok := ks.keys[k]
				if !ok {
					out = append(out, UnknownKey{File: file, Line: max(pos[joinKey(p)].line, 1), Key: strings.Join(p, ".")})
					continue
				}
				next = known
			}
			if sub, ok := v.(map[string]any); ok && next != nil {
				walk(sub, next, p)
			}
		}
	}
	walk(doc, strictSchema(), nil)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Key < out[j].Key
	})
	return out, nil
}

// UserConfigUnknownKeys is UnknownKeys of $CODEX_HOME/config.toml.
func UserConfigUnknownKeys(home string) ([]UnknownKey, error) {
	return UnknownKeys(filepath.Join(home, ConfigFileName))
}

// UnknownKeysWarning is the warning the reference gives, at start (configWarning) and on each new thread
// (warning), about the unknown keys of the user config.toml; "" when there are none.
func UnknownKeysWarning(keys []UnknownKey) string {
	if len(keys) == 0 {
		return ""
	}
	sorted := append([]UnknownKey(nil), keys...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Key < sorted[j].Key })
	noun := "settings"
	if len(sorted) == 1 {
		noun = "setting"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Codex is ignoring %d unrecognized configuration %s. Check for typos or deprecated settings.", len(sorted), noun)
	for _, k := range sorted {
		fmt.Fprintf(&b, "\n  user (%s): `%s` is ignored.", k.File, k.Key)
	}
	return b.String()
}

// OverrideUnknownKeys lists the dotted keys of the `-c` overrides that --strict-config refuses, in key
// order, as the reference checks them first: only when the overrides alone have values of the right types
// (else nil, and the type error is reported when the configuration loads).
func OverrideUnknownKeys(overrides []string) []string {
	if len(overrides) == 0 {
		return nil
	}
	l, err := parseOverrides(overrides)
	if err != nil {
		return nil
	}
	if _, cerr := build(l.raw); cerr != nil {
		return nil
	}
	var out []string
	var walk func(t tree, ks *keySet, path []string)
	walk = func(t tree, ks *keySet, path []string) {
		for _, k := range sortedKeys(t) {
			p := append(append([]string{}, path...), k)
			next := ks.entries
			if next == nil {
				known, ok := ks.keys[k]
				if !ok {
					out = append(out, strings.Join(p, "."))
					continue
				}
				next = known
			}
			if sub, ok := t[k].(tree); ok && next != nil {
				walk(sub, next, p)
			}
		}
	}
	walk(l.raw, strictSchema(), nil)
	return out
}

// OverrideUnknownKeyError is the --strict-config failure for a `-c` key this version does not recognize.
type OverrideUnknownKeyError struct{ Key string }

func (e *OverrideUnknownKeyError) Error() string {
	return "unknown configuration field `" + e.Key + "` in -c/--config override"
}
