package execcli_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/mockmodel"
)

// TestExecFork: `exec fork SESSION_ID [PROMPT]` forks a stored session into a new one and runs the
// prompt on it with the history; without a prompt it only forks. Output and exit codes as codex-cli
// 0.169.0 printed them on the same mock model.
func TestExecFork(t *testing.T) {
	e := newEnv(t, "")
	e.mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("first answer", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("forked answer", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("human answer", 1)}},
	)
	first := e.run("", "--json", "--skip-git-repo-check", "first prompt")
	require.Equal(t, 0, first.code, first.stderr)
	id := threadID(t, first.lines(t)[0])

	// Piped stdin is not appended to a fork's prompt (nor announced), as in the reference.
	r := e.run("piped", "--json", "--skip-git-repo-check", "fork", id, "fork prompt")
	require.Equal(t, 0, r.code, r.stderr)
	lines := r.lines(t)
	forked := threadID(t, lines[0])
	require.NotEqual(t, id, forked, "a new session")
	require.Equal(t, []string{
		metadataWarning,
		`{"type":"turn.started"}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"forked answer"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":200,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":40,"reasoning_output_tokens":0}}`,
	}, lines[1:], "usage counts the forked history's too")
	require.Empty(t, r.stderr)
	reqs := e.mm.ResponseRequests()
	require.Len(t, reqs, 2)
	for _, p := range []string{"first prompt", "first answer", `"text":"fork prompt"`} {
		require.Contains(t, string(reqs[1].Raw), p, "the fork's request carries the history")
	}
	require.NotContains(t, string(reqs[1].Raw), "piped")
	meta := sessionMeta(t, e.home, forked)
	require.Equal(t, "exec", meta["source"], "a fork by exec is an exec session, as the reference records it")
	require.Equal(t, id, meta["forked_from_id"])

	// Human output; flags before `fork` apply to it too.
	h := e.run("", "-s", "workspace-write", "--skip-git-repo-check", "fork", "-m", "other-model", id, "again")
	require.Equal(t, 0, h.code, h.stderr)
	require.Equal(t, "human answer\n", h.stdout)
	for _, want := range []string{"model: other-model\n", "sandbox: workspace-write", "\nuser\nagain\n", "tokens used\n240\n"} {
		require.Contains(t, h.stderr, want)
	}

	// No prompt: the session is forked, no turn runs.
	only := e.run("piped stdin is not read", "--json", "--skip-git-repo-check", "fork", id)
	require.Equal(t, 0, only.code, only.stderr)
	require.Len(t, only.lines(t), 1)
	require.NotEqual(t, id, threadID(t, only.lines(t)[0]))
	only = e.run("", "--skip-git-repo-check", "fork", id)
	require.Equal(t, 0, only.code, only.stderr)
	require.Empty(t, only.stdout)
	require.True(t, strings.HasSuffix(only.stderr, "--------\nuser\n\n"), only.stderr)
	require.NotContains(t, only.stderr, "tokens used")
	// ... so the options about its output need a prompt (checked before the session is looked up).
	for _, opt := range [][]string{{"-o", filepath.Join(e.work, "last.txt")}, {"--output-schema", filepath.Join(e.work, "missing.json")}} {
		r = e.run("", append([]string{"--json", "fork"}, append(opt, "no-such-thread")...)...)
		require.Equal(t, 1, r.code)
		require.Equal(t, "Error: Forking with output options requires a prompt\n", r.stderr)
	}
	require.NoFileExists(t, filepath.Join(e.work, "last.txt"))
	r = e.run("", "--json", "fork", "-i", "dot.png", "no-such-thread")
	require.Equal(t, 1, r.code)
	require.Equal(t, "Error: Forking with images requires a prompt\n", r.stderr)

	// "-" reads the prompt from stdin; an empty one fails.
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	r = e.run("from stdin", "--json", "--skip-git-repo-check", "fork", id, "-")
	require.Equal(t, 0, r.code, r.stderr)
	reqs = e.mm.ResponseRequests()
	require.Len(t, reqs, 4)
	require.Contains(t, string(reqs[3].Raw), `"text":"from stdin"`)
	r = e.run(" \n", "--json", "--skip-git-repo-check", "fork", id, "-")
	require.Equal(t, 1, r.code)
	require.Equal(t, "No prompt provided via stdin.\n", r.stderr)

	// Sessions that do not exist.
	missing := "01a20db3-cb26-7b83-a18d-2f4af3995700"
	r = e.run("", "--json", "--skip-git-repo-check", "fork", missing, "hi")
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stdout)
	require.Equal(t, "Error: thread/fork: thread/fork failed: no rollout found for thread id "+missing+" (code -32600)\n", r.stderr)
	r = e.run("", "--json", "--skip-git-repo-check", "fork", "no-such-name", "hi")
	require.Equal(t, 1, r.code)
	require.Equal(t, "Error: Session not found: no-such-name\n", r.stderr)
	require.Len(t, e.mm.ResponseRequests(), 4)

	// By thread name, as another program (the reference's CLI) records it.
	line := `{"id":"` + id + `","thread_name":"My thread","updated_at":"2026-11-24T13:00:00Z"}` + "\n"
	f, err := os.OpenFile(filepath.Join(e.home, "session_index.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(line)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("named", 1)}})
	r = e.run("", "--json", "--skip-git-repo-check", "fork", "My thread", "by name")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotEqual(t, id, threadID(t, r.lines(t)[0]))
	reqs = e.mm.ResponseRequests()
	require.Len(t, reqs, 5)
	require.Contains(t, string(reqs[4].Raw), "first prompt", "the named session's history")
}

// sessionMeta is the session_meta payload of a thread's rollout under home.
func sessionMeta(t *testing.T, home, id string) map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(b), "\n")
	var rec struct {
		Type    string         `json:"type"`
		Payload map[string]any `json:"payload"`
	}
	require.NoError(t, json.Unmarshal([]byte(first), &rec))
	require.Equal(t, "session_meta", rec.Type)
	return rec.Payload
}

