package execcli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/mcptest"
	"appserver/internal/mockmodel"
	"appserver/internal/testfs"
)

// binPath is appserver built once for the black-box tests.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "appserver-exec-bin")
	if err != nil {
		panic(err)
	}
	binPath = filepath.Join(dir, "appserver")
	if out, err := exec.Command("go", "build", "-o", binPath, "appserver/cmd/appserver").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build failed: %v\n%s", err, out)
		os.Exit(1)
	}
	cleanupHome := testfs.IsolateHome()
	code := m.Run()
	cleanupHome()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one CODEX_HOME with a mock-model config and a working directory.
type env struct {
	t    *testing.T
	home string
	work string
	mm   *mockmodel.Server
}

func newEnv(t *testing.T, extraTOML string) *env {
	t.Helper()
	e := &env{t: t, home: t.TempDir(), work: testfs.OutsideRepo(t), mm: mockmodel.New(t)}
	e.writeConfig(e.mm.URL(), extraTOML)
	return e
}

func (e *env) writeConfig(baseURL, extra string) {
	cfg := fmt.Sprintf(`model = "mock-model"
model_provider = "mock"
approval_policy = "on-request"
sandbox_mode = "read-only"

[model_providers.mock]
name = "Mock Responses API"
base_url = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
%s`, baseURL, extra)
	require.NoError(e.t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte(cfg), 0o644))
}

// result is a finished exec run.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) lines(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
		if l == "" {
			continue
		}
		require.True(t, json.Valid([]byte(l)), "not JSON: %s", l)
		out = append(out, l)
	}
	return out
}

func (e *env) command(ctx context.Context, stdin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binPath, append([]string{"exec"}, args...)...)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+e.home, "HOME="+e.t.TempDir(), "RUST_LOG=error")
	cmd.Dir = e.work
	cmd.Stdin = strings.NewReader(stdin)
	return cmd
}

func (e *env) run(stdin string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, stdin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(e.t, err)
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

var threadIDRE = regexp.MustCompile(`"thread_id":"[0-9a-f-]{36}"`)

// normalize replaces the thread id so lines compare exactly.
func normalize(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = threadIDRE.ReplaceAllString(l, `"thread_id":"ID"`)
	}
	return out
}

func threadID(t *testing.T, line string) string {
	var ev struct {
		Type     string `json:"type"`
		ThreadID string `json:"thread_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(line), &ev))
	require.Equal(t, "thread.started", ev.Type)
	return ev.ThreadID
}

const metadataWarning = `{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for ` + "`mock-model`" + ` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}`

func TestExecToolCallJSON(t *testing.T) {
	e := newEnv(t, "")
	e.mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "echo hello-plain"})}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Reasoning("checked the output"), mockmodel.Message("Tool said hello-plain", 2)},
			Usage: map[string]any{"input_tokens": 200, "output_tokens": 40, "total_tokens": 240}},
	)
	r := e.run("", "--json", "--skip-git-repo-check", "run it")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, []string{
		`{"type":"thread.started","thread_id":"ID"}`,
		metadataWarning,
		`{"type":"turn.started"}`,
		`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'echo hello-plain'","aggregated_output":"","exit_code":null,"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'echo hello-plain'","aggregated_output":"hello-plain\n","exit_code":0,"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"item_2","type":"reasoning","text":"checked the output"}}`,
		`{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Tool said hello-plain"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":300,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":60,"reasoning_output_tokens":0}}`,
	}, normalize(r.lines(t)))
	require.Len(t, e.mm.ResponseRequests(), 2)
	require.Contains(t, r.stderr, "Reading additional input from stdin...")
	require.NotContains(t, r.stdout, "requestApproval", "exec never asks (approval policy never, though config says on-request)")
}

