package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/mockmodel"
)

var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "appserver-bin")
	if err != nil {
		panic(err)
	}
	binPath = filepath.Join(dir, "appserver")
	out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build failed: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is the real binary under test, spoken to over real pipes.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan map[string]any
	stderr *syncBuffer
	done   chan error
}

// syncBuffer is a goroutine-safe stderr sink.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startBinary(t *testing.T, home string, args ...string) *proc {
	t.Helper()
	return startBinaryIn(t, home, t.TempDir(), args...)
}

// startBinaryIn is startBinary in the working directory dir.
func startBinaryIn(t *testing.T, home, dir string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home, "HOME="+t.TempDir())
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p := &proc{t: t, cmd: cmd, stdin: stdin, lines: make(chan map[string]any, 1000), stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("stdout carried a non-JSON line: %q", sc.Text())
				continue
			}
			p.lines <- m
		}
		close(p.lines)
	}()
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	return p
}

func (p *proc) send(v any) {
	b, _ := json.Marshal(v)
	_, err := p.stdin.Write(append(b, '\n'))
	require.NoError(p.t, err)
}

func (p *proc) waitFor(pred func(map[string]any) bool) map[string]any {
	p.t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case m, ok := <-p.lines:
			require.True(p.t, ok, "stdout closed; stderr:\n%s", p.stderr.String())
			if pred(m) {
				return m
			}
		case <-timeout:
			p.t.Fatalf("timed out; stderr:\n%s", p.stderr.String())
		}
	}
}

func (p *proc) request(id int, method string, params any) map[string]any {
	p.send(map[string]any{"id": id, "method": method, "params": params})
	return p.waitFor(func(m map[string]any) bool { return m["id"] == float64(id) })
}

func writeConfig(t *testing.T, text string) string {
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(text), 0o644))
	return home
}

func TestVersion(t *testing.T) {
	out, err := exec.Command(binPath, "--version").Output()
	require.NoError(t, err)
	require.Contains(t, string(out), "appserver ")
}

func TestAliasOverridesAndCleanExitOnEOF(t *testing.T) {
	home := writeConfig(t, "model = \"from-file\"\n")
	p := startBinary(t, home, "app-server", "-c", `model="from-flag"`, "--startup-sign-out", "--listen", "stdio://")
	init := p.request(0, "initialize", map[string]any{"clientInfo": map[string]any{"name": "t", "version": "1"}})
	require.NotNil(t, init["result"])
	cfg := p.request(1, "config/read", map[string]any{})
	require.Equal(t, "from-flag", cfg["result"].(map[string]any)["config"].(map[string]any)["model"])
	require.NoError(t, p.stdin.Close())
	select {
	case err := <-p.done:
		require.NoError(t, err, "exit status 0 on stdin EOF")
	case <-time.After(time.Minute):
		t.Fatal("server did not exit on stdin EOF")
	}
}

// A config.toml that does not load does not stop the server (as the reference): it answers initialize,
// sends a configWarning right after the answer and logs the error; on the early path (no options) and
// the server's own alike.
func TestInvalidConfigStillServes(t *testing.T) {
	for _, file := range []string{"model = \"x\"\n[model_providers.mock\nbase_url = 1\n", "model = 5\n"} {
		for _, args := range [][]string{nil, {"--listen", "stdio://"}} {
			home := writeConfig(t, file)
			p := startBinary(t, home, args...)
			p.send(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"clientInfo": map[string]any{"name": "t", "version": "1"}}})
			first := p.waitFor(func(map[string]any) bool { return true })
			require.NotNil(t, first["result"], "%v", first)
			next := p.waitFor(func(map[string]any) bool { return true })
			require.Equal(t, "configWarning", next["method"], "%v", next)
			params := next["params"].(map[string]any)
			require.Equal(t, "Invalid configuration; using defaults.", params["summary"])
			require.Equal(t, filepath.Join(home, "config.toml"), params["path"])
			require.Contains(t, params["details"], filepath.Join(home, "config.toml")+":")
			require.NotNil(t, params["range"])
			require.NoError(t, p.stdin.Close())
			select {
			case err := <-p.done:
				require.NoError(t, err, "exit status 0 on stdin EOF")
			case <-time.After(time.Minute):
				t.Fatal("server did not exit on stdin EOF")
			}
			require.Contains(t, p.stderr.String(), "Invalid configuration; using defaults. "+filepath.Join(home, "config.toml"))
		}
	}
}

