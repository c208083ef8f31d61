package execcli

import (
	"fmt"
	"strings"
)

// options are the parsed `exec` command line.
type options struct {
	json              bool
	prompt            *string // nil: none given
	resume            bool
	resumeID          string
	resumeLast        bool
	resumeAll         bool
	fork              bool   // `exec fork SESSION_ID [PROMPT]`
	forkID            string // fork's SESSION_ID (a UUID or a thread name)
	review            bool   // `exec review`
	reviewUncommitted bool
	reviewBase        string
	reviewCommit      string
	reviewTitle       string
	trust             bool     // --trust: mark the git repository's root trusted in config.toml
	worktree          bool     // --worktree: run in a new managed Git worktree
	overrides         []string // -c key=value, --enable/--disable, in order
	images            []string
	model             string
	sandbox           string // -s; --full-auto and --dangerously-bypass-… set it too
	bypass            bool   // --dangerously-bypass-approvals-and-sandbox
	cd                string
	addDirs           []string
	skipGitCheck      bool
	ephemeral         bool
	outputSchema      string
	lastMessage       string
	color             string
	threadSource      string
	fullAutoUsed      bool
	profile           string // -p: $CODEX_HOME/<profile>.config.toml layered on the user config
	strictConfig      bool
	ignoreUser        bool // --ignore-user-config
	ignoreRules       bool // --ignore-rules: the command prefixes saved in $CODEX_HOME/rules are not read
	oss               bool
	localProvider     string // --local-provider: ollama or lmstudio
	help, version     bool
}

// usageError is a command-line error: printed with the usage hint, exit status 2.
type usageError struct {
	msg    string
	detail string // printed between msg and the usage hint (clap's tip and usage line), may be empty
}

func (e *usageError) Error() string { return e.msg }

