// Package firstline reads the first line of a plain stdio start's input on a goroutine started from a
// package initializer that runs right after package os, for internal/early and internal/early/quick.
//
// Besides the read itself, the goroutine gets an OS thread started early: when internal/early's
// initializer later starts its own goroutine, the runtime has an idle thread to run it on instead of
// creating one (which cost about a millisecond of the early answer).
package firstline

import (
	"io"
	"os"
)

// MaxLine bounds what is read looking for the first line; a longer line is left to the server.
const MaxLine = 64 << 10

var (
	started bool
	done    = make(chan struct{})
	read    []byte
	eol     = -1
)

func init() {
	if !Wanted(os.Args[1:]) {
		return
	}
	started = true
	go func() {
		read, eol = ReadFirstLine(os.Stdin)
		close(done)
	}()
}

// Wanted reports whether the command line is the plain stdio app-server (`appserver` or
// `appserver app-server`, no options), the only start the early answer serves.
func Wanted(args []string) bool {
	return len(args) == 0 || len(args) == 1 && args[0] == "app-server"
}

// Started reports whether the first line is being read (Wanted held at start-up).
func Started() bool { return started }

// Result returns what was read from stdin and the index of the first newline in it (-1: none, the
// input ended, failed or the line is too long). It waits for the read; call it only if Started.
func Result() (b []byte, newline int) {
	<-done
	return read, eol
}

// ReadFirstLine reads until a newline, EOF, an error or MaxLine bytes; newline is the index of the
// first newline in b, -1 when there is none.
func ReadFirstLine(r io.Reader) (b []byte, newline int) {
	buf := make([]byte, 0, 4096)
	for len(buf) < MaxLine {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if i := indexNewline(buf); i >= 0 {
			return buf, i
		}
		if err != nil {
			break
		}
	}
	return buf, -1
}

// indexNewline is bytes.IndexByte(b, '\n'): package bytes imports unicode, which is initialised after
// os, and the quick answer (internal/early/quick) is initialised right after os.
func indexNewline(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}
