package execcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"appserver/config"
	"appserver/internal/logenv"
	"appserver/internal/oserr"
	protocol "appserver/protocol/v2"
	"appserver/server"
)

// MaxNetworkWaits is how many consecutive "waiting for network" notices of the model client exec
// accepts before it interrupts the turn and reports it failed (exit 1); with the client's 5 s first
// backoff that is about 5 s of an unreachable model. The reference waits forever.
const MaxNetworkWaits = 2

// interruptGrace bounds how long exec waits for an interrupted turn to end before it exits anyway.
const interruptGrace = 10 * time.Second

// IO is what a run reads and writes; cmd/appserver passes the process's.
type IO struct {
	Stdin          io.Reader
	StdinIsTerm    bool
	Stdout, Stderr io.Writer
}

// Run runs `appserver exec` with the arguments after "exec" and returns the exit status: it parses args, runs one turn on a new or resumed thread of an
// in-process app-server and prints its events. ctx ending interrupts the turn.
func Run(ctx context.Context, args []string, rio IO) int {
	opts, err := parseArgs(args)
	if err != nil {
		var ue *usageError
		if errors.As(err, &ue) && ue.detail != "" {
			fmt.Fprintf(rio.Stderr, "%v\n\n%s\n\nFor more information, try '--help'.\n", err, ue.detail)
		} else {
			fmt.Fprintf(rio.Stderr, "%v\n\nFor more information, try '--help'.\n", err)
		}
		return 2
	}
	if opts.help {
		fmt.Fprint(rio.Stdout, usage)
		return 0
	}
	if opts.version {
		fmt.Fprintf(rio.Stdout, "appserver exec %s (codex-cli %s)\n", server.Version, server.CompatVersion)
		return 0
	}
	r := &runner{opts: opts, io: rio, log: newLogger(rio.Stderr)}
	return r.run(ctx)
}

type runner struct {
	opts     *options
	worktree string // the worktree --worktree created
	io       IO
	log      *slog.Logger
	cfg      *config.Config
	cwd      string
	out      printer
}

// fail prints an error the way the reference does before a session exists (plain text on stderr).
func (r *runner) fail(format string, a ...any) int {
	fmt.Fprintf(r.io.Stderr, format+"\n", a...)
	return 1
}

