package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	pipeLineRE = regexp.MustCompile(`^pipe bytes=(\d+) runs=(\d+) pipe=([\d.]+)MiB/s pipe_cpu=[\d.]+ms$`)
	execLineRE = regexp.MustCompile(`^server=(\S+|"(?:[^"\\]|\\.)*") n=(\d+) ok=(\d+) spawn_p50=([\d.]+)ms spawn_p90=([\d.]+)ms buffered=([\d.]+)MiB/s buffered_vs_pipe=([\d.]+)` +
		cpuFieldsRE("buffered") + ` streamed=([\d.]+)MiB/s streamed_vs_pipe=([\d.]+)` + cpuFieldsRE("streamed") +
		`(?: spawn_p50_x=([\d.]+) buffered_x=([\d.]+) streamed_x=([\d.]+))?$`)
)

// cpuFieldsRE matches the CPU fields of a mode (not captured: CPU times may round to zero).
func cpuFieldsRE(mode string) string {
	return ` ` + mode + `_cpu=[\d.]+ms ` + mode + `_cpu_vs_pipe=(?:[\d.e-]+|na) ` + mode + `_cpu_split=[\d.]+ms/[\d.]+ms/[\d.]+ms`
}

// withLineBuffer lowers maxLineBuffer for one test so that buffered
// results take the compacting path.
func withLineBuffer(t *testing.T, n int) {
	old := maxLineBuffer
	maxLineBuffer = n
	t.Cleanup(func() { maxLineBuffer = old })
}

func TestExecReports(t *testing.T) {
	withLineBuffer(t, 64<<10)
	const size = 3 << 20 // 18 MiB of \u0000 escapes when buffered
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"exec",
		"--server", fake("ok"), "--server", fake("ok"),
		"--n", "4", "--warmup", "1", "--runs", "2", "--bytes", strconv.Itoa(size),
		"--timeout", "120s", "--workdir", t.TempDir(),
	}, &out, &errb)
	require.NoError(t, err, errb.String())
	require.Empty(t, errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3, out.String())
	m := pipeLineRE.FindStringSubmatch(lines[0])
	require.NotNil(t, m, lines[0])
	require.Equal(t, strconv.Itoa(size), m[1])
	require.Equal(t, "2", m[2])
	for i, l := range lines[1:] {
		m := execLineRE.FindStringSubmatch(l)
		require.NotNil(t, m, l)
		require.Equal(t, "4", m[2])
		require.Equal(t, "4", m[3])
		p50, _ := strconv.ParseFloat(m[4], 64)
		p90, _ := strconv.ParseFloat(m[5], 64)
		require.Positive(t, p50)
		require.LessOrEqual(t, p50, p90)
		for _, k := range []int{6, 7, 8, 9} {
			v, _ := strconv.ParseFloat(m[k], 64)
			require.Positive(t, v, "%s field %d", l, k)
		}
		require.Equal(t, i == 1, m[10] != "", "ratios only after the baseline")
	}
}

func TestExecFailures(t *testing.T) {
	// Only the mode that must time out gets a short --timeout: it bounds every step, the race-built
	// fake's start and initialize included.
	cases := []struct{ mode, want, timeout string }{
		{"execshort", "got 99999 stdout bytes, want 100000", "60s"},
		{"execexit", "exit code 1", "60s"},
		{"execerr", "command/exec failed", "60s"},
		{"silent", "awaiting initialize response: timed out", "3s"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), []string{"exec", "--server", fake(tc.mode),
				"--n", "1", "--warmup", "0", "--runs", "1", "--bytes", "100000", "--timeout", tc.timeout,
				"--workdir", t.TempDir()}, &out, &errb)
			require.ErrorContains(t, err, "exec runs failed")
			require.Contains(t, errb.String(), tc.want)
			require.Contains(t, out.String(), "buffered=fail streamed=fail")
		})
	}
	t.Run("pipe baseline fails", func(t *testing.T) {
		_, err := rawPipe(context.Background(), []string{"sh", "-c", "printf abc"}, 4)
		require.ErrorContains(t, err, "read 3 bytes, want 4")
		_, err = rawPipe(context.Background(), []string{"false"}, 0)
		require.Error(t, err)
		_, err = rawPipe(context.Background(), []string{"/nonexistent"}, 0)
		require.Error(t, err)
	})
}