func usageErr(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// subcommandUsage is each subcommand's usage line, as clap prints it under an error.
var subcommandUsage = map[string]string{
	"":       "Usage: appserver exec [OPTIONS] [PROMPT]\n       appserver exec [OPTIONS] <COMMAND> [ARGS]",
	"resume": "Usage: appserver exec resume [OPTIONS] [SESSION_ID] [PROMPT]",
	"fork":   "Usage: appserver exec fork [OPTIONS] <SESSION_ID> [PROMPT]",
	"review": "Usage: appserver exec review [OPTIONS] [PROMPT]",
}

// unexpectedFlag is clap's error for a flag the (sub)command does not take, with its tip and usage line.
func unexpectedFlag(name, sub string) error {
	return &usageError{
		msg:    fmt.Sprintf("error: unexpected argument '%s' found", name),
		detail: fmt.Sprintf("  tip: to pass '%s' as a value, use '-- %s'\n\n%s", name, name, subcommandUsage[sub]),
	}
}

// unsupported are the reference's exec flags appserver does not implement, with why: they fail loudly
// instead of being ignored.
var unsupported = map[string]string{
	"--approve-for-me":                "appserver has no automatic approval reviewer",
	"--dangerously-bypass-hook-trust": "appserver does not run hooks",
	"--cyber-access-program":          "appserver has no Cyber access programs",
}

// subcommandOnly are the flags only `exec review` takes.
var subcommandOnly = map[string]bool{"--uncommitted": true, "--base": true, "--commit": true, "--title": true}

// subcommandFlags are the flags `exec resume`, `exec fork` and `exec review` accept after the subcommand
// (the reference's); the other exec flags (-s, -C, -p, --add-dir, --color, --oss, …) must come before it.
var subcommandFlags = func() map[string]map[string]bool {
	common := []string{"-c", "--config", "--enable", "--disable", "--strict-config", "-m", "--model",
		"--dangerously-bypass-approvals-and-sandbox", "--yolo", "--dangerously-bypass-hook-trust", "--worktree",
		"--thread-source", "--cyber-access-program", "--skip-git-repo-check", "--trust", "--ephemeral",
		"--ignore-user-config", "--ignore-rules", "--output-schema", "--json", "--experimental-json",
		"-o", "--output-last-message", "-h", "--help"}
	set := func(extra ...string) map[string]bool {
		m := map[string]bool{}
		for _, f := range append(common, extra...) {
			m[f] = true
		}
		return m
	}
	return map[string]map[string]bool{
		"resume": set("-i", "--image", "--last", "--all"),
		"fork":   set("-i", "--image"),
		"review": set("--uncommitted", "--base", "--commit", "--title"),
	}
}()

// valueFlags take a value (as the next argument or after '=').
var valueFlags = map[string]bool{
	"-c": true, "--config": true, "--enable": true, "--disable": true, "-i": true, "--image": true,
	"-m": true, "--model": true, "-s": true, "--sandbox": true, "-C": true, "--cd": true, "--add-dir": true,
	"--output-schema": true, "-o": true, "--output-last-message": true, "--color": true, "--thread-source": true,
	"--local-provider": true, "-p": true, "--profile": true, "--cyber-access-program": true,
	"--base": true, "--commit": true, "--title": true,
}

// parseArgs parses the arguments after `exec` the way the reference's command line does: flags may
// come before or after `resume`, `--flag=value` and `--flag value` are equivalent, `--` ends flags.
func parseArgs(args []string) (*options, error) {
	o := &options{color: "auto"}
	var positional []string
	flagsDone := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if flagsDone || a == "-" || !strings.HasPrefix(a, "-") {
			if len(positional) == 0 && !o.resume && a == "resume" && !flagsDone {
				o.resume = true
				continue
			}
			if len(positional) == 0 && !o.resume && !o.fork && !o.review && !flagsDone && (a == "fork" || a == "review") {
				o.fork, o.review = a == "fork", a == "review"
				continue
			}
			positional = append(positional, a)
			continue
		}
		if a == "--" {
			flagsDone = true
			continue
		}
		name, inline, hasInline := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "--") {
			// Short flags: -m value, -mvalue, -m=value.
			name, inline, hasInline = a[:2], strings.TrimPrefix(a[2:], "="), len(a) > 2
		}
		value := func() (string, error) {
			if hasInline {
				return inline, nil
			}
			if i+1 >= len(args) {
				return "", usageErr("error: a value is required for '%s' but none was supplied", name)
			}
			i++
			return args[i], nil
		}
		if sub := o.subcommand(); sub != "" && !subcommandFlags[sub][name] {
			return nil, unexpectedFlag(name, sub)
		}
		if subcommandOnly[name] && o.subcommand() != "review" {
			return nil, unexpectedFlag(name, o.subcommand())
		}
		if why, ok := unsupported[name]; ok {
			return nil, usageErr("error: '%s' is not supported by appserver exec: %s", name, why)
		}
		if !valueFlags[name] && hasInline && strings.HasPrefix(a, "--") {
			return nil, usageErr("error: unexpected value '%s' for '%s' found; no more were expected", inline, name)
		}
		var v string
		var err error
		if valueFlags[name] {
			if v, err = value(); err != nil {
				return nil, err
			}
		} else if hasInline {
			return nil, usageErr("error: unexpected argument '%s' found", a)
		}
		switch name {
		case "-p", "--profile":
			o.profile = v
		case "--strict-config":
			o.strictConfig = true
		case "--ignore-user-config":
			o.ignoreUser = true
		case "--ignore-rules":
			o.ignoreRules = true
		case "--oss":
			o.oss = true
		case "--local-provider":
			switch v {
			case "ollama", "lmstudio":
				o.localProvider = v
			default:
				return nil, usageErr("error: invalid value '%s' for '--local-provider <OSS_PROVIDER>'\n  [possible values: lmstudio, ollama]", v)
			}
		case "--json", "--experimental-json":
			o.json = true
		case "-c", "--config":
			o.overrides = append(o.overrides, v)
		case "--enable", "--disable":
			o.overrides = append(o.overrides, fmt.Sprintf("features.%s=%t", v, name == "--enable"))
		case "-i", "--image":
			// `-i a,b`, repeated -i, and (before `resume`/`fork`, as the reference's `-i <FILE>...`)
			// the following arguments up to the next flag.
			vals := []string{v}
			for !hasInline && !o.resume && !o.fork && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				vals = append(vals, args[i])
			}
			for _, val := range vals {
				for _, p := range strings.Split(val, ",") {
					if p != "" {
						o.images = append(o.images, p)
					}
				}
			}
		case "-m", "--model":
			o.model = v
		case "-s", "--sandbox":
			switch v {
			case "read-only", "workspace-write", "danger-full-access":
				o.sandbox = v
			default:
				return nil, usageErr("error: invalid value '%s' for '--sandbox <SANDBOX_MODE>'\n  [possible values: read-only, workspace-write, danger-full-access]", v)
			}
		case "--full-auto":
			o.fullAutoUsed = true
		case "--dangerously-bypass-approvals-and-sandbox", "--yolo":
			o.bypass = true
		case "-C", "--cd":
			o.cd = v
		case "--add-dir":
			o.addDirs = append(o.addDirs, v)
		case "--skip-git-repo-check":
			o.skipGitCheck = true
		case "--ephemeral":
			o.ephemeral = true
		case "--output-schema":
			o.outputSchema = v
		case "-o", "--output-last-message":
			o.lastMessage = v
		case "--color":
			switch v {
			case "always", "never", "auto":
				o.color = v
			default:
				return nil, usageErr("error: invalid value '%s' for '--color <COLOR>'\n  [possible values: always, never, auto]", v)
			}
		case "--thread-source":
			o.threadSource = v
		case "--trust":
			o.trust = true
		case "--worktree":
			o.worktree = true
		case "--uncommitted":
			o.reviewUncommitted = true
		case "--base":
			o.reviewBase = v
		case "--commit":
			o.reviewCommit = v
		case "--title":
			o.reviewTitle = v
		case "--last":
			if !o.resume {
				return nil, unexpectedFlag(name, o.subcommand())
			}
			o.resumeLast = true
		case "--all":
			if !o.resume {
				return nil, unexpectedFlag(name, o.subcommand())
			}
			o.resumeAll = true
		case "-h", "--help":
			o.help = true
		case "-V", "--version":
			o.version = true
		default:
			return nil, unexpectedFlag(name, o.subcommand())
		}
	}
	if o.bypass && o.fullAutoUsed {
		return nil, usageErr("error: the argument '--full-auto' cannot be used with '--dangerously-bypass-approvals-and-sandbox'")
	}
	if o.fullAutoUsed && o.sandbox == "" {
		o.sandbox = "workspace-write"
	}
	if o.bypass {
		o.sandbox = "danger-full-access"
	}
	if o.fork {
		if len(positional) == 0 {
			return nil, usageErr("error: the following required arguments were not provided:\n  <SESSION_ID>")
		}
		if len(positional) > 2 {
			return nil, usageErr("error: unexpected argument '%s' found", positional[2])
		}
		o.forkID = positional[0]
		if len(positional) == 2 {
			o.prompt = &positional[1]
		}
		return o, nil
	}
	if o.review {
		return o, o.checkReview(positional)
	}
	if o.resume {
		switch {
		case o.resumeLast:
			// `resume --last [PROMPT]`: the one positional is the prompt; with two (SESSION_ID PROMPT, as
			// the reference's grammar allows), the id is ignored and the second is the prompt.
			if len(positional) > 2 {
				return nil, usageErr("error: unexpected argument '%s' found", positional[2])
			}
			if len(positional) > 0 {
				o.prompt = &positional[len(positional)-1]
			}
		case len(positional) == 0:
			return nil, usageErr("error: `exec resume` needs a SESSION_ID or --last")
		default:
			o.resumeID = positional[0]
			if len(positional) > 2 {
				return nil, usageErr("error: unexpected argument '%s' found", positional[2])
			}
			if len(positional) == 2 {
				o.prompt = &positional[1]
			}
		}
		return o, nil
	}
	if len(positional) > 1 {
		return nil, usageErr("error: unexpected argument '%s' found", positional[1])
	}
	if len(positional) == 1 {
		o.prompt = &positional[0]
	}
	return o, nil
}

