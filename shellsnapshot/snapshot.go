// Package shellsnapshot captures a thread's view of the user's login shell (functions, aliases, shell
// options, exported variables) into $CODEX_HOME/shell_snapshots once, off the critical path, so a model's
// `bash -lc <script>` can run as a plain `bash -c <script>` with the login shell's exports instead of
// replaying the login scripts on every call (the reference's shell_snapshot feature).
package shellsnapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"appserver/execmgr"
	"appserver/stopwatch"
)

// DefaultTimeout bounds the capture (and again its validation), as the reference does.
const DefaultTimeout = 10 * time.Second

// Dir is the folder of $CODEX_HOME holding the snapshots.
const Dir = "shell_snapshots"

// MaxConcurrent bounds the captures running at once in this process (see batch).
const MaxConcurrent = 1

// Options describe one capture.
type Options struct {
	CodexHome string
	ThreadID  string
	Shell     string        // the user's shell; only bash is supported
	Cwd       string        // the thread's working directory ("" = this process's)
	Env       []string      // the capture's environment (nil = this process's)
	Timeout   time.Duration // DefaultTimeout when 0
	Logger    *slog.Logger
	Clock     stopwatch.Clock // times Timeout (nil: the wall clock); tests pass a fake one
}

// Snapshot is one thread's snapshot, captured in the background; Path is "" until it is ready and after
// Close.
type Snapshot struct {
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	log    *slog.Logger

	leaveOnce sync.Once // a second Close must not drop another snapshot's use of the batch

	mu      sync.Mutex
	begun   bool   // Begin (or Close) was called: no capture starts from now on
	batch   *batch // the capture this snapshot takes its content from; nil until Begin, and when Close came first
	path    string
	exports []string // "NAME=value" of every exported variable with a value, as sourcing the file sets them
}

// Supported reports whether shell (a path) can be snapshotted.
func Supported(shell string) bool { return filepath.Base(shell) == "bash" }

// Prepare returns the snapshot of o without capturing yet (Begin starts the capture), or nil for a shell
// that cannot be snapshotted. A thread's loader prepares it and begins it once the load's reply is out, so
// the login shell does not compete with the load's own work.
func Prepare(o Options) *Snapshot {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if !Supported(o.Shell) {
		o.Logger.Info("shell snapshot not supported for this shell", "shell", o.Shell)
		return nil
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Snapshot{opts: o, ctx: ctx, cancel: cancel, done: make(chan struct{}), log: o.Logger}
}

// Start is Prepare and Begin: it begins the capture and returns at once; it returns nil for a shell that
// cannot be snapshotted.
func Start(o Options) *Snapshot {
	s := Prepare(o)
	s.Begin()
	return s
}

// Begin starts the capture in the background; it does nothing when called again or after Close. The
// capture runs in its own process group, is killed after the timeout or by Close (of the last snapshot
// sharing it), and leaves no file behind when it fails.
func (s *Snapshot) Begin() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.begun {
		return
	}
	s.begun = true
	s.batch = join(s.opts)
	go s.capture()
}

// Begun reports whether Begin was called (before Close).
func (s *Snapshot) Begun() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.begun && s.batch != nil
}

// capture waits for the snapshot's batch and installs its own file from it.
func (s *Snapshot) capture() {
	defer close(s.done)
	o, b := s.opts, s.batch
	select {
	case <-b.done:
	case <-s.ctx.Done():
		return
	}
	if b.err != nil {
		if s.ctx.Err() == nil {
			o.Logger.Warn("failed to create shell snapshot", "thread", o.ThreadID, "error", b.err)
		}
		return
	}
	tmp, err := writeTemp(o, b.body)
	if err == nil {
		// The file appears and the snapshot becomes ready at once: a command that sees the file uses it.
		s.mu.Lock()
		err = s.install(tmp, b.exports)
		s.mu.Unlock()
	}
	if err != nil {
		o.Logger.Warn("failed to write shell snapshot", "thread", o.ThreadID, "error", err)
		return
	}
	sweepOnce(o.CodexHome, o.ThreadID, o.Logger)
}

// Done is closed when the capture has finished, successfully or not (or by Close, when it never began).
func (s *Snapshot) Done() <-chan struct{} { return s.done }

// Path is the snapshot file, or "" while it is being captured, when the capture failed, or after Close.
func (s *Snapshot) Path() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.path
}

// Close kills a capture still running, waits for it and deletes the snapshot file; it may be called again.
func (s *Snapshot) Close() {
	if s == nil {
		return
	}
	s.cancel()
	s.mu.Lock()
	b := s.batch
	if !s.begun { // never begun: nothing to kill, and nothing will begin now
		s.begun = true
		close(s.done)
	}
	s.mu.Unlock()
	<-s.done
	s.leaveOnce.Do(func() {
		if b != nil && b.leave() { // the last thread waiting for that capture: it is killed, and waited for
			<-b.done
		}
	})
	s.mu.Lock()
	path := s.path
	s.path, s.exports = "", nil
	s.mu.Unlock()
	if path != "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("failed to delete shell snapshot", "path", path, "error", err)
		}
	}
}

