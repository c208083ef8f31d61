package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// keyType is what the reference's serde types expect of a top-level config.toml key: want is serde's name
// of the type ("a string", "path string", "u64", "struct X", "a map", "a sequence"); an enum lists its
// variants; items and entries are what a list's items and a map's (or a flattened struct's) entries
// expect, entryKey whether an entry's error names the entry (`mcp_servers.a`) or the key.
type keyType struct {
	want     string
	enum     []string
	untagged bool // serde's "data did not match any variant of untagged enum <want>" (a string or strings)
	items    string
	entries  string
	entryKey bool
	tablesOK bool // an entry may be a table (features.multi_agent_v2)
}

// topKeyTypes are the top-level keys' types, as codex-cli 0.169.0 words their type errors (seen on it
// with a value of every TOML type for each key).
var topKeyTypes = map[string]keyType{
	"agents":                           {want: "struct AgentsToml", entries: "struct AgentRoleToml"},
	"allow_login_shell":                {want: "a boolean"},
	"allow_symlinked_codex_home":       {want: "a boolean"},
	"analytics":                        {want: "struct AnalyticsConfigToml"},
	"approval_policy":                  {enum: []string{"untrusted", "on-failure", "on-request", "granular", "never"}},
	"approvals_reviewer":               {enum: []string{"user", "auto_review", "guardian_subagent"}},
	"apps":                             {want: "struct AppsConfigToml", entries: "struct AppConfig"},
	"apps_mcp_product_sku":             {want: "a string"},
	"audio":                            {want: "struct RealtimeAudioToml"},
	"auto_review":                      {want: "struct AutoReviewToml"},
	"background_terminal_max_timeout":  {want: "u64"},
	"browser_use":                      {want: "struct BrowserUseConfigToml"},
	"chatgpt_base_url":                 {want: "a string"},
	"check_for_update_on_startup":      {want: "a boolean"},
	"cli_auth_credentials_store":       {enum: []string{"file", "keyring", "auto", "ephemeral"}},
	"cloud":                            {want: "struct CloudToml"},
	"compact_prompt":                   {want: "a string"},
	"computer_use":                     {want: "struct ComputerUseConfigToml"},
	"daybreak":                         {want: "a boolean"},
	"default_permissions":              {want: "a string"},
	"desktop":                          {want: "a map"},
	"developer_instructions":           {want: "a string"},
	"disable_paste_burst":              {want: "a boolean"},
	"experimental_compact_prompt_file": {want: "path string"},
	"experimental_realtime_start_instructions":   {want: "a string"},
	"experimental_realtime_webrtc_call_base_url": {want: "a string"},
	"experimental_realtime_ws_backend_prompt":    {want: "a string"},
	"experimental_realtime_ws_base_url":          {want: "a string"},
	"experimental_realtime_ws_model":             {want: "a string"},
	"experimental_realtime_ws_startup_context":   {want: "a string"},
	"experimental_thread_store":                  {want: "internally tagged enum ThreadStoreToml"},
	"experimental_thread_store_endpoint":         {want: "a string"},
	"experimental_use_unified_exec_tool":         {want: "a boolean"},
	"features":                                   {want: "struct FeaturesToml", entries: "a boolean", tablesOK: true},
	"feedback":                                   {want: "struct FeedbackConfigToml"},
	"file_opener":                                {enum: []string{"vscode", "vscode-insiders", "windsurf", "cursor", "none"}},
	"forced_chatgpt_workspace_id":                {want: "Repr", untagged: true},
	"forced_login_method":                        {enum: []string{"chatgpt", "api"}},
	"ghost_snapshot":                             {want: "struct GhostSnapshotToml"},
	"goals":                                      {want: "struct GoalsToml"},
	"hide_agent_reasoning":                       {want: "a boolean"},
	"history":                                    {want: "struct History"},
	"hooks":                                      {want: "struct HooksToml"},
	"include_apps_instructions":                  {want: "a boolean"},
	"include_collaboration_mode_instructions":    {want: "a boolean"},
	"include_environment_context":                {want: "a boolean"},
	"include_environment_context_time":           {want: "a boolean"},
	"include_permissions_instructions":           {want: "a boolean"},
	"instructions":                               {want: "a string"},
	"js_repl_node_module_dirs":                   {want: "a sequence", items: "path string"},
	"js_repl_node_path":                          {want: "path string"},
	"log_dir":                                    {want: "path string"},
	"marketplaces":                               {want: "a map", entries: "struct MarketplaceConfig", entryKey: true},
	"mcp_enterprise_managed_auth":                {want: "struct McpEnterpriseManagedAuthConfig"},
	"mcp_oauth_callback_port":                    {want: "u16"},
	"mcp_oauth_callback_url":                     {want: "a string"},
	"mcp_oauth_credentials_store":                {enum: []string{"auto", "file", "keyring"}},
	"mcp_optional_startup_grace_ms":              {want: "u64"},
	"mcp_servers":                                {want: "a map", entries: "struct RawMcpServerConfig", entryKey: true},
	"memories":                                   {want: "struct MemoriesToml"},
	"model":                                      {want: "a string"},
	"model_auto_compact_token_limit":             {want: "i64"},
	"model_auto_compact_token_limit_scope":       {enum: []string{"total", "body_after_prefix"}},
	"model_catalog_json":                         {want: "path string"},
	"model_context_window":                       {want: "i64"},
	"model_instructions_file":                    {want: "path string"},
	"model_post_turn_compact_threshold_percent":  {want: "u8"},
	"model_provider":                             {want: "a string"},
	"model_providers":                            {want: "a map", entries: "struct ModelProviderInfo", entryKey: true},
	"model_reasoning_effort":                     {want: "a string"},
	"model_reasoning_summary":                    {enum: []string{"auto", "concise", "detailed", "none"}},
	"model_verbosity":                            {enum: []string{"low", "medium", "high"}},
	"notice":                                     {want: "struct Notice"},
	"notify":                                     {want: "a sequence", items: "a string"},
	"openai_base_url":                            {want: "a string"},
	"orchestrator":                               {want: "struct OrchestratorToml"},
	"oss_provider":                               {want: "a string"},
	"otel":                                       {want: "struct OtelConfigToml"},
	"permissions":                                {want: "struct PermissionsToml", entries: "struct PermissionProfileToml"},
	"personality":                                {enum: []string{"none", "friendly", "pragmatic"}},
	"plan_mode_reasoning_effort":                 {want: "a string"},
	"plugins":                                    {want: "struct PluginsConfigToml", entries: "struct PluginConfig"},
	"profile":                                    {want: "a string"},
	"profiles":                                   {want: "a map", entries: "struct ConfigProfile", entryKey: true},
	"project_doc_fallback_filenames":             {want: "a sequence", items: "a string"},
	"project_doc_max_bytes":                      {want: "usize"},
	"project_root_markers":                       {want: "a sequence", items: "a string"},
	"projects":                                   {want: "a map", entries: "struct ProjectConfig", entryKey: true},
	"realtime":                                   {want: "struct RealtimeToml"},
	"responses_api_metadata":                     {want: "a map", entries: "a string", entryKey: true},
	"review_model":                               {want: "a string"},
	"sandbox_mode":                               {enum: []string{"read-only", "workspace-write", "danger-full-access"}},
	"sandbox_workspace_write":                    {want: "struct SandboxWorkspaceWrite"},
	"service_tier":                               {want: "a string"},
	"shell_environment_policy":                   {want: "struct ShellEnvironmentPolicyTomlRaw"},
	"show_raw_agent_reasoning":                   {want: "a boolean"},
	"skills":                                     {want: "struct SkillsConfig"},
	"sqlite_home":                                {want: "path string"},
	"suppress_unstable_features_warning":         {want: "a boolean"},
	"thread_unload_delay_secs":                   {want: "u64"},
	"tool_output_token_limit":                    {want: "usize"},
	"tool_suggest":                               {want: "struct ToolSuggestConfig"},
	"tools":                                      {want: "struct ToolsToml"},
	"tui":                                        {want: "struct Tui"},
	"web_search":                                 {enum: []string{"disabled", "cached", "indexed", "live"}},
	"windows":                                    {want: "struct WindowsToml"},
}