// subcommand is "resume", "fork" or "review" once the command line named one, else "".
func (o *options) subcommand() string {
	switch {
	case o.resume:
		return "resume"
	case o.fork:
		return "fork"
	case o.review:
		return "review"
	}
	return ""
}

// checkReview applies the reference's rules to `exec review`: one target at most (--uncommitted,
// --base, --commit or custom instructions), --title only with a target.
func (o *options) checkReview(positional []string) error {
	if len(positional) > 1 {
		return usageErr("error: unexpected argument '%s' found", positional[1])
	}
	if len(positional) == 1 {
		o.prompt = &positional[0]
	}
	targets := []struct {
		name string
		set  bool
	}{
		{"--uncommitted", o.reviewUncommitted}, {"--base <BRANCH>", o.reviewBase != ""},
		{"--commit <SHA>", o.reviewCommit != ""}, {"[PROMPT]", o.prompt != nil},
	}
	first := ""
	for _, t := range targets {
		if !t.set {
			continue
		}
		if first != "" {
			return usageErr("error: the argument '%s' cannot be used with '%s'", first, t.name)
		}
		first = t.name
	}
	// The reference accepts these and ignores them: refused here.
	if o.outputSchema != "" {
		return usageErr("error: '--output-schema' is not supported by appserver exec review: a review's answer has its own format")
	}
	if len(o.images) > 0 {
		return usageErr("error: '--image' is not supported by appserver exec review: a review takes no images")
	}
	if o.reviewTitle != "" && o.reviewCommit == "" && !o.reviewUncommitted && o.reviewBase == "" {
		return usageErr("error: the following required arguments were not provided:\n  --commit <SHA>")
	}
	return nil
}

