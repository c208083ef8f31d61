package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"appserver/execmgr"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// Model-facing texts of refused commands, as the reference words them.
const (
	rejectedByUserOutput = `exec_command failed: CreateProcess { message: "Rejected(\"rejected by user\")" }`
	approvalFailedOutput = `exec_command failed: CreateProcess { message: "Rejected(\"approval request failed\")" }`
)

// execSet is unified exec: exec_command and write_stdin.
type execSet struct {
	deps *Deps
	st   *threadState
}

func (e *execSet) Specs() []json.RawMessage { return execmgr.UnifiedExecToolSchemas() }

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

// commandItem tracks one commandExecution item through approval, spawn and exit.
type commandItem struct {
	tc        *thread.ToolContext
	mu        sync.Mutex
	item      protocol.ThreadItemCommandExecution
	started   bool
	completed bool
	exited    chan struct{}
}

func newCommandItem(tc *thread.ToolContext, callID, command, cwd, cmd string) *commandItem {
	return &commandItem{tc: tc, exited: make(chan struct{}), item: protocol.ThreadItemCommandExecution{
		ID: callID, Command: command, Cwd: protocol.LegacyAppPathString(cwd), Status: protocol.CommandExecutionStatusInProgress,
		CommandActions: commandActions(cmd, cwd),
		Source:         ptr(protocol.CommandExecutionSourceAgent), StartedAtMs: ptr(time.Now().UnixMilli()),
	}}
}

// start announces the item (once).
func (ci *commandItem) start() {
	ci.mu.Lock()
	if ci.started {
		ci.mu.Unlock()
		return
	}
	ci.started = true
	it := ci.item
	ci.mu.Unlock()
	ci.tc.ItemStarted(protocol.ThreadItem{Value: it})
}

// complete finishes the item (once) with a status and, for runs, the exit code and output.
func (ci *commandItem) complete(status protocol.CommandExecutionStatus, exitCode *int32, output *string, dur *int64) {
	ci.mu.Lock()
	if ci.completed {
		ci.mu.Unlock()
		return
	}
	ci.completed = true
	ci.item.Status = status
	ci.item.ExitCode = exitCode
	ci.item.AggregatedOutput = output
	ci.item.DurationMs = dur
	ci.item.CompletedAtMs = ptr(time.Now().UnixMilli())
	it := ci.item
	ci.mu.Unlock()
	ci.tc.ItemCompleted(protocol.ThreadItem{Value: it})
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
		OnOutputDelta: func(chunk []byte) {
			tc.Emit(protocol.NotifyItemCommandExecutionOutputDelta, protocol.CommandExecutionOutputDeltaNotification{
				ThreadID: tc.ThreadID(), TurnID: tc.TurnID(), ItemID: ci.item.ID, Delta: string(chunk)})
		},
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
		OnExited: func(exitCode int, out string, d time.Duration) {
			status := protocol.CommandExecutionStatusCompleted
			if exitCode != 0 {
				status = protocol.CommandExecutionStatusFailed
			}
			ci.complete(status, ptr(int32(exitCode)), nonEmpty(out), ptr(d.Milliseconds()))
			close(ci.exited)
		},
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
	if refused, bad := checkEscalationArgs(call.Arguments, tc.Settings.ApprovalPolicy); bad {
		return refused
	}
	shell := args.Shell
	if shell == "" {
		shell = execmgr.DefaultShell
	}
	flag := "-lc"
	if args.Login != nil && !*args.Login {
		flag = "-c"
	}
	display := execmgr.ShellJoin([]string{shell, flag, args.Cmd})
	cwd := tc.Settings.Cwd
	if args.Workdir != "" {
		if filepath.IsAbs(args.Workdir) {
			cwd = args.Workdir
		} else {
			cwd = filepath.Join(cwd, args.Workdir)
		}
	}
	ci := newCommandItem(tc, call.CallID, display, cwd, args.Cmd)
	escalated := args.SandboxPermissions == "require_escalated"
	pc := parseCommand([]string{shell, flag, args.Cmd}, args.Cmd)
	unsandboxed := false
	// A command the user approved (now, for the session or by an execpolicy prefix) runs outside the
	// sandbox, as in the reference.
	needs := commandNeedsApproval(tc.Settings.ApprovalPolicy, tc.Settings.Sandbox, escalated)
	if needs && e.st.approvals.commandApproved(display, pc) {
		unsandboxed = true
	} else if needs {
		d := e.askCommand(ctx, tc, ci, args, display, cwd, pc)
		if d == decisionInterrupted {
			return "exec_command failed: turn interrupted"
		}
		if out, refused := refuseCommand(tc, ci, d); refused {
			return out
		}
		unsandboxed = true
	} else if escalated && e.st.approvals.commandApproved(display, pc) {
		unsandboxed = true
	}
	var wrap func([]string) ([]string, error)
	if !unsandboxed {
		w, err := SandboxWrapper(e.deps.self(), tc.Settings.Sandbox, cwd)
		if err != nil {
			return "exec_command failed: " + err.Error()
		}
		wrap = w
	}
	res, err := e.st.sessions.ExecCommand(ctx, execmgr.ExecCommandRequest{
		Args: args, Cwd: tc.Settings.Cwd, Controller: tc.Thread.Controller(), Observer: ci.observer(), WrapArgv: wrap,
	})
	if err == nil && res.SandboxDenied && wrap != nil && retriesDenials(tc.Settings.ApprovalPolicy) {
		// The sandbox refused it: under on-request the user may let it run unsandboxed.
		retry := args
		retry.Justification = sandboxRetryReason
		d := e.askCommand(ctx, tc, ci, retry, display, cwd, pc)
		if d == decisionInterrupted {
			return "exec_command failed: turn interrupted"
		}
		if out, refused := refuseCommand(tc, ci, d); refused {
			return out
		}
		res, err = e.st.sessions.ExecCommand(ctx, execmgr.ExecCommandRequest{
			Args: args, Cwd: tc.Settings.Cwd, Controller: tc.Thread.Controller(), Observer: ci.observer(),
		})
	}
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
	if res.SandboxDenied {
		// never announced by execmgr; an item already shown for an approval still gets its end
		ci.mu.Lock()
		shown := ci.started
		ci.mu.Unlock()
		if shown {
			ci.complete(protocol.CommandExecutionStatusFailed, ptr(int32(res.ExitCode)), nonEmpty(res.Output), ptr(res.WallTime.Milliseconds()))
		}
	} else if res.Exited {
		// the item completes before the model hears the result
		select {
		case <-ci.exited:
		case <-time.After(2 * time.Second):
		}
	}
	text := res.Text
	if res.Warning != "" {
		text = res.Warning + "\n" + text
	}
	return text
}