// serdeDescribe names a TOML value as serde does in "invalid type" errors.
func serdeDescribe(v any) string {
	switch x := v.(type) {
	case string:
		return "string " + strconv.Quote(x)
	case int64:
		return fmt.Sprintf("integer `%d`", x)
	case float64:
		return "floating point `" + rustFloat(x) + "`"
	case bool:
		return fmt.Sprintf("boolean `%v`", x)
	case []any:
		return "sequence"
	case tree:
		return "map"
	}
	return describe(v)
}

// rustFloat formats f as Rust's Display does in serde's messages, always with a decimal point.
func rustFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "NaN"
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// intRange is the range of the Rust integer type named want ("u64", "i64", "u8", "usize"...).
func intRange(want string) (lo, hi float64, ok bool) {
	bits, err := strconv.Atoi(strings.TrimLeft(want, "ui"))
	if strings.HasSuffix(want, "size") {
		bits, err = 64, nil
	}
	if err != nil || len(want) < 2 {
		return 0, 0, false
	}
	if want[0] == 'u' {
		return 0, math.Exp2(float64(bits)) - 1, true
	}
	return -math.Exp2(float64(bits - 1)), math.Exp2(float64(bits-1)) - 1, true
}

// checkValue returns serde's error for v where want is expected ("" when v fits), for the scalar and
// container kinds of keyType (not enums).
func checkValue(want string, v any) string {
	bad := func() string { return "invalid type: " + serdeDescribe(v) + ", expected " + want }
	switch want {
	case "a string", "path string":
		if _, ok := v.(string); !ok {
			return bad()
		}
	case "a boolean":
		if _, ok := v.(bool); !ok {
			return bad()
		}
	case "a sequence":
		if _, ok := v.([]any); !ok {
			return bad()
		}
	case "a map":
		if _, ok := v.(tree); !ok {
			return bad()
		}
	default:
		if lo, hi, ok := intRange(want); ok {
			n, isInt := v.(int64)
			if !isInt {
				return bad()
			}
			if float64(n) < lo || float64(n) > hi {
				return fmt.Sprintf("invalid value: integer `%d`, expected %s", n, want)
			}
			return ""
		}
		if strings.HasPrefix(want, "struct ") || strings.HasPrefix(want, "internally tagged enum ") {
			if _, ok := v.(tree); !ok {
				return bad()
			}
		}
	}
	return ""
}

