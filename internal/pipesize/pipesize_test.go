package pipesize

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func pipeSize(t *testing.T, f *os.File) int {
	t.Helper()
	n, err := unix.FcntlInt(f.Fd(), unix.F_GETPIPE_SZ, 0)
	require.NoError(t, err)
	return n
}

func TestGrow(t *testing.T) {
	limit, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
	require.NoError(t, err)
	maxSize, err := strconv.Atoi(strings.TrimSpace(string(limit)))
	require.NoError(t, err)
	if maxSize < Bulk && os.Geteuid() != 0 {
		t.Skipf("pipe-max-size is %d here", maxSize)
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	require.Less(t, pipeSize(t, r), Bulk, "a new pipe is already this large")

	got, err := Grow(w, Bulk) // either end resizes the one pipe
	require.NoError(t, err)
	require.Equal(t, Bulk, got)
	require.Equal(t, Bulk, pipeSize(t, r))

	got, err = Grow(r, 64<<10) // never shrinks
	require.NoError(t, err)
	require.Equal(t, Bulk, got)
	require.Equal(t, Bulk, pipeSize(t, r))
}

func TestGrowNotAPipe(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "file"))
	require.NoError(t, err)
	defer f.Close()
	_, err = Grow(f, Bulk)
	require.Error(t, err)
}
