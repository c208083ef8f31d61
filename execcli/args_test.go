package execcli

import (
	"bytes"
	"context"
	"strings"
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
		{[]string{"resume", "--last", "id", "p"}, options{resume: true, resumeLast: true, prompt: str("p"), color: "auto"}},
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
		{"--last"}, {"resume"}, {"resume", "id", "p", "extra"}, {"resume", "--last", "id", "p", "extra"},
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

// TestSubcommandFlags pins which of exec's flags the reference (codex exec 0.169.0) takes after `resume`,
// `fork` and `review` (found by trying each): the others are clap's usage error, exit status 2.
func TestSubcommandFlags(t *testing.T) {
	const (
		ok          = iota // parsed
		unexpected         // clap's "unexpected argument" (the reference's answer)
		unsupported        // accepted by the reference, refused by appserver on purpose
	)
	// Each flag with a value it takes, then what resume, fork and review make of it.
	flags := []struct {
		args                 []string
		resume, fork, review int
	}{
		{[]string{"-c", "a=1"}, ok, ok, ok},
		{[]string{"--config", "a=1"}, ok, ok, ok},
		{[]string{"--enable", "f"}, ok, ok, ok},
		{[]string{"--disable", "f"}, ok, ok, ok},
		{[]string{"--strict-config"}, ok, ok, ok},
		{[]string{"-i", "a.png"}, ok, ok, unexpected},
		{[]string{"--image", "a.png"}, ok, ok, unexpected},
		{[]string{"-m", "m"}, ok, ok, ok},
		{[]string{"--model", "m"}, ok, ok, ok},
		{[]string{"--oss"}, unexpected, unexpected, unexpected},
		{[]string{"--local-provider", "ollama"}, unexpected, unexpected, unexpected},
		{[]string{"-p", "prof"}, unexpected, unexpected, unexpected},
		{[]string{"--profile", "prof"}, unexpected, unexpected, unexpected},
		{[]string{"-s", "read-only"}, unexpected, unexpected, unexpected},
		{[]string{"--sandbox", "read-only"}, unexpected, unexpected, unexpected},
		{[]string{"--sandbox=read-only"}, unexpected, unexpected, unexpected},
		{[]string{"--approve-for-me"}, unexpected, unexpected, unexpected},
		{[]string{"--dangerously-bypass-approvals-and-sandbox"}, ok, ok, ok},
		{[]string{"--yolo"}, ok, ok, ok},
		{[]string{"--full-auto"}, unexpected, unexpected, unexpected},
		{[]string{"--dangerously-bypass-hook-trust"}, unsupported, unsupported, unsupported},
		{[]string{"-C", "/"}, unexpected, unexpected, unexpected},
		{[]string{"--cd", "/"}, unexpected, unexpected, unexpected},
		{[]string{"--worktree"}, ok, ok, ok},
		{[]string{"--add-dir", "/"}, unexpected, unexpected, unexpected},
		{[]string{"--thread-source", "user"}, ok, ok, ok},
		{[]string{"--cyber-access-program", "standard"}, unsupported, unsupported, unsupported},
		{[]string{"--skip-git-repo-check"}, ok, ok, ok},
		{[]string{"--trust"}, ok, ok, ok},
		{[]string{"--ephemeral"}, ok, ok, ok},
		{[]string{"--ignore-user-config"}, ok, ok, ok},
		{[]string{"--ignore-rules"}, ok, ok, ok},
		{[]string{"--output-schema", "s.json"}, ok, ok, unsupported},
		{[]string{"--color", "never"}, unexpected, unexpected, unexpected},
		{[]string{"--json"}, ok, ok, ok},
		{[]string{"--experimental-json"}, ok, ok, ok},
		{[]string{"-o", "last.txt"}, ok, ok, ok},
		{[]string{"--output-last-message", "last.txt"}, ok, ok, ok},
		{[]string{"-h"}, ok, ok, ok},
		{[]string{"--help"}, ok, ok, ok},
		{[]string{"-V"}, unexpected, unexpected, unexpected},
		{[]string{"--version"}, unexpected, unexpected, unexpected},
		{[]string{"--last"}, ok, unexpected, unexpected},
		{[]string{"--all"}, ok, unexpected, unexpected},
		{[]string{"--uncommitted"}, unexpected, unexpected, ok},
		{[]string{"--base", "main"}, unexpected, unexpected, ok},
		{[]string{"--commit", "abc"}, unexpected, unexpected, ok},
		{[]string{"--title", "t"}, unexpected, unexpected, ok},
	}
	// What follows the flag on each command line: review needs a target (--base excludes another one).
	tails := map[string][]string{"resume": {"0199", "p"}, "fork": {"0199", "p"}, "review": {"--commit", "c0"}}
	for _, f := range flags {
		for _, sub := range []string{"resume", "fork", "review"} {
			want := map[string]int{"resume": f.resume, "fork": f.fork, "review": f.review}[sub]
			tail := tails[sub]
			switch {
			case sub == "review" && (f.args[0] == "--commit" || f.args[0] == "--base" || f.args[0] == "--uncommitted"):
				tail = nil
			case sub == "resume" && f.args[0] == "--last":
				tail = []string{"p"}
			}
			args := append(append([]string{sub}, f.args...), tail...)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				_, err := parseArgs(args)
				if want == ok {
					require.NoError(t, err)
					return
				}
				var ue *usageError
				require.ErrorAs(t, err, &ue)
				var stdout, stderr bytes.Buffer
				require.Equal(t, 2, Run(context.Background(), args, IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}))
				require.Empty(t, stdout.String())
				first, _, _ := strings.Cut(stderr.String(), "\n")
				name, _, _ := strings.Cut(f.args[0], "=")
				if want == unexpected {
					require.Equal(t, "error: unexpected argument '"+name+"' found", first)
					require.Contains(t, stderr.String(), "\n  tip: to pass '"+name+"' as a value, use '-- "+name+"'\n\nUsage: appserver exec "+sub+" [OPTIONS] ")
				} else {
					require.Contains(t, first, "not supported by appserver exec")
				}
				require.True(t, strings.HasSuffix(stderr.String(), "\n\nFor more information, try '--help'.\n"), stderr.String())
			})
		}
	}
	// Before the subcommand every exec flag is taken.
	o, err := parseArgs([]string{"-s", "read-only", "-C", "/x", "--add-dir", "/a", "--color", "never", "-p", "prof", "resume", "0199"})
	require.NoError(t, err)
	require.Equal(t, options{sandbox: "read-only", cd: "/x", addDirs: []string{"/a"}, color: "never", profile: "prof",
		resume: true, resumeID: "0199"}, *o)
}
