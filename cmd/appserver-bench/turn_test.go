package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var turnLineRE = regexp.MustCompile(`^server=(\S+|"(?:[^"\\]|\\.)*") turns=(\d+) ok=(\d+) turn_p50=([\d.]+)ms turn_p90=([\d.]+)ms turn_max=([\d.]+)ms rss_after=([\d.]+)MiB rss_peak=([\d.]+)MiB(?: rss_anon=[\d.]+MiB rss_file=[\d.]+MiB)?(?: rss_idle=[\d.]+MiB)?(?: turn_p50_x=([\d.]+) turn_p90_x=([\d.]+) rss_after_x=([\d.]+)(?: rss_idle_x=[\d.]+)?)?$`)

func TestTurnReports(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"turn",
		"--server", fake("ok"),
		"--server", fake("ok", "BENCH_FAKE_MEM_MIB=96"),
		"--turns", "5", "--warmup", "1", "--timeout", "60s", "--workdir", t.TempDir(), "--idle", "1ms",
	}, &out, &errb)
	require.NoError(t, err, errb.String())
	require.Empty(t, errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, out.String())
	var rss [2]float64
	for i, l := range lines {
		m := turnLineRE.FindStringSubmatch(l)
		require.NotNil(t, m, l)
		require.Regexp(t, ` rss_anon=[\d.]+MiB rss_file=[\d.]+MiB rss_idle=[\d.]+MiB`, l, "memory by kind, and after --idle")
		if i == 1 {
			require.Regexp(t, ` rss_idle_x=[\d.]+$`, l)
		}
		require.Equal(t, "5", m[2])
		require.Equal(t, "5", m[3])
		p50, _ := strconv.ParseFloat(m[4], 64)
		p90, _ := strconv.ParseFloat(m[5], 64)
		pmax, _ := strconv.ParseFloat(m[6], 64)
		require.Positive(t, p50)
		require.LessOrEqual(t, p50, p90)
		require.LessOrEqual(t, p90, pmax)
		rss[i], _ = strconv.ParseFloat(m[7], 64)
		peak, _ := strconv.ParseFloat(m[8], 64)
		require.Positive(t, rss[i])
		require.GreaterOrEqual(t, peak, rss[i])
		if i == 0 {
			require.Empty(t, m[9], "no ratio on the baseline line")
		} else {
			x, _ := strconv.ParseFloat(m[11], 64)
			require.InEpsilon(t, rss[1]/rss[0], x, 0.02)
		}
	}
	require.Greater(t, rss[1], rss[0]+64, "RSS after the turns reflects the 96 MiB ballast")
}

func TestTurnFailures(t *testing.T) {
	cases := []struct {
		mode, timeout, want string
		ok                  string // measured turns that still succeed
	}{
		{"turnfail", "60s", "turn ended failed", "0"},
		{"nomodel", "60s", "without a model request", "0"},
		{"turnhang", "8s", "awaiting turn/completed: timed out", "0"}, // 8s: --timeout also bounds initialize of the race-built fake
		{"approval", "60s", "unexpected server request item/commandExecution/requestApproval", "0"},
		{"threaderr", "60s", "thread/start failed", "0"},
		{"silent", "2s", "awaiting initialize response: timed out", "0"},
		{"error", "60s", "initialize failed", "0"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), []string{"turn", "--server", fake("ok"), "--server", fake(tc.mode),
				"--turns", "3", "--warmup", "0", "--timeout", tc.timeout, "--workdir", t.TempDir()}, &out, &errb)
			require.ErrorContains(t, err, "3 turns failed")
			require.Contains(t, errb.String(), tc.want)
			require.Contains(t, errb.String(), "3/3 measured turns failed")
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			require.Len(t, lines, 2)
			require.Regexp(t, turnLineRE, lines[0], "the healthy server is still measured")
			require.True(t, strings.HasSuffix(lines[1], " turns=3 ok="+tc.ok), lines[1])
		})
	}
	t.Run("missing binary", func(t *testing.T) {
		var out, errb bytes.Buffer
		err := run(context.Background(), []string{"turn", "--server", "/nonexistent/server app-server",
			"--turns", "1", "--workdir", t.TempDir()}, &out, &errb)
		require.ErrorContains(t, err, "1 turns failed")
		require.Contains(t, errb.String(), "start:")
	})
}

