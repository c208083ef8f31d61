package execpolicy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/execpolicy"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      [][]string
	}{
		{"reference's saved rule", `prefix_rule(pattern=["touch", "/tmp/x"], decision="allow")`, [][]string{{"touch", "/tmp/x"}}},
		{"decision defaults to allow", `prefix_rule(pattern = ["git", "status"])`, [][]string{{"git", "status"}}},
		{"alternatives expand", "prefix_rule(\n  pattern=[\"git\", [\"status\", 'log']],\n  # a comment\n  justification=\"read only\",\n)", [][]string{{"git", "status"}, {"git", "log"}}},
		{"prompt and forbidden grant nothing", `prefix_rule(pattern=["rm"], decision="forbidden") prefix_rule(pattern=["curl"], decision="prompt")`, nil},
		{"examples are not rules", `prefix_rule(pattern=["npm"], match=[["npm", "test"]], not_match=["npx"])`, [][]string{{"npm"}}},
		{"escapes", `prefix_rule(pattern=["echo", "a\"b\\c"])`, [][]string{{"echo", `a"b\c`}}},
		{"broken rule skipped, next read", `prefix_rule(pattern=["a", ) prefix_rule(pattern=["b"])`, [][]string{{"b"}}},
		{"other calls ignored", `my_prefix_rule(pattern=["x"]) host_executable(name="git", paths=["/usr/bin/git"])`, nil},
		{"empty pattern", `prefix_rule(pattern=[])`, nil},
		{"commented out", "# prefix_rule(pattern=[\"rm\"])\nprefix_rule(pattern=[\"a#b\"]) # prefix_rule(pattern=[\"c\"])", [][]string{{"a#b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, execpolicy.Parse(tc.src))
		})
	}
}

func TestAppendThenRead(t *testing.T) {
	home := t.TempDir()
	got, err := execpolicy.AllowedPrefixes(home)
	require.NoError(t, err)
	require.Empty(t, got, "no rules directory")

	require.NoError(t, execpolicy.Append(home, []string{"touch", "/tmp/x y"}))
	require.NoError(t, os.WriteFile(filepath.Join(home, "rules", "a.rules"), []byte(`prefix_rule(pattern=["ls"])`), 0o644))
	// A file without a final newline gets one before the next rule.
	f := filepath.Join(home, execpolicy.DefaultFile)
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f, append(b, "# trailing comment"...), 0o644))
	require.NoError(t, execpolicy.Append(home, []string{"echo", "<&>"}))

	b, err = os.ReadFile(f)
	require.NoError(t, err)
	require.Equal(t, "prefix_rule(pattern=[\"touch\", \"/tmp/x y\"], decision=\"allow\")\n# trailing comment\n"+
		"prefix_rule(pattern=[\"echo\", \"<&>\"], decision=\"allow\")\n", string(b))
	got, err = execpolicy.AllowedPrefixes(home)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"ls"}, {"touch", "/tmp/x y"}, {"echo", "<&>"}}, got, "files in name order")
	require.Error(t, execpolicy.Append(home, nil))
}
