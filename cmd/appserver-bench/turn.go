package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// turnConfig is the CODEX_HOME config of a turn run; %s is the mock's base URL.
const turnConfig = `model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.mock]
name = "Mock Responses API"
base_url = "%s"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`

// benchOpts are the flags shared by the turn and exec subcommands.
type benchOpts struct {
	servers []command
	timeout time.Duration
	workdir string
}

// newBenchFlags registers the shared flags on fs.
func newBenchFlags(fs *flag.FlagSet, servers *stringList, timeout *time.Duration, workdir *string, defTimeout time.Duration) {
	fs.Var(servers, "server", "server command line (repeatable; the first is the baseline for ratios)")
	fs.DurationVar(timeout, "timeout", defTimeout, "limit for one request (or turn) to complete")
	fs.StringVar(workdir, "workdir", "", "parent of the per-run temporary directories (default: <user cache dir>/appserver-bench)")
}

// finishBenchFlags validates the shared flags after fs.Parse.
func finishBenchFlags(fs *flag.FlagSet, servers stringList, timeout time.Duration, workdir string) (benchOpts, error) {
	if err := checkArgs(fs, servers); err != nil {
		return benchOpts{}, err
	}
	if timeout <= 0 {
		return benchOpts{}, fmt.Errorf("%w: --timeout must be > 0", errUsage)
	}
	return resolveBench(servers, timeout, workdir)
}

// checkArgs rejects positional arguments and a missing --server after fs.Parse.
func checkArgs(fs *flag.FlagSet, servers stringList) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if len(servers) == 0 {
		return fmt.Errorf("%w: at least one --server is required", errUsage)
	}
	return nil
}

// resolveBench parses the --server command lines and defaults an empty workdir to
// <user cache dir>/appserver-bench.
func resolveBench(servers stringList, timeout time.Duration, workdir string) (benchOpts, error) {
	o := benchOpts{timeout: timeout, workdir: workdir}
	for _, s := range servers {
		c, err := parseCommand(s)
		if err != nil {
			return benchOpts{}, fmt.Errorf("%w: %v", errUsage, err)
		}
		o.servers = append(o.servers, c)
	}
	if o.workdir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return benchOpts{}, fmt.Errorf("locate cache dir (pass --workdir): %w", err)
		}
		o.workdir = filepath.Join(cache, "appserver-bench")
	}
	return o, nil
}

// workdirPath returns the parent of the per-run directories.
func (o benchOpts) workdirPath() string { return o.workdir }

// setup parses a subcommand's args with parse and creates the options' workdir; help reports that -h/--help
// was given and there is nothing to run.
func setup[O interface{ workdirPath() string }](args []string, stderr io.Writer, parse func([]string, io.Writer) (O, error)) (o O, help bool, err error) {
	o, err = parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return o, true, nil
	}
	if err != nil {
		return o, false, err
	}
	if err := os.MkdirAll(o.workdirPath(), 0o700); err != nil {
		return o, false, fmt.Errorf("create workdir: %w", err)
	}
	return o, false, nil
}

