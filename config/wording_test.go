package config

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTableTypeWording pins codex-cli 0.169.0's refusal of a wrong value inside tables it types (each
// seen on it with the same file): the message, the key it names and the start of the range it reports.
func TestTableTypeWording(t *testing.T) {
	const prof = "default_permissions = \"p\"\n[permissions.p]\n"
	for _, tc := range []struct {
		file, msg, key string
		line, col      int
	}{
		// A permissions profile (a flattened map: errors name `permissions`, located at its key).
		{prof + "filesystem = {\"/x\" = \"bogus\"}\n", "data did not match any variant of untagged enum FilesystemPermissionToml", "permissions", 2, 2},
		{prof + "filesystem = {\"/x\" = {\"a\" = 1}}\n", "data did not match any variant of untagged enum FilesystemPermissionToml", "permissions", 2, 2},
		{prof + "filesystem = {glob_scan_max_depth = \"x\"}\n", "invalid type: string \"x\", expected usize", "permissions", 2, 2},
		{prof + "filesystem = 1\n", "invalid type: integer `1`, expected struct FilesystemPermissionsToml", "permissions", 2, 2},
		{prof + "description = 1\n", "invalid type: integer `1`, expected a string", "permissions", 2, 2},
		{prof + "workspace_roots = {a = 1}\n", "invalid type: integer `1`, expected a boolean", "permissions", 2, 2},
		{prof + "network = {mode = \"bogus\"}\n", "unknown variant `bogus`, expected `limited` or `full`", "permissions", 2, 2},
		{prof + "network = {mode = 1}\n", "invalid type: integer `1`, expected string or map", "permissions", 2, 2},
		{prof + "network = {mode = {limited = 1}}\n", "invalid type: integer `1`, expected unit", "permissions", 2, 2},
		{prof + "network = {domains = {a = \"bogus\"}}\n", "unknown variant `bogus`, expected `allow` or `deny`", "permissions", 2, 2},
		{prof + "network = {enabled = 1}\n", "invalid type: integer `1`, expected a boolean", "permissions", 2, 2},
		{"model = \"x\"\npermissions.p.network.mode = 1\n", "invalid type: integer `1`, expected string or map", "permissions", 2, 1},
		{"[permissions.q.filesystem]\n\":root\" = \"bogus\"\n", "data did not match any variant of untagged enum FilesystemPermissionToml", "permissions", 1, 2},
		// [tui]: its notification settings are flattened (errors name `tui`, located at its header).
		{"[tui]\nnotifications = 1\n", "data did not match any variant of untagged enum Notifications", "tui", 1, 1},
		{"[tui]\nnotifications = [1]\n", "data did not match any variant of untagged enum Notifications", "tui", 1, 1},
		{"[tui]\nnotification_method = \"x\"\n", "unknown variant `x`, expected one of `auto`, `osc9`, `osc777`, `bel`", "tui", 1, 1},
		{"[tui]\nnotification_method = 1\n", "invalid type: integer `1`, expected string or map", "tui", 1, 1},
		{"[tui]\nnotification_method = {}\n", "invalid value: map, expected map with a single key", "tui", 1, 1},
		{"[tui]\nnotification_condition = \"x\"\n", "unknown variant `x`, expected `unfocused` or `always`", "tui", 1, 1},
		{"[tui]\nalternate_screen = \"x\"\n", "unknown variant `x`, expected one of `auto`, `always`, `never`", "tui.alternate_screen", 2, 20},
		{"[tui]\nalternate_screen = {}\n", "wanted exactly 1 element, found 0 elements", "tui.alternate_screen", 2, 20},
		{"[tui]\nstatus_line = [1]\n", "invalid type: integer `1`, expected a string", "tui.status_line", 2, 16},
		{"[tui]\nanimations = \"x\"\n", "invalid type: string \"x\", expected a boolean", "tui.animations", 2, 14},
		{"[tui]\nkeymap = 1\n", "invalid type: integer `1`, expected struct TuiKeymap", "tui.keymap", 2, 10},
		// A model provider's and an MCP server's numbers are u64s (serde's words), seconds f64s.
		{"[model_providers.m]\nname = \"m\"\nrequest_max_retries = \"x\"\n", "invalid type: string \"x\", expected u64", "model_providers.m.request_max_retries", 3, 23},
		{"[model_providers.m]\nname = \"m\"\nrequest_max_retries = 1.0\n", "invalid type: floating point `1.0`, expected u64", "model_providers.m.request_max_retries", 3, 23},
		{"[model_providers.m]\nname = \"m\"\nstream_idle_timeout_ms = -5\n", "invalid value: integer `-5`, expected u64", "model_providers.m.stream_idle_timeout_ms", 3, 26},
		{"[model_providers.m]\nname = \"m\"\nwebsocket_connect_timeout_ms = \"x\"\n", "invalid type: string \"x\", expected u64", "model_providers.m.websocket_connect_timeout_ms", 3, 32},
		{"[model_providers.m]\nname = \"m\"\nsupports_websockets = 1\n", "invalid type: integer `1`, expected a boolean", "model_providers.m.supports_websockets", 3, 23},
		{"[model_providers.m]\nname = \"m\"\nauth = 1\n", "invalid type: integer `1`, expected struct ModelProviderAuthInfo", "model_providers.m.auth", 3, 8},
		{"[model_providers.m]\nname = \"m\"\ncredential_file = 1\n", "invalid type: integer `1`, expected path string", "model_providers.m.credential_file", 3, 19},
		{"[mcp_servers.s]\ncommand = \"x\"\nstartup_timeout_ms = 1.0\n", "invalid type: floating point `1.0`, expected u64", "mcp_servers.s.startup_timeout_ms", 3, 22},
		{"[mcp_servers.s]\ncommand = \"x\"\nstartup_timeout_sec = -1\n", "cannot convert float seconds to Duration: value is negative", "mcp_servers.s", 1, 1},
		{"[mcp_servers.s]\ncommand = \"x\"\ntool_timeout_sec = -1.5\n", "cannot convert float seconds to Duration: value is negative", "mcp_servers.s.tool_timeout_sec", 3, 20},
	} {
		e := loadErr(t, tc.file)
		require.Equal(t, tc.msg, e.Msg, tc.file)
		require.Equal(t, tc.key, e.Key, tc.file)
		require.Equal(t, []int{tc.line, tc.col}, []int{e.Line, e.Column}, tc.file)
	}
	// Accepted by the reference.
	for _, good := range []string{
		prof + "filesystem = {\"/x\" = \"none\", \"/y\" = \"deny\", \"/z\" = {\"a\" = \"read\"}, glob_scan_max_depth = 2}\n",
		prof + "network = {mode = \"full\", domains = {a = \"allow\"}}\n",
		"[tui]\nnotifications = [\"a\"]\nnotification_method = \"bel\"\n",
		"[model_providers.m]\nname = \"m\"\nrequest_max_retries = 100000\n",
	} {
		load(t, good)
	}
}