func (r *runner) run(ctx context.Context) int {
	// The reference's order: flag conflicts, --cd, the configuration, the worktree, then the prompt.
	if r.opts.worktree && r.opts.ephemeral {
		return r.fail("Error: --worktree cannot be combined with --ephemeral")
	}
	wd, err := os.Getwd()
	if err != nil {
		return r.fail("Error: %v", err)
	}
	r.cwd = wd
	if r.opts.cd != "" {
		r.cwd = absPath(wd, r.opts.cd)
		st, err := os.Stat(r.cwd)
		if err != nil {
			return r.fail("Error: %s", oserr.Text(err)) // the reference canonicalizes --cd first
		}
		if !st.IsDir() {
			return r.fail("Error: --cd %s is not a directory", r.opts.cd)
		}
	}
	if r.cfg, err = r.loadConfig(wd); err != nil {
		return r.fail("%s", r.configErrorText(err))
	}
	worktreeCwd := ""
	if r.opts.worktree {
		home, err := config.CodexHome()
		if err != nil {
			return r.fail("Error: %v", err)
		}
		dir := wd
		if r.opts.cd != "" {
			dir = absPath(wd, r.opts.cd)
		}
		if r.worktree, worktreeCwd, err = createWorktree(ctx, home, dir); err != nil {
			return r.fail("Error: %v", err)
		}
	}
	prompt, err := r.readPrompt()
	if err != nil {
		return r.fail("%v", err)
	}
	if r.opts.fork && r.opts.prompt == nil && len(r.opts.images) > 0 {
		return r.fail("Error: Forking with images requires a prompt")
	}
	if r.opts.fork && r.opts.prompt == nil && (r.opts.lastMessage != "" || r.opts.outputSchema != "") {
		return r.fail("Error: Forking with output options requires a prompt")
	}
	if r.opts.review && r.opts.prompt == nil && !r.opts.reviewUncommitted && r.opts.reviewBase == "" && r.opts.reviewCommit == "" {
		return r.fail("Error: Specify --uncommitted, --base, --commit, or provide custom review instructions")
	}
	if worktreeCwd != "" {
		r.cwd = worktreeCwd
	}
	if r.opts.trust {
		if trusted, err := r.trustProject(); err != nil {
			return r.fail("Error: %v", err)
		} else if trusted {
			if r.cfg, err = r.loadConfig(wd); err != nil {
				return r.fail("%s", r.configErrorText(err))
			}
		}
	}
	if !r.opts.skipGitCheck && !insideGitRepo(r.cwd) && !trustedProject(r.cfg, r.cwd) {
		return r.fail("Not inside a trusted directory and --skip-git-repo-check was not specified.")
	}
	var schema json.RawMessage
	if r.opts.outputSchema != "" {
		if schema, err = readSchema(absPath(wd, r.opts.outputSchema)); err != nil {
			return r.fail("%v", err)
		}
	}
	var input []protocol.UserInput // nil: fork without a prompt runs no turn
	if r.opts.prompt != nil || (!r.opts.fork && !r.opts.review) {
		input = make([]protocol.UserInput, 0, len(r.opts.images)+1)
		for _, img := range r.opts.images {
			input = append(input, protocol.UserInput{Value: protocol.UserInputLocalImage{Path: absPath(wd, img)}})
		}
		input = append(input, protocol.UserInput{Value: protocol.UserInputText{Text: prompt, TextElements: []protocol.TextElement{}}})
	}

	lastMessage := ""
	if r.opts.lastMessage != "" {
		lastMessage = absPath(wd, r.opts.lastMessage)
	}
	if r.opts.json {
		r.out = newJSONPrinter(r.io.Stdout)
	} else {
		r.out = newHumanPrinter(r.io.Stdout, r.io.Stderr, r.opts.color == "always")
	}

	r.cfg.IgnoreRules = r.opts.ignoreRules
	srv := server.New(server.Options{Config: r.cfg, Logger: r.log, SessionSource: string(protocol.ThreadSourceKindExec),
		ReloadConfig: func() (*config.Config, error) { return r.loadConfig(wd) }})
	e := startEngine(ctx, srv, r.log)
	s := &session{r: r, e: e, m: newMapper()}
	end := s.run(ctx, input, schema, prompt)
	// Stopping the engine ends MCP startups still in flight: their `cancelled` statuses are printed too.
	e.close()
	s.drain()

	switch end {
	case forkedOnly:
		return 0
	case completed:
		if lastMessage != "" {
			writeLastMessage(r.io.Stderr, lastMessage, s.m.final)
		}
		r.out.finish(s.m)
		return 0
	case interrupted:
		return 1 // interrupted (by SIGINT or SIGTERM): the reference's status; the caller handles SIGTERM
	}
	return 1
}

// readPrompt takes the prompt from the argument and/or stdin as the reference does: no argument (or
// "-") reads it from stdin; an argument with piped stdin gets stdin appended as a <stdin> block.
func (r *runner) readPrompt() (string, error) {
	p := r.opts.prompt
	if r.opts.fork || r.opts.review || (r.opts.resume && p != nil) {
		// fork and review: the prompt is optional; "-" reads stdin, quietly; piped stdin is not appended.
		// resume with a prompt: the same (without one it reads stdin as exec does).
		if p == nil {
			return "", nil
		}
		if *p != "-" {
			return *p, nil
		}
		b, err := io.ReadAll(r.io.Stdin)
		if err != nil {
			return "", fmt.Errorf("Failed to read prompt from stdin: %v", err)
		}
		if strings.TrimSpace(string(b)) == "" {
			return "", errors.New("No prompt provided via stdin.")
		}
		return string(b), nil
	}
	if p == nil || *p == "-" {
		if p == nil && r.io.StdinIsTerm {
			return "", errors.New("No prompt provided. Either specify one as an argument or pipe the prompt into stdin.")
		}
		if p == nil {
			fmt.Fprintln(r.io.Stderr, "Reading prompt from stdin...") // "-" reads quietly, as the reference
		}
		b, err := io.ReadAll(r.io.Stdin)
		if err != nil {
			return "", fmt.Errorf("Failed to read prompt from stdin: %v", err)
		}
		if strings.TrimSpace(string(b)) == "" {
			return "", errors.New("No prompt provided via stdin.")
		}
		return string(b), nil
	}
	if r.io.StdinIsTerm || r.io.Stdin == nil {
		return *p, nil
	}
	fmt.Fprintln(r.io.Stderr, "Reading additional input from stdin...")
	b, err := io.ReadAll(r.io.Stdin)
	if err != nil || strings.TrimSpace(string(b)) == "" {
		return *p, nil
	}
	extra := string(b)
	if !strings.HasSuffix(extra, "\n") {
		extra += "\n"
	}
	return *p + "\n\n<stdin>\n" + extra + "</stdin>", nil
}

