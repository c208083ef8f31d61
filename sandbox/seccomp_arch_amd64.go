//go:build linux && amd64

package sandbox

import "golang.org/x/sys/unix"

const (
	seccompArchKnown = true
	seccompAuditArch = unix.AUDIT_ARCH_X86_64
	// x32 system calls share the audit arch of x86-64 and are told apart by this bit.
	seccompX32Bit = 0x40000000
)

// metadataSyscallsArch are the legacy metadata calls x86-64 still has.
var metadataSyscallsArch = []uintptr{
	unix.SYS_CHMOD, unix.SYS_CHOWN, unix.SYS_LCHOWN, unix.SYS_UTIME, unix.SYS_UTIMES, unix.SYS_FUTIMESAT,
}
