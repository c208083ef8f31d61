package execcli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseArgs(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		args []string
		want options
	}{
		{[]string{"--json", "hi"}, options{json: true, prompt: str("hi"), color: "auto"}},
		{[]string{"--experimental-json", "-m", "m1", "-c", "a=1", "--enable", "f", "-"}, options{json: true, model: "m1",
			overrides: []string{"a=1", "features.f=true"}, prompt: str("-"), color: "auto"}},
		{[]string{"--model=m2", "-cb=2", "--sandbox", "read-only", "--cd", "/x", "--add-dir", "/a", "--add-dir=/b"},
			options{model: "m2", overrides: []string{"b=2"}, sandbox: "read-only", cd: "/x", addDirs: []string{"/a", "/b"}, color: "auto"}},
		{[]string{"--full-auto", "p"}, options{sandbox: "workspace-write", fullAutoUsed: true, prompt: str("p"), color: "auto"}},
		{[]string{"--dangerously-bypass-approvals-and-sandbox", "p"}, options{sandbox: "danger-full-access", bypass: true, prompt: str("p"), color: "auto"}},
		{[]string{"-i", "a.png,b.png", "--image", "c.png", "--ephemeral", "--skip-git-repo-check", "--output-schema", "s.json", "-o", "out"},
			options{images: []string{"a.png", "b.png", "c.png"}, ephemeral: true, skipGitCheck: true, outputSchema: "s.json", lastMessage: "out", color: "auto"}},
		{[]string{"--json", "resume", "0199", "next"}, options{json: true, resume: true, resumeID: "0199", prompt: str("next"), color: "auto"}},
		{[]string{"resume", "--last", "--all", "--json"}, options{json: true, resume: true, resumeLast: true, resumeAll: true, color: "auto"}},
		{[]string{"resume", "--last", "p", "--image", "i.png"}, options{resume: true, resumeLast: true, prompt: str("p"), images: []string{"i.png"}, color: "auto"}},
		{[]string{"--", "--not-a-flag"}, options{prompt: str("--not-a-flag"), color: "auto"}},
		{[]string{"--color", "never", "--thread-source", "user", "x"}, options{color: "never", threadSource: "user", prompt: str("x")}},
		{[]string{"p", "-i", "a.png", "b.png", "--json"}, options{prompt: str("p"), images: []string{"a.png", "b.png"}, json: true, color: "auto"}},
		{[]string{"-s", "read-only", "fork", "--json", "id", "p", "-i", "a.png"}, options{sandbox: "read-only", fork: true, forkID: "id",
			json: true, prompt: str("p"), images: []string{"a.png"}, color: "auto"}},
		{[]string{"fork", "name"}, options{fork: true, forkID: "name", color: "auto"}},
		{[]string{"--worktree", "fork", "--worktree", "name"}, options{worktree: true, fork: true, forkID: "name", color: "auto"}},
		{[]string{"review"}, options{review: true, color: "auto"}},
		{[]string{"--trust", "review", "--commit", "abc", "--title=T"}, options{trust: true, review: true, reviewCommit: "abc", reviewTitle: "T", color: "auto"}},
		{[]string{"review", "--base", "main", "--title", "T"}, options{review: true, reviewBase: "main", reviewTitle: "T", color: "auto"}},
		{[]string{"review", "--uncommitted", "-m", "m"}, options{review: true, reviewUncommitted: true, model: "m", color: "auto"}},
		{[]string{"review", "look here"}, options{review: true, prompt: str("look here"), color: "auto"}},
	}
	for _, tt := range tests {
		got, err := parseArgs(tt.args)
		require.NoError(t, err, "%v", tt.args)
		require.Equal(t, tt.want, *got, "%v", tt.args)
	}
}

func TestParseArgsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--nope"}, {"-Z"}, {"--json=yes"}, {"--sandbox", "all"}, {"--color", "pink"}, {"-m"}, {"a", "b"},
		{"--last"}, {"resume"}, {"resume", "id", "p", "extra"}, {"resume", "--last", "p", "extra"},
		{"fork"}, {"fork", "id", "p", "extra"}, {"fork", "--last"}, {"fork", "id", "-s", "read-only"}, {"fork", "id", "--color", "never"},
		{"review", "-i", "a.png"}, {"review", "a", "b"}, {"review", "--uncommitted", "p"}, {"review", "--base", "b", "--commit", "c"},
		{"review", "--commit", "c", "p"}, {"review", "--title", "T"}, {"review", "p", "--title", "T"}, {"review", "--uncommitted", "--output-schema", "s.json"}, {"--image=a.png", "review", "--uncommitted"}, {"--uncommitted", "review"}, {"--base", "b"},
		{"--local-provider", "foo"}, {"-p"}, {"--approve-for-me"}, {"--dangerously-bypass-hook-trust"}, {"--cyber-access-program", "standard"},
		{"--full-auto", "--dangerously-bypass-approvals-and-sandbox"},
	} {
		_, err := parseArgs(args)
		require.Error(t, err, "%v", args)
		var ue *usageError
		require.ErrorAs(t, err, &ue)
	}
}
