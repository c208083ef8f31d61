package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

type execOpts struct {
	benchOpts
	n, warmup, runs int
	bytes           int64
	// buffered and streamed say which throughput modes run (--modes).
	buffered, streamed bool
}

func parseExecFlags(args []string, stderr io.Writer) (execOpts, error) {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var servers stringList
	var timeout time.Duration
	var workdir string
	newBenchFlags(fs, &servers, &timeout, &workdir, 5*time.Minute)
	n := fs.Int("n", 50, "measured command/exec [\"true\"] runs per server")
	warmup := fs.Int("warmup", 2, "unmeasured [\"true\"] runs per server before measuring")
	runs := fs.Int("runs", 3, "throughput runs per server and mode (the median counts)")
	size := fs.Int64("bytes", 256<<20, "bytes the throughput command writes (head -c BYTES /dev/zero)")
	modes := fs.String("modes", "buffered,streamed", "throughput modes to run: buffered, streamed or both (comma-separated)")
	if err := parseFlagSet(fs, args); err != nil {
		return execOpts{}, err
	}
	var buffered, streamed bool
	for _, m := range strings.Split(*modes, ",") {
		switch strings.TrimSpace(m) {
		case "buffered":
			buffered = true
		case "streamed":
			streamed = true
		default:
			return execOpts{}, fmt.Errorf("%w: --modes takes buffered and/or streamed, not %q", errUsage, m)
		}
	}
	if *n < 1 || *warmup < 0 || *runs < 1 || *size < 1 {
		return execOpts{}, fmt.Errorf("%w: --n, --runs and --bytes must be ≥ 1, --warmup ≥ 0", errUsage)
	}
	bo, err := finishBenchFlags(fs, servers, timeout, workdir)
	if err != nil {
		return execOpts{}, err
	}
	return execOpts{benchOpts: bo, n: *n, warmup: *warmup, runs: *runs, bytes: *size, buffered: buffered, streamed: streamed}, nil
}

// execRun is the state of one server during an exec benchmark.
type execRun struct {
	c                  command
	conn               *rpcConn
	spawn              []time.Duration
	buffered, streamed []time.Duration
	// bufferedCPU and streamedCPU are the CPU cost of each throughput run.
	bufferedCPU, streamedCPU []cpuUse
	errs                     []error
}

func (r *execRun) fail(what string, err error) {
	r.errs = append(r.errs, fmt.Errorf("%s: %w", what, err))
}

