package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"appserver/sandbox/confine"
)

// HelperArg is the os.Args[1] marker that turns our own binary into the sandbox helper.
const HelperArg = "__appserver_sandbox"

// Exit codes of the helper when it cannot run the target, following the shell convention.
const (
	// ExitCannotExecute means the sandbox could not be applied or the target could not be executed.
	ExitCannotExecute = 126
	// ExitNotFound means the target command was not found.
	ExitNotFound = 127
)

// ErrUnavailable is returned by WrapArgv for a sandboxed policy when the kernel mechanism is missing.
var ErrUnavailable = errors.New("sandbox unavailable")

// payload is what WrapArgv hands to the helper as one JSON argument.
type payload struct {
	Policy Policy `json:"policy"`
	// Cwd is the policy's working directory: the workspace root and the base of relative roots.
	Cwd string `json:"cwd"`
	// Dir is the command's working directory when it differs from Cwd; it gains no write access.
	Dir string `json:"dir,omitempty"`
	// Protect forces how the file system is confined: "" picks the best available, "userns" skips
	// the direct mount namespace, "remount" builds the read-only tree with per-mount remounts
	// instead of mount_setattr, "landlock" uses Landlock alone (tests cover each path with it).
	Protect string `json:"protect,omitempty"`
	// Stage2 marks the helper re-executed inside a new user namespace.
	Stage2 bool `json:"stage2,omitempty"`
	// Init marks the helper re-executed as process 1 of a new PID namespace (with its own /proc);
	// NoPIDNS skips that stage (tests).
	Init    bool `json:"init,omitempty"`
	NoPIDNS bool `json:"noPidns,omitempty"`
}

// Values of payload.Protect.
const (
	protectAuto     = ""
	protectUserNS   = "userns"
	protectLandlock = "landlock"
	protectRemount  = "remount"
)

// WrapArgv returns the argv that runs argv under p: for ReadOnly and WorkspaceWrite it is
// [self, HelperArg, <json>, "--", argv...], which re-executes self (normally os.Executable())
// as the helper; for DangerFullAccess and External it is a copy of argv. The command must be
// started with its working directory set to cwd, which must be absolute.
func WrapArgv(self string, p Policy, cwd string, argv []string) ([]string, error) {
	return wrapArgv(self, p, cwd, "", argv, protectAuto)
}

// WrapArgvIn is WrapArgv for a command that runs in dir rather than in the policy's cwd (a tool
// call's workdir): writable roots still come from cwd, so dir gains nothing by being the command's
// working directory. dir must be absolute; "" means cwd.
func WrapArgvIn(self string, p Policy, cwd, dir string, argv []string) ([]string, error) {
	if dir != "" && !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("sandbox: dir %q is not absolute", dir)
	}
	return wrapArgv(self, p, cwd, dir, argv, protectAuto)
}

func wrapArgv(self string, p Policy, cwd, dir string, argv []string, protect string) ([]string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("sandbox: empty command")
	}
	if p.Kind < ReadOnly || p.Kind > External {
		return nil, fmt.Errorf("%w: kind %d", ErrInvalidPolicy, int(p.Kind))
	}
	if !p.Sandboxed() {
		return append([]string(nil), argv...), nil
	}
	if !filepath.IsAbs(self) {
		return nil, fmt.Errorf("sandbox: helper path %q is not absolute", self)
	}
	if !filepath.IsAbs(cwd) {
		return nil, fmt.Errorf("sandbox: cwd %q is not absolute", cwd)
	}
	if ok, reason := Available(); !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, reason)
	}
	pl := payload{Policy: p, Cwd: filepath.Clean(cwd), Protect: protect}
	if dir != "" && filepath.Clean(dir) != pl.Cwd {
		pl.Dir = filepath.Clean(dir)
	}
	if p.Kind == WorkspaceWrite {
		roots := make([]string, 0, len(p.WritableRoots))
		for _, r := range p.WritableRoots {
			if r == "" {
				return nil, fmt.Errorf("%w: empty writable root", ErrInvalidPolicy)
			}
			if !filepath.IsAbs(r) {
				r = filepath.Join(cwd, r)
			}
			roots = append(roots, filepath.Clean(r))
		}
		pl.Policy.WritableRoots = roots
	}
	js, err := json.Marshal(pl)
	if err != nil {
		return nil, fmt.Errorf("sandbox: encode policy: %w", err)
	}
	out := make([]string, 0, len(argv)+4)
	out = append(out, self, HelperArg, string(js), "--")
	return append(out, argv...), nil
}

// RunHelperIfRequested must be called first thing in main (and in TestMain): when os.Args[1] is
// HelperArg (or confine.Marker, see Starts) it applies the policy to the current process and runs
// the target, never returning; otherwise it returns at once. On failure it prints the reason to
// stderr and exits with ExitNotFound or ExitCannotExecute.
func RunHelperIfRequested() {
	confine.RunIfRequested() // a helper whose confinement was computed by Starts
	if len(os.Args) < 2 || os.Args[1] != HelperArg {
		return
	}
	code, err := runHelper(os.Args[2:])
	fmt.Fprintf(os.Stderr, "appserver sandbox: %v\n", err)
	os.Exit(code)
}

// runHelper parses the helper arguments and runs the target; it only returns on failure.
func runHelper(args []string) (int, error) {
	if len(args) < 3 || args[1] != "--" || args[2] == "" {
		return ExitCannotExecute, errors.New("usage: " + HelperArg + " <policy-json> -- command [args...]")
	}
	var pl payload
	if err := json.Unmarshal([]byte(args[0]), &pl); err != nil {
		return ExitCannotExecute, fmt.Errorf("bad policy: %w", err)
	}
	if !pl.Policy.Sandboxed() {
		return ExitCannotExecute, fmt.Errorf("policy %s needs no helper", pl.Policy.Kind)
	}
	if !filepath.IsAbs(pl.Cwd) {
		return ExitCannotExecute, fmt.Errorf("cwd %q is not absolute", pl.Cwd)
	}
	if pl.Dir != "" && !filepath.IsAbs(pl.Dir) {
		return ExitCannotExecute, fmt.Errorf("dir %q is not absolute", pl.Dir)
	}
	switch pl.Protect {
	case protectAuto, protectUserNS, protectLandlock, protectRemount:
	default:
		return ExitCannotExecute, fmt.Errorf("unknown protection %q", pl.Protect)
	}
	return applyAndExec(pl, args[2:])
}
