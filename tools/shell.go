package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"appserver/execmgr"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// shellSet is the classic shell_command tool (features.unified_exec = false).
type shellSet struct {
	deps *Deps
	st   *threadState
}

func (s *shellSet) Specs() []json.RawMessage {
	return []json.RawMessage{execmgr.ShellCommandToolSchema()}
}

func (s *shellSet) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Name != "shell_command" || call.Namespace != "" || call.Type != "function_call" {
		return nil, false
	}
	return thread.FunctionOutput(call.CallID, s.run(ctx, tc, call)), true
}

func (s *shellSet) run(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) string {
	var args execmgr.ShellCommandArgs
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return "failed to parse function arguments: " + err.Error()
	}
	if refused, bad := checkEscalationArgs(call.Arguments, tc.Settings.ApprovalPolicy); bad {
		return refused
	}
	flag := "-lc"
	if args.Login != nil && !*args.Login {
		flag = "-c"
	}
	display := execmgr.ShellJoin([]string{execmgr.DefaultShell, flag, args.Command})
	cwd := tc.Settings.Cwd
	if args.Workdir != "" {
		if filepath.IsAbs(args.Workdir) {
			cwd = args.Workdir
		} else {
			cwd = filepath.Join(cwd, args.Workdir)
		}
	}
	ci := newCommandItem(tc, call.CallID, display, cwd, args.Command)
	escalated := args.SandboxPermissions == "require_escalated"
	pc := parseCommand([]string{execmgr.DefaultShell, flag, args.Command}, args.Command)
	unsandboxed := false
	// A command the user approved (now, for the session or by an execpolicy prefix) runs outside the
	// sandbox, as in the reference.
	needs := commandNeedsApproval(tc.Settings.ApprovalPolicy, tc.Settings.Sandbox, escalated)
	if needs && s.st.approvals.commandApproved(display, pc) {
		unsandboxed = true
	} else if needs {
		ex := &execSet{deps: s.deps, st: s.st}
		d := ex.askCommand(ctx, tc, ci, execmgr.ExecCommandArgs{Cmd: args.Command, Justification: args.Justification, PrefixRule: args.PrefixRule}, display, cwd, pc)
		if d == decisionInterrupted {
			return "shell_command failed: turn interrupted"
		}
		if out, refused := refuseCommand(tc, ci, d); refused {
			return out
		}
		unsandboxed = true
	} else if escalated && s.st.approvals.commandApproved(display, pc) {
		unsandboxed = true // approved for the session: runs as escalated as the first time
	}
	var wrap func([]string) ([]string, error)
	if !unsandboxed {
		w, err := SandboxWrapper(s.deps.self(), tc.Settings.Sandbox, cwd)
		if err != nil {
			return "shell_command failed: " + err.Error()
		}
		wrap = w
	}
	ci.start()
	res, err := s.deps.Exec.ShellCommand(ctx, execmgr.ShellCommandRequest{
		Args: args, Cwd: tc.Settings.Cwd, Controller: tc.Thread.Controller(), WrapArgv: wrap,
		Observer: execmgr.ObserverFuncs{OnOutputDelta: ci.observer().OutputDelta},
	})
	if err != nil {
		var te *execmgr.ToolError
		if errors.As(err, &te) {
			ci.complete(protocol.CommandExecutionStatusFailed, nil, ptr(te.Msg), nil)
			return te.Msg
		}
		if ctx.Err() != nil {
			return "shell_command failed: turn interrupted"
		}
		return fmt.Sprintf("shell_command failed: %v", err)
	}
	status := protocol.CommandExecutionStatusCompleted
	if res.ExitCode != 0 {
		status = protocol.CommandExecutionStatusFailed
	}
	ci.complete(status, ptr(int32(res.ExitCode)), nonEmpty(res.Output), ptr(res.WallTime.Milliseconds()))
	return res.Text
}
