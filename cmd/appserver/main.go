// Command appserver is a drop-in replacement for `codex app-server`: it speaks the app-server protocol
// (newline-delimited JSON-RPC) on stdin/stdout, or WebSocket on a TCP or Unix socket (--listen). Logs go
// to stderr; stdout carries only protocol messages.
//
//	appserver [app-server] [OPTIONS] [proxy | generate-json-schema | generate-ts | help]
package main

import (
	"io"
	"log/slog"
	"os"
	"runtime/debug"

	"appserver/execmgr"
	"appserver/internal/logenv"

	// The sandbox helper runs from these packages' initializers, before the server's heavier
	// packages are initialised (see internal/reexec); it never returns to main.
	_ "appserver/internal/reexec"
	_ "appserver/internal/reexec/full"
)

func main() {
	execmgr.RunReaperIfRequested()
	setGCDefault(os.Getenv)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// defaultGCPercent is the collector's target when GOGC is not set. The server's live heap is small
// (1–3 MiB while serving a thread), so at Go's default of 100 the heap grows to the runtime's 4 MiB
// floor before each collection and keeps the freed spans; at 50 the floor is 2 MiB, which keeps
// about 2 MiB less resident after a turn for collections that cost well under a millisecond at
// this heap size (docs/benchmarks.md). GOGC in the environment still decides.
const defaultGCPercent = 50

// setGCDefault applies defaultGCPercent unless the environment sets GOGC; it returns the percent in
// force afterwards.
func setGCDefault(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		old := debug.SetGCPercent(100)
		debug.SetGCPercent(old)
		return old
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent
}

// newLogger writes to stderr at warn level unless the environment asks otherwise (internal/logenv).
func newLogger(w io.Writer) *slog.Logger { return logenv.New(w, slog.LevelWarn) }
