package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNestedKeyTypeWording pins the reference's (0.169.0) start-up error for a wrong value under a table,
// each seen on it with the same file: message, line and column.
func TestNestedKeyTypeWording(t *testing.T) {
	for _, tc := range []struct {
		file      string
		line, col int
		msg       string
	}{
		{"[mcp_servers.x]\ncommand = \"a\"\nargs = \"b\"\n", 3, 8, "invalid type: string \"b\", expected a sequence"},
		{"[mcp_servers.x]\ncommand = \"a\"\nenv = 5\n", 3, 7, "invalid type: integer `5`, expected a map"},
		{"[mcp_servers.x]\ncommand = \"a\"\nstartup_timeout_sec = \"x\"\n", 3, 23, "invalid type: string \"x\", expected f64"},
		{"[model_providers.x]\nname = \"X\"\nwire_api = \"bogus\"\n", 3, 12, "unknown variant `bogus`, expected `responses`"},
		{"[model_providers.x]\nname = \"X\"\nwire_api = 5\n", 3, 12, "invalid type: integer `5`, expected a string"},
		{"[tools]\nweb_search = 5\n", 2, 14, "data did not match any variant of untagged enum WebSearchToolConfigInput"},
		{"[tools]\nweb_search = \"x\"\n", 2, 14, "data did not match any variant of untagged enum WebSearchToolConfigInput"},
		{"[sandbox_workspace_write]\nwritable_roots = \"x\"\n", 2, 18, "invalid type: string \"x\", expected a sequence"},
		{"[shell_environment_policy]\ninherit = \"bogus\"\n", 2, 11, "unknown variant `bogus`, expected one of `core`, `all`, `none`"},
		{"[shell_environment_policy]\ninherit = 5\n", 2, 11, "wanted string or table"},
		{"[history]\nmax_bytes = \"x\"\n", 2, 13, "invalid type: string \"x\", expected usize"},
		{"[history]\nmax_bytes = -1\n", 2, 13, "invalid value: integer `-1`, expected usize"},
	} {
		e := loadErr(t, tc.file)
		require.Equal(t, tc.msg, e.Msg, tc.file)
		require.Equal(t, []int{tc.line, tc.col}, []int{e.Line, e.Column}, tc.file)
	}
	for _, good := range []string{"[tools]\nweb_search = true\n", "[shell_environment_policy]\ninherit = \"core\"\n"} {
		load(t, good)
	}
}
