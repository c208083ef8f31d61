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
	if code, ok := runSocketAction(verb, arg); ok {
		return code
	}
	if code, ok := runXattrAction(verb, arg); ok {
		return code
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

// xattrName is the extended attribute the xattr actions set and remove.
const xattrName = "user.sandboxtest"

// runSocketAction performs the socket-related actions (split out to keep runAction short).
func runSocketAction(verb, arg string) (int, bool) {
	switch verb {
	case "socketpair":
		// arg is the socket type: stream, seqpacket or dgram.
		typ := map[string]int{"stream": unix.SOCK_STREAM, "seqpacket": unix.SOCK_SEQPACKET, "dgram": unix.SOCK_DGRAM}[arg]
		fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "socketpair: %v\n", err)
			return 3, true
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		if _, err := unix.Write(fds[0], []byte("hi")); err != nil {
			fmt.Fprintf(os.Stderr, "write: %v\n", err)
			return 4, true
		}
		buf := make([]byte, 2)
		if n, err := unix.Read(fds[1], buf); err != nil || string(buf[:n]) != "hi" {
			fmt.Fprintf(os.Stderr, "read: %q %v\n", buf[:n], err)
			return 4, true
		}
		return 0, true
	case "unixsocket":
		// Creating a unix socket at all (what a client of docker.sock does first).
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "socket: %v\n", err)
			return 3, true
		}
		_ = unix.Close(fd)
		return 0, true
	}
	return 0, false
}

// runXattrAction sets or removes xattrName on arg.
func runXattrAction(verb, arg string) (int, bool) {
	var err error
	switch verb {
	case "setxattr":
		err = unix.Setxattr(arg, xattrName, []byte("1"), 0)
	case "removexattr":
		err = unix.Removexattr(arg, xattrName)
	case "handlechmod":
		// Reopen arg by file handle through the working directory's mount (same file system),
		// then chmod the descriptor: a way around the read-only mount of arg's own path.
		err = handleChmod(arg)
	default:
		return 0, false
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", verb, err)
		return 5, true
	}
	return 0, true
}

func handleChmod(path string) error {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, path, 0)
	if err != nil {
		return fmt.Errorf("name_to_handle_at: %w", err)
	}
	dir, err := unix.Open(".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	fd, err := unix.OpenByHandleAt(dir, h, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open_by_handle_at: %w", err)
	}
	defer unix.Close(fd)
	return unix.Fchmod(fd, 0o600)
}