// shoot runs the capture script in a login shell and checks, through a temporary file, that its text
// sources cleanly. It returns the text and the exported variables it sets (the script prints them after
// the text, NUL-separated).
func shoot(ctx context.Context, o Options) ([]byte, []string, error) {
	out, err := run(ctx, o, []string{o.Shell, "-lc", captureScript})
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot command: %w", err)
	}
	body, dump, ok := bytes.Cut(out, []byte{0})
	if !ok {
		return nil, nil, errors.New("snapshot command: output without its exports")
	}
	var exports []string
	for _, kv := range bytes.Split(dump, []byte{0}) {
		if bytes.IndexByte(kv, '=') > 0 {
			exports = append(exports, string(kv))
		}
	}
	tmp, err := writeTemp(o, body)
	if err != nil {
		return nil, nil, err
	}
	defer os.Remove(tmp)
	if _, err := run(ctx, o, []string{o.Shell, "-c", "set -e; . " + execmgr.ShellQuote(tmp)}); err != nil {
		return nil, nil, fmt.Errorf("snapshot validation: %w", err)
	}
	return body, exports, nil
}

// writeTemp writes body to $CODEX_HOME/shell_snapshots/<thread id>.tmp-<unix nanos>.
func writeTemp(o Options, body []byte) (string, error) {
	dir := filepath.Join(o.CodexHome, Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, o.ThreadID+".tmp-"+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.WriteFile(tmp, body, 0o644); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// install renames tmp (<thread id>.tmp-<unix nanos>) into place as <thread id>.<unix nanos>.sh and makes
// it the snapshot's file; s.mu is held.
func (s *Snapshot) install(tmp string, exports []string) error {
	dir, name := filepath.Split(tmp)
	i := strings.LastIndex(name, ".tmp-")
	final := filepath.Join(dir, name[:i]+"."+name[i+len(".tmp-"):]+".sh")
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	s.path, s.exports = final, exports
	return nil
}

// run runs argv with stdin from /dev/null and returns its stdout; the whole process group is killed on
// timeout or cancellation.
// errTimedOut is the cause of a capture's context ended by its timeout.
var errTimedOut = errors.New("shell snapshot timed out")

func run(ctx context.Context, o Options, argv []string) ([]byte, error) {
	clock := o.Clock
	if clock == nil {
		clock = stopwatch.RealClock()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := clock.AfterFunc(o.Timeout, func() { cancel(errTimedOut) })
	defer timer.Stop()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = o.Cwd
	cmd.Env = o.Env
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Descendants that keep the pipes open (a daemon started by a profile) do not hold the capture.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch {
	case errors.Is(context.Cause(ctx), errTimedOut):
		return nil, fmt.Errorf("timed out after %v", o.Timeout)
	case err != nil:
		if msg := bytes.TrimSpace(stderr.Bytes()); len(msg) > 0 {
			return nil, fmt.Errorf("%w: %s", err, lastLine(msg))
		}
		return nil, err
	}
	return stdout.Bytes(), nil
}

func lastLine(b []byte) string {
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

// captureScript prints a file that, sourced by a fresh bash, recreates the login shell's state, then a NUL
// and every exported variable with a value as NAME=value, each followed by a NUL. It reads ~/.bashrc too
// (a non-interactive login shell does not), unless BASH_ENV is set.
const captureScript = `if [ -z "${BASH_ENV-}" ] && [ -n "${HOME-}" ] && [ -r "$HOME/.bashrc" ]; then
  . "$HOME/.bashrc"
fi
printf '%s\n' '# Shell snapshot written by appserver' 'unalias -a 2>/dev/null || true'
shopt -p | while IFS= read -r __snap_line; do
  case "$__snap_line" in *" login_shell"|*" restricted_shell") ;; *) printf '%s\n' "$__snap_line" ;; esac
done
echo '# Functions'
declare -f
echo '# Options'
set -o | while read -r __snap_name __snap_state; do
  [ "$__snap_state" = on ] && printf 'set -o %s\n' "$__snap_name"
done
echo '# Aliases'
alias -p
echo '# Exports'
compgen -e | while IFS= read -r __snap_name; do
  case "$__snap_name" in
    ""|[0-9]*|*[!A-Za-z0-9_]*|PWD|OLDPWD|_) continue ;;
  esac
  declare -xp "$__snap_name" 2>/dev/null || true
done
printf '\0'
compgen -e | while IFS= read -r __snap_name; do
  case "$__snap_name" in
    ""|[0-9]*|*[!A-Za-z0-9_]*|PWD|OLDPWD|_) continue ;;
  esac
  [ -n "${!__snap_name+x}" ] && printf '%s=%s\0' "$__snap_name" "${!__snap_name}"
done
exit 0
`
