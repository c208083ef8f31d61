//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"os"

	"appserver/sandbox/confine"
)

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

// Launcher is a sandbox launcher; there is none off Linux.
type Launcher struct{}

// StartLauncher fails off Linux.
func StartLauncher(context.Context, string, LaunchKey, LauncherOptions) (*Launcher, error) {
	return nil, ErrUnavailable
}

// Pid is 0 off Linux.
func (*Launcher) Pid() int { return 0 }

// Dead is closed off Linux.
func (*Launcher) Dead() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// Close does nothing off Linux.
func (*Launcher) Close() {}

// Spawn fails off Linux.
func (*Launcher) Spawn(context.Context, confine.LaunchRequest, [3]*os.File, int) (*Launched, error) {
	return nil, ErrLauncherDead
}
