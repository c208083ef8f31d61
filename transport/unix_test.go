package transport_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/transport"
)

func TestDefaultSocketPath(t *testing.T) {
	require.Equal(t, "/h/app-server-control/app-server-control.sock", transport.DefaultSocketPath("/h"))
}

func TestUnixSocketLifecycle(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ctl", "app.sock")
	ln, err := transport.ListenUnix(path)
	require.NoError(t, err)

	fi, err := os.Lstat(path)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSymlink, "the requested path links to the real socket")
	target, err := os.Readlink(path)
	require.NoError(t, err)
	tfi, err := os.Lstat(target)
	require.NoError(t, err)
	require.NotZero(t, tfi.Mode()&os.ModeSocket)
	require.Equal(t, os.FileMode(0o600), tfi.Mode().Perm(), "socket is 0600")
	dfi, err := os.Stat(filepath.Dir(target))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), dfi.Mode().Perm(), "socket directory is 0700")
	cfi, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), cfi.Mode().Perm(), "control directory is created 0700")

	// A live socket is refused.
	_, err = transport.ListenUnix(path)
	require.ErrorIs(t, err, transport.ErrSocketInUse)

	require.NoError(t, ln.Close())
	_, err = os.Lstat(path)
	require.True(t, os.IsNotExist(err), "link removed on close")
	_, err = os.Lstat(target)
	require.True(t, os.IsNotExist(err), "socket removed on close")
}

func TestUnixStaleSocketReplaced(t *testing.T) {
	dir := t.TempDir()
	// A socket file nobody listens on (a crashed server's leftover).
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, l.Close())
	_, err = os.Lstat(stale)
	require.NoError(t, err, "the stale socket file is still there")

	ln, err := transport.ListenUnix(stale)
	require.NoError(t, err, "a stale socket is replaced")
	c, err := net.Dial("unix", stale)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, ln.Close())

	// A dangling link left by a killed server is replaced too.
	dangling := filepath.Join(dir, "dangling.sock")
	require.NoError(t, os.Symlink(filepath.Join(dir, "gone"), dangling))
	ln, err = transport.ListenUnix(dangling)
	require.NoError(t, err)
	require.NoError(t, ln.Close())
}

func TestUnixRefusesNonSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(path, []byte("keep me"), 0o644))
	_, err := transport.ListenUnix(path)
	require.ErrorContains(t, err, "not a socket")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "keep me", string(b))
}