const usage = `Run Codex non-interactively (appserver's in-process runner)

Usage: appserver exec [OPTIONS] [PROMPT]
       appserver exec [OPTIONS] resume [SESSION_ID|--last] [PROMPT]
       appserver exec [OPTIONS] fork <SESSION_ID> [PROMPT]
       appserver exec [OPTIONS] review [--uncommitted|--base <BRANCH>|--commit <SHA> [--title <TITLE>]|PROMPT]

Commands:
  resume  Resume a previous session by id (or thread name), or the most recent with --last
  fork    Fork a previous session by id (or thread name) into a new session; PROMPT is optional
  review  Run a code review against the current repository (custom instructions as PROMPT)

Arguments:
  [PROMPT]  Initial instructions for the agent. Read from stdin when absent or '-'; with a prompt,
            piped stdin is appended as a <stdin> block.

Options:
  -c, --config <key=value>         Override a config.toml value (TOML value)
      --enable <FEATURE>           Equivalent to -c features.<name>=true
      --disable <FEATURE>          Equivalent to -c features.<name>=false
  -i, --image <FILE>...            Image(s) to attach to the prompt
  -m, --model <MODEL>              Model the agent should use
  -s, --sandbox <SANDBOX_MODE>     read-only | workspace-write | danger-full-access
      --full-auto                  Alias for --sandbox workspace-write (older CLIs' flag)
      --dangerously-bypass-approvals-and-sandbox
                                   No sandbox at all (for externally sandboxed environments)
  -C, --cd <DIR>                   Working root of the agent
      --add-dir <DIR>              Additional writable directory (workspace-write)
      --skip-git-repo-check        Allow running outside a Git repository or trusted project
      --worktree                   Run in a new Git worktree of HEAD under $CODEX_HOME/worktrees (kept
                                   after the run; not with --ephemeral)
      --trust                      Mark the Git repository's root trusted in config.toml (not an
                                   explicitly untrusted one)
      --ephemeral                  Do not persist the session to disk
      --output-schema <FILE>       JSON Schema the final response must follow
      --color <COLOR>              always | never | auto
      --json                       Print events to stdout as JSONL (alias: --experimental-json)
  -o, --output-last-message <FILE> Write the agent's last message to FILE
      --thread-source <SOURCE>     Source classification recorded for a new thread
  -p, --profile <NAME>             Layer $CODEX_HOME/<NAME>.config.toml on top of config.toml
      --strict-config              Error out on config.toml fields this version does not recognize
      --ignore-user-config         Do not load $CODEX_HOME/config.toml (auth still uses CODEX_HOME)
      --ignore-rules               Do not read the command prefixes saved in $CODEX_HOME/rules
      --oss                        Use the local open-source provider (--local-provider or oss_provider)
      --local-provider <PROVIDER>  lmstudio | ollama
  -h, --help                       Print help

After resume, fork or review only -c, --enable, --disable, --strict-config, -m, -i (not review),
--dangerously-bypass-approvals-and-sandbox, --worktree, --thread-source, --skip-git-repo-check, --trust,
--ephemeral, --ignore-user-config, --ignore-rules, --output-schema, --json, -o and -h are accepted (and
--last, --all after resume; --uncommitted, --base, --commit, --title after review); put the others
before the subcommand.

Not supported (exit 2): --approve-for-me (no automatic approval reviewer), --dangerously-bypass-hook-trust
(appserver runs no hooks), --cyber-access-program.

Exec never asks for approval (approval policy "never"); MCP elicitations are cancelled.
`