// TestGlobScanMaxDepthMeaning: the selected profile's glob_scan_max_depth below 1 is refused on its meaning
// (no position), after its paths.
func TestGlobScanMaxDepthMeaning(t *testing.T) {
	e := loadErr(t, "default_permissions = \"p\"\n[permissions.p.filesystem]\nglob_scan_max_depth = 0\n")
	require.Equal(t, "glob_scan_max_depth must be at least 1", e.Msg)
	require.True(t, e.Meaning)
	e = loadErr(t, "default_permissions = \"p\"\n[permissions.p.filesystem]\nglob_scan_max_depth = 0\n\"rel\" = \"read\"\n")
	require.Equal(t, "filesystem path `rel` must be absolute, use `~/...`, or start with `:`", e.Msg)
	load(t, "default_permissions = \"q\"\n[permissions.q]\n[permissions.p.filesystem]\nglob_scan_max_depth = 0\n")
}

// TestArrayForStruct: an array given for a table is read as the struct's fields in order (serde's
// visit_seq), as codex-cli 0.169.0 does: a short array is an invalid length (located at the array), a
// field of the wrong type is that field's error (located at the item), a long one wants fewer elements.
func TestArrayForStruct(t *testing.T) {
	for _, tc := range []struct {
		file, msg string
		col, end  int
	}{
		{"audio = [1]\n", "invalid length 1, expected struct RealtimeAudioToml with 3 elements", 9, 11},
		{"audio = []\n", "invalid length 0, expected struct RealtimeAudioToml with 3 elements", 9, 10},
		{"audio = [\"a\"]\n", "data did not match any variant of untagged enum MicrophoneChannels", 10, 12},
		{"audio = [1, 2]\n", "invalid type: integer `2`, expected a string", 13, 13},
		{"goals = [0]\n", "invalid value: integer `0`, expected a nonzero u64", 10, 10},
		{"realtime = [\"v1\", \"x\"]\n", "unknown variant `x`, expected `conversational` or `transcription`", 19, 21},
		{"realtime = [{v1 = 1}]\n", "expected table, found integer", 19, 19},
		{"realtime = [{}]\n", "wanted exactly 1 element, found 0 elements", 13, 14},
		{"windows = [1]\n", "invalid type: unit variant, expected string only", 12, 12},
		{"analytics = []\n", "invalid length 0, expected struct AnalyticsConfigToml with 1 element", 13, 14},
		{"history = [\"x\"]\n", "unknown variant `x`, expected `save-all` or `none`", 12, 14},
		{"notice = [true, true, true, true, true, true, true, 1]\n", "invalid type: integer `1`, expected a map", 53, 53},
	} {
		e := loadErr(t, tc.file)
		require.Equal(t, tc.msg, e.Msg, tc.file)
		require.Equal(t, []int{1, tc.col, 1, tc.end}, []int{e.Line, e.Column, e.EndLine, e.EndColumn}, tc.file)
	}
	// Too many items: reported without a position, naming the key.
	for file, key := range map[string]string{"feedback = [true, 1]\n": "feedback", "audio = [1, \"a\", \"b\", 2]\n": "audio"} {
		e := loadErr(t, file)
		n := map[string]int{"feedback": 2, "audio": 4}[key]
		require.Equal(t, fmt.Sprintf("invalid length %d, expected fewer elements in array\nin `%s`\n", n, key), e.Error())
		require.Zero(t, e.Line)
	}
	for _, good := range []string{"audio = [1, \"a\", \"b\"]\n", "history = []\n", "notice = [true, true, true, true, true, true, true]\n"} {
		load(t, good)
	}
}

