package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The test binary doubles as a fake app-server when BENCH_FAKE_SERVER is
// set. Handshake modes: ok, silent, error, hang and crash. After initialize
// the fake serves thread/start, turn/start (calling the model at the
// base_url of config.toml) and command/exec; modes turnfail, nomodel,
// turnhang, approval, threaderr, execshort, execexit and execerr break one
// of those.
func TestMain(m *testing.M) {
	if mode := os.Getenv("BENCH_FAKE_SERVER"); mode != "" {
		os.Exit(fakeServer(mode))
	}
	os.Exit(m.Run())
}

var ballast []byte

func fakeServer(mode string) int {
	codexHome := os.Getenv("CODEX_HOME")
	config, err := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake: no config.toml in CODEX_HOME:", err)
		return 10
	}
	if home := os.Getenv("HOME"); home == "" || filepath.Dir(home) != filepath.Dir(codexHome) {
		fmt.Fprintln(os.Stderr, "fake: HOME is not the per-run home:", home)
		return 11
	}
	if mib, _ := strconv.Atoi(os.Getenv("BENCH_FAKE_MEM_MIB")); mib > 0 {
		ballast = make([]byte, mib<<20)
		for i := 0; i < len(ballast); i += 4096 {
			ballast[i] = 1
		}
	}
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return 12
	}
	var req fakeRequest
	if err := json.Unmarshal(line, &req); err != nil || req.Method != "initialize" || !strings.Contains(string(req.Params), `"name":"bench"`) {
		fmt.Fprintf(os.Stderr, "fake: bad request %s\n", line)
		return 13
	}
	out := bufio.NewWriter(os.Stdout)
	switch mode {
	case "silent":
	case "error":
		fmt.Fprintf(out, `{"id":%s,"error":{"code":-32600,"message":"nope"}}`+"\n", req.ID)
	default:
		fmt.Fprintln(out, `{"method":"noise","params":{}}`)
		fmt.Fprintln(out, `not json`)
		fmt.Fprintf(out, `{"id":%s,"result":{"userAgent":"fake","codexHome":%q,"platformFamily":"unix","platformOs":"linux"}}`+"\n", req.ID, codexHome)
	}
	_ = out.Flush()
	if mode == "hang" {
		time.Sleep(time.Hour)
	}
	f := &fakeConn{mode: mode, out: out, config: string(config)}
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			break
		}
		if err := f.handle(line); err != nil {
			fmt.Fprintln(os.Stderr, "fake:", err)
			return 14
		}
		_ = out.Flush()
	}
	if mode == "crash" {
		fmt.Fprintln(os.Stderr, "fake: crashing")
		return 3
	}
	// Output after stdin EOF must not disturb the harness.
	fmt.Fprintln(out, `{"method":"bye","params":{}}`)
	_ = out.Flush()
	return 0
}

type fakeRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// fakeConn is the fake server's request loop state.
type fakeConn struct {
	mode   string
	out    *bufio.Writer
	config string
	turns  int
}

func (f *fakeConn) send(v any) {
	data, _ := json.Marshal(v)
	f.out.Write(append(data, '\n'))
}

func (f *fakeConn) handle(line []byte) error {
	var req fakeRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return fmt.Errorf("bad line %s", line)
	}
	reply := func(result any) { f.send(map[string]any{"id": req.ID, "result": result}) }
	switch {
	case req.ID == nil && req.Method == "":
		return nil // a response to our server request
	case req.Method == "initialized":
	case req.Method == "thread/start" && f.mode == "threaderr":
		f.send(map[string]any{"id": req.ID, "error": map[string]any{"code": -32603, "message": "no threads today"}})
	case req.Method == "thread/start":
		var p struct{ Cwd string }
		if json.Unmarshal(req.Params, &p) != nil || p.Cwd == "" {
			return fmt.Errorf("thread/start without cwd: %s", req.Params)
		}
		reply(map[string]any{"thread": map[string]any{"id": "thr_fake"}})
		f.send(map[string]any{"method": "thread/started", "params": map[string]any{"thread": map[string]any{"id": "thr_fake"}}})
	case req.Method == "turn/start":
		return f.turn(req, reply)
	case req.Method == "command/exec":
		return f.exec(req, reply)
	default:
		f.send(map[string]any{"id": req.ID, "error": map[string]any{"code": -32601, "message": "unknown " + req.Method}})
	}
	return nil
}

