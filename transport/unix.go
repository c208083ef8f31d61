package transport

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Default control socket location, relative to CODEX_HOME, as the reference.
const (
	ControlDirName    = "app-server-control"
	ControlSocketName = "app-server-control.sock"
)

// DefaultSocketPath is where `--listen unix://` (and `proxy` without --sock) put the control socket.
func DefaultSocketPath(codexHome string) string {
	return filepath.Join(codexHome, ControlDirName, ControlSocketName)
}

// ErrSocketInUse reports that a live server already listens on the socket path.
var ErrSocketInUse = errors.New("app-server control socket is already in use")

// UnixListener is a listening control socket. The socket itself lives in a private directory
// (<tmp>/codex-daemon-<uid>/, 0700) under a name derived from the requested path, and the requested path
// is a symlink to it, so long paths work despite the sun_path limit; both are removed by Close.
type UnixListener struct {
	net.Listener
	Path   string // the path clients connect to
	target string // the socket file the symlink points to
}

// ListenUnix creates the control socket at path: a stale socket (nobody answering) is replaced, a live
// one is refused with ErrSocketInUse.
func ListenUnix(path string) (*UnixListener, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("creating socket directory: %w", err)
	}
	if err := clearStale(abs); err != nil {
		return nil, err
	}
	dir := filepath.Join(os.TempDir(), "codex-daemon-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating socket directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(abs))
	target := filepath.Join(dir, hex.EncodeToString(sum[:]))
	if err := clearStale(target); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", target)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", target, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(target, 0o600); err != nil {
		_ = ln.Close()
		_ = os.Remove(target)
		return nil, err
	}
	if err := os.Symlink(target, abs); err != nil {
		_ = ln.Close()
		_ = os.Remove(target)
		return nil, fmt.Errorf("linking %s: %w", abs, err)
	}
	return &UnixListener{Listener: ln, Path: abs, target: target}, nil
}

// Close stops listening and removes the socket and its link.
func (l *UnixListener) Close() error {
	err := l.Listener.Close()
	if t, e := os.Readlink(l.Path); e == nil && t == l.target {
		_ = os.Remove(l.Path)
	}
	_ = os.Remove(l.target)
	return err
}

// clearStale removes a socket (or a symlink to one) at path when nobody answers on it. A live socket is
// refused; anything that is not a socket or a symlink is left alone and refused.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&(fs.ModeSocket|fs.ModeSymlink) == 0 {
		return fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return fmt.Errorf("%w at %s", ErrSocketInUse, path)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if t, err := os.Readlink(path); err == nil {
			if tfi, err := os.Lstat(t); err == nil && tfi.Mode()&fs.ModeSocket != 0 {
				_ = os.Remove(t)
			}
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale socket %s: %w", path, err)
	}
	return nil
}