// checkTopKeyTypes reports, in the reader, the first top-level key of t (in key order) whose value does
// not have the type the reference expects, in serde's words.
func checkTopKeyTypes(r *reader, t tree) {
	keys := make([]string, 0, len(t))
	for k := range t {
		if _, ok := topKeyTypes[k]; ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if r.err != nil {
			return
		}
		kt, v := topKeyTypes[k], t[k]
		path := []string{k}
		switch {
		case kt.enum != nil:
			name := ""
			switch x := v.(type) {
			case string:
				name = x
			case tree:
				for _, ek := range sortedKeys(x) {
					name = ek
					break
				}
			default:
				r.failMsg(path, "invalid type: unit variant, expected string only")
				continue
			}
			known := false
			for _, e := range kt.enum {
				known = known || e == name
			}
			if !known {
				r.failMsg(path, "unknown variant `"+name+"`, expected "+variantList(kt.enum))
			}
		case kt.untagged:
			ok := false
			switch x := v.(type) {
			case string:
				ok = true
			case []any:
				ok = true
				for _, e := range x {
					_, isStr := e.(string)
					ok = ok && isStr
				}
			}
			if !ok {
				r.failMsg(path, "data did not match any variant of untagged enum "+kt.want)
			}
		default:
			if items, isSeq := v.([]any); isSeq {
				if ss, ok := seqStructs[k]; ok {
					if e := ss.check(items); e != nil {
						r.failSeq(path, e)
					}
					continue
				}
			}
			if msg := checkValue(kt.want, v); msg != "" {
				r.failMsg(path, msg)
				continue
			}
			if check := structChecks[k]; check != nil {
				check(r, path, v.(tree))
				continue
			}
			if items, ok := v.([]any); ok && kt.items != "" {
				for i, it := range items {
					if msg := checkValue(kt.items, it); msg != "" {
						r.failMsgNamed(child(path, strconv.Itoa(i)), path, msg) // located at the item
						break
					}
				}
			}
			if entries, ok := v.(tree); ok && kt.entries != "" {
				for _, ek := range sortedKeys(entries) {
					if _, isTable := entries[ek].(tree); isTable && kt.tablesOK {
						continue
					}
					if msg := checkValue(kt.entries, entries[ek]); msg != "" {
						switch {
						case kt.entryKey:
							r.failMsg(child(path, ek), msg)
						case kt.tablesOK: // features: its own fields, located at the value
							r.failMsgNamed(child(path, ek), path, msg)
						default: // a flattened map's entry: serde's buffered content has no span, the table does
							r.failMsg(path, msg)
						}
						break
					}
				}
			}
		}
	}
}

