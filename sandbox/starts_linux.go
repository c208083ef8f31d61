//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"appserver/sandbox/confine"
)

// Start is one way to start an argv that WrapArgv returned: the argv to run and the namespaces to
// clone it into (for the caller's syscall.SysProcAttr).
type Start struct {
	Argv        []string
	Cloneflags  uintptr
	UidMappings []syscall.SysProcIDMap
	GidMappings []syscall.SysProcIDMap
	AmbientCaps []uintptr
	kind        int // startDirect, startUserNS or startPlain
}

// Kinds of Start, best first.
const (
	startDirect = iota // new PID and mount namespace (needs CAP_SYS_ADMIN)
	startUserNS        // the same inside a new user namespace
	startPlain         // as WrapArgv returned it: the helper re-executes itself into the namespaces
)

// refused[k] is set once the kernel refused to clone into the namespaces of kind k: later spawns
// skip it (one failed clone, not one per command).
var refused [startPlain]atomic.Bool

// Starts returns the ways to start argv, best first. For a helper argv from WrapArgv these clone
// the helper directly as process 1 of a new PID and mount namespace (with CAP_SYS_ADMIN, else
// inside a new user namespace), so the helper does not have to start itself a second time; the
// last one is argv as it is. For any other argv it is just argv. Try them in order while
// Refused says the kernel refused the namespaces.
func Starts(argv []string) []Start {
	plain := Start{Argv: argv, kind: startPlain}
	if len(argv) < 5 || argv[1] != HelperArg || argv[3] != "--" {
		return []Start{plain}
	}
	var pl payload
	if err := json.Unmarshal([]byte(argv[2]), &pl); err != nil || pl.Init || pl.Stage2 || pl.NoPIDNS || pl.Protect != protectAuto {
		return []Start{plain}
	}
	out := make([]Start, 0, 3)
	pl.Init = true
	if !refused[startDirect].Load() {
		if a := initArgv(argv, pl); a != nil {
			out = append(out, Start{Argv: a, Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS, kind: startDirect})
		}
	}
	if !refused[startUserNS].Load() {
		pl.Stage2 = true
		if a := initArgv(argv, pl); a != nil {
			uid, gid := os.Getuid(), os.Getgid()
			out = append(out, Start{Argv: a, Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS,
				UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
				GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
				AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN}, kind: startUserNS})
		}
	}
	return append(out, plain)
}

// initArgv returns the argv of the helper argv with payload pl (an init stage), nil if it cannot
// be encoded. A read-only policy needs no mount work: the confinement is computed here, and the
// helper only applies it (package confine), which starts faster than decoding the policy.
func initArgv(argv []string, pl payload) []string {
	if pl.Policy.Kind == ReadOnly {
		spec, err := readOnlySpec(pl.Policy.NetworkAccess, pl.Stage2)
		if err != nil {
			return nil
		}
		spec.Dir = pl.Cwd
		if pl.Dir != "" {
			spec.Dir = pl.Dir
		}
		return append([]string{argv[0]}, confine.Args(spec, argv[4:])...)
	}
	js, err := json.Marshal(pl)
	if err != nil {
		return nil
	}
	a := append([]string(nil), argv...)
	a[2] = string(js)
	return a
}

// readOnlySpecs caches the confinement of read-only init stages by [network][stage2].
var readOnlySpecs [2][2]struct {
	once sync.Once
	spec confine.Spec
	err  error
}

// readOnlySpec is the confinement of a read-only command in a helper cloned as process 1 of its
// namespaces (stage2: inside a new user namespace), without Dir.
func readOnlySpec(network, stage2 bool) (confine.Spec, error) {
	c := &readOnlySpecs[b2i(network)][b2i(stage2)]
	c.once.Do(func() {
		c.spec, c.err = confineSpec(deviceGrants, Policy{Kind: ReadOnly, NetworkAccess: network}, stage2, true)
		c.spec.MountProc = true
	})
	return c.spec, c.err
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Refused reports whether err, from starting s, means the kernel refused its namespaces (user
// namespaces disabled, no CAP_SYS_ADMIN, a namespace limit): the caller then tries the next Start.
// Later calls of Starts leave this kind out, except after ENOSPC (a namespace count limit, which
// frees up as namespaces end).
func (s Start) Refused(err error) bool {
	if s.kind == startPlain || !nsRefused(err) {
		return false
	}
	if !errors.Is(err, unix.ENOSPC) {
		refused[s.kind].Store(true)
	}
	return true
}

// nsRefused reports whether err, from cloning a process into new namespaces, is the kernel's
// refusal of them.
func nsRefused(err error) bool {
	for _, e := range []error{unix.EPERM, unix.EINVAL, unix.ENOSPC, unix.EUSERS, unix.EACCES} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
