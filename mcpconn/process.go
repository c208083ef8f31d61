package mcpconn

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"
)

// Grace periods of the stdio shutdown sequence: close stdin, wait, SIGTERM the group, wait, SIGKILL.
var (
	stdinGrace = 2 * time.Second
	termGrace  = 2 * time.Second
)

// process is a stdio MCP server running as the leader of its own process group.
type process struct {
	cmd    *exec.Cmd
	pgid   int
	stdin  *os.File // our write end of the child's stdin
	stdout *os.File // our read end of the child's stdout
	exited chan struct{}
}

// startProcess launches cfg.Command in a new process group with pipes we own, so that Wait never
// blocks on (or closes) them and grandchildren holding them cannot delay reaping.
func startProcess(cfg ServerConfig) (p *process, err error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = cfg.Cwd
	cmd.Env = os.Environ()
	keys := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+cfg.Env[k])
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	startErr := cmd.Start()
	// The child holds its own copies now; ours must go so EOF propagates.
	inR.Close()
	outW.Close()
	errW.Close()
	if startErr != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, startErr
	}
	p = &process{cmd: cmd, pgid: cmd.Process.Pid, stdin: inW, stdout: outR, exited: make(chan struct{})}
	go func() { // owned by the child: ends when it is reaped
		_ = cmd.Wait()
		close(p.exited)
	}()
	go drainStderr(cfg.Name, errR) // ends at EOF, i.e. when every holder of the pipe is gone
	return p, nil
}

func drainStderr(name string, r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		slog.Debug("mcp server stderr", "server", name, "line", sc.Text())
	}
}

// shutdown closes stdin, waits briefly for a clean exit, then SIGTERMs and finally SIGKILLs the whole
// process group, so that no child or grandchild outlives it. It returns once the leader is reaped
// (or after a bounded wait if even SIGKILL did not reap it).
func (p *process) shutdown() {
	_ = p.stdin.Close()
	if !p.waitExit(stdinGrace) {
		_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
		p.waitExit(termGrace)
	}
	// Always sweep the group: the leader may have exited while its children live on. The group id
	// cannot be reused while any member is alive.
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	if !p.waitExit(termGrace) {
		slog.Warn("mcp server did not exit after SIGKILL", "pid", p.pgid)
	}
	_ = p.stdout.Close()
}

// kill immediately SIGKILLs the group (used when startup failed or was cancelled).
func (p *process) kill() {
	_ = p.stdin.Close()
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	p.waitExit(termGrace)
	_ = p.stdout.Close()
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// spawnError describes a failed exec of the server command.
func spawnError(err error) error {
	return fmt.Errorf("failed to spawn MCP server: %w", err)
}
