//go:build linux

package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// actionEnv makes the test binary act as a target command (for things shell tools cannot do).
const actionEnv = "SANDBOXTEST_ACTION"

func TestMain(m *testing.M) {
	RunHelperIfRequested()
	if a := os.Getenv(actionEnv); a != "" {
		os.Exit(runAction(a))
	}
	os.Exit(m.Run())
}

// runAction performs one target-side action and returns the process exit code.
func runAction(action string) int {
	var verb, arg string
	if _, err := fmt.Sscanf(action, "%s %s", &verb, &arg); err != nil {
		fmt.Fprintf(os.Stderr, "bad action %q: %v\n", action, err)
		return 2
	}
	switch verb {
	case "dial":
		c, err := net.DialTimeout("tcp", arg, 20*time.Second)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dial: %v\n", err)
			return 3
		}
		_, _ = c.Write([]byte("hello\n"))
		_ = c.Close()
		return 0
	case "landlock-dial":
		// Only the Landlock layer (no seccomp), applied to this thread, which then dials.
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return 2
		}
		if err := restrictLandlock(LandlockABI(), false, nil, false); err != nil {
			fmt.Fprintf(os.Stderr, "landlock: %v\n", err)
			return 2
		}
		c, err := net.DialTimeout("tcp", arg, 20*time.Second)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dial: %v\n", err)
			return 3
		}
		_ = c.Close()
		return 0
	case "unixdial":
		c, err := net.DialTimeout("unix", arg, 20*time.Second)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dial: %v\n", err)
			return 3
		}
		_ = c.Close()
		return 0
	case "write":
		if err := os.WriteFile(arg, []byte("pwned\n"), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "write: %v\n", err)
			return 4
		}
		return 0
	case "detach":
		// Re-run ourselves as "write" in a new session (hence a new process group).
		self, err := os.Executable()
		if err != nil {
			return 2
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), actionEnv+"=write "+arg)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "detached child: %v\n", err)
			return cmd.ProcessState.ExitCode()
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown action %q\n", verb)
	return 2
}
