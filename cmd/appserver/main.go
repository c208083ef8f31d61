// Command appserver is a drop-in replacement for `codex app-server`: it speaks the app-server protocol
// (newline-delimited JSON-RPC) on stdin/stdout. Logs go to stderr; stdout carries only protocol messages.
//
//	appserver [app-server] [--listen stdio://] [-c key=value]... [--enable F] [--disable F] [--version]
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"appserver/config"
	"appserver/execmgr"
	"appserver/sandbox"
	"appserver/server"
)

func main() {
	sandbox.RunHelperIfRequested()
	execmgr.RunReaperIfRequested()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options are the parsed command line.
type options struct {
	overrides []string
	listen    string
	version   bool
	warnings  []string
}

// parseArgs accepts the reference's launch commands: an optional `app-server` subcommand, `-c k=v`,
// `--listen URL`, `--enable/--disable FEATURE`; other flags are ignored with a warning.
func parseArgs(args []string) (options, error) {
	o := options{listen: "stdio://"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func() (string, error) {
			if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
				return v, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", a)
			}
			i++
			return args[i], nil
		}
		name, _, _ := strings.Cut(a, "=")
		switch {
		case a == "app-server" && i == 0:
		case a == "--version" || a == "-V":
			o.version = true
		case name == "-c" || name == "--config":
			v, err := value()
			if err != nil {
				return o, err
			}
			o.overrides = append(o.overrides, v)
		case strings.HasPrefix(a, "-c") && len(a) > 2 && !strings.HasPrefix(a, "--"):
			o.overrides = append(o.overrides, a[2:])
		case name == "--listen":
			v, err := value()
			if err != nil {
				return o, err
			}
			o.listen = v
		case name == "--enable" || name == "--disable":
			v, err := value()
			if err != nil {
				return o, err
			}
			o.overrides = append(o.overrides, fmt.Sprintf("features.%s=%t", v, name == "--enable"))
		case strings.HasPrefix(a, "-"):
			o.warnings = append(o.warnings, fmt.Sprintf("ignoring unsupported flag %q", a))
		default:
			o.warnings = append(o.warnings, fmt.Sprintf("ignoring unexpected argument %q", a))
		}
	}
	return o, nil
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	logger := newLogger(stderr)
	slog.SetDefault(logger)
	opts, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 2
	}
	if opts.version {
		fmt.Fprintf(stdout, "appserver %s (codex app-server protocol %s)\n", server.Version, server.CompatVersion)
		return 0
	}
	for _, w := range opts.warnings {
		logger.Warn(w)
	}
	if opts.listen != "stdio://" && opts.listen != "stdio" {
		fmt.Fprintf(stderr, "Error: --listen %s is not supported by appserver (only stdio://)\n", opts.listen)
		return 2
	}
	home, err := config.CodexHome()
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	cfg, err := config.Load(home, opts.overrides)
	if err != nil {
		fmt.Fprintf(stderr, "Error loading configuration: %v\n", err)
		return 1
	}
	srv := server.New(server.Options{Config: cfg, Logger: logger, ReloadConfig: func() (*config.Config, error) {
		return config.Load(home, opts.overrides)
	}})
	defer srv.Close()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.ServeConn(ctx, stdin, stdout) }()
	select {
	case err := <-done:
		if err != nil {
			logger.Error("connection ended with an error", "error", err)
		}
	case <-ctx.Done():
		logger.Info("signal received; shutting down")
	}
	return 0
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
