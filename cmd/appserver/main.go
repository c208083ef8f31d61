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
	"strings"

	"appserver/execmgr"
	"appserver/sandbox"
)

func main() {
	sandbox.RunHelperIfRequested()
	execmgr.RunReaperIfRequested()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// newLogger writes to stderr; LOG_FORMAT=json selects JSON, RUST_LOG (or LOG_LEVEL) sets the level.
func newLogger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	spec := os.Getenv("RUST_LOG")
	if spec == "" {
		spec = os.Getenv("LOG_LEVEL")
	}
	for _, part := range strings.Split(spec, ",") {
		if strings.Contains(part, "=") {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(part)) {
		case "trace", "debug":
			level = slog.LevelDebug
		case "info":
			level = slog.LevelInfo
		case "warn", "warning":
			level = slog.LevelWarn
		case "error", "off":
			level = slog.LevelError
		}
	}
	hopts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(os.Getenv("LOG_FORMAT"), "json") {
		return slog.New(slog.NewJSONHandler(w, hopts))
	}
	return slog.New(slog.NewTextHandler(w, hopts))
}