// runExec implements the exec subcommand.
func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, help, err := setup(args, stderr, parseExecFlags)
	if help || err != nil {
		return err
	}
	runs := make([]*execRun, len(o.servers))
	for j, c := range o.servers {
		runs[j] = &execRun{c: c}
	}
	defer func() {
		for _, r := range runs {
			if r.conn != nil {
				r.conn.close()
			}
		}
	}()
	for _, r := range runs {
		if r.conn, err = startConn(ctx, r.c, o.workdir, minimalConfig, o.timeout); err != nil {
			r.fail("start", err)
		}
	}
	alive := func(r *execRun) bool { return r.conn != nil && ctx.Err() == nil }

	for i := 0; i < o.warmup+o.n; i++ {
		for _, r := range runs {
			if !alive(r) {
				continue
			}
			d, _, err := r.exec([]string{"true"}, "", 0)
			switch {
			case err != nil:
				r.fail("true", err)
			case i >= o.warmup:
				r.spawn = append(r.spawn, d)
			}
		}
	}
	thr := []string{"head", "-c", strconv.FormatInt(o.bytes, 10), "/dev/zero"}
	var pipe []time.Duration
	var pipeCPU []cpuUse
	for k := 0; k < o.runs; k++ {
		c0, err := cpuNow(0)
		if err != nil {
			return fmt.Errorf("raw pipe baseline: %w", err)
		}
		d, err := rawPipe(ctx, thr, o.bytes)
		if err != nil {
			return fmt.Errorf("raw pipe baseline: %w", err)
		}
		c1, err := cpuNow(0)
		if err != nil {
			return fmt.Errorf("raw pipe baseline: %w", err)
		}
		pipe = append(pipe, d)
		pipeCPU = append(pipeCPU, c1.sub(c0))
		for _, r := range runs {
			if !alive(r) {
				continue
			}
			if o.buffered {
				if d, u, err := r.exec(thr, "", o.bytes); err != nil {
					r.fail("buffered", err)
				} else {
					r.buffered, r.bufferedCPU = append(r.buffered, d), append(r.bufferedCPU, u)
				}
			}
			if !o.streamed || !alive(r) {
				continue
			}
			if d, u, err := r.exec(thr, fmt.Sprintf("bench-%d", k), o.bytes); err != nil {
				r.fail("streamed", err)
			} else {
				r.streamed, r.streamedCPU = append(r.streamed, d), append(r.streamedCPU, u)
			}
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	pipeRate := rate(o.bytes, pipe)
	pipeCost, _ := medianCPU(pipeCPU)
	if _, err := fmt.Fprintf(stdout, "pipe bytes=%d runs=%d pipe=%s pipe_cpu=%s\n", o.bytes, o.runs, mibps(pipeRate), ms(pipeCost.total())); err != nil {
		return err
	}
	var base *execRun
	failed := 0
	for j, r := range runs {
		if _, err := fmt.Fprintln(stdout, formatExecLine(r, o, pipeRate, pipeCost.total(), base)); err != nil {
			return err
		}
		if j == 0 {
			base = r
		}
		if len(r.errs) > 0 {
			failed += len(r.errs)
			fmt.Fprintf(stderr, "server=%s: %d failures; first: %v; last: %v\n",
				quoteIfNeeded(r.c.text), len(r.errs), r.errs[0], r.errs[len(r.errs)-1])
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d exec runs failed", failed)
	}
	return nil
}

// exec runs argv through command/exec without a sandbox. With processID set
// the output is streamed and counted from command/exec/outputDelta;
// otherwise it is buffered in the response. When want > 0 the stdout size
// must equal it. The results are request → response and the CPU time the
// run cost.
func (r *execRun) exec(argv []string, processID string, want int64) (time.Duration, cpuUse, error) {
	params := map[string]any{"command": argv, "sandboxPolicy": map[string]any{"type": "dangerFullAccess"}}
	if want > 0 {
		params["disableOutputCap"] = true
		params["disableTimeout"] = true
	}
	var streamed int64
	onOther := func(*message) error { return nil }
	if processID != "" {
		params["processId"] = processID
		params["streamStdoutStderr"] = true
		onOther = func(m *message) error {
			if m.Method == "command/exec/outputDelta" {
				streamed += m.deltaBytes
			}
			return nil
		}
	}
	c0, err := cpuNow(r.conn.pid())
	if err != nil {
		return 0, cpuUse{}, err
	}
	start := time.Now()
	res, err := r.conn.call("command/exec", params, onOther)
	elapsed := time.Since(start)
	if err != nil {
		var re *rpcError
		if !errors.As(err, &re) {
			r.conn.close() // state unknown (timeout, exit): stop using it
			r.conn = nil
		}
		return 0, cpuUse{}, err
	}
	c1, err := cpuNow(r.conn.pid())
	if err != nil {
		return 0, cpuUse{}, err
	}
	var out struct {
		ExitCode *int   `json:"exitCode"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.ExitCode == nil {
		return 0, cpuUse{}, fmt.Errorf("command/exec: bad result %.200s", res)
	}
	if *out.ExitCode != 0 {
		return 0, cpuUse{}, fmt.Errorf("command/exec: exit code %d, stderr %.200q", *out.ExitCode, out.Stderr)
	}
	got := decodedLen(out.Stdout)
	if processID != "" {
		got += streamed
	}
	if want > 0 && got != want {
		return 0, cpuUse{}, fmt.Errorf("command/exec: got %d stdout bytes, want %d", got, want)
	}
	return elapsed, c1.sub(c0), nil
}

// rawPipe times reading argv's stdout from a plain pipe, the ceiling any
// server can reach on this machine.
func rawPipe(ctx context.Context, argv []string, want int64) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	buf := make([]byte, 128<<10)
	var n int64
	for {
		k, err := out.Read(buf)
		n += int64(k)
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return 0, err
	}
	elapsed := time.Since(start)
	if n != want {
		return 0, fmt.Errorf("read %d bytes, want %d", n, want)
	}
	return elapsed, nil
}

// rate is bytes per second at the median of ds (0 without samples).
func rate(bytes int64, ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	med := durationStats(ds).p50
	if med <= 0 {
		return 0
	}
	return float64(bytes) / med.Seconds()
}

func mibps(r float64) string { return strconv.FormatFloat(r/(1<<20), 'f', 1, 64) + "MiB/s" }

// formatExecLine renders a server's exec result, with ratios to the raw
// pipe (pipeRate, and pipeCPU the CPU time it took) and, when base is set,
// to the base server. Each mode's CPU time is that of its median-cost run,
// split into the server's own threads, the command it ran and the client.
func formatExecLine(r *execRun, o execOpts, pipeRate float64, pipeCPU time.Duration, base *execRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server=%s n=%d ok=%d", quoteIfNeeded(r.c.text), o.n, len(r.spawn))
	sp := durationStats(r.spawn)
	if len(r.spawn) > 0 {
		fmt.Fprintf(&b, " spawn_p50=%s spawn_p90=%s", ms(sp.p50), ms(sp.p90))
	}
	bufRate, strRate := rate(o.bytes, r.buffered), rate(o.bytes, r.streamed)
	for _, m := range []struct {
		name string
		rate float64
		cpu  []cpuUse
		on   bool
	}{{"buffered", bufRate, r.bufferedCPU, o.buffered}, {"streamed", strRate, r.streamedCPU, o.streamed}} {
		if !m.on {
			fmt.Fprintf(&b, " %s=skipped", m.name)
			continue
		}
		if m.rate == 0 {
			fmt.Fprintf(&b, " %s=fail", m.name)
			continue
		}
		fmt.Fprintf(&b, " %s=%s %s_vs_pipe=%s", m.name, mibps(m.rate), m.name, ratio(m.rate, pipeRate))
		if u, ok := medianCPU(m.cpu); ok {
			fmt.Fprintf(&b, " %s_cpu=%s %s_cpu_vs_pipe=%s %s_cpu_split=%s/%s/%s", m.name, ms(u.total()),
				m.name, ratioOK(float64(u.total()), float64(pipeCPU)), m.name, ms(u.server), ms(u.cmd), ms(u.client))
		}
	}
	if base != nil {
		bsp := durationStats(base.spawn)
		fmt.Fprintf(&b, " spawn_p50_x=%s buffered_x=%s streamed_x=%s",
			ratioOK(float64(sp.p50), float64(bsp.p50)),
			ratioOK(bufRate, rate(o.bytes, base.buffered)), ratioOK(strRate, rate(o.bytes, base.streamed)))
	}
	return b.String()
}

// ratioOK is ratio, but "na" when either side is missing.
func ratioOK(a, b float64) string {
	if a == 0 {
		return "na"
	}
	return ratio(a, b)
}