// A trusted project's .codex/config.toml that does not load, in the directory the server starts in, is
// a configuration that does not load (as the reference): the configWarning names it (path and range for
// a wrong value; a syntax error only in the details text), thread/start without a cwd fails with it, and
// a thread elsewhere starts.
func TestInvalidProjectConfigAtStart(t *testing.T) {
	for _, tc := range []struct {
		name, file, details string // details: <file> stands for the project's config.toml
		located             bool
	}{
		{"wrong type", "model = 3\n", "<file>:1:9: invalid type: integer `3`, expected a string", true},
		{"syntax", "model = \"x\"\nfoo = [\n", "Error parsing project config file <file>: TOML parse error at line 2, column 8\n  |\n2 | foo = [\n  |        ^\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			file := filepath.Join(work, ".codex", "config.toml")
			require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
			require.NoError(t, os.WriteFile(file, []byte(tc.file), 0o644))
			home := writeConfig(t, "[projects."+strconv.Quote(work)+"]\ntrust_level = \"trusted\"\n")
			p := startBinaryIn(t, home, work)
			p.send(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"clientInfo": map[string]any{"name": "t", "version": "1"}}})
			require.NotNil(t, p.waitFor(func(map[string]any) bool { return true })["result"])
			w := p.waitFor(func(map[string]any) bool { return true })
			require.Equal(t, "configWarning", w["method"], "%v", w)
			params := w["params"].(map[string]any)
			require.Equal(t, "Invalid configuration; using defaults.", params["summary"])
			details := params["details"].(string)
			require.True(t, strings.HasPrefix(details, strings.ReplaceAll(tc.details, "<file>", file)), "%q", details)
			if tc.located {
				require.Equal(t, file, params["path"])
				require.Equal(t, map[string]any{"start": map[string]any{"line": 1.0, "column": 9.0}, "end": map[string]any{"line": 1.0, "column": 9.0}}, params["range"])
			} else {
				require.NotContains(t, params, "path")
				require.NotContains(t, params, "range")
			}
			m := p.request(1, "thread/start", map[string]any{})
			require.Equal(t, map[string]any{"code": -32600.0, "message": "failed to load configuration: " + details}, m["error"])
			m = p.request(2, "thread/start", map[string]any{"cwd": home})
			require.NotNil(t, m["result"], "%v", m)
		})
	}
}

// An untrusted project's .codex folders of the directory the server starts in are named in a
// configWarning after the answer, before the unknown-keys one (as the reference), the trust hint naming
// the project root; their config.toml, malformed or not, is not read.
func TestUntrustedProjectWarning(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	for _, d := range []string{filepath.Join(root, ".git"), filepath.Join(root, ".codex"), filepath.Join(sub, ".codex")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, ".codex", "config.toml"), []byte("model = 3\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sub, ".codex", "config.toml"), []byte("foo = [\n"), 0o644))
	home := writeConfig(t, "zz_unknown = 1\n")
	p := startBinaryIn(t, home, sub)
	p.send(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"clientInfo": map[string]any{"name": "t", "version": "1"}}})
	require.NotNil(t, p.waitFor(func(map[string]any) bool { return true })["result"])
	w := p.waitFor(func(map[string]any) bool { return true })
	hint := "To load project-local config, hooks, and exec policies, add " + root + " as a trusted project in " + filepath.Join(home, "config.toml") + ".\n"
	require.Equal(t, map[string]any{"method": "configWarning", "params": map[string]any{"details": nil,
		"summary": "Project-local config, hooks, and exec policies are disabled in the following folders until the project is trusted, but skills still load.\n" +
			"    1. " + filepath.Join(root, ".codex") + "\n       " + hint + "    2. " + filepath.Join(sub, ".codex") + "\n       " + hint}}, withoutEmitted(w))
	w = p.waitFor(func(map[string]any) bool { return true })
	require.Contains(t, w["params"].(map[string]any)["summary"], "`zz_unknown` is ignored")
	m := p.request(1, "thread/start", map[string]any{})
	require.NotNil(t, m["result"], "%v", m)
}