// reviewJSON is a reviewer's answer with one finding.
const reviewJSON = `{"findings":[{"title":"[P1] Bad line","body":"This adds two.","confidence_score":0.8,"priority":1,` +
	`"code_location":{"absolute_file_path":"/src/a.txt","line_range":{"start":2,"end":2}}}],` +
	`"overall_correctness":"patch is incorrect","overall_explanation":"One issue found.","overall_confidence_score":0.7}`

const renderedReview = "One issue found.\n\nReview comment:\n\n- [P1] Bad line — /src/a.txt:2-2\n  This adds two."

// gitRepo makes dir a repository with one commit and an uncommitted change; it returns the commit.
func gitRepo(t *testing.T, dir string) string {
	t.Helper()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644))
	git("add", ".")
	git("commit", "-qm", "first commit")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o644))
	return git("rev-parse", "HEAD")
}

// TestExecReview: `exec review` runs review/start on a new thread: turn.started comes with the
// response (before the warnings), the rendered review is the agent message, and no usage is counted;
// the human header shows the review's hint and there is no "tokens used". As codex-cli 0.169.0.
func TestExecReview(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	e := newEnv(t, "")
	sha := gitRepo(t, e.work)
	review := mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(reviewJSON, 2)}}
	e.mm.Enqueue(review, review, review, review)

	r := e.run("", "review", "--json", "--uncommitted")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, []string{
		`{"type":"thread.started","thread_id":"ID"}`,
		`{"type":"turn.started"}`,
		metadataWarning,
		strings.Replace(metadataWarning, "item_0", "item_1", 1),
		`{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"` + strings.ReplaceAll(renderedReview, "\n", `\n`) + `"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":0,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0}}`,
	}, normalize(r.lines(t)))
	require.Empty(t, r.stderr, "no stdin is read")

	last := filepath.Join(t.TempDir(), "last.txt")
	h := e.run("", "review", "--commit", sha, "--title", "My title", "-o", last)
	require.Equal(t, 0, h.code, h.stderr)
	require.Equal(t, renderedReview+"\n", h.stdout)
	got, err := os.ReadFile(last)
	require.NoError(t, err)
	require.Equal(t, renderedReview, string(got))
	require.Contains(t, h.stderr, "--------\nuser\ncommit "+sha[:7]+": My title\n")
	require.Contains(t, h.stderr, "codex\n"+renderedReview+"\n")
	require.NotContains(t, h.stderr, "tokens used")

	// Custom instructions, also from stdin with "-".
	r = e.run("", "review", "--json", "look at the tests")
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("stdin instructions", "review", "--json", "-")
	require.Equal(t, 0, r.code, r.stderr)
	reqs := e.mm.ResponseRequests()
	require.Len(t, reqs, 4)
	require.Contains(t, string(reqs[0].Raw), "staged, unstaged and untracked")
	require.Contains(t, string(reqs[1].Raw), sha)
	require.Contains(t, string(reqs[2].Raw), `"text":"look at the tests"`)
	require.Contains(t, string(reqs[3].Raw), `"text":"stdin instructions"`)

	// No target.
	r = e.run("piped", "review", "--json")
	require.Equal(t, 1, r.code)
	require.Equal(t, "Error: Specify --uncommitted, --base, --commit, or provide custom review instructions\n", r.stderr)

	// The reviewer's model fails.
	fail := mockmodel.Response{HTTPStatus: 500, ErrorBody: map[string]any{"error": map[string]any{"message": "boom", "type": "server_error"}}}
	e.mm.Enqueue(fail)
	r = e.run("", "review", "--json", "--uncommitted")
	require.Equal(t, 1, r.code, r.stderr)
	msg := "We’re currently experiencing high demand, which may cause temporary errors."
	require.Equal(t, []string{
		`{"type":"error","message":"` + msg + `"}`,
		`{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Review was interrupted. Please re-run /review and wait for it to complete."}}`,
		`{"type":"turn.failed","error":{"message":"` + msg + `"}}`,
	}, r.lines(t)[4:])
}