func parseFlagSet(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

type turnOpts struct {
	benchOpts
	turns, warmup int
	tools         int           // exec_command calls the model makes in each turn (0: a one-message turn)
	idle          time.Duration // wait after the last turn before reading rss_idle (0: no such reading)
}

func parseTurnFlags(args []string, stderr io.Writer) (turnOpts, error) {
	fs := flag.NewFlagSet("turn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var servers stringList
	var timeout time.Duration
	var workdir string
	newBenchFlags(fs, &servers, &timeout, &workdir, 60*time.Second)
	turns := fs.Int("turns", 200, "measured turns per server, all on one thread")
	warmup := fs.Int("warmup", 2, "unmeasured turns per server before measuring")
	tools := fs.Int("tools", 0, "exec_command calls (`true`) the mock model makes per turn before its answer (0: one message)")
	idle := fs.Duration("idle", 0, "after the last turn, wait this long and report VmRSS as rss_idle (0: none)")
	if err := parseFlagSet(fs, args); err != nil {
		return turnOpts{}, err
	}
	if *turns < 1 || *warmup < 0 || *tools < 0 || *idle < 0 {
		return turnOpts{}, fmt.Errorf("%w: --turns must be ≥ 1, --warmup, --tools and --idle ≥ 0", errUsage)
	}
	bo, err := finishBenchFlags(fs, servers, timeout, workdir)
	if err != nil {
		return turnOpts{}, err
	}
	return turnOpts{benchOpts: bo, turns: *turns, warmup: *warmup, tools: *tools, idle: *idle}, nil
}

// turnRun is the state of one server during a turn benchmark.
type turnRun struct {
	c        command
	conn     *rpcConn
	threadID string
	lat      []time.Duration
	lastErr  error
	dead     bool // stop sending turns (start failed or a turn timed out)
	rssKiB   int64
	hwmKiB   int64
	anonKiB  int64 // RssAnon and RssFile when rss_after was read
	fileKiB  int64
	idleKiB  int64 // VmRSS after --idle (0: not read)
}

// runTurn implements the turn subcommand.
func runTurn(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, help, err := setup(args, stderr, parseTurnFlags)
	if help || err != nil {
		return err
	}
	mock, err := startMockResponses()
	if err != nil {
		return err
	}
	defer mock.close()
	mock.tools = o.tools
	mock.noEcho = true
	config := fmt.Sprintf(turnConfig, mock.baseURL())

	runs := make([]*turnRun, len(o.servers))
	for j, c := range o.servers {
		runs[j] = &turnRun{c: c}
	}
	defer func() {
		for _, r := range runs {
			if r.conn != nil {
				r.conn.close()
			}
		}
	}()
	for _, r := range runs {
		if err := r.start(ctx, config, o.benchOpts); err != nil {
			r.dead, r.lastErr = true, err
		}
	}
	// Interleave servers turn by turn so machine-load drift affects all alike.
	for i := 0; i < o.warmup+o.turns; i++ {
		for _, r := range runs {
			if r.dead {
				continue
			}
			before := mock.served.Load()
			d, err := r.turn(i)
			if err == nil && mock.served.Load() == before {
				err = &turnFailed{status: "completed", detail: "without a model request"}
			}
			if err == nil && o.tools > 0 && mock.served.Load()-before < 2 {
				err = &turnFailed{status: "completed", detail: "without a model request after the tool calls"}
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var tf *turnFailed
			switch {
			case err != nil && !errors.As(err, &tf):
				r.dead, r.lastErr = true, err // the connection state is unknown now
			case err != nil:
				r.lastErr = err
			case i >= o.warmup:
				r.lat = append(r.lat, d)
			}
		}
	}
	for _, r := range runs {
		if r.conn != nil {
			if m, err := readProcMem(r.conn.pid()); err == nil {
				r.rssKiB, r.hwmKiB, r.anonKiB, r.fileKiB = m.rss, m.hwm, m.anon, m.file
			}
		}
	}
	if o.idle > 0 {
		select { // all servers idle at once
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.idle):
		}
		for _, r := range runs {
			if r.conn != nil {
				r.idleKiB, _, _ = procMemKiB(r.conn.pid())
			}
		}
	}

	var base *turnRun
	failed := 0
	for j, r := range runs {
		if _, err := fmt.Fprintln(stdout, formatTurnLine(r, o.turns, o.tools, base)); err != nil {
			return err
		}
		if j == 0 {
			base = r
		}
		if n := o.turns - len(r.lat); n > 0 || r.lastErr != nil {
			failed += n
			fmt.Fprintf(stderr, "server=%s: %d/%d measured turns failed; last error: %v\n", quoteIfNeeded(r.c.text), n, o.turns, r.lastErr)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d turns failed", failed)
	}
	return nil
}

// start spawns the server and starts the thread all turns run on.
func (r *turnRun) start(ctx context.Context, config string, o benchOpts) error {
	conn, err := startConn(ctx, r.c, o.workdir, config, o.timeout)
	if err != nil {
		return err
	}
	r.conn = conn
	res, err := conn.call("thread/start", map[string]any{"cwd": conn.home}, nil)
	if err != nil {
		return err
	}
	var ts struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &ts); err != nil || ts.Thread.ID == "" {
		return fmt.Errorf("thread/start: no thread id in %s", res)
	}
	r.threadID = ts.Thread.ID
	return nil
}

// turnFailed is a turn that completed with a status other than completed;
// the connection stays usable.
type turnFailed struct{ status, detail string }

func (e *turnFailed) Error() string { return fmt.Sprintf("turn ended %s: %s", e.status, e.detail) }

type turnParams struct {
	Turn struct {
		ID     string          `json:"id"`
		Status string          `json:"status"`
		Error  json.RawMessage `json:"error"`
	} `json:"turn"`
}

// turn runs turn number i and returns turn/start request → turn/completed.
func (r *turnRun) turn(i int) (time.Duration, error) {
	completed := map[string]turnParams{}
	collect := func(m *message) error {
		if m.Method == "turn/completed" {
			var p turnParams
			if err := json.Unmarshal(m.Params, &p); err != nil {
				return fmt.Errorf("bad turn/completed: %w", err)
			}
			completed[p.Turn.ID] = p
		}
		return nil
	}
	start := time.Now()
	res, err := r.conn.call("turn/start", map[string]any{
		"threadId": r.threadID,
		"input":    []any{map[string]any{"type": "text", "text": "bench turn " + strconv.Itoa(i+1)}},
	}, collect)
	if err != nil {
		return 0, err
	}
	var ts turnParams
	if err := json.Unmarshal(res, &ts); err != nil || ts.Turn.ID == "" {
		return 0, fmt.Errorf("turn/start: no turn id in %s", res)
	}
	deadline := time.Now().Add(r.conn.timeout)
	for {
		if p, ok := completed[ts.Turn.ID]; ok {
			elapsed := time.Since(start)
			if p.Turn.Status != "completed" {
				return 0, &turnFailed{status: p.Turn.Status, detail: string(p.Turn.Error)}
			}
			return elapsed, nil
		}
		m, err := r.conn.next(deadline)
		if err != nil {
			return 0, fmt.Errorf("awaiting turn/completed: %w", err)
		}
		if err := r.conn.other(m, collect); err != nil {
			return 0, err
		}
	}
}

// procMemKiB reads VmRSS and VmHWM of pid from /proc.
func procMemKiB(pid int) (rss, hwm int64, err error) {
	m, err := readProcMem(pid)
	return m.rss, m.hwm, err
}

// procMem is a process's memory from /proc/PID/status, in KiB: resident set, its peak, and the resident
// set's anonymous (heap, stacks, written data) and file-backed (the binary's and libraries' pages) parts.
type procMem struct{ rss, hwm, anon, file int64 }

func readProcMem(pid int) (procMem, error) {
	var m procMem
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	defer f.Close()
	fields := map[string]*int64{"VmRSS": &m.rss, "VmHWM": &m.hwm, "RssAnon": &m.anon, "RssFile": &m.file}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		dst := fields[name]
		if !ok || dst == nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return procMem{}, fmt.Errorf("parse %s: %w", name, err)
		}
		*dst = n
	}
	return m, sc.Err()
}

