//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwarded are the signals the first stage relays to the sandboxed second stage.
var forwarded = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2}

// runInUserNS re-executes the helper as a child in a new user namespace, where it holds
// CAP_SYS_ADMIN (as an ambient capability, with the caller's own uid/gid mapped) and can build
// the read-only bind mounts; this process then waits for it and exits with its status. It
// returns only if the child cannot be started (user namespaces disabled or restricted).
// A Go process is multithreaded, so it cannot unshare(CLONE_NEWUSER) itself.
func runInUserNS(pl payload, argv []string) error {
	pl.Stage2, pl.Protect = true, protectAuto
	return runStage(pl, argv, userNSAttr(0))
}

// userNSAttr clones into a new user namespace (plus extra namespaces) that maps the caller's
// uid/gid to itself and lends CAP_SYS_ADMIN as an ambient capability.
func userNSAttr(extra uintptr) *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	return &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER | extra,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
	}
}

// runInPIDNS re-executes the helper as process 1 of a new PID and mount namespace, directly (with
// CAP_SYS_ADMIN) or inside a new user namespace. That process mounts its own /proc, so the command
// sees no process outside its sandbox, and when the command exits (or this helper dies, Pdeathsig)
// the kernel kills everything left in the namespace. It returns only if neither could be started.
func runInPIDNS(pl payload, argv []string) error {
	pl.Init = true
	err := runStage(pl, argv, &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS})
	if err == nil {
		return nil
	}
	if pl.Stage2 {
		return err
	}
	pl.Stage2 = true
	if pl.Protect == protectUserNS {
		pl.Protect = protectAuto
	}
	return runStage(pl, argv, userNSAttr(unix.CLONE_NEWPID|unix.CLONE_NEWNS))
}

// runStage re-executes the helper with pl as a child cloned with attr, relays signals to it and exits
// with its status; it returns only if the child cannot be started.
func runStage(pl payload, argv []string, attr *syscall.SysProcAttr) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	js, err := json.Marshal(pl)
	if err != nil {
		return err
	}
	cmd := exec.Command(self, append([]string{HelperArg, string(js), "--"}, argv...)...)
	// This runs in the sandbox helper process, never in the server: its stdio is the sandboxed
	// command's own (pipes or PTY set up by execmgr), not the JSON-RPC wire.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = attr
	// Tied to this (locked) thread: the child dies with us.
	cmd.SysProcAttr.Pdeathsig = unix.SIGKILL
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	if err := cmd.Start(); err != nil {
		signal.Stop(sigs)
		return err
	}
	done := make(chan struct{})
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	_ = cmd.Wait()
	close(done)
	<-relayed
	signal.Stop(sigs)
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		// Die the same way, so our parent sees what a direct exec would have shown.
		sig := ws.Signal()
		switch sig {
		case unix.SIGKILL, unix.SIGTERM, unix.SIGINT, unix.SIGHUP:
			signal.Reset(sig)
			_ = unix.Kill(os.Getpid(), sig)
		}
		os.Exit(128 + int(sig))
	}
	os.Exit(ws.ExitStatus())
	return nil
}

// mountOwnProc gives process 1 of a new PID namespace a private mount tree and a /proc of its own.
func mountOwnProc() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	return unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// runAsInit starts the command as a child of this process 1 (from the calling, confined thread),
// relays signals to it, reaps every orphan, and exits with the command's status once it ended; the
// kernel then kills whatever is left in the namespace.
func runAsInit(path string, argv []string) (int, error) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...) // handled, so the command starts with default dispositions
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return ExitNotFound, fmt.Errorf("%s: %w", argv[0], err)
		}
		return ExitCannotExecute, fmt.Errorf("%s: %w", argv[0], err)
	}
	go func() {
		for s := range sigs {
			_ = unix.Kill(pid, s.(syscall.Signal))
		}
	}()
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if err != nil && err != unix.EINTR {
			os.Exit(ExitCannotExecute)
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(ws.ExitStatus())
	}
}
