// Package oserr renders operating-system errors the way the reference (Rust's std::io::Error) prints them,
// so messages that embed them match the reference's wire text.
package oserr

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// Text renders err as Rust's io::Error does when it wraps an errno, e.g. "No such file or directory (os error
// 2)"; an error without an errno renders as err.Error().
func Text(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s := errno.Error()
		if s != "" {
			s = strings.ToUpper(s[:1]) + s[1:]
		}
		return fmt.Sprintf("%s (os error %d)", s, int(errno))
	}
	return err.Error()
}
