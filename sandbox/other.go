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

// Start is one way to start an argv that WrapArgv returned; off Linux it is the argv itself.
type Start struct {
	Argv []string
}

// Starts returns argv as its only Start off Linux.
func Starts(argv []string) []Start { return []Start{{Argv: argv}} }

// Refused is always false off Linux.
func (Start) Refused(error) bool { return false }
