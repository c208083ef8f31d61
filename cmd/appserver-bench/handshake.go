package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// minimalConfig is written to every run's CODEX_HOME: a provider that is
// never contacted during a handshake, and settings that avoid prompts.
const minimalConfig = `model = "bench-model"
model_provider = "bench"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.bench]
name = "bench"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`

// initializeRequest is the single request a handshake run sends.
const initializeRequest = `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"0"}}}` + "\n"

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ", ") }

func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// handshakeOpts are the parsed handshake flags.
type handshakeOpts struct {
	benchOpts
	n, warmup int
}

func parseHandshakeFlags(args []string, stderr io.Writer) (handshakeOpts, error) {
	fs := flag.NewFlagSet("handshake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var servers stringList
	fs.Var(&servers, "server", "server command line (repeatable; the first is the baseline for ratios)")
	n := fs.Int("n", 50, "measured runs per server")
	warmup := fs.Int("warmup", 1, "unmeasured runs per server before measuring")
	timeout := fs.Duration("timeout", 30*time.Second, "limit for one run (spawn to exit)")
	workdir := fs.String("workdir", "", "parent of the per-run temporary directories (default: <user cache dir>/appserver-bench)")
	if err := parseFlagSet(fs, args); err != nil {
		return handshakeOpts{}, err
	}
	if err := checkArgs(fs, servers); err != nil {
		return handshakeOpts{}, err
	}
	if *n < 1 || *warmup < 0 || *timeout <= 0 {
		return handshakeOpts{}, fmt.Errorf("%w: --n must be ≥ 1, --warmup ≥ 0 and --timeout > 0", errUsage)
	}
	bo, err := resolveBench(servers, *timeout, *workdir)
	if err != nil {
		return handshakeOpts{}, err
	}
	return handshakeOpts{benchOpts: bo, n: *n, warmup: *warmup}, nil
}

// sample is one successful handshake run.
type sample struct {
	latency time.Duration
	rssKiB  int64
}

// runHandshake implements the handshake subcommand.
func runHandshake(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, help, err := setup(args, stderr, parseHandshakeFlags)
	if help || err != nil {
		return err
	}
	samples := make([][]sample, len(o.servers))
	failures := make([]int, len(o.servers))
	lastErr := make([]error, len(o.servers))
	// Interleave servers so machine-load drift affects all of them alike.
	for i := 0; i < o.warmup+o.n; i++ {
		for j, c := range o.servers {
			s, err := handshakeOnce(ctx, c, o.timeout, o.workdir)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if i < o.warmup {
				continue
			}
			if err != nil {
				failures[j]++
				lastErr[j] = err
				continue
			}
			samples[j] = append(samples[j], s)
		}
	}
	var base *stats
	failed := 0
	for j, c := range o.servers {
		st := summarize(samples[j])
		line := formatLine(c.text, o.n, st, base)
		if j == 0 {
			base = &st
		}
		if _, err := fmt.Fprintln(stdout, line); err != nil {
			return err
		}
		if failures[j] > 0 {
			failed += failures[j]
			fmt.Fprintf(stderr, "server=%s: %d/%d runs failed; last error: %v\n", quoteIfNeeded(c.text), failures[j], o.n, lastErr[j])
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d runs failed", failed)
	}
	return nil
}

// handshakeOnce runs one server process through initialize and exit.
func handshakeOnce(ctx context.Context, c command, timeout time.Duration, workdir string) (sample, error) {
	dir, err := os.MkdirTemp(workdir, "run-")
	if err != nil {
		return sample{}, fmt.Errorf("create run dir: %w", err)
	}
	defer os.RemoveAll(dir)
	codexHome, home := filepath.Join(dir, "codex"), filepath.Join(dir, "home")
	for _, d := range []string{codexHome, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return sample{}, fmt.Errorf("create run dir: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(minimalConfig), 0o600); err != nil {
		return sample{}, fmt.Errorf("write config.toml: %w", err)
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.Env = append(append(os.Environ(), c.env...), "HOME="+home, "CODEX_HOME="+codexHome)
	cmd.Dir = home
	cmd.WaitDelay = 5 * time.Second
	errTail := &tailBuffer{max: 4096}
	cmd.Stderr = errTail
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return sample{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return sample{}, err
	}

	// Own process group, so a timeout also kills helpers the server spawned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, fmt.Errorf("start: %w", err)
	}
	latency, respErr := awaitInitialize(stdin, out, start)
	_ = stdin.Close()
	// Keep reading stdout until Wait closes it, so a server that writes
	// after the handshake never blocks or gets EPIPE.
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, out)
	}()
	waitErr := cmd.Wait()
	<-drained
	switch {
	case respErr != nil:
		return sample{}, withStderr(respErr, errTail)
	case ctx.Err() != nil:
		return sample{}, withStderr(fmt.Errorf("timed out after %v", timeout), errTail)
	case waitErr != nil:
		return sample{}, withStderr(fmt.Errorf("exit after stdin EOF: %w", waitErr), errTail)
	}
	return sample{latency: latency, rssKiB: maxRSSKiB(cmd.ProcessState)}, nil
}

// awaitInitialize sends initialize and reads stdout until the response to
// it, returning the time since start.
func awaitInitialize(stdin io.Writer, out io.Reader, start time.Time) (time.Duration, error) {
	if _, err := io.WriteString(stdin, initializeRequest); err != nil {
		return 0, fmt.Errorf("write initialize: %w", err)
	}
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(line, &msg) == nil && string(msg.ID) == "1" {
				elapsed := time.Since(start)
				if msg.Error != nil || msg.Result == nil {
					return 0, fmt.Errorf("initialize failed: %s", bytes.TrimSpace(line))
				}
				return elapsed, nil
			}
		}
		if err != nil {
			return 0, errors.New("stdout closed before the initialize response")
		}
	}
}

