package execmgr

import (
	"os/exec"

	"appserver/sandbox"
)

// started is a running child: its pid in our PID namespace (0 once unknown) and a wait for its
// exit code (128+N for a death by signal N).
type started interface {
	pid() int
	wait() int
}

// cmdChild is a child we started ourselves.
type cmdChild struct{ cmd *exec.Cmd }

func (c cmdChild) pid() int { return c.cmd.Process.Pid }

func (c cmdChild) wait() int {
	_ = c.cmd.Wait()
	return exitCode(c.cmd.ProcessState)
}

// launchedChild is a command a sandbox launcher started (and reaps); release tells the launcher
// pool it ended.
type launchedChild struct {
	c       *sandbox.Launched
	release func()
}

func (c launchedChild) pid() int { return c.c.Pid() }

func (c launchedChild) wait() int {
	ws := c.c.Wait()
	c.release()
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
