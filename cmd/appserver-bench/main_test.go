package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The test binary doubles as a fake app-server when BENCH_FAKE_SERVER is
// set: modes ok, silent, error, hang and crash.
func TestMain(m *testing.M) {
	if mode := os.Getenv("BENCH_FAKE_SERVER"); mode != "" {
		os.Exit(fakeServer(mode))
	}
	os.Exit(m.Run())
}

var ballast []byte

func fakeServer(mode string) int {
	codexHome := os.Getenv("CODEX_HOME")
	if _, err := os.Stat(filepath.Join(codexHome, "config.toml")); err != nil {
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
	var req struct {
		ID     int    `json:"id"`
		Method string `json:"method"`
		Params struct {
			ClientInfo struct{ Name, Version string } `json:"clientInfo"`
		} `json:"params"`
	}
	if err := json.Unmarshal(line, &req); err != nil || req.Method != "initialize" || req.Params.ClientInfo.Name != "bench" {
		fmt.Fprintf(os.Stderr, "fake: bad request %s\n", line)
		return 13
	}
	switch mode {
	case "silent":
	case "error":
		fmt.Printf(`{"id":%d,"error":{"code":-32600,"message":"nope"}}`+"\n", req.ID)
	default:
		fmt.Println(`{"method":"noise","params":{}}`)
		fmt.Println(`not json`)
		fmt.Printf(`{"id":%d,"result":{"userAgent":"fake","codexHome":%q,"platformFamily":"unix","platformOs":"linux"}}`+"\n", req.ID, codexHome)
	}
	if mode == "hang" {
		time.Sleep(time.Hour)
	}
	for {
		if _, err := in.ReadBytes('\n'); err != nil {
			break
		}
	}
	if mode == "crash" {
		fmt.Fprintln(os.Stderr, "fake: crashing")
		return 3
	}
	// Output after stdin EOF must not disturb the harness.
	fmt.Println(`{"method":"bye","params":{}}`)
	return 0
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
			require.InDelta(t, rss[1]/rss[0], x, 0.05)
		}
	}
	require.Greater(t, rss[1], rss[0]+64, "peak RSS reflects the 96 MiB ballast")
	unquoted, err := strconv.Unquote(strings.SplitN(strings.TrimPrefix(lines[0], "server="), " n=", 2)[0])
	require.NoError(t, err)
	require.Equal(t, fake("ok"), unquoted)
}

func TestHandshakeFailures(t *testing.T) {
	cases := []struct {
		mode, want string
	}{
		{"silent", "stdout closed before the initialize response"},
		{"error", "initialize failed"},
		{"crash", "exit after stdin EOF"},
		{"hang", "timed out"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), []string{"handshake", "--server", fake(tc.mode),
				"--n", "1", "--warmup", "0", "--timeout", "3s", "--workdir", t.TempDir()}, &out, &errb)
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
