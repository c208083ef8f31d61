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
	self, err := os.Executable()
	if err != nil {
		return err
	}
	pl.Stage2, pl.Protect = true, protectAuto
	js, err := json.Marshal(pl)
	if err != nil {
		return err
	}
	uid, gid := os.Getuid(), os.Getgid()
	cmd := exec.Command(self, append([]string{HelperArg, string(js), "--"}, argv...)...)
	// This runs in the sandbox helper process, never in the server: its stdio is the sandboxed
	// command's own (pipes or PTY set up by execmgr), not the JSON-RPC wire.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
		// Tied to this (locked) thread: the child dies with us.
		Pdeathsig: unix.SIGKILL,
	}
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
