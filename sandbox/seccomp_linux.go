//go:build linux

package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Offsets into struct seccomp_data.
const (
	seccompDataNr   = 0
	seccompDataArch = 4
	seccompDataArg0 = 16 // low 32 bits of args[0] on little-endian machines
	seccompDataArg1 = 24 // low 32 bits of args[1]
)

// bpfInsn is one classic-BPF instruction with symbolic jump targets ("" means the next one).
type bpfInsn struct {
	label  string
	code   uint16
	k      uint32
	jt, jf string
}

// assemble resolves the labels of prog into a kernel filter.
func assemble(prog []bpfInsn) ([]unix.SockFilter, error) {
	at := make(map[string]int, len(prog))
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	rel := func(i int, target string) (uint8, error) {
		if target == "" {
			return 0, nil
		}
		j, ok := at[target]
		if !ok || j <= i || j-i-1 > 255 {
			return 0, fmt.Errorf("bad bpf jump from %d to %q", i, target)
		}
		return uint8(j - i - 1), nil
	}
	out := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		jt, err := rel(i, in.jt)
		if err != nil {
			return nil, err
		}
		jf, err := rel(i, in.jf)
		if err != nil {
			return nil, err
		}
		out[i] = unix.SockFilter{Code: in.code, Jt: jt, Jf: jf, K: in.k}
	}
	return out, nil
}

// deniedSyscalls always fail with EPERM under the sandbox: io_uring (its requests bypass seccomp)
// and privileged operations that a command run by a root server could otherwise use to leave the
// sandbox or disturb the host (kernel modules, kexec, reboot, swap, clock, hostname, BPF, acct,
// and open_by_handle_at, which reopens any inode of a file system through a writable mount of it).
var deniedSyscalls = []uintptr{
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_REBOOT,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_ADJTIMEX, unix.SYS_CLOCK_ADJTIME,
	unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME, unix.SYS_BPF, unix.SYS_ACCT,
	unix.SYS_OPEN_BY_HANDLE_AT,
}

// metadataSyscalls change a file's mode, owner, times or extended attributes. Landlock (up to ABI 7)
// has no right for them, so under read-only, where nothing outside the devices is writable, they
// fail with EPERM. (Arch-specific legacy calls are in metadataSyscallsArch.)
var metadataSyscalls = []uintptr{
	unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_FCHOWN, unix.SYS_FCHOWNAT,
	unix.SYS_UTIMENSAT, unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_REMOVEXATTR,
	unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, unix.SYS_SETXATTRAT, unix.SYS_REMOVEXATTRAT,
}

// seccompProgram builds the filter: foreign-architecture calls kill the process and deniedSyscalls
// fail with EPERM. Under read-only (readOnly) the metadata calls fail with EPERM too. Without
// network, socket(2) fails with EPERM for every domain, AF_UNIX included: a unix socket could
// connect to docker.sock or an agent outside the sandbox (Landlock below ABI 9 cannot tell), and
// the reference refuses unix connect/bind/listen there as well. socketpair(2) stays allowed for
// AF_UNIX stream and seqpacket pairs (pipelines, Python multiprocessing): such a pair is connected
// for good, while a datagram pair could be re-addressed with connect or sendmsg, so it fails too.
func seccompProgram(network, readOnly bool) ([]unix.SockFilter, error) {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
		and = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		// sockTypeMask selects the socket type from socketpair's type argument (SOCK_TYPE_MASK),
		// dropping SOCK_NONBLOCK and SOCK_CLOEXEC.
		sockTypeMask = 0xf
		deny         = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	prog := []bpfInsn{
		{code: ld, k: seccompDataArch},
		{code: jeq, k: seccompAuditArch, jt: "native"},
		{code: ret, k: unix.SECCOMP_RET_KILL_PROCESS},
		{label: "native", code: ld, k: seccompDataNr},
	}
	if seccompX32Bit != 0 {
		prog = append(prog, bpfInsn{code: jge, k: seccompX32Bit, jt: "deny"})
	}
	denied := deniedSyscalls
	if readOnly {
		denied = append(append(append([]uintptr(nil), denied...), metadataSyscalls...), metadataSyscallsArch...)
	}
	for _, nr := range denied {
		prog = append(prog, bpfInsn{code: jeq, k: uint32(nr), jt: "deny"})
	}
	if !network {
		prog = append(prog,
			bpfInsn{code: jeq, k: unix.SYS_SOCKET, jt: "deny"},
			bpfInsn{code: jeq, k: unix.SYS_SOCKETPAIR, jf: "allow"},
			bpfInsn{code: ld, k: seccompDataArg0},
			bpfInsn{code: jeq, k: unix.AF_UNIX, jf: "deny"},
			bpfInsn{code: ld, k: seccompDataArg1},
			bpfInsn{code: and, k: sockTypeMask},
			bpfInsn{code: jeq, k: unix.SOCK_STREAM, jt: "allow"},
			bpfInsn{code: jeq, k: unix.SOCK_SEQPACKET, jf: "deny"},
		)
	}
	prog = append(prog,
		bpfInsn{label: "allow", code: ret, k: unix.SECCOMP_RET_ALLOW},
		bpfInsn{label: "deny", code: ret, k: deny},
	)
	return assemble(prog)
}
