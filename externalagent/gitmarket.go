package externalagent

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"appserver/internal/oserr"
	"appserver/stopwatch"

	"golang.org/x/sys/unix"
)

// DefaultGitTimeout bounds one git command fetching a remote marketplace when Service.GitTimeout is zero.
const DefaultGitTimeout = 5 * time.Minute

// errSourceFormat is the reference's failure for a marketplace source that is neither a folder nor a git source.
var errSourceFormat = errors.New("invalid marketplace source format; expected owner/repo, a git URL, or a local marketplace path")

// githubShorthand is a GitHub owner/repo source with an optional @ref.
var githubShorthand = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)(?:@(.+))?$`)
})

// gitSource resolves a marketplace source that is not an existing folder to the URL git clones and the ref
// it checks out: git URLs (https, http, ssh, git@host:path) as they are, owner/repo[@ref] on GitHub. Paths
// that do not resolve and anything else fail with the reference's wording.
func gitSource(ms marketSource) (marketSource, error) {
	src := strings.TrimSpace(ms.src)
	switch {
	case src == "":
		return marketSource{}, errors.New("marketplace source must not be empty")
	case strings.HasPrefix(src, "https://"), strings.HasPrefix(src, "http://"), strings.HasPrefix(src, "ssh://"),
		strings.HasPrefix(src, "git@") && strings.Contains(src, ":"):
		return marketSource{src: src, ref: ms.ref}, nil
	case filepath.IsAbs(src), strings.HasPrefix(src, "."), strings.HasPrefix(src, "~"):
		st, err := os.Stat(src)
		if err != nil {
			return marketSource{}, fmt.Errorf("failed to resolve local marketplace source path: %s", oserr.Text(err))
		}
		if !st.IsDir() {
			return marketSource{}, errors.New("local marketplace source must be a directory, not a file")
		}
		return marketSource{}, errSourceFormat
	}
	if m := githubShorthand().FindStringSubmatch(src); m != nil && !strings.HasSuffix(m[1], "/") {
		ref := ms.ref
		if ref == "" {
			ref = m[2]
		}
		return marketSource{src: "https://github.com/" + strings.TrimSuffix(m[1], ".git") + ".git", ref: ref}, nil
	}
	return marketSource{}, errSourceFormat
}

// fetchMarketplace clones the git marketplace into a fresh staging folder under CODEX_HOME/.tmp/marketplaces
// (checking out its ref when it has one) and returns the checkout; cleanup removes the staging folder
// (whatever was not moved out of it). A clone without a ref is shallow.
func (s *Service) fetchMarketplace(ctx context.Context, gs marketSource) (checkout string, cleanup func(), err error) {
	staging := filepath.Join(s.CodexHome, ".tmp", "marketplaces", ".staging")
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return "", func() {}, err
	}
	dir, err := mkdirRandom(staging, "marketplace-"+osName()+"-")
	if err != nil {
		return "", func() {}, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	checkout = filepath.Join(dir, "checkout")
	args := []string{"clone"}
	if gs.ref == "" {
		args = append(args, "--depth", "1")
	}
	args = append(args, "--", gs.src, checkout)
	if err := s.runGit(ctx, "", "git clone "+gs.src+" "+checkout, args...); err != nil {
		return "", cleanup, err
	}
	if gs.ref != "" {
		if err := s.runGit(ctx, checkout, "git checkout "+gs.ref, "checkout", gs.ref); err != nil {
			return "", cleanup, err
		}
	}
	return checkout, cleanup, nil
}

// errGitTimedOut ends a git command that ran past the service's git timeout.
var errGitTimedOut = errors.New("git timed out")

// runGit runs git with args in dir without a terminal prompt, bounded by the service's git timeout; the
// process group is killed when ctx ends. A failure is worded as the reference words it, naming the command
// as shown.
func (s *Service) runGit(ctx context.Context, dir, shown string, args ...string) error {
	timeout := s.GitTimeout
	if timeout <= 0 {
		timeout = DefaultGitTimeout
	}
	clock := s.Clock
	if clock == nil {
		clock = stopwatch.RealClock()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := clock.AfterFunc(timeout, func() { cancel(errGitTimedOut) })
	defer timer.Stop()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "safe.bareRepository=explicit"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(context.Cause(ctx), errGitTimedOut) {
			return fmt.Errorf("%s timed out after %s", shown, timeout)
		}
		return fmt.Errorf("%s was cancelled: %w", shown, ctxErr)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return fmt.Errorf("failed to run %s: %w", shown, err)
	}
	return fmt.Errorf("%s failed with status %s\nstdout:\n%s\nstderr:\n%s", shown, exitStatus(exit),
		strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String()))
}

// exitStatus renders a finished process's status as Rust's ExitStatus does ("exit status: 128",
// "signal: 9 (SIGKILL)").
func exitStatus(exit *exec.ExitError) string {
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("signal: %d (%s)", int(ws.Signal()), unix.SignalName(ws.Signal()))
	}
	return fmt.Sprintf("exit status: %d", exit.ExitCode())
}

// osName is the platform name the reference puts in its staging folders' names.
func osName() string {
	if runtime.GOOS == "darwin" {
		return "macos"
	}
	return runtime.GOOS
}

// mkdirRandom creates a new folder in parent named prefix plus six random letters or digits.
func mkdirRandom(parent, prefix string) (string, error) {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for range 100 {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		for i := range b {
			b[i] = letters[int(b[i])%len(letters)]
		}
		dir := filepath.Join(parent, prefix+string(b[:]))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("could not create a staging folder in %s", parent)
}
