package confine

import "strconv"

// LaunchMarker is the os.Args[1] that makes our binary a launcher: process 1 of a PID and mount
// namespace that confines itself as the Spec on its command line says (LauncherArgs) and then
// starts commands on request, each a child forked from its confined thread (docs/sandbox.md).
const LaunchMarker = "__appserver_launcher"

// MaxLaunchRequest is the largest spawn message a launcher receives whole (its receive buffer).
const MaxLaunchRequest = 1 << 20

// LaunchFD is the descriptor of the launcher's end of its SOCK_SEQPACKET socket pair.
const LaunchFD = 3

// Messages from the launcher; each is one packet starting with its kind.
const (
	// MsgReady: the launcher confined itself and serves requests.
	MsgReady = 'R'
	// MsgError + reason: the launcher could not start, or could not start a command in a way the
	// caller should retry without it (the reason is for the log).
	MsgError = 'E'
	// MsgStarted + pid (in the launcher's namespace), with a pidfd of the command (SCM_RIGHTS).
	MsgStarted = 'P'
	// MsgFailed + exit code: the command could not be started (not found, not executable); the
	// reason was written to its stderr as the helper would have.
	MsgFailed = 'F'
	// MsgExited + pid + " " + wait status: a command it started ended.
	MsgExited = 'W'
	// msgSpawn + LaunchRequest: start a command (from the server).
	msgSpawn = 'S'
)

// LaunchRequest asks a launcher to start a command; its stdio (and the cgroup directory when
// Cgroup) travel as descriptors with the message: stdin, stdout, stderr[, cgroup].
type LaunchRequest struct {
	Argv, Env []string
	Dir       string
	// Setsid and Setctty (stdin becomes the controlling terminal) or Setpgid, as syscall.SysProcAttr.
	Setsid, Setctty, Setpgid bool
	// Cgroup: a fourth descriptor is the cgroup directory to clone the command into.
	Cgroup bool
}

// Marshal encodes r as a spawn message: kind, flags, then NUL-terminated dir, argc, argv, env.
func (r LaunchRequest) Marshal() []byte {
	var flags byte
	for i, f := range []bool{r.Setsid, r.Setctty, r.Setpgid, r.Cgroup} {
		if f {
			flags |= 1 << i
		}
	}
	b := []byte{msgSpawn, flags}
	add := func(s string) { b = append(append(b, s...), 0) }
	add(r.Dir)
	add(strconv.Itoa(len(r.Argv)))
	for _, a := range r.Argv {
		add(a)
	}
	for _, e := range r.Env {
		add(e)
	}
	return b
}

// parseLaunchRequest is the inverse of Marshal.
func parseLaunchRequest(b []byte) (LaunchRequest, bool) {
	var r LaunchRequest
	if len(b) < 2 || b[0] != msgSpawn || b[1]&^15 != 0 {
		return r, false
	}
	r.Setsid, r.Setctty, r.Setpgid, r.Cgroup = b[1]&1 != 0, b[1]&2 != 0, b[1]&4 != 0, b[1]&8 != 0
	var strs []string
	rest := b[2:]
	for len(rest) > 0 {
		i := 0
		for i < len(rest) && rest[i] != 0 {
			i++
		}
		if i == len(rest) {
			return r, false // not terminated
		}
		strs = append(strs, string(rest[:i]))
		rest = rest[i+1:]
	}
	if len(strs) < 2 {
		return r, false
	}
	argc, err := strconv.Atoi(strs[1])
	if err != nil || argc < 1 || argc > len(strs)-2 || strs[2] == "" {
		return r, false
	}
	r.Dir, r.Argv, r.Env = strs[0], strs[2:2+argc], strs[2+argc:]
	return r, true
}

// LauncherArgs returns the arguments after our binary's path that start a launcher confined by s
// (s.Dir is ignored: each request names its own).
func LauncherArgs(s Spec) []string {
	s.Dir = ""
	a := Args(s, []string{"serve"})
	a[0] = LaunchMarker
	return a
}
