// Package logenv builds the binary's slog logger from the environment: RUST_LOG (or LOG_LEVEL) picks
// the level, LOG_FORMAT=json the JSON handler. Logs never go to stdout, which carries the protocol.
package logenv

import (
	"io"
	"log/slog"
	"os"
	"strings"
)

// New returns a logger writing to w at the level the environment asks for, or def when it names none.
// Module-scoped directives such as `codex_core=debug` are ignored.
func New(w io.Writer, def slog.Level) *slog.Logger {
	level := Level(os.Getenv("RUST_LOG"), os.Getenv("LOG_LEVEL"), def)
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(os.Getenv("LOG_FORMAT"), "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Level reads a RUST_LOG-style spec (falling back to levelSpec when rustLog is empty); the last
// bare level in the comma-separated list wins, def when there is none.
func Level(rustLog, levelSpec string, def slog.Level) slog.Level {
	spec := rustLog
	if spec == "" {
		spec = levelSpec
	}
	level := def
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
	return level
}