func (f *fakeConn) turn(req fakeRequest, reply func(any)) error {
	var p struct {
		ThreadID string `json:"threadId"`
		Input    []struct{ Type, Text string }
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.ThreadID != "thr_fake" || len(p.Input) != 1 || p.Input[0].Type != "text" {
		return fmt.Errorf("bad turn/start %s", req.Params)
	}
	f.turns++
	id := fmt.Sprintf("turn_%d", f.turns)
	reply(map[string]any{"turn": map[string]any{"id": id, "status": "inProgress", "items": []any{}}})
	_ = f.out.Flush()
	notify := func(method string, params map[string]any) {
		params["threadId"] = "thr_fake"
		f.send(map[string]any{"method": method, "params": params})
	}
	notify("turn/started", map[string]any{"turn": map[string]any{"id": id, "status": "inProgress"}})
	switch f.mode {
	case "turnhang":
		return nil
	case "approval":
		f.send(map[string]any{"id": 0, "method": "item/commandExecution/requestApproval", "params": map[string]any{"threadId": "thr_fake", "turnId": id}})
		return nil
	case "nomodel":
	default:
		text, err := f.callModel()
		if err != nil {
			return err
		}
		notify("item/agentMessage/delta", map[string]any{"turnId": id, "itemId": "msg", "delta": text})
	}
	turn := map[string]any{"id": id, "status": "completed", "error": nil}
	if f.mode == "turnfail" {
		turn["status"], turn["error"] = "failed", map[string]any{"message": "model broke"}
	}
	// An unrelated turn's completion first: the bench must match turn ids.
	notify("turn/completed", map[string]any{"turn": map[string]any{"id": "other", "status": "failed"}})
	notify("turn/completed", map[string]any{"turn": turn})
	return nil
}

var baseURLRE = regexp.MustCompile(`(?m)^base_url = "([^"]+)"$`)

// callModel POSTs to the configured mock and checks the SSE stream.
func (f *fakeConn) callModel() (string, error) {
	m := baseURLRE.FindStringSubmatch(f.config)
	if m == nil || !strings.Contains(f.config, `model = "mock-model"`) || !strings.Contains(f.config, "stream_max_retries = 0") {
		return "", fmt.Errorf("config.toml is not a mock config:\n%s", f.config)
	}
	resp, err := http.Post(m[1]+"/responses", "application/json", strings.NewReader(`{"model":"mock-model","stream":true}`))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		return "", fmt.Errorf("model answered %d %s", resp.StatusCode, body)
	}
	var types []string
	var text string
	for _, ev := range strings.Split(strings.TrimSpace(string(body)), "\n\n") {
		name, data, ok := strings.Cut(ev, "\ndata: ")
		var d struct {
			Type  string
			Delta string
		}
		if !ok || json.Unmarshal([]byte(data), &d) != nil || "event: "+d.Type != name {
			return "", fmt.Errorf("bad SSE event %q", ev)
		}
		types = append(types, d.Type)
		text += d.Delta
	}
	want := []string{"response.created", "response.output_item.added", "response.output_text.delta", "response.output_item.done", "response.completed"}
	if !slices.Equal(types, want) || text == "" {
		return "", fmt.Errorf("SSE events %v, text %q", types, text)
	}
	return text, nil
}

