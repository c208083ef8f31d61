package tools

import (
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

// TestProposalMatchesReference checks the execpolicy proposals the reference offered for these scripts.
func TestProposalMatchesReference(t *testing.T) {
	full := func(s string) []string { return []string{"/bin/bash", "-lc", s} }
	for script, want := range map[string][]string{
		"echo hello":               {"echo", "hello"},
		"pwd && true":              {"pwd"},
		"echo a | grep a":          {"echo", "a"},
		"true || false":            {"true"},
		"echo a; echo b":           {"echo", "a"},
		"cd sub && ls":             {"cd", "sub"},
		"ls > out.txt":             full("ls > out.txt"),
		"echo $HOME":               full("echo $HOME"),
		`echo "quoted arg"`:        {"echo", "quoted arg"},
		"FOO=1 env":                full("FOO=1 env"),
		"(echo sub)":               full("(echo sub)"),
		"echo a && echo b | wc -l": {"echo", "a"},
		"python3 -c 'print(1)'":    {"python3", "-c", "print(1)"},
		"bash -c 'echo x'":         {"bash", "-c", "echo x"},
		"ls *.txt":                 full("ls *.txt"),
		"sed -n '1,5p' f.txt":      {"sed", "-n", "1,5p", "f.txt"},
		"find . -type f | head":    {"find", ".", "-type", "f"},
		"echo ~":                   full("echo ~"),
		"echo a\necho b":           {"echo", "a"},
		"git config a=b":           {"git", "config", "a=b"},
		"sleep 1 &":                full("sleep 1 &"),
		"echo a &&":                full("echo a &&"),
		"&& echo a":                full("&& echo a"),
		"echo 'unterminated":       full("echo 'unterminated"),
		`echo "a $b"`:              full(`echo "a $b"`),
		`echo 'a $b'`:              {"echo", "a $b"},
		`echo "unterminated`:       full(`echo "unterminated`),
		"echo a |& cat":            full("echo a |& cat"),
		"echo a;; echo b":          full("echo a;; echo b"),
		"echo a;":                  {"echo", "a"},
		"":                         full(""),
	} {
		require.Equal(t, want, parseCommand(full(script), script).proposal(), "%q", script)
	}
}

func TestCommandApprovedByPrefixNeedsEveryCommand(t *testing.T) {
	c := newApprovalCache()
	full := func(s string) []string { return []string{"/bin/bash", "-lc", s} }
	pc := func(s string) parsedCommand { return parseCommand(full(s), s) }
	require.False(t, c.commandApproved("x", pc("echo hi")))
	c.approvePrefix([]string{"echo"})
	c.approvePrefix(nil) // ignored
	require.True(t, c.commandApproved("x", pc("echo hi")))
	require.True(t, c.commandApproved("x", pc("echo a && echo b")))
	require.False(t, c.commandApproved("x", pc("echo a && rm -rf b")), "every command must match")
	require.False(t, c.commandApproved("x", pc("echo $HOME")), "a non-plain script matches only as a whole argv")
	c.approvePrefix(full("echo $HOME"))
	require.True(t, c.commandApproved("x", pc("echo $HOME")))
	c.approveCommand("/bin/bash -lc 'rm x'")
	require.True(t, c.commandApproved("/bin/bash -lc 'rm x'", pc("rm x")))
}

func TestCheckEscalationArgs(t *testing.T) {
	never := protocol.AskForApproval{Name: protocol.AskForApprovalNever}
	onRequest := protocol.AskForApproval{Name: protocol.AskForApprovalOnRequest}
	for _, tc := range []struct {
		args   string
		policy protocol.AskForApproval
		want   string
	}{
		{`{"cmd": "x"}`, never, ""},
		{`{"cmd": "x", "sandbox_permissions": "require_escalated"}`, onRequest, ""},
		{`{"cmd": "x", "sandbox_permissions": "use_default", "justification": "j"}`, onRequest, ""},
		{`{"cmd": "x", "justification": "j"}`, onRequest, justificationWithoutPermissions},
		{`{"cmd": "x", "sandbox_permissions": "with_additional_permissions"}`, onRequest, additionalPermissionsDisabled},
		{`{"cmd": "x", "sandbox_permissions": "require_escalated"}`, never, escalationUnderNever},
		{`{"cmd": "echo c", "sandbox_permissions": "bogus"}`, onRequest, "failed to parse function arguments: unknown variant `bogus`, expected one of `use_default`, `require_escalated`, `with_additional_permissions` at line 1 column 48"},
		{"{\"cmd\": \"x\",\n \"sandbox_permissions\": \"no\"}", onRequest, "failed to parse function arguments: unknown variant `no`, expected one of `use_default`, `require_escalated`, `with_additional_permissions` at line 2 column 28"},
		{`not json`, never, ""},
	} {
		got, bad := checkEscalationArgs(tc.args, tc.policy)
		require.Equal(t, tc.want != "", bad, tc.args)
		require.Equal(t, tc.want, got, tc.args)
	}
}
