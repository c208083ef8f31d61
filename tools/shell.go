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
	words := simpleArgv(args.Command)
	unsandboxed := false
	if commandNeedsApproval(tc.Settings.ApprovalPolicy, tc.Settings.Sandbox, words, escalated) && !s.st.approvals.commandApproved(display, words) {
		ex := &execSet{deps: s.deps, st: s.st}
		switch ex.askCommand(ctx, tc, ci, execmgr.ExecCommandArgs{Cmd: args.Command, Justification: args.Justification, PrefixRule: args.PrefixRule}, display, cwd, words) {
		case decisionInterrupted:
			return "shell_command failed: turn interrupted"
		case decisionCancel:
			ci.complete(protocol.CommandExecutionStatusDeclined, nil, nil, nil)
			tc.Interrupt()
			return rejectedByUserOutput
		case decisionDecline:
			ci.complete(protocol.CommandExecutionStatusDeclined, nil, nil, nil)
			return rejectedByUserOutput
		case decisionFailed:
			ci.complete(protocol.CommandExecutionStatusFailed, nil, nil, nil)
			return approvalFailedOutput
		}
		unsandboxed = escalated
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
	ci.complete(status, ptr(int32(res.ExitCode)), ptr(res.Output), ptr(res.WallTime.Milliseconds()))
	return res.Text
}
