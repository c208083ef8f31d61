//go:build linux

package sandbox

import (
	"encoding/json"
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

// mountOwnProc gives the init stage a private mount tree and a /proc of its own. As process 1 it
// was cloned with CLONE_NEWPID|CLONE_NEWNS (runInPIDNS, or a spawner following Starts) and mounts
// in that mount namespace; the user-namespace stage below it (runInUserNS) is not process 1 and
// unshares one first.
func mountOwnProc() error {
	if os.Getpid() != 1 {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return err
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	return unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}