// maxRSSKiB returns the peak resident set size of the exited process.
func maxRSSKiB(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) / 1024 // bytes there, KiB on Linux
	}
	return int64(ru.Maxrss)
}

// stats summarises the samples of one server.
type stats struct {
	ok            int
	p50, p90, max time.Duration
	rssP50        int64 // KiB
}

// summarize computes nearest-rank percentiles.
func summarize(ss []sample) stats {
	st := stats{ok: len(ss)}
	if len(ss) == 0 {
		return st
	}
	lat := make([]time.Duration, len(ss))
	rss := make([]int64, len(ss))
	for i, s := range ss {
		lat[i], rss[i] = s.latency, s.rssKiB
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	sort.Slice(rss, func(i, j int) bool { return rss[i] < rss[j] })
	st.p50, st.p90, st.max = lat[rank(len(lat), 50)], lat[rank(len(lat), 90)], lat[len(lat)-1]
	st.rssP50 = rss[rank(len(rss), 50)]
	return st
}

// rank is the nearest-rank index of percentile p in n sorted values.
func rank(n, p int) int {
	i := (p*n + 99) / 100 // ceil(p/100 * n)
	if i < 1 {
		i = 1
	}
	return i - 1
}

// formatLine renders a server's result line, with ratios when base is set.
func formatLine(server string, n int, st stats, base *stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server=%s n=%d ok=%d", quoteIfNeeded(server), n, st.ok)
	if st.ok == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, " init_p50=%s init_p90=%s init_max=%s rss_p50=%.1fMiB",
		ms(st.p50), ms(st.p90), ms(st.max), float64(st.rssP50)/1024)
	if base != nil && base.ok > 0 && base.p50 > 0 && base.rssP50 > 0 {
		fmt.Fprintf(&b, " init_p50_x=%s rss_p50_x=%s",
			ratio(float64(st.p50), float64(base.p50)), ratio(float64(st.rssP50), float64(base.rssP50)))
	}
	return b.String()
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
}

func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"'\\") {
		return strconv.Quote(s)
	}
	return s
}

// tailBuffer keeps the last max bytes written to it; safe for the
// concurrent writes exec's stderr copier makes.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func withStderr(err error, t *tailBuffer) error {
	if s := strings.TrimSpace(t.String()); s != "" {
		return fmt.Errorf("%w; stderr tail: %s", err, s)
	}
	return err
}