// withoutEmitted drops a notification's emittedAtMs.
func withoutEmitted(m map[string]any) map[string]any {
	delete(m, "emittedAtMs")
	return m
}

// TestUnreadableConfigLoggedOnce: a config.toml that cannot be read is reported once on stderr; the
// background unknown-keys check, failing on it too, adds no line of its own.
func TestUnreadableConfigLoggedOnce(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(home, "config.toml"), 0o755)) // read: "is a directory"
	p := startBinary(t, home)
	p.send(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"clientInfo": map[string]any{"name": "t", "version": "1"}}})
	first := p.waitFor(func(map[string]any) bool { return true })
	require.NotNil(t, first["result"], "%v", first)
	require.NoError(t, p.stdin.Close())
	select {
	case err := <-p.done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("server did not exit on stdin EOF")
	}
	stderr := p.stderr.String()
	require.Contains(t, stderr, "Invalid configuration; using defaults.")
	require.Equal(t, 1, strings.Count(stderr, "is a directory"), stderr)
}

// Under --strict-config, and for a -c override that does not apply, the start fails (as the reference).
func TestInvalidConfigFailsStartup(t *testing.T) {
	cases := []struct {
		file   string
		args   []string
		stderr string
	}{
		{"model = 5\n", []string{"--strict-config"}, "Error: <home>/config.toml:1:9: invalid type: integer `5`, expected a string"},
		{"model = \"x\"\n[model_providers.mock\n", []string{"--strict-config"}, "Error: <home>/config.toml:2:"},
		// A syntax error: the Rust toml crate's words, then its report as the error's cause (as 0.169.0).
		{"x = [1\n", []string{"--strict-config"}, "Error: <home>/config.toml:1:7: unclosed array, expected `]`\n\nCaused by:\n" +
			"    TOML parse error at line 1, column 7\n      |\n    1 | x = [1\n      |       ^\n    unclosed array, expected `]`\n    \n"},
		{"model = \"x\"\n", []string{"-c", "model=5"}, "Error: invalid type: integer `5`, expected a string\nin `model`\n\n"},
		// --strict-config: the -c keys first, when their values type-check (seen on codex-cli 0.169.0).
		{"model = \"x\"\n", []string{"--strict-config", "-c", "bogus=1"}, "Error: unknown configuration field `bogus` in -c/--config override\n"},
		{"model = 5\n", []string{"--strict-config", "-c", "other=1"}, "Error: unknown configuration field `other` in -c/--config override\n"},
		{"model = \"x\"\n", []string{"--strict-config", "-c", "model=5", "-c", "bogus=1"}, "Error: invalid type: integer `5`, expected a string\nin `model`\n\n"},
		{"model = \"x\"\n", []string{"-c", "nokey"}, "Error: -c override: invalid override"},
		{"[profiles.p1]\n", []string{"-c", "profile=p1"}, "Error: legacy `profile = \"p1\"` config is no longer supported; use `--profile p1` with `p1.config.toml` instead"},
		// Values refused on their meaning (codex-cli 0.169.0): a -c one fails the start, in the reference's
		// words; a relative path is the home's then (the defaults' base).
		{"", []string{"-c", "model_provider=\"x\""}, "Error: Model provider `x` not found\n"},
		{"", []string{"-c", "default_permissions=\"foo\""}, "Error: default_permissions requires a `[permissions]` table\n"},
		{"", []string{"-c", "model_instructions_file=\"sub/missing.md\""}, "Error: failed to read model instructions file <home>/sub/missing.md: No such file or directory (os error 2)\n"},
		{"", []string{"-c", "experimental_thread_store={type=\"x\"}"}, "Error: unknown variant `x`, expected `local` or `in_memory`\nin `experimental_thread_store.type`\n\n"},
		{"", []string{"-c", "mcp_enterprise_managed_auth={a=1}"}, "Error: unknown field `a`, expected `idp`\nin `mcp_enterprise_managed_auth`\n\n"},
	}
	for _, tc := range cases {
		home := writeConfig(t, tc.file)
		cmd := exec.Command(binPath, tc.args...)
		cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
		cmd.Stdin = strings.NewReader("")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr, "%q", tc.args)
		require.Equal(t, 1, exitErr.ExitCode())
		require.Contains(t, stderr.String(), strings.ReplaceAll(tc.stderr, "<home>", home))
		require.Empty(t, stdout.String(), "nothing but protocol messages on stdout")
	}
}

