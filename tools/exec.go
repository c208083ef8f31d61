package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"appserver/applypatch"
	"appserver/execmgr"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// execSet is unified exec: exec_command and write_stdin.
type execSet struct {
	deps *Deps
	st   *threadState
}

var execSpecs = sync.OnceValue(execmgr.UnifiedExecToolSchemas)

func (e *execSet) Specs() []json.RawMessage { return execSpecs() }

func (e *execSet) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Namespace != "" || call.Type != "function_call" {
		return nil, false
	}
	switch call.Name {
	case "exec_command":
		return thread.FunctionOutput(call.CallID, e.execCommand(ctx, tc, call)), true
	case "write_stdin":
		return thread.FunctionOutput(call.CallID, e.writeStdin(ctx, tc, call)), true
	}
	return nil, false
}

// resolveDir is dir taken relative to base ("" is base itself).
func resolveDir(base, dir string) string {
	if dir == "" {
		return base
	}
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir)
	}
	return filepath.Join(base, dir)
}

// observer turns execmgr's process events into item notifications.
func (ci *commandItem) observer() execmgr.Observer {
	tc := ci.tc
	return execmgr.ObserverFuncs{
		OnStarted: func(processID, command, cwd string) {
			ci.mu.Lock()
			ci.item.ProcessID = &processID
			ci.item.Command = command // with the shell as resolved (an unknown shell falls back to /bin/sh)
			ci.item.Source = ptr(protocol.CommandExecutionSourceUnifiedExecStartup)
			ci.mu.Unlock()
			ci.start()
		},
		OnOutputDelta: ci.outputDelta,
		OnInteraction: func(stdin string) {
			ci.mu.Lock()
			pid := ""
			if ci.item.ProcessID != nil {
				pid = *ci.item.ProcessID
			}
			ci.mu.Unlock()
			tc.Emit(protocol.NotifyItemCommandExecutionTerminalInteraction, protocol.TerminalInteractionNotification{
				ThreadID: tc.ThreadID(), TurnID: tc.TurnID(), ItemID: ci.item.ID, ProcessID: pid, Stdin: stdin})
		},
		OnExited: ci.exited,
	}
}

func (e *execSet) execCommand(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) string {
	var args execmgr.ExecCommandArgs
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return "failed to parse function arguments: " + err.Error()
	}
	if args.Cmd == "" {
		return "exec_command failed: command must not be empty"
	}
	if body, dir, ok := applypatch.ShellInvocation(args.Cmd); ok {
		cwd := resolveDir(tc.Settings.Cwd, args.Workdir)
		return (&patchSet{deps: e.deps, st: e.st}).shellPatch(ctx, tc, call.CallID, body, resolveDir(cwd, dir))
	}
	if refused, bad := checkEscalationArgs(call.Arguments, tc.Settings.ApprovalPolicy); bad {
		return refused
	}
	shell := args.Shell
	if shell == "" {
		shell = execmgr.DefaultShell
	}
	c := newCommandCall(tc, "exec_command", shell, commandArgs{Script: args.Cmd, Workdir: args.Workdir, Login: args.Login,
		SandboxPermissions: args.SandboxPermissions, Justification: args.Justification, PrefixRule: args.PrefixRule})
	ci := newCommandItem(tc, call.CallID, c)
	wrap, refused, ok := e.st.authorize(ctx, tc, ci, c, e.deps.self())
	if !ok {
		return refused
	}
	req := execmgr.ExecCommandRequest{Args: args, Cwd: tc.Settings.Cwd, Env: commandEnv(tc),
		Controller: tc.Thread.Controller(), Observer: ci.observer(), WrapArgv: wrap, ShellWrap: ShellWrap(tc.Thread),
		ItemID: call.CallID}
	res, err := e.st.sessions.ExecCommand(ctx, req)
	if err != nil {
		var te *execmgr.ToolError
		if errors.As(err, &te) {
			ci.mu.Lock()
			ci.item.Source = ptr(protocol.CommandExecutionSourceUnifiedExecStartup)
			ci.mu.Unlock()
			ci.start()
			if te.Output != "" { // the process could not be created: the reference reports exit code -1
				ci.complete(protocol.CommandExecutionStatusFailed, ptr(int32(-1)), ptr(te.Output), ptr(int64(0)))
			} else {
				ci.complete(protocol.CommandExecutionStatusFailed, nil, ptr(te.Msg), nil)
			}
			return te.Msg
		}
		return fmt.Sprintf("exec_command failed: %v", err)
	}
	// An exited process's item was completed (Observer.Exited) before ExecCommand returned, so the model
	// hears the result after the item's end.
	text := res.Text
	if res.Warning != "" {
		text = res.Warning + "\n" + text
	}
	return text
}

func (e *execSet) writeStdin(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) string {
	var args execmgr.WriteStdinArgs
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return "failed to parse function arguments: " + err.Error()
	}
	res, err := e.st.sessions.WriteStdin(ctx, execmgr.WriteStdinRequest{Args: args, Controller: tc.Thread.Controller()})
	if err != nil {
		var te *execmgr.ToolError
		if errors.As(err, &te) {
			return te.Msg
		}
		return fmt.Sprintf("write_stdin failed: %v", err)
	}
	return res.Text
}