// variantList words an enum's variants as serde's "unknown variant" error does.
func variantList(vs []string) string {
	switch len(vs) {
	case 1:
		return "`" + vs[0] + "`"
	case 2:
		return "`" + vs[0] + "` or `" + vs[1] + "`"
	}
	return "one of " + quoteList(vs)
}

// structChecks check the fields of the top-level tables whose fields the reference's serde types refuse
// (missing, unknown or of the wrong type), in its words; the table itself has passed checkValue. Fields
// are visited in key order (serde visits them in the file's order).
var structChecks = map[string]func(r *reader, path []string, t tree){
	"experimental_thread_store":   checkThreadStore,
	"mcp_enterprise_managed_auth": checkEnterpriseAuth,
	"history":                     fieldsCheck(map[string]keyType{"max_bytes": {want: "usize"}}),
	"shell_environment_policy":    fieldsCheck(map[string]keyType{"inherit": {enum: []string{"core", "all", "none"}}}),
	"tools":                       checkTools,
	"tui":                         checkTui,
	"permissions":                 checkPermissionTypes,
}

// fieldsCheck checks a table's fields named in fields (in key order) as the reference's serde types word
// their errors: an enum's unknown variant or a plain type.
func fieldsCheck(fields map[string]keyType) func(r *reader, path []string, t tree) {
	return func(r *reader, path []string, t tree) {
		for _, k := range sortedKeys(t) {
			kt, ok := fields[k]
			if !ok || r.err != nil {
				continue
			}
			v, p := t[k], child(path, k)
			switch {
			case kt.enum != nil:
				var s string
				switch x := v.(type) {
				case string:
					s = x
				case tree:
					for _, ek := range sortedKeys(x) {
						s = ek
						break
					}
				default:
					r.failMsg(p, "wanted string or table") // the toml crate's enum reader
					continue
				}
				known := false
				for _, e := range kt.enum {
					known = known || e == s
				}
				if !known {
					r.failMsg(p, "unknown variant `"+s+"`, expected "+variantList(kt.enum))
				}
			default:
				if msg := checkValue(kt.want, v); msg != "" {
					r.failMsg(p, msg)
				}
			}
		}
	}
}

// checkTools checks tools.web_search, the reference's untagged WebSearchToolConfigInput: a boolean, or a
// table whose context_size is low, medium or high, allowed_domains a list of strings and location a table
// of string city, country, region and timezone (other keys are ignored). Anything else fails as serde's
// untagged enum does, naming tools.web_search. The table's other keys are not checked (the reference
// ignores them).
func checkTools(r *reader, path []string, t tree) {
	v, ok := t["web_search"]
	if !ok || webSearchInputOK(v) {
		return
	}
	r.failMsg(child(path, "web_search"), "data did not match any variant of untagged enum WebSearchToolConfigInput")
}

func webSearchInputOK(v any) bool {
	switch x := v.(type) {
	case bool:
		return true
	case tree:
		if cs, set := x["context_size"]; set {
			s, _ := cs.(string)
			if s != "low" && s != "medium" && s != "high" {
				return false
			}
		}
		if ad, set := x["allowed_domains"]; set {
			list, ok := ad.([]any)
			if !ok {
				return false
			}
			for _, d := range list {
				if _, ok := d.(string); !ok {
					return false
				}
			}
		}
		if loc, set := x["location"]; set {
			lt, ok := loc.(tree)
			if !ok {
				return false
			}
			for _, k := range webSearchLocationKeys {
				if f, set := lt[k]; set {
					if _, ok := f.(string); !ok {
						return false
					}
				}
			}
		}
		return true
	}
	return false
}