// durStats are nearest-rank percentiles of some durations.
type durStats struct{ p50, p90, max time.Duration }

func durationStats(ds []time.Duration) durStats {
	if len(ds) == 0 {
		return durStats{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return durStats{p50: s[rank(len(s), 50)], p90: s[rank(len(s), 90)], max: s[len(s)-1]}
}

// formatTurnLine renders a server's turn result, with ratios when base is set.
func formatTurnLine(r *turnRun, turns, tools int, base *turnRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server=%s turns=%d ok=%d", quoteIfNeeded(r.c.text), turns, len(r.lat))
	if tools > 0 {
		fmt.Fprintf(&b, " tools=%d", tools)
	}
	if len(r.lat) == 0 {
		return b.String()
	}
	st := durationStats(r.lat)
	fmt.Fprintf(&b, " turn_p50=%s turn_p90=%s turn_max=%s rss_after=%s rss_peak=%s",
		ms(st.p50), ms(st.p90), ms(st.max), mib(r.rssKiB), mib(r.hwmKiB))
	if r.anonKiB+r.fileKiB > 0 {
		fmt.Fprintf(&b, " rss_anon=%s rss_file=%s", mib(r.anonKiB), mib(r.fileKiB))
	}
	if r.idleKiB > 0 {
		fmt.Fprintf(&b, " rss_idle=%s", mib(r.idleKiB))
	}
	if base != nil && len(base.lat) > 0 {
		bs := durationStats(base.lat)
		fmt.Fprintf(&b, " turn_p50_x=%s turn_p90_x=%s rss_after_x=%s",
			ratio(float64(st.p50), float64(bs.p50)), ratio(float64(st.p90), float64(bs.p90)),
			ratio(float64(r.rssKiB), float64(base.rssKiB)))
		if r.idleKiB > 0 && base.idleKiB > 0 {
			fmt.Fprintf(&b, " rss_idle_x=%s", ratio(float64(r.idleKiB), float64(base.idleKiB)))
		}
	}
	return b.String()
}

func mib(kib int64) string { return strconv.FormatFloat(float64(kib)/1024, 'f', 1, 64) + "MiB" }

// ratio formats a/b (two decimals, one from 10 up, two significant digits
// below 0.1), or "na" when b is zero.
func ratio(a, b float64) string {
	if b == 0 {
		return "na"
	}
	switch x := a / b; {
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case x >= 0.1 || x == 0:
		return strconv.FormatFloat(x, 'f', 2, 64)
	default:
		return strconv.FormatFloat(x, 'g', 2, 64)
	}
}
