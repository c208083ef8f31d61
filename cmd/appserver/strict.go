package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// knownTopLevelKeys are the config.toml keys codex-cli 0.169.0 recognizes at the top level (the keys of
// its config/read answer).
var knownTopLevelKeys = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`agents allow_login_shell allow_symlinked_codex_home analytics approval_policy
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
		thread_unload_delay_secs tool_output_token_limit tool_suggest tools tui web_search windows`) {
		knownTopLevelKeys[k] = true
	}
}

// unknownKey is a config.toml key this version does not recognize, with where it is.
type unknownKey struct {
	File string
	Line int
	Key  string
}

func (u unknownKey) String() string {
	return fmt.Sprintf("%s:%d:1: unknown configuration field `%s`", u.File, u.Line, u.Key)
}

// unknownTopLevelKeys lists the unrecognized top-level keys of $CODEX_HOME/config.toml, in file order.
func unknownTopLevelKeys(home string) ([]unknownKey, error) {
	file := filepath.Join(home, "config.toml")
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, nil // config.Load reports syntax errors with positions
	}
	var out []unknownKey
	lines := strings.Split(string(data), "\n")
	for k := range doc {
		if knownTopLevelKeys[k] {
			continue
		}
		out = append(out, unknownKey{File: file, Line: lineOfKey(lines, k), Key: k})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out, nil
}

// lineOfKey finds the 1-based line defining top-level key k (an assignment or a table header).
func lineOfKey(lines []string, k string) int {
	q := regexp.QuoteMeta(k)
	re := regexp.MustCompile(`^\s*(\[\[?\s*)?("` + q + `"|'` + q + `'|` + q + `)\s*[=.\]]`)
	inTable := false
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "[") {
			if re.MatchString(l) {
				return i + 1
			}
			inTable = true
			continue
		}
		if !inTable && re.MatchString(l) {
			return i + 1
		}
	}
	return 1
}

// checkStrictConfig refuses unknown top-level config keys under --strict-config and warns about them
// otherwise.
func checkStrictConfig(p *parsed, home string, logger *slog.Logger) error {
	unknown, err := unknownTopLevelKeys(home)
	if err != nil || len(unknown) == 0 {
		return err
	}
	if p.has("strict-config") {
		return &unknownKeyError{unknown[0]}
	}
	for _, u := range unknown {
		logger.Warn("unrecognized configuration setting is ignored", "file", u.File, "line", u.Line, "key", u.Key)
	}
	return nil
}

// unknownKeyError is the --strict-config failure.
type unknownKeyError struct{ unknownKey }

func (e *unknownKeyError) Error() string { return e.unknownKey.String() }