func TestExecHumanOutput(t *testing.T) {
	e := newEnv(t, "")
	e.mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "echo out; exit 3"})}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("final answer", 1)}},
	)
	r := e.run("", "--skip-git-repo-check", "go")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "final answer\n", r.stdout, "stdout carries only the final message")
	for _, want := range []string{"--------\nworkdir: ", "\napproval: never\nsandbox: read-only\n", "\nuser\ngo\n",
		"warning: Model metadata for `mock-model` not found.", "exec\n/bin/bash -lc 'echo out; exit 3' in ", " exited 3 in ",
		"\nout\n", "codex\nfinal answer\n", "tokens used\n240\n"} {
		require.Contains(t, r.stderr, want)
	}
}

func TestExecResume(t *testing.T) {
	e := newEnv(t, "")
	e.mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("one", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("two", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("three", 1)}},
	)
	first := e.run("", "--json", "--skip-git-repo-check", "first prompt")
	require.Equal(t, 0, first.code, first.stderr)
	id := threadID(t, first.lines(t)[0])

	byID := e.run("", "--json", "--skip-git-repo-check", "resume", id, "second prompt")
	require.Equal(t, 0, byID.code, byID.stderr)
	require.Equal(t, []string{
		`{"type":"thread.started","thread_id":"` + id + `"}`,
		metadataWarning,
		`{"type":"turn.started"}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"two"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":200,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":40,"reasoning_output_tokens":0}}`,
	}, byID.lines(t))

	// Flags after the subcommand, as the SDK passes them; --last picks the newest thread of this cwd.
	last := e.run("", "--skip-git-repo-check", "resume", "--last", "--json", "third prompt")
	require.Equal(t, 0, last.code, last.stderr)
	require.Equal(t, `{"type":"thread.started","thread_id":"`+id+`"}`, last.lines(t)[0])

	reqs := e.mm.ResponseRequests()
	require.Len(t, reqs, 3)
	for _, p := range []string{"first prompt", "two", "second prompt"} {
		require.Contains(t, string(reqs[2].Raw), p, "the resumed request carries the history")
	}
}

// TestExecResumePromptAndStdin pins how the reference (codex exec 0.169.0) takes resume's prompt: an
// argument is the prompt as is (piped stdin is neither read nor appended, no notice), "-" reads stdin
// quietly, no prompt reads stdin with "Reading prompt from stdin..."; with --last a SESSION_ID before the
// prompt is ignored; an unknown UUID fails (an unknown name would start a new session).
func TestExecResumePromptAndStdin(t *testing.T) {
	e := newEnv(t, "")
	for _, r := range []string{"one", "two", "three", "four", "five"} {
		e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(r, 1)}})
	}
	first := e.run("", "--json", "--skip-git-repo-check", "first prompt")
	require.Equal(t, 0, first.code, first.stderr)
	id := threadID(t, first.lines(t)[0])
	lastUserText := func() string {
		reqs := e.mm.ResponseRequests()
		var body struct {
			Input []struct {
				Role    string `json:"role"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"input"`
		}
		require.NoError(t, json.Unmarshal(reqs[len(reqs)-1].Raw, &body))
		text := ""
		for _, in := range body.Input {
			if in.Role == "user" && len(in.Content) > 0 {
				text = in.Content[0].Text
			}
		}
		return text
	}
	for _, tc := range []struct {
		stdin  string
		args   []string
		prompt string
		notice string // the stdin notice on stderr, "" for none
	}{
		{"piped\n", []string{"resume", id, "by id"}, "by id", ""},
		{"piped\n", []string{"resume", "--last", "by last"}, "by last", ""},
		{"from stdin\n", []string{"resume", "--last", "-"}, "from stdin\n", ""},
		{"no prompt\n", []string{"resume", "--last"}, "no prompt\n", "Reading prompt from stdin..."},
		{"", []string{"resume", "--last", "01f00000-0000-7000-8000-000000000000", "second positional"}, "second positional", ""},
	} {
		r := e.run(tc.stdin, append([]string{"--json", "--skip-git-repo-check"}, tc.args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, `{"type":"thread.started","thread_id":"`+id+`"}`, r.lines(t)[0], "%v", tc.args)
		require.Equal(t, tc.prompt, lastUserText(), "%v", tc.args)
		for _, n := range []string{"Reading prompt from stdin...", "Reading additional input from stdin..."} {
			if n == tc.notice {
				require.Contains(t, r.stderr, n, "%v", tc.args)
			} else {
				require.NotContains(t, r.stderr, n, "%v", tc.args)
			}
		}
	}

	unknown := "01f00000-0000-7000-8000-00000000dead"
	r := e.run("", "--skip-git-repo-check", "resume", unknown, "hi")
	require.Equal(t, 1, r.code)
	require.Equal(t, "Error: thread/resume: thread/resume failed: no rollout found for thread id "+unknown+" (code -32600)\n", r.stderr)
	require.Len(t, e.mm.ResponseRequests(), 6, "no turn ran")
}

func TestExecOutputSchemaAndLastMessage(t *testing.T) {
	e := newEnv(t, "")
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(`{"answer":"42"}`, 2)}})
	schemaPath := filepath.Join(e.work, "schema.json")
	schema := `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`
	require.NoError(t, os.WriteFile(schemaPath, []byte(schema), 0o644))
	out := filepath.Join(t.TempDir(), "last.txt")
	r := e.run("", "--json", "--skip-git-repo-check", "--output-schema", schemaPath, "-o", out, "answer")
	require.Equal(t, 0, r.code, r.stderr)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, `{"answer":"42"}`, string(got))

	reqs := e.mm.ResponseRequests()
	require.Len(t, reqs, 1)
	var body struct {
		Text json.RawMessage `json:"text"`
	}
	require.NoError(t, json.Unmarshal(reqs[0].Raw, &body))
	require.JSONEq(t, `{"format":{"type":"json_schema","strict":true,"schema":`+schema+`,"name":"codex_output_schema"}}`, string(body.Text))
	require.Contains(t, string(body.Text), `{"type":"json_schema","strict":true,"schema":`, "members in the reference's order")
}

