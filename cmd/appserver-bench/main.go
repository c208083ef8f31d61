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
// Subcommands are registered in the subcommands table; a `turn` subcommand
// driving a full turn against a mock model is still TODO.
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
// TODO(turn): add "turn", which starts a mock Responses server, runs
// thread/start + turn/start against each server and times first delta and
// turn/completed.
var subcommands = map[string]subcommand{
	"handshake": {summary: "spawn → initialize latency and peak RSS", run: runHandshake},
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