// TestExecReviewNeedsGitRepo: a review outside a repository needs --skip-git-repo-check like any run.
func TestExecReviewNeedsGitRepo(t *testing.T) {
	e := newEnv(t, "")
	r := e.run("", "review", "--json", "--uncommitted")
	require.Equal(t, 1, r.code)
	require.Equal(t, "Not inside a trusted directory and --skip-git-repo-check was not specified.\n", r.stderr)
	require.Empty(t, e.mm.ResponseRequests())
}

// TestExecTrust: --trust marks the repository's root trusted in config.toml (from a subdirectory
// too), refuses an explicitly untrusted one and does nothing outside a repository.
func TestExecTrust(t *testing.T) {
	e := newEnv(t, "")
	require.NoError(t, os.Mkdir(filepath.Join(e.work, ".git"), 0o755))
	sub := filepath.Join(e.work, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	r := e.run("", "--json", "--trust", "-C", sub, "hi")
	require.Equal(t, 0, r.code, r.stderr)
	cfg, err := os.ReadFile(filepath.Join(e.home, "config.toml"))
	require.NoError(t, err)
	entry := "[projects." + `"` + e.work + `"` + "]\ntrust_level = \"trusted\"\n"
	require.True(t, strings.HasSuffix(string(cfg), "\n\n"+entry), "%s", cfg)
	r = e.run("", "--json", "--trust", "hi")
	require.Equal(t, 0, r.code, r.stderr)
	again, err := os.ReadFile(filepath.Join(e.home, "config.toml"))
	require.NoError(t, err)
	require.Equal(t, string(cfg), string(again), "an existing entry is kept")

	u := newEnv(t, "")
	require.NoError(t, os.Mkdir(filepath.Join(u.work, ".git"), 0o755))
	u.writeConfig(u.mm.URL(), "\n[projects."+`"`+u.work+`"`+"]\ntrust_level = \"untrusted\"\n")
	r = u.run("", "--json", "--trust", "hi")
	require.Equal(t, 1, r.code)
	require.Equal(t, "Reading additional input from stdin...\nError: "+u.work+" is marked as untrusted. Update its trust setting first.\n", r.stderr)
	require.Empty(t, u.mm.ResponseRequests())

	n := newEnv(t, "")
	before, err := os.ReadFile(filepath.Join(n.home, "config.toml"))
	require.NoError(t, err)
	r = n.run("", "--json", "--trust", "hi")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "Not inside a trusted directory and --skip-git-repo-check was not specified.")
	after, err := os.ReadFile(filepath.Join(n.home, "config.toml"))
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))
}