func TestExecBadOutputSchema(t *testing.T) {
	e := newEnv(t, "")
	bad := filepath.Join(e.work, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{not json"), 0o644))
	r := e.run("", "--json", "--skip-git-repo-check", "--output-schema", bad, "x")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "is not valid JSON")
	r = e.run("", "--json", "--skip-git-repo-check", "--output-schema", filepath.Join(e.work, "missing.json"), "x")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "Failed to read output schema file")
	require.Empty(t, e.mm.ResponseRequests())
}

func TestExecFailingModel(t *testing.T) {
	e := newEnv(t, "")
	fail := mockmodel.Response{HTTPStatus: 500, ErrorBody: map[string]any{"error": map[string]any{"message": "boom", "type": "server_error"}}}
	e.mm.Enqueue(fail, fail)
	r := e.run("", "--json", "--skip-git-repo-check", "x")
	require.Equal(t, 1, r.code)
	msg := "We’re currently experiencing high demand, which may cause temporary errors."
	require.Equal(t, []string{
		`{"type":"thread.started","thread_id":"ID"}`,
		metadataWarning,
		`{"type":"turn.started"}`,
		`{"type":"error","message":"` + msg + `"}`,
		`{"type":"turn.failed","error":{"message":"` + msg + `"}}`,
	}, normalize(r.lines(t)))

	out := filepath.Join(t.TempDir(), "last.txt")
	h := e.run("", "--skip-git-repo-check", "-o", out, "x")
	require.Equal(t, 1, h.code)
	require.Empty(t, h.stdout)
	require.Equal(t, 2, strings.Count(h.stderr, "ERROR: "+msg))
	require.NoFileExists(t, out, "no last message is written for a failed turn")
}

func TestExecUnreachableModel(t *testing.T) {
	e := newEnv(t, "")
	// A port nothing listens on: the model client waits for the network; exec gives up.
	l, err := closedLoopbackPort()
	require.NoError(t, err)
	e.writeConfig("http://"+l+"/v1", "")
	r := e.run("", "--json", "--skip-git-repo-check", "x")
	require.Equal(t, 1, r.code, r.stderr)
	lines := normalize(r.lines(t))
	require.Equal(t, `{"type":"turn.started"}`, lines[2])
	waiting := `{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}`
	require.Equal(t, []string{waiting, waiting,
		`{"type":"turn.failed","error":{"message":"Connection failed: error sending request (model unreachable: gave up after 2 attempts)"}}`,
	}, lines[3:])
}

