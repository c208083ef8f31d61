// Package confine is the last step of the sandbox helper: it applies a confinement computed
// beforehand (Landlock rules, a seccomp filter) to the calling thread and runs the command under it,
// as process 1 of a PID namespace or by exec.
//
// A Spec can travel on the command line (Args / RunIfRequested): the server computes it for
// policies that need no mount work (read-only), so the helper it starts does not have to decode a
// policy or assemble a filter. The package imports little on purpose: our binary runs it from a
// package initializer (internal/reexec), and Go initialises every package that sorts before a
// dependency it waits for, so each heavy import here would be start-up cost for every sandboxed
// command (docs/sandbox.md).
package confine

// Marker is the os.Args[1] that makes our binary run a Spec from its command line (Args).
const Marker = "__appserver_confine"

// Exit codes of the helper when it cannot run the command, following the shell convention.
const (
	// ExitCannotExecute means the sandbox could not be applied or the command could not be executed.
	ExitCannotExecute = 126
	// ExitNotFound means the command was not found.
	ExitNotFound = 127
)

// Ruleset is Landlock's struct landlock_ruleset_attr.
type Ruleset struct {
	FS, Net, Scoped uint64
}

// Rule grants Access beneath Path (LANDLOCK_RULE_PATH_BENEATH); a Path that does not exist is skipped.
type Rule struct {
	Access uint64
	Path   string
}

// Spec is a confinement and how to run the command under it.
type Spec struct {
	// Dir is where the command runs; "" keeps the working directory.
	Dir string
	// Init: the process is process 1 of a new PID and mount namespace; it mounts its own /proc (when
	// MountProc) and runs the command as its child, reaping orphans and exiting with its status.
	Init, MountProc bool
	// DropAmbient clears the ambient capabilities (lent for mounting in a user namespace).
	DropAmbient bool
	Ruleset     Ruleset
	Rules       []Rule
	// Seccomp is the filter as struct sock_filter instructions (8 bytes each, native byte order).
	Seccomp []byte
}