// loadConfig reads config.toml with the -c overrides; --add-dir extends the workspace-write roots.
func (r *runner) loadConfig(wd string) (*config.Config, error) {
	home, err := config.CodexHome()
	if err != nil {
		return nil, err
	}
	lo := config.LoadOptions{IgnoreUser: r.opts.ignoreUser}
	if r.opts.strictConfig {
		// As the reference: the -c keys first (when their values have the right types), then the files
		// alone (type errors, then unknown keys, both with their position), then everything together.
		if unknown := config.OverrideUnknownKeys(r.opts.overrides); len(unknown) > 0 {
			return nil, &config.OverrideUnknownKeyError{Key: unknown[0]}
		}
		if _, err := config.LoadWith(home, nil, config.LoadOptions{IgnoreUser: r.opts.ignoreUser}); err != nil {
			return nil, &strictFileError{err}
		}
	}
	if r.opts.strictConfig && !r.opts.ignoreUser {
		unknown, err := config.UserConfigUnknownKeys(home)
		if err != nil {
			return nil, err
		}
		if len(unknown) > 0 {
			return nil, &config.UnknownKeyError{UnknownKey: unknown[0]}
		}
	}
	if r.opts.profile != "" {
		lo.ProfileFile = filepath.Join(home, r.opts.profile+".config.toml")
		if r.opts.strictConfig {
			unknown, err := config.UnknownKeys(lo.ProfileFile)
			if err != nil {
				return nil, err
			}
			if len(unknown) > 0 {
				return nil, &config.UnknownKeyError{UnknownKey: unknown[0]}
			}
		}
	}
	overrides, err := r.ossOverrides(home, lo)
	if err != nil {
		return nil, err
	}
	if len(r.opts.addDirs) > 0 {
		base, err := config.LoadWith(home, overrides, lo)
		if err != nil {
			return nil, err
		}
		roots := append([]string(nil), base.SandboxWorkspaceWrite.WritableRoots...)
		for _, d := range r.opts.addDirs {
			roots = append(roots, absPath(wd, d))
		}
		b, _ := json.Marshal(roots) // a JSON string array is a TOML array of basic strings
		overrides = append(append([]string(nil), overrides...), "sandbox_workspace_write.writable_roots="+string(b))
	}
	return config.LoadWith(home, overrides, lo)
}

// defaultOSSModel is the model --oss selects when -m is not given (the reference's default).
const defaultOSSModel = "gpt-oss:20b"

// ossOverrides adds the -c overrides of --oss/--local-provider: the local provider (the flag, else
// config's oss_provider) and, without -m, the default open-source model.
func (r *runner) ossOverrides(home string, lo config.LoadOptions) ([]string, error) {
	overrides := r.opts.overrides
	if !r.opts.oss && r.opts.localProvider == "" {
		return overrides, nil
	}
	provider := r.opts.localProvider
	if provider == "" {
		base, err := config.LoadWith(home, overrides, lo)
		if err != nil {
			return nil, err
		}
		provider, _ = base.Raw()["oss_provider"].(string)
	}
	switch provider {
	case "ollama", "lmstudio":
	case "":
		return nil, fmt.Errorf("No default OSS provider configured. Use --local-provider=provider or set oss_provider to one of: lmstudio, ollama in config.toml")
	default:
		return nil, fmt.Errorf("Unknown OSS provider '%s'. Supported providers: lmstudio, ollama", provider)
	}
	out := append(append([]string(nil), overrides...), "model_provider="+strconv.Quote(provider))
	if r.opts.model == "" {
		out = append(out, "model="+strconv.Quote(defaultOSSModel))
	}
	return out, nil
}

