package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"appserver/config"
	"appserver/execcli"
	"appserver/internal/early"
	"appserver/internal/pipesize"
	"appserver/schemaexport"
	"appserver/server"
	"appserver/transport"
)

// run dispatches the command line; it returns the process exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	logger := newLogger(stderr)
	slog.SetDefault(logger)
	// Top-level commands: `appserver app-server ...` (or no command) is the app-server CLI below; `exec`
	// is the non-interactive runner.
	if len(args) > 0 {
		switch args[0] {
		case "app-server":
			args = args[1:]
		case "exec", "e":
			return runExec(args[1:], stdin, stdout, stderr)
		}
	}
	cli := newCLI()
	p, err := cli.parse(args)
	if err != nil {
		printUsageError(stderr, err)
		return 2
	}
	if p.help {
		cli.printHelp(stdout)
		return 0
	}
	if p.sub != "" {
		return runSub(cli, p, stdin, stdout, stderr, logger)
	}
	if p.has("version") {
		fmt.Fprintf(stdout, "appserver %s (codex app-server protocol %s)\n", server.Version, server.CompatVersion)
		return 0
	}
	return serve(p, stdin, stdout, stderr, logger)
}

// runSub runs `help`, `proxy`, `generate-json-schema` or `generate-ts`.
func runSub(cli *command, top *parsed, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) int {
	if top.sub == "help" {
		if len(top.subArgs) == 0 {
			cli.printHelp(stdout)
			return 0
		}
		sc := cli.sub(top.subArgs[0])
		if sc == nil {
			printUsageError(stderr, &usageError{cli, fmt.Sprintf("unrecognized subcommand '%s'", top.subArgs[0])})
			return 2
		}
		sc.printHelp(stdout)
		return 0
	}
	sc := cli.sub(top.sub)
	p, err := sc.parse(top.subArgs)
	if err != nil {
		printUsageError(stderr, err)
		return 2
	}
	if p.help {
		sc.printHelp(stdout)
		return 0
	}
	switch top.sub {
	case "daemon":
		fmt.Fprintln(stderr, "Error: `app-server daemon` is not supported by appserver; run `appserver app-server --listen unix://` under your own supervisor")
		return 1
	case "proxy":
		path := p.last("sock")
		if path == "" {
			home, err := config.CodexHome()
			if err != nil {
				fmt.Fprintf(stderr, "Error: %v\n", err)
				return 1
			}
			path = transport.DefaultSocketPath(home)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		if err := transport.Proxy(ctx, path, stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "Error: %v\n", err)
			return 1
		}
		return 0
	case "generate-json-schema", "generate-ts":
		out := p.last("out")
		if out == "" {
			printUsageError(stderr, &usageError{sc, "the following required arguments were not provided:\n  --out <DIR>"})
			return 2
		}
		var err error
		if top.sub == "generate-ts" {
			err = schemaexport.WriteTypeScript(out, p.has("experimental"), p.last("prettier"))
		} else {
			err = schemaexport.WriteJSONSchema(out, p.has("experimental"))
		}
		if err != nil {
			fmt.Fprintf(stderr, "Error: %v\n", err)
			return 1
		}
		return 0
	}
	printUsageError(stderr, &usageError{cli, fmt.Sprintf("unrecognized subcommand '%s'", top.sub)})
	return 2
}

// authOptions collects the --ws-* flags.
func authOptions(p *parsed) (transport.AuthOptions, error) {
	o := transport.AuthOptions{
		Mode: p.last("ws-auth"), TokenFile: p.last("ws-token-file"), TokenSHA256: p.last("ws-token-sha256"),
		SharedSecretFile: p.last("ws-shared-secret-file"), Issuer: p.last("ws-issuer"), Audience: p.last("ws-audience"),
	}
	if v := p.last("ws-max-clock-skew-seconds"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return o, fmt.Errorf("invalid value '%s' for '--ws-max-clock-skew-seconds <SECONDS>': expected a number of seconds", v)
		}
		d := time.Duration(n) * time.Second
		o.MaxClockSkew = &d
	}
	return o, nil
}

