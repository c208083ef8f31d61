//go:build !linux

package sandbox

import "errors"

// Available reports whether the kernel sandbox works on this machine; it never does off Linux.
func Available() (ok bool, reason string) {
	return false, "the sandbox needs Linux (Landlock and seccomp)"
}

// LandlockABI returns the Landlock ABI version of the running kernel, 0 when Landlock is unusable.
func LandlockABI() int { return 0 }

func applyAndExec(payload, []string) (int, error) {
	return ExitCannotExecute, errors.New("the sandbox needs Linux (Landlock and seccomp)")
}