func TestTurnAndExecUsageErrors(t *testing.T) {
	cases := [][]string{
		{"turn"},
		{"turn", "--server", "x", "--turns", "0"},
		{"turn", "--server", "x", "--warmup", "-1"},
		{"turn", "--server", "x", "--idle", "-1s"},
		{"turn", "--server", "x", "--timeout", "0s"},
		{"turn", "--server", "x", "extra"},
		{"turn", "--server", "'open"},
		{"turn", "--bogus"},
		{"exec"},
		{"exec", "--server", "x", "--n", "0"},
		{"exec", "--server", "x", "--runs", "0"},
		{"exec", "--server", "x", "--bytes", "0"},
		{"exec", "--server", "x", "--warmup", "-1"},
		{"exec", "--server", "x", "--timeout", "-1s"},
		{"exec", "--server", "A=1"},
		{"exec", "--server", "x", "extra"},
	}
	for _, args := range cases {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, &out, &errb)
		require.ErrorIs(t, err, errUsage, "%q", args)
		require.Empty(t, out.String())
	}
	for _, sub := range []string{"turn", "exec"} {
		var out, errb bytes.Buffer
		require.NoError(t, run(context.Background(), []string{sub, "-h"}, &out, &errb))
		require.Contains(t, errb.String(), "-server")
	}
	var out, errb bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"help"}, &out, &errb))
	require.Contains(t, errb.String(), "turn")
	require.Contains(t, errb.String(), "exec")
}

func TestProcMem(t *testing.T) {
	rss, hwm, err := procMemKiB(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, rss)
	require.GreaterOrEqual(t, hwm, rss)
	_, _, err = procMemKiB(-1)
	require.Error(t, err)
	m, err := readProcMem(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, m.anon)
	require.Positive(t, m.file)
	require.LessOrEqual(t, m.anon+m.file, m.rss+64, "RssAnon and RssFile are parts of VmRSS (RssShmem is the rest)")
}

func TestMockResponses(t *testing.T) {
	m, err := startMockResponses()
	require.NoError(t, err)
	f := &fakeConn{config: "model = \"mock-model\"\nbase_url = \"" + m.baseURL() + "\"\nstream_max_retries = 0\n"}
	for range 2 {
		text, err := f.callModel()
		require.NoError(t, err)
		require.Equal(t, "ok", text)
	}
	require.EqualValues(t, 2, m.served.Load())
	require.NoError(t, m.close())
	_, err = f.callModel()
	require.Error(t, err, "closed")
}

func TestFormatTurnLine(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	base := &turnRun{c: command{text: "ref app-server"}, lat: ms(10, 20, 30, 40), rssKiB: 102400, hwmKiB: 204800}
	r := &turnRun{c: command{text: "./ours"}, lat: ms(1, 2, 3, 4), rssKiB: 10240, hwmKiB: 10240}
	require.Equal(t, `server="ref app-server" turns=4 ok=4 turn_p50=20.0ms turn_p90=40.0ms turn_max=40.0ms rss_after=100.0MiB rss_peak=200.0MiB`,
		formatTurnLine(base, 4, 0, nil))
	require.Equal(t, `server=./ours turns=5 ok=4 turn_p50=2.0ms turn_p90=4.0ms turn_max=4.0ms rss_after=10.0MiB rss_peak=10.0MiB turn_p50_x=0.10 turn_p90_x=0.10 rss_after_x=0.10`,
		formatTurnLine(r, 5, 0, base))
	require.Equal(t, `server=./ours turns=5 ok=0`, formatTurnLine(&turnRun{c: command{text: "./ours"}}, 5, 0, base))
	base.anonKiB, base.fileKiB, base.idleKiB = 61440, 40960, 81920
	r.anonKiB, r.fileKiB, r.idleKiB = 2048, 8192, 8192
	require.Equal(t, `server=./ours turns=5 ok=4 turn_p50=2.0ms turn_p90=4.0ms turn_max=4.0ms rss_after=10.0MiB rss_peak=10.0MiB rss_anon=2.0MiB rss_file=8.0MiB rss_idle=8.0MiB turn_p50_x=0.10 turn_p90_x=0.10 rss_after_x=0.10 rss_idle_x=0.10`,
		formatTurnLine(r, 5, 0, base))
	for _, c := range []struct {
		a, b float64
		want string
	}{{1, 0, "na"}, {0, 1, "0.00"}, {1, 3, "0.33"}, {1, 8, "0.12"}, {1, 256, "0.0039"}, {346, 10, "34.6"}, {3, 1, "3.00"}} {
		require.Equal(t, c.want, ratio(c.a, c.b), "%v/%v", c.a, c.b)
	}
}

func TestMockRequestParsing(t *testing.T) {
	body := []byte(`{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"first"}]},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"scale turn 3"}]}]}`)
	require.Equal(t, "scale turn 3", lastUserText(body))
	require.False(t, endsWithToolOutput(body))
	require.Equal(t, "", lastUserText([]byte(`not json`)))
	require.True(t, endsWithToolOutput([]byte(`{"input":[{"type":"function_call"},{"type":"function_call_output"}]}`)))
	require.False(t, endsWithToolOutput([]byte(`{"input":[{"type":"function_call_output"},{"type":"message"}]}`)))
}