// serve loads the configuration and runs the app-server on the selected transport.
func serve(p *parsed, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) int {
	listen := p.last("listen")
	if listen == "" || p.has("stdio") {
		listen = "stdio://"
	}
	ep, err := transport.ParseListen(listen)
	if err != nil {
		printUsageError(stderr, &usageError{newCLI(), fmt.Sprintf("invalid value '%s' for '--listen <URL>': %v", listen, err)})
		return 2
	}
	aopts, err := authOptions(p)
	if err != nil {
		printUsageError(stderr, &usageError{newCLI(), err.Error()})
		return 2
	}
	auth, err := transport.NewAuthenticator(aopts)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	home, err := config.CodexHome()
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	overrides := overridesOf(p)
	printStartup := p.has("print-startup-config")
	if p.has("strict-config") {
		// As the reference: the -c keys are checked first (when their values type-check).
		if unknown := config.OverrideUnknownKeys(overrides); len(unknown) > 0 {
			err := &config.OverrideUnknownKeyError{Key: unknown[0]}
			if printStartup {
				printConfigLoadError(stdout, err)
				return 1
			}
			fmt.Fprintf(stderr, "Error: %v\n", err)
			return 1
		}
	}
	cfg, cfgErr := loadConfig(p, home, overrides, logger)
	if cfg == nil {
		if printStartup {
			printConfigLoadError(stdout, cfgErr)
			return 1
		}
		var ce *config.Error
		if errors.As(cfgErr, &ce) && config.IsOverrideError(cfgErr) && !ce.Syntax && ce.Key != "" {
			// A -c value of the wrong type: the message, then the key (the reference's wording).
			fmt.Fprintf(stderr, "Error: %s\nin `%s`\n\n", ce.Msg, ce.Key)
			return 1
		}
		if errors.As(cfgErr, &ce) && ce.Syntax && ce.File != "" {
			if cause := config.FileSyntaxErrorText(ce.File); cause != "" {
				// The parser's own report follows, indented, as the reference's error chain.
				fmt.Fprintf(stderr, "Error: %v\n\nCaused by:\n    %s\n", cfgErr, strings.ReplaceAll(strings.TrimSuffix(cause, "\n"), "\n", "\n    ")+"\n    ")
				return 1
			}
		}
		fmt.Fprintf(stderr, "Error: %v\n", cfgErr)
		return 1
	}
	var unknown []config.UnknownKey
	unknownKeys := func() []config.UnknownKey { return unknown }
	if p.has("strict-config") || printStartup {
		var err error
		if unknown, err = checkStrictConfig(p, home, logger); err != nil {
			if printStartup {
				printConfigLoadError(stdout, err)
				return 1
			}
			fmt.Fprintf(stderr, "Error: %v\n", err)
			return 1
		}
	} else {
		// Unknown keys are only warned about: the check (a second parse of config.toml against the
		// key schema) runs beside the start-up instead of before it.
		warned := make(chan struct{})
		go func() {
			defer close(warned)
			var err error
			// A config.toml that did not load was reported already (loadConfig): its check failing says nothing new.
			if unknown, err = checkStrictConfig(p, home, logger); err != nil && cfgErr == nil {
				logger.Warn("checking config.toml for unknown keys", "error", err)
			}
		}()
		defer func() { <-warned }()
		unknownKeys = func() []config.UnknownKey { <-warned; return unknown }
	}
	if printStartup {
		type requirements struct {
			SupportsIndependentSpeedModes bool `json:"supportsIndependentSpeedModes"`
			Requirements                  any  `json:"requirements"`
		}
		out, _ := json.Marshal(struct {
			AppServerVersion   string       `json:"appServerVersion"`
			ConfigRequirements requirements `json:"configRequirements"`
		}{server.CompatVersion, requirements{SupportsIndependentSpeedModes: true}})
		fmt.Fprintf(stdout, "%s\n", out)
		return 0
	}
	if ep.Kind == transport.KindOff {
		fmt.Fprintln(stderr, "Error: no transport configured; use --listen or enable remote control")
		return 1
	}
	if ep.Kind == transport.KindWebSocket && auth == nil && !ep.Addr.Addr().IsLoopback() {
		fmt.Fprintf(stderr, "Error: refusing to start non-loopback websocket listener %s without auth; configure `--ws-auth capability-token` or `--ws-auth signed-bearer-token`\n", ep.Addr)
		return 1
	}
	var projectWarning string
	if wd, err := os.Getwd(); err == nil && cfgErr == nil {
		projectWarning = cfg.UntrustedProjectWarning(wd)
	}
	srv := server.New(server.Options{Config: cfg, ConfigError: cfgErr, ProjectWarning: projectWarning, UnknownKeys: unknownKeys, Logger: logger, ReloadConfig: func() (*config.Config, error) {
		return config.Load(home, overrides)
	}, ReloadConfigAt: func(pathBase string) (*config.Config, error) {
		return config.LoadWith(home, overrides, config.LoadOptions{PathBase: pathBase})
	}})
	defer srv.Close()

	// SIGHUP too: a listener killed with its terminal still removes its socket.
	ctx, stop := signalContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	switch ep.Kind {
	case transport.KindUnix, transport.KindWebSocket:
		if err := serveListener(ctx, ep, home, auth, srv, stderr, logger); err != nil {
			fmt.Fprintf(stderr, "Error: %v\n", err)
			return 1
		}
		return 0
	}
	if f, ok := stdout.(*os.File); ok {
		// A larger stdout pipe lets streamed command output run ahead of the client's reads: fewer
		// blocked writes and wake-ups on both sides. Best effort (not a pipe, or over the quota).
		_, _ = pipesize.Grow(f, pipesize.Bulk)
	}
	done := make(chan error, 1)
	go func() {
		// A plain stdio start may have answered initialize already (internal/early).
		st, engaged, err := early.Wait(ctx)
		switch {
		case err != nil:
			done <- nil // a signal came first
		case !engaged:
			done <- srv.ServeConn(ctx, stdin, stdout)
		case st.Initialized != nil:
			done <- srv.ServeConnInitialized(ctx, st.Input, stdout, st.Initialized)
		default:
			done <- srv.ServeConn(ctx, st.Input, stdout)
		}
	}()
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

// loadConfig loads the configuration for serve. When the configuration files do not load, the server
// runs with the defaults (and the -c overrides) and reports why after initialize, as the reference
// does: cfg is the defaults and err the failure (also when a trusted project's .codex/config.toml for
// the process's directory does not load). cfg is nil when the start must fail instead: under
// --strict-config or --print-startup-config, or when a -c override is what does not load.
func loadConfig(p *parsed, home string, overrides []string, logger *slog.Logger) (cfg *config.Config, err error) {
	cfg, err = config.Load(home, overrides)
	if err == nil {
		// The trusted project layers of the directory the server starts in must load too (the
		// reference loads them at start; thread/start without a cwd uses them).
		if wd, werr := os.Getwd(); werr == nil {
			_, err = cfg.ForCwd(wd)
		}
		if err == nil {
			return cfg, nil
		}
	}
	if p.has("strict-config") || p.has("print-startup-config") || config.IsOverrideError(err) {
		return nil, err
	}
	cfg, derr := config.Defaults(home, overrides)
	if derr != nil {
		return nil, derr
	}
	logger.Error(config.InvalidSummary + " " + err.Error())
	return cfg, err
}

// serveListener runs the WebSocket endpoint on a TCP or Unix socket until a signal arrives.
func serveListener(ctx context.Context, ep transport.Endpoint, home string, auth transport.Authenticator, srv *server.Server, stderr io.Writer, logger *slog.Logger) error {
	if ep.Kind == transport.KindUnix {
		path := ep.Path
		if path == "" {
			path = transport.DefaultSocketPath(home)
		}
		ln, err := transport.ListenUnix(path)
		if err != nil {
			return err
		}
		defer ln.Close()
		fmt.Fprintf(stderr, "codex app-server (WebSockets)\n  listening on: unix://%s\n", ln.Path)
		// The 0600 control socket is not authenticated (the reference ignores --ws-auth there too).
		h := transport.NewWSHandler(ctx, srv, transport.WSOptions{AnnounceMaxMessage: true, Logger: logger})
		return transport.Serve(ctx, ln, h)
	}
	ln, err := listenTCP(ep)
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	fmt.Fprintf(stderr, "codex app-server (WebSockets)\n  listening on: ws://%s\n  readyz: http://%s/readyz\n  healthz: http://%s/healthz\n", addr, addr, addr)
	if ep.Addr.Addr().IsLoopback() {
		fmt.Fprintf(stderr, "  note: binds localhost only (use SSH port-forwarding for remote access)\n")
	}
	h := transport.NewWSHandler(ctx, srv, transport.WSOptions{Auth: auth, Health: true, Logger: logger})
	return transport.Serve(ctx, ln, h)
}

// listenTCP binds the ws:// address.
func listenTCP(ep transport.Endpoint) (net.Listener, error) {
	ln, err := net.Listen("tcp", ep.Addr.String())
	if err != nil {
		return nil, fmt.Errorf("binding %s: %w", ep.Addr, err)
	}
	return ln, nil
}

// printConfigLoadError writes a configuration failure as --print-startup-config reports it: a JSON-RPC
// style error object on stdout.
func printConfigLoadError(stdout io.Writer, err error) {
	data := map[string]any{"reason": "configLoad", "detail": err.Error()}
	var ce *config.Error
	var uk *config.UnknownKeyError
	switch {
	case errors.As(err, &ce):
		data["filePath"], data["line"], data["column"] = ce.File, ce.Line, ce.Column
	case errors.As(err, &uk):
		data["filePath"], data["line"], data["column"] = uk.File, uk.Line, 1
	}
	out, _ := json.Marshal(map[string]any{"error": map[string]any{
		"code": -32600, "data": data, "message": "failed to load configuration: " + err.Error(),
	}})
	fmt.Fprintf(stdout, "%s\n", out)
}

// signalCause is the cancellation cause of a context ended by a signal.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return "received " + c.sig.String() }

// runExec runs `exec`: SIGINT and SIGTERM interrupt the running turn. As the reference does, the run then
// exits with status 1 after SIGINT and dies by SIGTERM after SIGTERM, once its processes are cleaned up.
func runExec(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() { // ends with the run (cancel) or at the first signal
		select {
		case sig := <-sigs:
			cancel(signalCause{sig})
		case <-ctx.Done():
		}
	}()
	code := execcli.Run(ctx, args, execcli.IO{Stdin: stdin, StdinIsTerm: execcli.IsTerminal(stdin), Stdout: stdout, Stderr: stderr})
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) && sc.sig == syscall.SIGTERM {
		signal.Reset(syscall.SIGTERM)
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(5 * time.Second) // the default action ends the process; this is only a fallback
		return 128 + int(syscall.SIGTERM)
	}
	return code
}

// signalContext is signal.NotifyContext with the registration made on its own goroutine: the first
// signal.Notify starts the runtime's signal loop and a locked OS thread (about a millisecond of a
// cold start), which then overlaps the server's start-up instead of delaying the first answer. The
// returned stop cancels the context, unregisters and waits for that goroutine.
func signalContext(parent context.Context, sigs ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, sigs...)
		defer signal.Stop(ch)
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		<-done
	}
}