func TestExecGitRepoCheck(t *testing.T) {
	e := newEnv(t, "")
	r := e.run("", "--json", "x")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "Not inside a trusted directory and --skip-git-repo-check was not specified.")
	require.Empty(t, r.stdout)

	// Inside a git repository (a .git entry in a parent) the check passes.
	require.NoError(t, os.Mkdir(filepath.Join(e.work, ".git"), 0o755))
	sub := filepath.Join(e.work, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	r = e.run("", "--json", "-C", sub, "x")
	require.Equal(t, 0, r.code, r.stderr)
}

func TestExecPromptFromStdin(t *testing.T) {
	e := newEnv(t, "")
	e.mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("a", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("b", 1)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("c", 1)}},
	)
	r := e.run("piped prompt\n", "--json", "--skip-git-repo-check")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "Reading prompt from stdin...")
	r = e.run("extra", "--json", "--skip-git-repo-check", "arg prompt")
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("dash prompt", "--json", "--skip-git-repo-check", "-")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "Reading prompt from stdin...", "the reference reads \"-\" quietly")
	reqs := e.mm.ResponseRequests()
	require.Len(t, reqs, 3)
	require.Contains(t, string(reqs[0].Raw), `"text":"piped prompt\n"`)
	require.Contains(t, string(reqs[1].Raw), `"text":"arg prompt\n\n<stdin>\nextra\n</stdin>"`)
	require.Contains(t, string(reqs[2].Raw), `"text":"dash prompt"`)

	r = e.run("  \n", "--json", "--skip-git-repo-check")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "No prompt provided via stdin.")
}

func TestExecBadArguments(t *testing.T) {
	e := newEnv(t, "")
	for _, args := range [][]string{
		{"--no-such-flag", "x"},
		{"--sandbox", "everything", "x"},
		{"fork"},
		{"fork", "--last", "x"},
		{"fork", "-s", "read-only", "id", "x"},
		{"review", "--uncommitted", "x"},
		{"--uncommitted", "review"},
		{"review", "--uncommitted", "--output-schema", "schema.json"},
		{"a", "b"},
		{"--full-auto", "--dangerously-bypass-approvals-and-sandbox", "x"},
		{"resume"},
	} {
		r := e.run("", args...)
		require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "error: ", "%v", args)
		require.Empty(t, r.stdout)
	}
	// The reference's flags appserver cannot honour say why.
	for flag, why := range map[string]string{
		"--approve-for-me":                "appserver has no automatic approval reviewer",
		"--dangerously-bypass-hook-trust": "appserver does not run hooks",
		"--cyber-access-program=standard": "appserver has no Cyber access programs",
	} {
		r := e.run("", "--skip-git-repo-check", flag, "x")
		require.Equal(t, 2, r.code, "%s: %s", flag, r.stderr)
		name, _, _ := strings.Cut(flag, "=")
		require.Contains(t, r.stderr, "error: '"+name+"' is not supported by appserver exec: "+why)
	}
	require.Empty(t, e.mm.ResponseRequests())
}

func TestExecSandboxFlags(t *testing.T) {
	e := newEnv(t, "")
	for i := 0; i < 3; i++ {
		e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	}
	extra := t.TempDir()
	r := e.run("", "--skip-git-repo-check", "--full-auto", "--add-dir", extra, "x")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "sandbox: workspace-write [workdir, /tmp, $TMPDIR, "+extra+"]")
	r = e.run("", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-m", "other-model", "x")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "sandbox: danger-full-access")
	require.Contains(t, r.stderr, "model: other-model")
	r = e.run("", "--skip-git-repo-check", "-s", "workspace-write", "--ephemeral", "-c", `model_reasoning_effort="high"`, "x")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "reasoning effort: high")
	reqs := e.mm.ResponseRequests()
	require.Contains(t, string(reqs[1].Raw), `"model":"other-model"`)
}