func TestUnsupportedListenScheme(t *testing.T) {
	cmd := exec.Command(binPath, "--listen", "tcp://127.0.0.1:0")
	cmd.Env = append(os.Environ(), "CODEX_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	require.Equal(t, 2, exitErr.ExitCode())
	require.Contains(t, string(out), "unsupported --listen URL")
}

func TestJSONLogFormat(t *testing.T) {
	home := writeConfig(t, "")
	cmd := exec.Command(binPath, "--strict-config")
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home, "LOG_FORMAT=json")
	cmd.Stdin = strings.NewReader("{not json\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run())
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "stderr line is JSON: %q", line)
	}
}

// descendants lists the pids whose ancestry leads to root, from /proc.
func descendants(root int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+2:])
		if len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			parent[pid] = ppid
		}
	}
	var out []int
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// TestNoChildOutlivesTheServer starts a long unified-exec session and a background command/exec, then
// closes stdin: every descendant must be gone after the server exits.
func TestNoChildOutlivesTheServer(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "trap '' TERM; sleep 123", "yield_time_ms": 300})}})
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	home := writeConfig(t, fmt.Sprintf(`model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
[model_providers.mock]
name = "mock"
base_url = %q
request_max_retries = 0
stream_max_retries = 0
`, mm.URL()))
	p := startBinary(t, home)
	p.request(0, "initialize", map[string]any{"clientInfo": map[string]any{"name": "t", "version": "1"}})
	res := p.request(1, "thread/start", map[string]any{})
	tid := res["result"].(map[string]any)["thread"].(map[string]any)["id"]
	p.send(map[string]any{"id": 2, "method": "command/exec", "params": map[string]any{"command": []string{"sleep", "124"}, "processId": "bg", "disableTimeout": true, "streamStdoutStderr": true}})
	p.request(3, "turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "go"}}})
	p.waitFor(func(m map[string]any) bool { return m["method"] == "turn/completed" })
	kids := descendants(p.cmd.Process.Pid)
	require.NotEmpty(t, kids, "the sleeps are running")
	require.NoError(t, p.stdin.Close())
	select {
	case err := <-p.done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("server did not exit")
	}
	// The watchdog (a descendant too) finishes its sweep just after the server exits.
	for _, pid := range kids {
		require.Eventually(t, func() bool { return !alive(pid) }, time.Minute, 10*time.Millisecond, "process %d outlived the server", pid)
	}
}

func TestSIGTERMKillsChildren(t *testing.T) {
	home := writeConfig(t, "sandbox_mode = \"danger-full-access\"\n")
	p := startBinary(t, home)
	p.request(0, "initialize", map[string]any{"clientInfo": map[string]any{"name": "t", "version": "1"}})
	p.send(map[string]any{"id": 1, "method": "command/exec", "params": map[string]any{"command": []string{"sh", "-c", "trap '' TERM; sleep 125"}, "processId": "bg", "disableTimeout": true, "streamStdoutStderr": true}})
	require.Eventually(t, func() bool { return len(descendants(p.cmd.Process.Pid)) > 0 }, time.Minute, 20*time.Millisecond)
	kids := descendants(p.cmd.Process.Pid)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatal("server did not exit on SIGTERM")
	}
	// The watchdog (a descendant too) finishes its sweep just after the server exits.
	for _, pid := range kids {
		require.Eventually(t, func() bool { return !alive(pid) }, time.Minute, 10*time.Millisecond, "process %d outlived the server", pid)
	}
}