func (f *fakeConn) exec(req fakeRequest, reply func(any)) error {
	var p struct {
		Command            []string
		ProcessID          string
		StreamStdoutStderr bool
		DisableOutputCap   bool
		SandboxPolicy      struct{ Type string }
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || len(p.Command) == 0 || p.SandboxPolicy.Type != "dangerFullAccess" {
		return fmt.Errorf("bad command/exec %s", req.Params)
	}
	if f.mode == "execerr" {
		f.send(map[string]any{"id": req.ID, "error": map[string]any{"code": -32600, "message": "no exec"}})
		return nil
	}
	stdout, err := exec.Command(p.Command[0], p.Command[1:]...).Output()
	if err != nil {
		return err
	}
	if f.mode == "execshort" && len(stdout) > 0 {
		stdout = stdout[:len(stdout)-1]
	}
	code := 0
	if f.mode == "execexit" {
		code = 1
	}
	if p.StreamStdoutStderr && p.ProcessID != "" {
		for len(stdout) > 0 {
			n := min(len(stdout), 10000) // not a multiple of 3: padded chunks
			f.send(map[string]any{"method": "command/exec/outputDelta", "params": map[string]any{
				"processId": p.ProcessID, "stream": "stdout", "deltaBase64": base64.StdEncoding.EncodeToString(stdout[:n]), "capReached": false}})
			stdout = stdout[n:]
		}
	}
	reply(map[string]any{"exitCode": code, "stdout": string(stdout), "stderr": ""})
	return nil
}

// fake returns a --server value running this test binary in a fake mode.
func fake(mode string, extraEnv ...string) string {
	return strings.Join(append([]string{"BENCH_FAKE_SERVER=" + mode}, extraEnv...), " ") + " '" + os.Args[0] + "'"
}

var lineRE = regexp.MustCompile(`^server=(\S+|"(?:[^"\\]|\\.)*") n=(\d+) ok=(\d+) init_p50=([\d.]+)ms init_p90=([\d.]+)ms init_max=([\d.]+)ms rss_p50=([\d.]+)MiB(?: init_p50_x=([\d.]+) rss_p50_x=([\d.]+))?$`)

func TestHandshakeReports(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"handshake",
		"--server", fake("ok"),
		"--server", fake("ok", "BENCH_FAKE_MEM_MIB=96"),
		"--n", "3", "--warmup", "1", "--timeout", "60s", "--workdir", t.TempDir(),
	}, &out, &errb)
	require.NoError(t, err, errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, out.String())

	var rss [2]float64
	for i, l := range lines {
		m := lineRE.FindStringSubmatch(l)
		require.NotNil(t, m, l)
		require.Equal(t, "3", m[2])
		require.Equal(t, "3", m[3])
		p50, _ := strconv.ParseFloat(m[4], 64)
		p90, _ := strconv.ParseFloat(m[5], 64)
		pmax, _ := strconv.ParseFloat(m[6], 64)
		require.Positive(t, p50)
		require.LessOrEqual(t, p50, p90)
		require.LessOrEqual(t, p90, pmax)
		rss[i], _ = strconv.ParseFloat(m[7], 64)
		require.Positive(t, rss[i])
		if i == 0 {
			require.Empty(t, m[8], "no ratio on the baseline line")
		} else {
			require.NotEmpty(t, m[8], "ratio to the first server")
			x, _ := strconv.ParseFloat(m[9], 64)
			require.InEpsilon(t, rss[1]/rss[0], x, 0.02)
		}
	}
	require.Greater(t, rss[1], rss[0]+32, "peak RSS reflects the 96 MiB ballast (the baseline varies with the race detector and load)")
	unquoted, err := strconv.Unquote(strings.SplitN(strings.TrimPrefix(lines[0], "server="), " n=", 2)[0])
	require.NoError(t, err)
	require.Equal(t, fake("ok"), unquoted)
}

func TestHandshakeFailures(t *testing.T) {
	// Only the mode that must time out gets a short --timeout: it bounds every step, the race-built
	// fake's start and initialize included.
	cases := []struct {
		mode, want, timeout string
	}{
		{"silent", "stdout closed before the initialize response", "60s"},
		{"error", "initialize failed", "60s"},
		{"crash", "exit after stdin EOF", "60s"},
		{"hang", "timed out", "3s"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), []string{"handshake", "--server", fake(tc.mode),
				"--n", "1", "--warmup", "0", "--timeout", tc.timeout, "--workdir", t.TempDir()}, &out, &errb)
			require.ErrorContains(t, err, "1 runs failed")
			require.Contains(t, errb.String(), tc.want)
			require.Contains(t, out.String(), " n=1 ok=0")
		})
	}
	t.Run("crash stderr", func(t *testing.T) {
		var out, errb bytes.Buffer
		_ = run(context.Background(), []string{"handshake", "--server", fake("crash"),
			"--n", "1", "--warmup", "0", "--workdir", t.TempDir()}, &out, &errb)
		require.Contains(t, errb.String(), "fake: crashing")
	})
	t.Run("missing binary", func(t *testing.T) {
		var out, errb bytes.Buffer
		err := run(context.Background(), []string{"handshake", "--server", "/nonexistent/server app-server",
			"--n", "1", "--warmup", "0", "--workdir", t.TempDir()}, &out, &errb)
		require.Error(t, err)
		require.Contains(t, errb.String(), "start:")
	})
}

