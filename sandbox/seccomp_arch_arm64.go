//go:build linux && arm64

package sandbox

import "golang.org/x/sys/unix"

const (
	seccompArchKnown = true
	seccompAuditArch = unix.AUDIT_ARCH_AARCH64
	seccompX32Bit    = 0 // no second ABI on arm64
)

// metadataSyscallsArch is empty: arm64 has only the *at forms.
var metadataSyscallsArch []uintptr