func absPath(base, p string) string {
	if strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(h, p[2:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

// trustProject does --trust: the Git repository holding the working directory is marked trusted in
// config.toml unless config.toml names it already; an explicitly untrusted one is an error. Outside
// a repository it does nothing. It reports whether config.toml was changed.
func (r *runner) trustProject() (bool, error) {
	root, ok := gitRoot(r.cwd)
	if !ok {
		return false, nil
	}
	switch r.cfg.TrustLevel(root) {
	case config.TrustTrusted:
		return false, nil
	case "untrusted":
		return false, fmt.Errorf("%s is marked as untrusted. Update its trust setting first.", root)
	}
	if err := config.AppendProjectTrust(r.cfg.CodexHome, root); err != nil {
		return false, err
	}
	return true, nil
}

// gitRoot is the nearest of dir and its parents that holds a .git entry.
func gitRoot(dir string) (string, bool) {
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// insideGitRepo reports whether dir or one of its parents holds a .git entry.
func insideGitRepo(dir string) bool {
	_, ok := gitRoot(dir)
	return ok
}

// trustedProject reports whether dir or a parent is a project marked trusted in config.toml.
func trustedProject(cfg *config.Config, dir string) bool {
	for {
		if p, ok := cfg.Projects[dir]; ok {
			return p.TrustLevel == "trusted"
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

func readSchema(path string) (json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("Failed to read output schema file %s: %v", path, err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("Output schema file %s is not valid JSON: %v", path, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("Output schema file %s must contain a JSON object", path)
	}
	return json.RawMessage(b), nil
}

// writeLastMessage writes the final message for -o; with none it writes an empty file and says so.
func writeLastMessage(stderr io.Writer, path string, msg *string) {
	text := ""
	if msg != nil {
		text = *msg
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		fmt.Fprintf(stderr, "Failed to write last message file %s: %v\n", path, err)
		return
	}
	if msg == nil {
		fmt.Fprintf(stderr, "Warning: no last agent message; wrote empty content to %s\n", path)
	}
}

// newLogger logs to stderr, errors only unless the environment asks for more (stdout carries the
// events).
func newLogger(w io.Writer) *slog.Logger { return logenv.New(w, slog.LevelError) }

// isUUID reports whether s parses as a UUID (resume's SESSION_ID; anything else is a thread name).
func isUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil
}

// IsTerminal reports whether r is a file open on a terminal.
func IsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// strictFileError is a configuration file's own error found by --strict-config (reported with its
// position, as the reference does there).
type strictFileError struct{ err error }

func (e *strictFileError) Error() string { return e.err.Error() }
func (e *strictFileError) Unwrap() error { return e.err }

// configErrorText words a configuration error as the reference's exec does: a syntax error, and with
// --strict-config a file's type error or unknown key, as "<file>:<line>:<col>: <message>" under the line
// with a caret; another value error as "<message>\nin `<key>`" followed by a blank line.
func (r *runner) configErrorText(err error) string {
	var unknown *config.UnknownKeyError
	if errors.As(err, &unknown) {
		u := unknown.UnknownKey
		text := configLine(u.File, u.Line)
		key := strings.TrimLeft(text, " \t")
		n := strings.IndexAny(key, " \t=.")
		if n <= 0 {
			n = len(key)
		}
		return "Error loading config.toml:\n" + u.String() + "\n" + snippet(u.Line, len(text)-len(key)+1, n, text)
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		var sf *strictFileError
		positioned := ce.Syntax || errors.As(err, &sf) || ce.Key == "projects" || strings.HasPrefix(ce.Key, "projects.")
		if positioned && ce.Line > 0 && ce.File != "" {
			width := 1
			if ce.EndLine == ce.Line && ce.EndColumn >= ce.Column {
				width = ce.EndColumn - ce.Column + 1
			}
			return fmt.Sprintf("Error loading config.toml:\n%s:%d:%d: %s\n%s", ce.File, ce.Line, ce.Column, ce.Msg,
				snippet(ce.Line, ce.Column, width, configLine(ce.File, ce.Line)))
		}
		if !ce.Syntax && ce.Key != "" {
			return "Error loading config.toml: " + ce.Msg + "\nin `" + ce.Key + "`\n"
		}
	}
	return "Error loading config.toml: " + err.Error()
}

// configLine returns line n (1-based) of file, "" when it cannot be read.
func configLine(file string, n int) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return strings.TrimRight(lines[n-1], "\r")
}

// snippet draws line n of a file with carets under width characters from column col, as the reference's
// configuration errors do.
func snippet(n, col, width int, text string) string {
	pad := strings.Repeat(" ", len(strconv.Itoa(n)))
	return fmt.Sprintf("%s |\n%d | %s\n%s | %s%s", pad, n, text, pad, strings.Repeat(" ", max(col-1, 0)), strings.Repeat("^", max(width, 1)))
}