func TestUsageErrors(t *testing.T) {
	cases := [][]string{
		nil,
		{"nope"},
		{"handshake"},
		{"handshake", "--server", "x", "--n", "0"},
		{"handshake", "--server", "x", "--warmup", "-1"},
		{"handshake", "--server", "x", "--timeout", "0s"},
		{"handshake", "--server", "x", "extra"},
		{"handshake", "--server", "'unterminated"},
		{"handshake", "--server", "A=1 B=2"},
		{"handshake", "--bogus"},
	}
	for _, args := range cases {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, &out, &errb)
		require.ErrorIs(t, err, errUsage, "%q", args)
		require.Empty(t, out.String())
	}
	var out, errb bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"help"}, &out, &errb))
	require.Contains(t, errb.String(), "handshake")
	require.NoError(t, run(context.Background(), []string{"handshake", "-h"}, &out, &errb))
	require.Contains(t, errb.String(), "-server")
}

func TestSplitCommandLine(t *testing.T) {
	cases := map[string][]string{
		"a b  c":                  {"a", "b", "c"},
		"  ./srv app-server ":     {"./srv", "app-server"},
		`a 'b c' "d e"`:           {"a", "b c", "d e"},
		`a\ b`:                    {"a b"},
		`"x\"y\\z\$" 'no\escape'`: {`x"y\z$`, `no\escape`},
		`pre'mid'post ""`:         {"premidpost", ""},
		`"keep \n backslash"`:     {`keep \n backslash`},
		"tab\tsep\nnl":            {"tab", "sep", "nl"},
		"":                        nil,
	}
	for in, want := range cases {
		got, err := splitCommandLine(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{`'open`, `"open`, `trailing\`} {
		_, err := splitCommandLine(bad)
		require.Error(t, err, bad)
	}
}

func TestParseCommand(t *testing.T) {
	c, err := parseCommand("RUST_LOG=error X_1=a=b /bin/codex app-server -c 'model=\"m\"'")
	require.NoError(t, err)
	require.Equal(t, []string{"RUST_LOG=error", "X_1=a=b"}, c.env)
	require.Equal(t, []string{"/bin/codex", "app-server", "-c", `model="m"`}, c.argv)

	c, err = parseCommand("./srv 1=notenv")
	require.NoError(t, err)
	require.Empty(t, c.env)
	require.Equal(t, []string{"./srv", "1=notenv"}, c.argv)

	_, err = parseCommand("   ")
	require.Error(t, err)
}

func TestStats(t *testing.T) {
	var ss []sample
	for i := 1; i <= 10; i++ {
		ss = append(ss, sample{latency: time.Duration(11-i) * time.Millisecond, rssKiB: int64(i) * 1024})
	}
	st := summarize(ss)
	require.Equal(t, stats{ok: 10, p50: 5 * time.Millisecond, p90: 9 * time.Millisecond, max: 10 * time.Millisecond, rssP50: 5 * 1024}, st)
	require.Equal(t, stats{}, summarize(nil))
	require.Equal(t, 0, rank(1, 50))
	require.Equal(t, 0, rank(1, 90))
	require.Equal(t, 1, rank(3, 50))

	base := stats{ok: 1, p50: 2 * time.Millisecond, p90: 2 * time.Millisecond, max: 2 * time.Millisecond, rssP50: 2048}
	require.Equal(t, "server=./a n=10 ok=10 init_p50=5.0ms init_p90=9.0ms init_max=10.0ms rss_p50=5.0MiB init_p50_x=2.50 rss_p50_x=2.50",
		formatLine("./a", 10, st, &base))
	require.Equal(t, `server="a b" n=3 ok=0`, formatLine("a b", 3, stats{}, nil))
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 4}
	_, _ = tb.Write([]byte("ab"))
	_, _ = tb.Write([]byte("cdef"))
	require.Equal(t, "cdef", tb.String())
	_, _ = tb.Write([]byte("g"))
	require.Equal(t, "defg", tb.String())
}