func TestFormatExecLine(t *testing.T) {
	o := execOpts{n: 3, bytes: 1 << 20, buffered: true, streamed: true}
	base := &execRun{c: command{text: "ref"}, spawn: []time.Duration{2 * time.Millisecond},
		buffered: []time.Duration{time.Second}, streamed: []time.Duration{500 * time.Millisecond}}
	ms := time.Millisecond
	r := &execRun{c: command{text: "ours"}, spawn: []time.Duration{time.Millisecond},
		streamed:    []time.Duration{250 * ms, 250 * ms, time.Hour},
		streamedCPU: []cpuUse{{100 * ms, 50 * ms, 30 * ms}, {10 * ms, 10 * ms, 10 * ms}, {ms, 2 * ms, 990 * ms}}}
	require.Equal(t, "server=ref n=3 ok=1 spawn_p50=2.0ms spawn_p90=2.0ms buffered=1.0MiB/s buffered_vs_pipe=0.25 streamed=2.0MiB/s streamed_vs_pipe=0.50",
		formatExecLine(base, o, 4<<20, 90*ms, nil))
	require.Equal(t, "server=ours n=3 ok=1 spawn_p50=1.0ms spawn_p90=1.0ms buffered=fail streamed=4.0MiB/s streamed_vs_pipe=1.00 streamed_cpu=180.0ms streamed_cpu_vs_pipe=2.00 streamed_cpu_split=100.0ms/50.0ms/30.0ms spawn_p50_x=0.50 buffered_x=na streamed_x=2.00",
		formatExecLine(r, o, 4<<20, 90*ms, base))
	o.buffered = false
	require.Equal(t, "server=ref n=3 ok=1 spawn_p50=2.0ms spawn_p90=2.0ms buffered=skipped streamed=2.0MiB/s streamed_vs_pipe=0.50",
		formatExecLine(base, o, 4<<20, 90*ms, nil))
	require.Equal(t, "1.0MiB/s", mibps(1<<20))
	require.Zero(t, rate(10, nil))
}

func TestParseProcStatCPU(t *testing.T) {
	// utime 250, stime 50, cutime 7, cstime 3 ticks; the name holds a space and a parenthesis.
	line := "4242 (my (srv) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 4 0 12345 1000 10 18446744073709551615"
	self, children, err := parseProcStatCPU(line)
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, self)
	require.Equal(t, 100*time.Millisecond, children)
	_, _, err = parseProcStatCPU("4242 (x) S 1 2 3")
	require.ErrorContains(t, err, "short")
	_, _, err = parseProcStatCPU("no parenthesis")
	require.ErrorContains(t, err, "malformed")

	// The live figures of this process, once it has used a few ticks of CPU.
	for {
		used, _, err := rusageCPU()
		require.NoError(t, err)
		if used >= 50*time.Millisecond {
			break
		}
		for i := 0; i < 1e6; i++ {
			line = strconv.Itoa(i)
		}
	}
	self, _, err = procCPU(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, self)
}

func TestParseExecModes(t *testing.T) {
	for _, tc := range []struct {
		modes              string
		buffered, streamed bool
		bad                bool
	}{
		{"", false, false, true},
		{"streamed", false, true, false},
		{"buffered", true, false, false},
		{"buffered, streamed", true, true, false},
		{"streamed,nope", false, false, true},
	} {
		o, err := parseExecFlags([]string{"--server", "x", "--modes", tc.modes}, io.Discard)
		if tc.bad {
			require.ErrorIs(t, err, errUsage, tc.modes)
			continue
		}
		require.NoError(t, err, tc.modes)
		require.Equal(t, tc.buffered, o.buffered, tc.modes)
		require.Equal(t, tc.streamed, o.streamed, tc.modes)
	}
	o, err := parseExecFlags([]string{"--server", "x"}, io.Discard)
	require.NoError(t, err)
	require.True(t, o.buffered && o.streamed)
}
