//go:build linux && amd64

package sandbox

import "golang.org/x/sys/unix"

const (
	seccompArchKnown = true
	seccompAuditArch = unix.AUDIT_ARCH_X86_64
	// x32 system calls share the audit arch of x86-64 and are told apart by this bit.
	seccompX32Bit = 0x40000000
)
