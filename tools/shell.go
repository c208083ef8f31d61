package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"appserver/execmgr"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// shellSet is the classic shell_command tool (features.unified_exec = false).
type shellSet struct {
	deps *Deps
	st   *threadState
}

var shellSpecs = sync.OnceValue(func() []json.RawMessage { return []json.RawMessage{execmgr.ShellCommandToolSchema()} })

func (s *shellSet) Specs() []json.RawMessage { return shellSpecs() }

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
	c := newCommandCall(tc, "shell_command", execmgr.DefaultShell, commandArgs{Script: args.Command, Workdir: args.Workdir,
		Login: args.Login, SandboxPermissions: args.SandboxPermissions, Justification: args.Justification, PrefixRule: args.PrefixRule})
	ci := newCommandItem(tc, call.CallID, c)
	wrap, refused, ok := s.st.authorize(ctx, tc, ci, c, s.deps.self())
	if !ok {
		return refused
	}
	ci.start()
	res, err := s.deps.Exec.ShellCommand(ctx, execmgr.ShellCommandRequest{
		Owner: tc.ThreadID(), Args: args, Cwd: tc.Settings.Cwd, Env: commandEnv(tc), Controller: tc.Thread.Controller(), WrapArgv: wrap, ShellWrap: ShellWrap(tc.Thread),
		Observer: execmgr.ObserverFuncs{OnOutputDelta: ci.outputDelta},
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
	ci.exited(res.ExitCode, res.Output, res.WallTime)
	return res.Text
}