// TestExecWorktree: --worktree runs the session in a new detached worktree of HEAD at
// $CODEX_HOME/worktrees/<4 hex>/<repository folder> (the working directory's counterpart in it),
// records the owning thread in its Git admin folder and leaves uncommitted changes behind; not with
// --ephemeral, not outside a repository. As codex-cli 0.169.0.
func TestExecWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	e := newEnv(t, "")
	sha := gitRepo(t, e.work)
	sub := filepath.Join(e.work, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	r := e.run("", "--json", "--worktree", "-C", sub, "hi")
	require.Equal(t, 0, r.code, r.stderr)
	id := threadID(t, r.lines(t)[0])

	dirs, err := filepath.Glob(filepath.Join(e.home, "worktrees", "*", filepath.Base(e.work)))
	require.NoError(t, err)
	require.Len(t, dirs, 1)
	wt := dirs[0]
	require.Regexp(t, `/worktrees/[0-9a-f]{4}/[^/]+$`, wt)
	got, err := os.ReadFile(filepath.Join(wt, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "one\n", string(got), "a checkout of HEAD: uncommitted changes stay behind")
	head, err := exec.Command("git", "-C", wt, "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	require.Equal(t, sha, strings.TrimSpace(string(head)))
	owners, err := filepath.Glob(filepath.Join(e.work, ".git", "worktrees", "*", "codex-thread.json"))
	require.NoError(t, err)
	require.Len(t, owners, 1)
	owner, err := os.ReadFile(owners[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"version":1,"ownerThreadId":"`+id+`"}`, string(owner))
	reqs := e.mm.ResponseRequests()
	require.Len(t, reqs, 1)
	require.Contains(t, string(reqs[0].Raw), "<cwd>"+filepath.Join(wt, "sub")+"</cwd>", "the session runs in the worktree")

	r = e.run("", "--json", "--worktree", "--ephemeral", "hi")
	require.Equal(t, 1, r.code)
	require.Equal(t, "Error: --worktree cannot be combined with --ephemeral\n", r.stderr)
	n := newEnv(t, "")
	r = n.run("", "--json", "--skip-git-repo-check", "--worktree", "hi")
	require.Equal(t, 1, r.code)
	// git's own words, which name a mount point when the directory's file system is not the root's
	require.Regexp(t, `^Error: git command failed: fatal: not a git repository \(or any (of the parent directories\): \.git|parent up to mount point \S+\)\nStopping at filesystem boundary \(GIT_DISCOVERY_ACROSS_FILESYSTEM not set\)\.)\n$`, r.stderr)
	require.Len(t, e.mm.ResponseRequests(), 1)
	require.Empty(t, n.mm.ResponseRequests())
}

// TestExecReviewInterrupt: SIGINT interrupts the reviewer's turn (the id of the engine's turn/started,
// not review/start's): the engine accepts it and the run ends with status 1. (The reference's exec
// sends the review turn's id, which its engine refuses, so it waits for the reviewer to finish.)
func TestExecReviewInterrupt(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	e := newEnv(t, "")
	gitRepo(t, e.work)
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(60)}})
	s := e.start("review", "--json", "--uncommitted")
	s.until(t, `{"type":"turn.started"}`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, e.mm.WaitRequests(ctx, 1), "the reviewer asked the model")
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGINT))
	_, code := s.rest(t)
	require.Equal(t, 1, code, s.stderr.String())
	require.NotContains(t, s.stderr.String(), "turn/interrupt failed", "the interrupt named the running turn")
}