// mcpConfig is a [mcp_servers.<name>] table running the Go test MCP server in mode.
func mcpConfig(t *testing.T, name, mode, extra string) string {
	return fmt.Sprintf("\n[mcp_servers.%s]\ncommand = %q\n%s\n[mcp_servers.%s.env]\n%s = %q\n%s = %q\n",
		name, mcptest.Binary(t), extra, name, mcptest.EnvMode, mode, mcptest.EnvName, name+"-mcp")
}

// streamRun starts exec and hands its stdout lines over a channel.
type streamRun struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *bytes.Buffer
	done   chan error
}

func (e *env) start(args ...string) *streamRun {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	e.t.Cleanup(cancel)
	cmd := e.command(ctx, "", args...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(e.t, err)
	s := &streamRun{cmd: cmd, lines: make(chan string, 100), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.stderr
	require.NoError(e.t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		s.done <- cmd.Wait()
	}()
	return s
}

// until collects lines until one equals want.
func (s *streamRun) until(t *testing.T, want string) []string {
	t.Helper()
	var got []string
	for l := range s.lines {
		got = append(got, l)
		if l == want {
			return got
		}
	}
	t.Fatalf("exec ended before %s; got %v\nstderr: %s", want, got, s.stderr)
	return nil
}

func (s *streamRun) rest(t *testing.T) ([]string, int) {
	var got []string
	for l := range s.lines {
		got = append(got, l)
	}
	err := <-s.done
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return got, code
}

func indexOf(lines []string, want string) int {
	for i, l := range lines {
		if l == want {
			return i
		}
	}
	return -1
}

func TestExecMCPServerLifecycle(t *testing.T) {
	e := newEnv(t, mcpConfig(t, "good", "", "")+mcpConfig(t, "broken", "exit", "")+
		mcpConfig(t, "slow", "noinit", "startup_timeout_sec = 1"))
	// The model answers only after the three startups settled (the test releases it).
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(60)}})
	s := e.start("--json", "--skip-git-repo-check", "x")
	var got []string
	failed := func(name, msg string) string {
		b, err := json.Marshal(msg)
		require.NoError(t, err)
		return `{"type":"mcp.server.failed","name":"` + name + `","error":` + string(b) + `}`
	}
	// Server → the lines that may settle it. "broken" exits at once, so either of the reference's two
	// wordings is right (see mcptest.ExitErrors).
	pending := map[string][]string{
		"good":   {`{"type":"mcp.server.ready","name":"good"}`},
		"broken": {failed("broken", mcptest.ExitErrors("broken")[0]), failed("broken", mcptest.ExitErrors("broken")[1])},
		"slow":   {failed("slow", "MCP client for `slow` timed out after 1 seconds. Add or adjust `startup_timeout_sec` in your config.toml:\n[mcp_servers.slow]\nstartup_timeout_sec = XX")},
	}
	for l := range s.lines {
		got = append(got, l)
		for name, settled := range pending {
			if slices.Contains(settled, l) {
				delete(pending, name)
			}
		}
		if len(pending) == 0 {
			break
		}
	}
	require.Empty(t, pending, "missing MCP events; got %v\nstderr: %s", got, s.stderr)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGINT))
	rest, code := s.rest(t)
	got = append(got, rest...)
	require.Equal(t, 1, code, "a turn interrupted by SIGINT exits with status 1, as the reference's does")

	turnStarted := indexOf(got, `{"type":"turn.started"}`)
	require.Greater(t, turnStarted, 0)
	for _, name := range []string{"broken", "good", "slow"} {
		i := indexOf(got, `{"type":"mcp.server.init_started","name":"`+name+`"}`)
		require.Greater(t, i, 0, "init_started %s in %v", name, got)
		require.Less(t, i, turnStarted, "startup began before the turn")
	}
	require.Equal(t, 2, strings.Count(strings.Join(got, "\n"), `"name":"good"`), "one event per status change: init_started, ready")
	for _, l := range got {
		require.NotContains(t, l, "mcp.server.cancelled", "every server had settled")
	}
}

