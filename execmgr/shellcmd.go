package execmgr

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"appserver/stopwatch"
)

// Classic shell tool constants (PROTOCOL §5.4).
const (
	DefaultShellTimeoutMs = 10_000
	TimeoutExitCode       = 124
)

// ShellCommandRequest is one classic `shell_command` call.
type ShellCommandRequest struct {
	Args            ShellCommandArgs
	Cwd             string                                        // turn cwd; Args.Workdir is resolved against it
	Env             []string                                      // full environment (nil = this process's)
	Shell           string                                        // DefaultShell when ""
	Controller      *stopwatch.Controller                         // the timeout budget's controller (nil = private)
	Observer        Observer                                      // Started gets processID ""; all output is streamed (≤10 000 deltas); may be nil
	WrapArgv        func(argv []string) ([]string, error)         // sandbox hook, may be nil
	ShellWrap       func(argv, env []string) ([]string, []string) // shell snapshot hook, may be nil (SpawnRequest.ShellWrap)
	MaxOutputTokens int                                           // model text budget (DefaultMaxOutputTokens when 0)
	Owner           string                                        // Manager.KillOwner group (the thread id)
}

// ShellCommandResult is the outcome of a shell_command call.
type ShellCommandResult struct {
	ExitCode int           // 124 on timeout
	TimedOut bool          // the timeout budget ran out and the group was killed
	WallTime time.Duration // whole call, pauses included
	Output   string        // aggregated output, prefixed with the timeout line when TimedOut
	Text     string        // the function_call_output text for the model
}

// ShellCommand runs `shell_command` to completion: `[shell, -lc|-c, command]` with a timeout budget taken
// from the caller's controller; on expiry the process group is killed and the exit code is 124.
// A cancelled ctx kills the group and returns ctx.Err().
func (m *Manager) ShellCommand(ctx context.Context, req ShellCommandRequest) (ShellCommandResult, error) {
	start := time.Now()
	a := req.Args
	shell := req.Shell
	if shell == "" {
		shell = DefaultShell
	}
	argv := ShellArgv(shell, a.Login, a.Command)
	cwd := ResolveDir(req.Cwd, a.Workdir)
	timeoutMs := uint64(DefaultShellTimeoutMs)
	if a.TimeoutMs != nil {
		timeoutMs = *a.TimeoutMs
	}
	obs := req.Observer
	if obs == nil {
		obs = ObserverFuncs{}
	}
	var emitMu sync.Mutex // serializes deltas from the two reader goroutines
	deltas := 0
	p, err := m.Spawn(ctx, SpawnRequest{Owner: req.Owner, Argv: argv, Cwd: cwd, Env: req.Env, ShellWrap: req.ShellWrap, WrapArgv: req.WrapArgv,
		OnOutput: func(_ Stream, chunk []byte) {
			emitMu.Lock()
			defer emitMu.Unlock()
			if deltas < maxDeltasPerSession {
				deltas++
				obs.OutputDelta(chunk)
			}
		}})
	if err != nil {
		return ShellCommandResult{}, &ToolError{Msg: "shell_command failed: " + err.Error()}
	}
	obs.Started("", ShellJoin(argv), cwd)

	ctrl := req.Controller
	if ctrl == nil {
		ctrl = stopwatch.NewController()
	}
	sw, release := ctrl.NewStopwatch(time.Duration(timeoutMs) * time.Millisecond)
	defer release()
	expired := sw.Done()
	if timeoutMs == 0 {
		c := make(chan struct{})
		close(c)
		expired = c
	}
	timedOut, err := awaitExit(ctx, p, expired)
	if err != nil {
		p.Kill()
		return ShellCommandResult{}, err
	}
	code := p.ExitCode()
	out := p.Output()
	if timedOut {
		code = TimeoutExitCode
		out = fmt.Sprintf("command timed out after %d milliseconds\n", timeoutMs) + out
	}
	obs.Exited(code, out, p.Duration())
	res := ShellCommandResult{ExitCode: code, TimedOut: timedOut, WallTime: time.Since(start), Output: out}
	maxTok := req.MaxOutputTokens
	if maxTok <= 0 {
		maxTok = DefaultMaxOutputTokens
	}
	res.Text = FormatShellOutput(code, res.WallTime, out, maxTok)
	return res, nil
}

// FormatShellOutput renders the classic tool text:
// `Exit code: N\nWall time: X seconds\n[Total output lines: L\n]Output:\n<body>` (lines shown when truncated).
func FormatShellOutput(exitCode int, wall time.Duration, output string, maxTokens int) string {
	body, truncated := TruncateMiddle(output, maxTokens)
	var b strings.Builder
	fmt.Fprintf(&b, "Exit code: %d\nWall time: %s seconds\n", exitCode, formatSeconds(wall))
	if truncated {
		fmt.Fprintf(&b, "Total output lines: %d\n", CountLines(output))
	}
	b.WriteString("Output:\n")
	b.WriteString(body)
	return b.String()
}

// formatSeconds rounds to a tenth of a second and prints the shortest form ("0.1", "2", "0").
func formatSeconds(d time.Duration) string {
	v := float32(math.Round(d.Seconds()*10) / 10)
	return strconv.FormatFloat(float64(v), 'f', -1, 32)
}
