//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// probe is the once-computed result of Available.
type probeResult struct {
	ok     bool
	reason string
	abi    int
	// scopeOK is false on kernels whose signal scoping lacks the fix for erratum 2 (signals
	// between threads of one process); scoping is then left off.
	scopeOK bool
}

var probeOnce = sync.OnceValue(probeKernel)

// Available reports whether the kernel sandbox works on this machine; reason names the Landlock
// ABI when ok, and what is missing otherwise. The probe runs once per process.
func Available() (ok bool, reason string) {
	r := probeOnce()
	return r.ok, r.reason
}

// LandlockABI returns the Landlock ABI version of the running kernel, 0 when Landlock is unusable.
func LandlockABI() int { return probeOnce().abi }

func probeKernel() probeResult {
	if !seccompArchKnown {
		return probeResult{reason: "unsupported architecture for the seccomp network filter"}
	}
	abi, err := landlockABIVersion()
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOSYS):
			return probeResult{reason: "landlock is not supported by this kernel (ENOSYS)"}
		case errors.Is(err, unix.EOPNOTSUPP):
			return probeResult{reason: "landlock is disabled in this kernel (add it to the lsm= boot parameter)"}
		}
		return probeResult{reason: fmt.Sprintf("landlock probe failed: %v", err)}
	}
	if abi < 1 {
		return probeResult{reason: fmt.Sprintf("landlock ABI %d is unusable", abi)}
	}
	// PR_GET_SECCOMP fails with EINVAL when the kernel lacks CONFIG_SECCOMP(_FILTER).
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return probeResult{reason: fmt.Sprintf("seccomp is not available: %v", err), abi: abi}
	}
	scopeOK := false
	if abi >= 6 {
		errata, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_ERRATA)
		scopeOK = e == 0 && errata&0x2 != 0
	}
	reason := fmt.Sprintf("landlock ABI %d", abi)
	if abi < 4 {
		reason += " (no TCP rules; network isolation by seccomp only)"
	}
	return probeResult{ok: true, reason: reason, abi: abi, scopeOK: scopeOK}
}
