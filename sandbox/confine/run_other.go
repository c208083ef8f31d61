//go:build !linux

package confine

import "errors"

// RunIfRequested returns at once off Linux.
func RunIfRequested() {}

// Run fails off Linux.
func Run(Spec, string, []string) (int, error) {
	return ExitCannotExecute, errors.New("the sandbox needs Linux (Landlock and seccomp)")
}

// Landlock fails off Linux.
func Landlock(Ruleset, []Rule) error {
	return errors.New("the sandbox needs Linux (Landlock and seccomp)")
}