func TestExecMCPServerCancelledByInterrupt(t *testing.T) {
	e := newEnv(t, mcpConfig(t, "stuck", "noinit", "startup_timeout_sec = 600"))
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(60)}})
	s := e.start("--json", "--skip-git-repo-check", "x")
	head := s.until(t, `{"type":"turn.started"}`)
	require.Equal(t, []string{
		`{"type":"thread.started","thread_id":"ID"}`,
		`{"type":"mcp.server.init_started","name":"stuck"}`,
		metadataWarning,
		`{"type":"turn.started"}`,
	}, normalize(head))
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGINT))
	rest, code := s.rest(t)
	require.Equal(t, 1, code, s.stderr.String())
	require.Equal(t, []string{`{"type":"mcp.server.cancelled","name":"stuck"}`}, rest)
}

// TestExecSIGTERMDiesBySignal: as the reference's `codex exec` (what SDKs see when they kill it), SIGTERM
// ends the run by that signal, not with an exit status; the MCP server it started is shut down first.
func TestExecSIGTERMDiesBySignal(t *testing.T) {
	e := newEnv(t, mcpConfig(t, "stuck", "noinit", "startup_timeout_sec = 600"))
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(60)}})
	s := e.start("--json", "--skip-git-repo-check", "x")
	s.until(t, `{"type":"turn.started"}`)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	rest, _ := s.rest(t)
	require.Equal(t, []string{`{"type":"mcp.server.cancelled","name":"stuck"}`}, rest, "it cleaned up before dying")
	ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, ws.Signaled(), "exit status %d, stderr: %s", ws.ExitStatus(), s.stderr.String())
	require.Equal(t, syscall.SIGTERM, ws.Signal())
}

func TestExecMCPToolCall(t *testing.T) {
	e := newEnv(t, mcpConfig(t, "good", "", ""))
	e.mm.Enqueue(
		// The call is streamed once the test saw the server ready (tools resolve at call time).
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Hang(60),
			{Type: "function_call", Namespace: "mcp__good", Name: "echo", CallID: "call_m", Arguments: map[string]any{"text": "yo"}}}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("echoed", 1)}},
	)
	s := e.start("--json", "--skip-git-repo-check", "x")
	s.until(t, `{"type":"mcp.server.ready","name":"good"}`)
	e.mm.Release()
	rest, code := s.rest(t)
	require.Equal(t, 0, code, s.stderr.String())
	require.Contains(t, rest, `{"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"good","tool":"echo","arguments":{"text":"yo"},"result":null,"error":null,"status":"in_progress"}}`, "%v", rest)
	require.Contains(t, rest, `{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"good","tool":"echo","arguments":{"text":"yo"},"result":{"content":[{"type":"text","text":"echo: yo"}],"structured_content":null},"error":null,"status":"completed"}}`, "%v", rest)
	require.Equal(t, `{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"echoed"}}`, rest[len(rest)-2])
}

func TestExecImage(t *testing.T) {
	e := newEnv(t, "")
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("seen", 1)}})
	// A 1x1 PNG.
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")
	require.NoError(t, os.WriteFile(filepath.Join(e.work, "dot.png"), png, 0o644))
	// -i takes several values, as the reference's `-i <FILE>...`: the prompt goes first.
	r := e.run("", "--json", "--skip-git-repo-check", "describe", "-i", "dot.png")
	require.Equal(t, 0, r.code, r.stderr)
	reqs := e.mm.ResponseRequests()
	require.Len(t, reqs, 1)
	// How the engine renders the image for the model is its business; exec hands it over as a localImage.
	require.Contains(t, string(reqs[0].Raw), filepath.Join(e.work, "dot.png"))
	require.Contains(t, string(reqs[0].Raw), `"text":"describe"`)
}