// webSearchLocationKeys are the fields of tools.web_search.location, in the order config/read reports them.
var webSearchLocationKeys = []string{"country", "region", "city", "timezone"}

// toolsView is config/read's `tools`: only web_search, null for a boolean (the reference keeps the
// boolean form out of its typed view) and for a table its known fields, unset ones null.
func toolsView(t tree) tree {
	ws, ok := t["web_search"].(tree)
	if !ok {
		return tree{"web_search": nil}
	}
	view := tree{"context_size": nil, "allowed_domains": nil, "location": nil}
	for _, k := range []string{"context_size", "allowed_domains"} {
		if v, set := ws[k]; set {
			view[k] = deepCopyValue(v)
		}
	}
	if loc, ok := ws["location"].(tree); ok {
		lv := tree{}
		for _, k := range webSearchLocationKeys {
			lv[k] = deepCopyValue(loc[k])
		}
		view["location"] = lv
	}
	return tree{"web_search": view}
}

// checkThreadStore checks experimental_thread_store, an enum tagged by `type`: `local`, or `in_memory`
// with a string `id`. The variant's own errors name the whole table (serde buffers a tagged enum's content).
func checkThreadStore(r *reader, path []string, t tree) {
	tag, ok := t["type"]
	if !ok {
		r.failMsg(path, "missing field `type`")
		return
	}
	name, ok := tag.(string)
	if !ok {
		r.failMsg(child(path, "type"), "invalid type: "+serdeDescribe(tag)+", expected variant identifier")
		return
	}
	switch name {
	case "local":
	case "in_memory":
		id, ok := t["id"]
		if !ok {
			r.failMsg(path, "missing field `id`")
		} else if msg := checkValue("a string", id); msg != "" {
			r.failMsg(path, msg)
		}
	default:
		r.failMsg(child(path, "type"), "unknown variant `"+name+"`, expected "+variantList([]string{"local", "in_memory"}))
	}
}

// idpFields are the fields of mcp_enterprise_managed_auth.idp (McpServerIdpOAuthConfig).
var idpFields = []string{"issuer", "client_id", "client_secret", "token_endpoint_auth_method"}

// checkEnterpriseAuth checks mcp_enterprise_managed_auth: exactly an `idp` table of idpFields, of which
// issuer and client_id are required. An unknown field is located at its value and named by its table.
func checkEnterpriseAuth(r *reader, path []string, t tree) {
	for _, k := range sortedKeys(t) {
		if k != "idp" {
			r.failMsgNamed(child(path, k), path, "unknown field `"+k+"`, expected `idp`")
			return
		}
	}
	v, ok := t["idp"]
	if !ok {
		r.failMsg(path, "missing field `idp`")
		return
	}
	ip := child(path, "idp")
	idp, ok := v.(tree)
	if !ok {
		r.failMsg(ip, "invalid type: "+serdeDescribe(v)+", expected struct McpServerIdpOAuthConfig")
		return
	}
	for _, k := range sortedKeys(idp) {
		fv := idp[k]
		switch k {
		case "issuer", "client_id", "client_secret":
			if msg := checkValue("a string", fv); msg != "" {
				r.failMsg(child(ip, k), msg)
				return
			}
		case "token_endpoint_auth_method":
			methods := []string{"client_secret_basic", "client_secret_post"}
			s, isStr := fv.(string)
			switch {
			case !isStr:
				r.failMsg(child(ip, k), "wanted string or table")
				return
			case s != methods[0] && s != methods[1]:
				r.failMsg(child(ip, k), "unknown variant `"+s+"`, expected "+variantList(methods))
				return
			}
		default:
			r.failMsgNamed(child(ip, k), ip, "unknown field `"+k+"`, expected one of "+quoteList(idpFields))
			return
		}
	}
	for _, req := range []string{"issuer", "client_id"} {
		if _, ok := idp[req]; !ok {
			r.failMsg(ip, "missing field `"+req+"`")
			return
		}
	}
}
