package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// flagSpec describes one command-line option the way the reference's help lists it.
type flagSpec struct {
	long  string // without the leading "--"
	short byte   // 0 when none
	value string // the value's name; "" for a switch
	help  string
	// ignored marks a reference flag that is accepted for compatibility and has no effect here.
	ignored bool
}

// command is one (sub)command: its usage line, options and subcommands.
type command struct {
	name  string // as typed after `appserver`, e.g. "app-server proxy"
	about string
	usage string
	flags []flagSpec
	subs  []*command
}

// parsed is the result of parsing one command's arguments.
type parsed struct {
	values   map[string][]string // by long name; switches get "true"
	sub      string              // the subcommand named, if any
	subArgs  []string            // the arguments after the subcommand
	help     bool
	helpLong bool
}

func (p *parsed) has(name string) bool { return len(p.values[name]) > 0 }

func (p *parsed) last(name string) string {
	if v := p.values[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// usageError is a command-line mistake: it is printed with the usage line and exits 2.
type usageError struct {
	cmd *command
	msg string
}

func (e *usageError) Error() string { return e.msg }

// parse reads args against c's options; the first positional argument names a subcommand of c.
func (c *command) parse(args []string) (*parsed, error) {
	p := &parsed{values: map[string][]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return nil, &usageError{c, fmt.Sprintf("unexpected argument '%s' found", args[i+1])}
			}
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if len(c.subs) == 0 {
				return nil, &usageError{c, fmt.Sprintf("unexpected argument '%s' found", a)}
			}
			if c.sub(a) == nil && a != "help" {
				return nil, &usageError{c, fmt.Sprintf("unrecognized subcommand '%s'", a)}
			}
			p.sub, p.subArgs = a, args[i+1:]
			return p, nil
		}
		var spec *flagSpec
		var inline *string
		if strings.HasPrefix(a, "--") {
			name, v, hasV := strings.Cut(a[2:], "=")
			if name == "help" {
				p.help, p.helpLong = true, true
				continue
			}
			spec = c.long(name)
			if spec == nil {
				return nil, &usageError{c, fmt.Sprintf("unexpected argument '--%s' found", name)}
			}
			if hasV {
				inline = &v
			}
		} else {
			if a[1] == 'h' && len(a) == 2 {
				p.help = true
				continue
			}
			spec = c.shortFlag(a[1])
			if spec == nil {
				return nil, &usageError{c, fmt.Sprintf("unexpected argument '%s' found", a)}
			}
			if len(a) > 2 {
				v := strings.TrimPrefix(a[2:], "=")
				inline = &v
			}
		}
		if spec.value == "" {
			if inline != nil {
				return nil, &usageError{c, fmt.Sprintf("unexpected value '%s' for '--%s' found; no more were expected", *inline, spec.long)}
			}
			p.values[spec.long] = append(p.values[spec.long], "true")
			continue
		}
		if inline == nil {
			if i+1 >= len(args) {
				return nil, &usageError{c, fmt.Sprintf("a value is required for '--%s <%s>' but none was supplied", spec.long, spec.value)}
			}
			i++
			inline = &args[i]
		}
		p.values[spec.long] = append(p.values[spec.long], *inline)
	}
	return p, nil
}

func (c *command) long(name string) *flagSpec {
	for i := range c.flags {
		if c.flags[i].long == name {
			return &c.flags[i]
		}
	}
	return nil
}

func (c *command) shortFlag(b byte) *flagSpec {
	for i := range c.flags {
		if c.flags[i].short == b {
			return &c.flags[i]
		}
	}
	return nil
}

func (c *command) sub(name string) *command {
	for _, s := range c.subs {
		if s.name == c.name+" "+name || strings.HasSuffix(s.name, " "+name) {
			return s
		}
	}
	return nil
}

// printHelp writes c's usage, subcommands and options.
func (c *command) printHelp(w io.Writer) {
	fmt.Fprintf(w, "%s\n\nUsage: %s\n", c.about, c.usage)
	if len(c.subs) > 0 {
		fmt.Fprintf(w, "\nCommands:\n")
		if c.name == "app-server" { // dispatched before this parser (run.go), listed here for discovery
			fmt.Fprintf(w, "  %-22s%s\n", "exec", "Run Codex non-interactively (`appserver exec --help`) [aliases: e]")
		}
		for _, s := range c.subs {
			n := s.name[strings.LastIndexByte(s.name, ' ')+1:]
			fmt.Fprintf(w, "  %-22s%s\n", n, s.about)
		}
		fmt.Fprintf(w, "  %-22s%s\n", "help", "Print this message or the help of the given subcommand(s)")
	}
	fmt.Fprintf(w, "\nOptions:\n")
	var ignored []flagSpec
	for _, f := range append(c.flags, flagSpec{long: "help", short: 'h', help: "Print help"}) {
		if f.ignored {
			ignored = append(ignored, f)
			continue
		}
		fmt.Fprintf(w, "  %s\n          %s\n", flagLabel(f), f.help)
	}
	if len(ignored) > 0 {
		fmt.Fprintf(w, "\nAccepted for compatibility with codex app-server and ignored:\n")
		for _, f := range ignored {
			fmt.Fprintf(w, "  %s\n          %s\n", flagLabel(f), f.help)
		}
	}
}

func flagLabel(f flagSpec) string {
	s := "    "
	if f.short != 0 {
		s = fmt.Sprintf("-%c, ", f.short)
	}
	s += "--" + f.long
	if f.value != "" {
		s += " <" + f.value + ">"
	}
	return s
}