// TestExecConfigFlags: -p layers $CODEX_HOME/<name>.config.toml, --ignore-user-config skips config.toml,
// --strict-config refuses nested unknown keys, --oss needs a local provider; none is ignored.
func TestExecConfigFlags(t *testing.T) {
	e := newEnv(t, "")
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "pp.config.toml"), []byte("model = \"profile-model\"\n"), 0o644))
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	r := e.run("", "-p", "pp", "--ignore-rules", "--json", "--skip-git-repo-check", "hi")
	require.Equal(t, 0, r.code, r.stderr)
	reqs := e.mm.ResponseRequests()
	require.Len(t, reqs, 1)
	require.Equal(t, "profile-model", reqs[0].Body["model"], "the profile file is layered on config.toml")

	r = e.run("", "--profile", "missing", "--json", "--skip-git-repo-check", "hi")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "missing.config.toml: config profile file not found")

	// --ignore-user-config: a broken config.toml is not read; the profile supplies everything.
	full, err := os.ReadFile(filepath.Join(e.home, "config.toml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "full.config.toml"), full, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("model = \n[features]\nx = true\n"), 0o644))
	e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	r = e.run("", "--ignore-user-config", "--strict-config", "-p", "full", "--json", "--skip-git-repo-check", "hi")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, e.mm.ResponseRequests(), 2)

	// --strict-config: a nested unknown key fails before any model request.
	e.writeConfig(e.mm.URL(), "[features]\nx = true\n")
	r = e.run("", "--strict-config", "--json", "--skip-git-repo-check", "hi")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "unknown configuration field `features.x`")
	r = e.run("", "--oss", "--json", "--skip-git-repo-check", "hi")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "No default OSS provider configured")
	require.Len(t, e.mm.ResponseRequests(), 2)
}