// askCommand sends item/commandExecution/requestApproval and returns the decision, remembering
// session-wide grants.
func (e *execSet) askCommand(ctx context.Context, tc *thread.ToolContext, ci *commandItem, args execmgr.ExecCommandArgs, display, cwd string, pc parsedCommand) decision {
	proposal := args.PrefixRule
	if len(proposal) == 0 {
		proposal = pc.proposal()
	}
	params := protocol.CommandExecutionRequestApprovalParams{
		Kind: ptr(protocol.CommandExecutionApprovalKindCommand), ThreadID: tc.ThreadID(), TurnID: tc.TurnID(), ItemID: ci.item.ID,
		StartedAtMs: *ci.item.StartedAtMs, EnvironmentID: ptr("local"), Command: &display,
		Cwd: ptr(protocol.LegacyAppPathString(cwd)), CommandActions: ci.item.CommandActions,
	}
	if args.Justification != "" {
		params.Reason = &args.Justification
	}
	decisions := []protocol.CommandExecutionApprovalDecision{{Name: protocol.CommandExecutionApprovalDecisionAccept}}
	if len(proposal) > 0 {
		params.ProposedExecpolicyAmendment = proposal
		decisions = append(decisions, protocol.CommandExecutionApprovalDecision{AcceptWithExecpolicyAmendment: &protocol.CommandExecutionApprovalDecisionAcceptWithExecpolicyAmendment{ExecpolicyAmendment: proposal}})
	}
	decisions = append(decisions, protocol.CommandExecutionApprovalDecision{Name: protocol.CommandExecutionApprovalDecisionCancel})
	params.AvailableDecisions = decisions

	tc.SetWaitingOnApproval(true)
	ci.start()
	raw, err := tc.Request(ctx, protocol.ServerRequestItemCommandExecutionRequestApproval, params)
	d, amendment := parseCommandDecision(ctx, raw, err)
	if granted(d) {
		// refusals lower the flag after completing the item (refuseCommand), as the reference orders them
		tc.SetWaitingOnApproval(false)
	}
	switch d {
	case decisionAcceptForSession:
		e.st.approvals.approveCommand(display)
	case decisionAcceptWithAmendment:
		e.st.approvals.approvePrefix(amendment)
	}
	return d
}

// sandboxRetryReason is the approval question after a sandbox denial.
const sandboxRetryReason = "command failed; retry without sandbox?"

// retriesDenials reports a policy under which a sandbox denial leads to an approval to rerun unsandboxed.
func retriesDenials(p protocol.AskForApproval) bool {
	if p.Granular != nil {
		return p.Granular.SandboxApproval
	}
	return p.Name == protocol.AskForApprovalOnRequest
}

// granted reports a decision that lets the command run.
func granted(d decision) bool {
	return d == decisionAccept || d == decisionAcceptForSession || d == decisionAcceptWithAmendment
}

// refuseCommand finishes the item of a refused command (decline, cancel, failed approval request), lowers
// the waitingOnApproval flag afterwards, interrupts the turn on cancel, and returns the model's text.
func refuseCommand(tc *thread.ToolContext, ci *commandItem, d decision) (string, bool) {
	var out string
	switch d {
	case decisionCancel, decisionDecline:
		ci.complete(protocol.CommandExecutionStatusDeclined, nil, nil, nil)
		out = rejectedByUserOutput
	case decisionFailed:
		ci.complete(protocol.CommandExecutionStatusFailed, nil, nil, nil)
		out = approvalFailedOutput
	default:
		return "", false
	}
	tc.SetWaitingOnApproval(false)
	if d == decisionCancel {
		tc.Interrupt()
	}
	return out, true
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

func ptr[T any](v T) *T { return &v }

// nonEmpty is the item's aggregatedOutput: the reference leaves an empty transcript null.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