// printUsageError writes a clap-style usage error.
func printUsageError(w io.Writer, err error) {
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "error: %s\n\nUsage: %s\n\nFor more information, try '--help'.\n", ue.msg, ue.cmd.usage)
		return
	}
	fmt.Fprintf(w, "error: %v\n", err)
}

// Options shared by every app-server command.
var (
	configFlag  = flagSpec{long: "config", short: 'c', value: "key=value", help: "Override a configuration value that would otherwise be loaded from `~/.codex/config.toml` (dotted path; value parsed as TOML, else a literal string)"}
	enableFlag  = flagSpec{long: "enable", value: "FEATURE", help: "Enable a feature (repeatable). Equivalent to `-c features.<name>=true`"}
	disableFlag = flagSpec{long: "disable", value: "FEATURE", help: "Disable a feature (repeatable). Equivalent to `-c features.<name>=false`"}
)

func newCLI() *command {
	proxy := &command{
		name: "app-server proxy", about: "Proxy stdio bytes to the running app-server control socket",
		usage: "appserver app-server proxy [OPTIONS]",
		flags: []flagSpec{configFlag, {long: "sock", value: "SOCKET_PATH", help: "Path to the app-server Unix domain socket to connect to (default: $CODEX_HOME/app-server-control/app-server-control.sock)"}, enableFlag, disableFlag},
	}
	genTS := &command{
		name: "app-server generate-ts", about: "[experimental] Generate TypeScript bindings for the app server protocol",
		usage: "appserver app-server generate-ts [OPTIONS] --out <DIR>",
		flags: []flagSpec{configFlag, {long: "out", short: 'o', value: "DIR", help: "Output directory where .ts files will be written"}, enableFlag,
			{long: "prettier", short: 'p', value: "PRETTIER_BIN", help: "Optional path to the Prettier executable to format generated files"}, disableFlag,
			{long: "experimental", help: "Include experimental methods and fields in the generated output"}},
	}
	genSchema := &command{
		name: "app-server generate-json-schema", about: "[experimental] Generate JSON Schema for the app server protocol",
		usage: "appserver app-server generate-json-schema [OPTIONS] --out <DIR>",
		flags: []flagSpec{configFlag, {long: "out", short: 'o', value: "DIR", help: "Output directory where the schema bundle will be written"}, enableFlag,
			{long: "experimental", help: "Include experimental methods and fields in the generated output"}, disableFlag},
	}
	daemon := &command{name: "app-server daemon", about: "Manage the local app-server daemon (not supported by appserver)", usage: "appserver app-server daemon"}
	return &command{
		name: "app-server", about: "Run the app server (a drop-in for `codex app-server`) or related tooling",
		usage: "appserver [app-server] [OPTIONS] [COMMAND]",
		subs:  []*command{daemon, proxy, genTS, genSchema},
		flags: []flagSpec{
			configFlag, enableFlag, disableFlag,
			{long: "print-startup-config", help: "Validate configuration and print requirements as JSON without starting the app server"},
			{long: "strict-config", help: "Error out when config.toml contains fields that are not recognized by this version of Codex"},
			{long: "listen", value: "URL", help: "Transport endpoint URL. Supported values: `stdio://` (default), `unix://`, `unix://PATH`, `ws://IP:PORT`, `off`"},
			{long: "stdio", help: "Use stdio as the transport (equivalent to `--listen stdio://`)"},
			{long: "ws-auth", value: "MODE", help: "Authentication mode for incoming WebSocket connections [possible values: capability-token, signed-bearer-token]"},
			{long: "ws-token-file", value: "PATH", help: "Absolute path to the capability-token file"},
			{long: "ws-token-sha256", value: "HEX", help: "Hex-encoded SHA-256 digest of the capability token"},
			{long: "ws-shared-secret-file", value: "PATH", help: "Absolute path to the shared secret file for signed JWT bearer tokens (HS256, at least 32 bytes)"},
			{long: "ws-issuer", value: "ISSUER", help: "Expected issuer for signed JWT bearer tokens"},
			{long: "ws-audience", value: "AUDIENCE", help: "Expected audience for signed JWT bearer tokens"},
			{long: "ws-max-clock-skew-seconds", value: "SECONDS", help: "Maximum clock skew when validating signed JWT bearer tokens (default 30)"},
			{long: "version", short: 'V', help: "Print version"},
			{long: "startup-sign-out", ignored: true, help: "Sign out using the managed auth path before loading startup requirements"},
			{long: "startup-client-info", value: "STARTUP_CLIENT_INFO", ignored: true, help: "ClientInfo JSON used for configuration/auth request identity"},
			{long: "cloud-skills-snapshot", value: "PATH", ignored: true, help: "Load frozen cloud skills from a JSON snapshot"},
			{long: "code-mode-host", value: "URL", ignored: true, help: "Connect to a remote code-mode host"},
			{long: "analytics-default-enabled", ignored: true, help: "Controls whether analytics are enabled by default (appserver sends no analytics)"},
		},
	}
}

// overridesOf turns -c, --enable and --disable into config overrides, in command-line order per kind.
func overridesOf(p *parsed) []string {
	out := append([]string(nil), p.values["config"]...)
	for _, f := range p.values["enable"] {
		out = append(out, fmt.Sprintf("features.%s=true", f))
	}
	for _, f := range p.values["disable"] {
		out = append(out, fmt.Sprintf("features.%s=false", f))
	}
	return out
}