// TestOpenStringInContainer: a one-line string left open inside an array or inline table, worded and
// located as codex-cli 0.169.0 (the Rust toml crate) does: the next token is a value without a comma
// before it; a closing bracket or comma there reports the string, the end of the file the container.
func TestOpenStringInContainer(t *testing.T) {
	for _, c := range []struct {
		file      string
		line, col int
		msg       string
	}{
		{"x = [\"a\nb\"]\n", 2, 1, "missing comma between array elements, expected `,`"},
		{"x = [\"a\n  b\"]\n", 2, 3, "missing comma between array elements, expected `,`"},
		{"x = [\"a\n# c\nb]\n", 3, 1, "missing comma between array elements, expected `,`"},
		{"x = ['a\nb']\n", 2, 1, "missing comma between array elements, expected `,`"},
		{"x = [\"a\n]\n", 1, 8, "invalid basic string, expected `\"`"},
		{"x = [\"a\n, \"b\"]\n", 1, 8, "invalid basic string, expected `\"`"},
		{"x = ['a\n]\n", 1, 8, "invalid literal string, expected `'`"},
		{"[t]\nx = [1,\n  \"a\n  ]\n", 3, 5, "invalid basic string, expected `\"`"},
		{"x = [\"a\n", 1, 8, "unclosed array, expected `]`"},
		{"x = {a = \"b\n", 1, 12, "unclosed inline table, expected `}`"},
		{"x = [1, {a = \"b\nc\"}]\n", 2, 1, "missing comma between key-value pairs, expected `,`"},
		{"x = {a = \"b\n  c = 1}\n", 2, 3, "missing comma between key-value pairs, expected `,`"},
		{"x = {a = [\"b\n]}\n", 1, 13, "invalid basic string, expected `\"`"},
		{"y = \"\"\"a\nb\"\"\"\nx = [\"c\nd\"]\n", 4, 1, "missing comma between array elements, expected `,`"},
		{"x = 'a\nb'\n", 2, 3, "key with no value, expected `=`"},
	} {
		e := loadErr(t, c.file)
		require.True(t, e.Syntax, c.file)
		require.Equal(t, c.msg, e.Msg, c.file)
		require.Equal(t, []int{c.line, c.col}, []int{e.Line, e.Column}, c.file)
	}
}

// TestStrictNestedTables: --strict-config (and the unknown-settings warning) check [tui], [otel] and an MCP
// server's tools.<tool> tables as codex-cli 0.169.0 does.
func TestStrictNestedTables(t *testing.T) {
	for file, want := range map[string][]string{
		"[tui]\nzzz = 1\nanimations = true\ntheme = \"x\"\nalternate_screen = \"auto\"\n":                                           {"tui.zzz"},
		"[otel]\nzzz = 1\nexporter = \"none\"\ntracestate = {}\n":                                                                   {"otel.zzz"},
		"[mcp_servers.s]\ncommand = \"x\"\n[mcp_servers.s.tools.t]\nzzz = 1\napproval_mode = \"approve\"\noutput_token_limit = 5\n": {"mcp_servers.s.tools.t.zzz"},
		"[tui]\nscroll_events_per_tick = 1\nvim_mode = true\n":                                                                      {"tui.scroll_events_per_tick", "tui.vim_mode"},
	} {
		keys, err := UserConfigUnknownKeys(home(t, file))
		require.NoError(t, err)
		var got []string
		for _, k := range keys {
			got = append(got, k.Key)
		}
		require.Equal(t, want, got, file)
	}
}

// TestFlattenedEntryLocation: a wrong entry of a table whose entries serde reads from buffered content
// (agents, apps, plugins) is located at the table, as codex-cli 0.169.0 locates it; features' at the value.
func TestFlattenedEntryLocation(t *testing.T) {
	for _, tc := range []struct {
		file, msg      string
		line, col, end int
	}{
		{"[agents]\nzzz = 1\n", "invalid type: integer `1`, expected struct AgentRoleToml", 1, 1, 8},
		{"[apps]\nzzz = 1\n", "invalid type: integer `1`, expected struct AppConfig", 1, 1, 6},
		{"[plugins]\nzzz = 1\n", "invalid type: integer `1`, expected struct PluginConfig", 1, 1, 9},
		{"model = \"x\"\n[features]\nx = 1\n", "invalid type: integer `1`, expected a boolean", 3, 5, 5},
	} {
		e := loadErr(t, tc.file)
		require.Equal(t, tc.msg, e.Msg, tc.file)
		require.Equal(t, []int{tc.line, tc.col, tc.line, tc.end}, []int{e.Line, e.Column, e.EndLine, e.EndColumn}, tc.file)
	}
}
