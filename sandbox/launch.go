package sandbox

import (
	"encoding/json"
	"errors"
	"syscall"
	"time"
)

// Launch is a read-only helper argv taken apart for a launcher: which confinement it needs (Key),
// our binary, and the command with its working directory.
type Launch struct {
	Key  LaunchKey
	Self string
	Argv []string
	Dir  string
}

// LaunchKey identifies a confinement a launcher applies: one launcher serves every command with
// the same key (per owner, see execmgr).
type LaunchKey struct {
	Network bool
}

// Launchable reports whether argv, as WrapArgv returned it, can be started by a launcher: a
// read-only policy that Starts would clone as process 1 of its namespaces. Workspace-write
// commands are not: their protected entries are computed per command.
func Launchable(argv []string) (Launch, bool) {
	if len(argv) < 5 || argv[1] != HelperArg || argv[3] != "--" || argv[4] == "" {
		return Launch{}, false
	}
	var pl payload
	if err := json.Unmarshal([]byte(argv[2]), &pl); err != nil || pl.Init || pl.Stage2 || pl.NoPIDNS ||
		pl.Protect != protectAuto || pl.Policy.Kind != ReadOnly {
		return Launch{}, false
	}
	dir := pl.Cwd
	if pl.Dir != "" {
		dir = pl.Dir
	}
	return Launch{Key: LaunchKey{Network: pl.Policy.NetworkAccess}, Self: argv[0], Argv: argv[4:], Dir: dir}, true
}

// Errors of a launcher; the caller then starts the command the per-command way.
var (
	ErrLauncherDead = errors.New("sandbox: launcher ended")
	// ErrNotSent comes with ErrLauncherDead when the launcher ended before it got the request: the
	// command was not started, so another launcher may start it.
	ErrNotSent = errors.New("the request was not sent")
	ErrLaunch  = errors.New("sandbox: launcher refused")
	// ErrTooLarge: the request (argv and environment) does not fit in one message.
	ErrTooLarge = errors.New("sandbox: launch request too large")
	// ErrNamespaces: the kernel refused a launcher's namespaces, every kind StartLauncher tried
	// (user namespaces disabled, no CAP_SYS_ADMIN, not supported).
	ErrNamespaces = errors.New("sandbox: namespaces refused")
)

// SpawnAbandoned is Spawn's error when its context ended after the request was sent: the launcher
// may still start the command. Its reply is settled in the background: a command started anyway is
// killed, with everything in its cgroup, and Settled is closed once it ended (or its launcher did).
type SpawnAbandoned struct {
	Cause   error
	Settled <-chan struct{}
}

func (e *SpawnAbandoned) Error() string { return "sandbox: launch abandoned: " + e.Cause.Error() }

// Unwrap returns the context's error.
func (e *SpawnAbandoned) Unwrap() error { return e.Cause }

// LauncherPermanent reports whether err, from StartLauncher, is a failure that does not pass
// (no sandbox here, namespaces refused), so that trying again cannot help; any other one (a fork
// limit, a cgroup error, a launcher that did not confine itself in time) may pass.
func LauncherPermanent(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNamespaces)
}

// LauncherOptions tunes StartLauncher.
type LauncherOptions struct {
	// CgroupFD, when >= 0, is the cgroup directory the launcher itself is cloned into.
	CgroupFD int
	// Env is the launcher's own environment (each command gets its own with its request).
	Env []string
	// Timeout bounds each spawn's reply: a launcher that does not answer in time is killed. Zero
	// means 30 s. Its start is bounded by 30 s.
	Timeout time.Duration
	// AfterSend, when set (tests), runs once each spawn request was sent, before its reply is awaited.
	AfterSend func()
}

// Launched is a command a Launcher started.
type Launched struct {
	ns     int // pid in the launcher's namespace
	pid    int
	done   chan struct{}
	status syscall.WaitStatus
}

// Pid is the command's pid in our PID namespace; 0 when it never ran or had ended already.
func (c *Launched) Pid() int { return c.pid }

// Wait blocks until the command ended and returns its wait status; a command whose launcher died
// ended by SIGKILL (the kernel killed its namespace).
func (c *Launched) Wait() syscall.WaitStatus {
	<-c.done
	return c.status
}

// killedStatus is the wait status of a death by SIGKILL.
const killedStatus = syscall.WaitStatus(syscall.SIGKILL)