// TestExecConfigErrorOrder pins the order and text of exec's early errors as codex-cli 0.169.0 gives them
// (each case seen on it): --cd before the configuration, the configuration before stdin; with
// --strict-config the -c keys first (when their values type-check), then the file alone (type errors, then
// unknown keys, with the line and a caret), then everything together ("in `key`"), all exiting 1.
func TestExecConfigErrorOrder(t *testing.T) {
	e := newEnv(t, "")
	for _, c := range []struct {
		config string
		args   []string
		stderr string // <home> is CODEX_HOME
	}{
		{"\n", []string{"--cd", "/nonexistent"}, "Error: No such file or directory (os error 2)\n"},
		{"\n", []string{"--cd", "/nonexistent", "-c", "model=5"}, "Error: No such file or directory (os error 2)\n"},
		{"\n", []string{"--worktree", "--cd", "/nonexistent"}, "Error: No such file or directory (os error 2)\n"},
		{"\n", []string{"--ephemeral", "--worktree", "-c", "model=5"}, "Error: --worktree cannot be combined with --ephemeral\n"},
		{"\n", []string{"--worktree", "-c", "model=5"}, "Error loading config.toml: invalid type: integer `5`, expected a string\nin `model`\n\n"},
		{"\n", []string{"-c", "model=5"}, "Error loading config.toml: invalid type: integer `5`, expected a string\nin `model`\n\n"},
		{"\n", []string{"--strict-config", "-c", "model=5"}, "Error loading config.toml: invalid type: integer `5`, expected a string\nin `model`\n\n"},
		{"\n", []string{"--strict-config", "-c", "bogus_key=1"}, "Error loading config.toml: unknown configuration field `bogus_key` in -c/--config override\n"},
		{"\n", []string{"--strict-config", "-c", "model=5", "-c", "bogus_key=1"}, "Error loading config.toml: invalid type: integer `5`, expected a string\nin `model`\n\n"},
		{"\n", []string{"--strict-config", "-c", "bogus_key=1", "-c", "model=5"}, "Error loading config.toml: invalid type: integer `5`, expected a string\nin `model`\n\n"},
		{"\n", []string{"--cd", "/nonexistent", "--strict-config", "-c", "bogus_key=1"}, "Error: No such file or directory (os error 2)\n"},
		{"bogus = 1\nmodel = 5\n", []string{"--strict-config"}, "Error loading config.toml:\n<home>/config.toml:2:9: invalid type: integer `5`, expected a string\n  |\n2 | model = 5\n  |         ^\n"},
		{"bogus = 1\nmodel = 5\n", []string{"--strict-config", "-c", "other=1"}, "Error loading config.toml: unknown configuration field `other` in -c/--config override\n"},
		{"bogus = 1\nmodel = 5\n", []string{"--strict-config", "-c", "model=5"}, "Error loading config.toml:\n<home>/config.toml:2:9: invalid type: integer `5`, expected a string\n  |\n2 | model = 5\n  |         ^\n"},
		{"bogus = 1\n", []string{"--strict-config"}, "Error loading config.toml:\n<home>/config.toml:1:1: unknown configuration field `bogus`\n  |\n1 | bogus = 1\n  | ^^^^^\n"},
		{"bogus = 1\n", []string{"--strict-config", "-c", "other=1"}, "Error loading config.toml: unknown configuration field `other` in -c/--config override\n"},
		{"bogus = 1\n", []string{"--strict-config", "-c", "model=5"}, "Error loading config.toml:\n<home>/config.toml:1:1: unknown configuration field `bogus`\n  |\n1 | bogus = 1\n  | ^^^^^\n"},
		{"bogus = 1\n", []string{"--strict-config", "-c", "other=1", "-c", "model=5"}, "Error loading config.toml:\n<home>/config.toml:1:1: unknown configuration field `bogus`\n  |\n1 | bogus = 1\n  | ^^^^^\n"},
		{"model = 5\n", []string{"--strict-config", "-c", "other=1"}, "Error loading config.toml: unknown configuration field `other` in -c/--config override\n"},
		{"model = 5\n", []string{"--strict-config", "-c", "model=\"x\""}, "Error loading config.toml:\n<home>/config.toml:1:9: invalid type: integer `5`, expected a string\n  |\n1 | model = 5\n  |         ^\n"},
		{"model = 5\n", []string{}, "Error loading config.toml: invalid type: integer `5`, expected a string\nin `model`\n\n"},
		{"model = 5\n", []string{"-c", "model=\"x\""}, "Reading additional input from stdin...\nNot inside a trusted directory and --skip-git-repo-check was not specified.\n"},
		{"x = [1\n", []string{}, "Error loading config.toml:\n<home>/config.toml:1:7: unclosed array, expected `]`\n  |\n1 | x = [1\n  |       ^\n"},
		{"x = [1\n", []string{"--strict-config"}, "Error loading config.toml:\n<home>/config.toml:1:7: unclosed array, expected `]`\n  |\n1 | x = [1\n  |       ^\n"},
		{"sandbox_mode = 3\n", []string{}, "Error loading config.toml: invalid type: unit variant, expected string only\nin `sandbox_mode`\n\n"},
		{"sandbox_mode = 3\n", []string{"--strict-config"}, "Error loading config.toml:\n<home>/config.toml:1:16: invalid type: unit variant, expected string only\n  |\n1 | sandbox_mode = 3\n  |                ^\n"},
		{"projects = 3\n", []string{}, "Error loading config.toml:\n<home>/config.toml:1:12: invalid type: integer `3`, expected a map\n  |\n1 | projects = 3\n  |            ^\n"},
		{"[features]\nfoo = 1\n", []string{"--strict-config"}, "Error loading config.toml:\n<home>/config.toml:2:7: invalid type: integer `1`, expected a boolean\n  |\n2 | foo = 1\n  |       ^\n"},
		{"model = \"abcdef\"\n[features]\nzz = true\n", []string{"--strict-config"}, "Error loading config.toml:\n<home>/config.toml:3:1: unknown configuration field `features.zz`\n  |\n3 | zz = true\n  | ^^\n"},
		{"model_verbosity = \"loud\"\n", []string{"--strict-config"}, "Error loading config.toml:\n<home>/config.toml:1:19: unknown variant `loud`, expected one of `low`, `medium`, `high`\n  |\n1 | model_verbosity = \"loud\"\n  |                   ^^^^^^\n"},
	} {
		require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte(c.config), 0o644))
		r := e.run("", append(c.args, "hi")...)
		require.Equal(t, 1, r.code, "%q %v", c.config, c.args)
		require.Equal(t, strings.ReplaceAll(c.stderr, "<home>", e.home), r.stderr, "%q %v", c.config, c.args)
		require.Empty(t, r.stdout)
	}
}
