// Command appserver-bench measures app-server implementations side by side.
//
// Usage:
//
//	appserver-bench handshake --server "<command line>" [--server "<command line>" ...]
//	                          [--n 50] [--warmup 1] [--timeout 30s] [--workdir DIR]
//
// handshake starts each server command --n times (runs of the servers are
// interleaved), each time with a fresh CODEX_HOME holding a minimal
// config.toml and a fresh HOME. It writes one `initialize` request line to
// stdin, times spawn → initialize response, closes stdin, waits for the exit
// and reads the peak RSS from wait4's rusage. It prints one line per server:
//
//	server=<cmd> n=50 ok=50 init_p50=3.1ms init_p90=4.0ms init_max=5.2ms rss_p50=9.8MiB
//
// followed, for the second and later servers, by ratios to the first
// (init_p50_x=..., rss_p50_x=...). A command line is split with shell-like
// quoting ('...', "...", backslash); leading NAME=value words are added to
// the environment. The temporary directories live under --workdir (default
// the user cache dir), not /tmp, because the reference refuses some setup
// under /tmp.
//
//	appserver-bench turn --server "<command line>" [--server ...] [--turns 200] [--warmup 2]
//	                     [--tools 0] [--idle 0s] [--timeout 60s] [--workdir DIR]
//
// turn starts a zero-latency mock Responses API on 127.0.0.1 (each POST
// /v1/responses streams one short assistant message), starts every server
// once with a CODEX_HOME config pointing at it, initializes, runs
// thread/start and then --turns turns on that one thread (servers
// interleaved turn by turn), timing turn/start request → turn/completed
// notification. It prints turn_p50/p90/max and the server's VmRSS (and
// VmHWM, and VmRSS's anonymous and file-backed parts) from /proc after the
// turns, with ratios to the first server; with --idle D also VmRSS D later,
// all servers idle (rss_idle). With --tools N the mock answers each turn's first request with N
// exec_command calls (`true`) and the follow-up with the message.
//
//	appserver-bench scale --server "<command line>" [--server ...] [--threads 1000]
//	                      [--items 10000] [--concurrent 20] [--timeout 120s] [--workdir DIR]
//
// scale times thread/resume of a stored thread of --items items, reads
// VmRSS with --threads idle threads loaded, and runs --concurrent turns at
// once on one connection, failing when a notification names another
// turn's thread, turn id or text.
//
//	appserver-bench exec --server "<command line>" [--server ...] [--n 50] [--warmup 2]
//	                     [--runs 3] [--bytes 268435456] [--modes buffered,streamed]
//	                     [--timeout 5m] [--workdir DIR]
//
// exec starts every server once and times command/exec ["true"]
// (dangerFullAccess) request → response; then, --runs times, it moves
// `head -c BYTES /dev/zero` through command/exec buffered (disableOutputCap)
// and streamed (processId + streamStdoutStderr, counting the decoded bytes
// of command/exec/outputDelta), and reads the same command from a plain pipe
// in this process as the baseline. Rates are bytes over the median run, in
// MiB/s; *_vs_pipe is the rate over the pipe's, *_x the ratio to the first
// server. *_cpu is the CPU time of the run with the median cost (steadier
// than rates on a shared machine), *_cpu_vs_pipe its ratio to the pipe's,
// *_cpu_split its server/command/client parts (the server's own threads,
// the command it reaped, this process). A buffered 256 MiB result is
// ~1.5 GiB of JSON (NULs are escaped as \u0000); such lines are measured
// while they stream in, never held.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage error")

// subcommand runs one benchmark with its arguments (after the name).
type subcommand struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// subcommands lists the available benchmarks.
var subcommands = map[string]subcommand{
	"handshake": {summary: "spawn → initialize latency and peak RSS", run: runHandshake},
	"turn":      {summary: "turn/start → turn/completed latency against a mock model, and RSS", run: runTurn},
	"exec":      {summary: "command/exec spawn latency and 256 MiB throughput vs a raw pipe", run: runExec},
	"list":      {summary: "thread/list over N stored threads: first start, second start, next page, search", run: runList},
	"scale":     {summary: "1 000 idle threads RSS, resume of a 10 000-item thread, 20 concurrent turns without cross-talk", run: runScale},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "appserver-bench:", err)
		os.Exit(1)
	}
}

// run dispatches args[0] to its subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return fmt.Errorf("%w: missing subcommand", errUsage)
		}
		return nil
	}
	sc, ok := subcommands[args[0]]
	if !ok {
		usage(stderr)
		return fmt.Errorf("%w: unknown subcommand %q", errUsage, args[0])
	}
	return sc.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("usage: appserver-bench <subcommand> [flags]\n\nsubcommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, subcommands[n].summary)
	}
	b.WriteString("\nRun `appserver-bench <subcommand> -h` for its flags.\n")
	fmt.Fprint(w, b.String())
}
