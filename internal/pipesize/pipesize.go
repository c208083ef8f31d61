// Package pipesize raises the capacity of pipes that carry bulk output, so that a fast writer runs
// ahead of its reader instead of stalling every 64 KiB (the Linux default), and each read or write
// moves more bytes per system call.
package pipesize

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Bulk is the capacity asked for pipes that carry a command's output or the server's own output: the
// largest an unprivileged process may set by default (/proc/sys/fs/pipe-max-size).
const Bulk = 1 << 20

// Grow raises f's pipe capacity to at least size bytes and returns the capacity it then has. It never
// shrinks a pipe. It fails when f is not a pipe or the system refuses (size above pipe-max-size, or
// the user's pipe buffer quota is spent); callers treat that as "keep the current size".
func Grow(f *os.File, size int) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var got int
	var opErr error
	if err := rc.Control(func(fd uintptr) {
		if got, opErr = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); opErr != nil || got >= size {
			return
		}
		got, opErr = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size)
	}); err != nil {
		return 0, err
	}
	if opErr != nil {
		return 0, errors.Join(errors.New("pipesize: resize pipe"), opErr)
	}
	return got, nil
}
