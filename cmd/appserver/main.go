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

	"appserver/execmgr"
	"appserver/internal/logenv"

	// The sandbox helper runs from this package's initializer, before the server's heavier
	// packages are initialised (see internal/reexec); it never returns to main.
	_ "appserver/internal/reexec"
)

func main() {
	execmgr.RunReaperIfRequested()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// newLogger writes to stderr at warn level unless the environment asks otherwise (internal/logenv).
func newLogger(w io.Writer) *slog.Logger { return logenv.New(w, slog.LevelWarn) }
