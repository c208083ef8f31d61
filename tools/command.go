package tools

import (
	"context"
	"os"
	"sync"
	"time"

	"appserver/execmgr"
	"appserver/execpolicy"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// Model-facing texts of refused commands, as the reference words them.
const (
	rejectedByUserOutput = `exec_command failed: CreateProcess { message: "Rejected(\"rejected by user\")" }`
	approvalFailedOutput = `exec_command failed: CreateProcess { message: "Rejected(\"approval request failed\")" }`
)

// commandArgs are the arguments exec_command and shell_command share.
type commandArgs struct {
	Script             string
	Workdir            string
	Login              *bool
	SandboxPermissions string
	Justification      string
	PrefixRule         []string
}

// commandCall is one exec_command or shell_command call as the approval flow and its item see it.
type commandCall struct {
	tool    string // the tool's name, prefix of its failure texts
	args    commandArgs
	display string // the argv as one shell-quoted line (item, approval request, session grants)
	cwd     string // the resolved working directory
	pc      parsedCommand
}

func newCommandCall(tc *thread.ToolContext, tool, shell string, args commandArgs) *commandCall {
	argv := execmgr.ShellArgv(shell, args.Login, args.Script)
	return &commandCall{tool: tool, args: args, display: execmgr.ShellJoin(argv),
		cwd: execmgr.ResolveDir(tc.Settings.Cwd, args.Workdir), pc: parseCommand(argv, args.Script)}
}

// commandEnv is the base environment of a thread's commands: this process's, plus CODEX_THREAD_ID.
func commandEnv(tc *thread.ToolContext) []string {
	return execmgr.MergeEnv(os.Environ(), "CODEX_THREAD_ID="+tc.ThreadID())
}

// authorize applies the approval policy to a call, asking the client when it must, and returns the sandbox
// hook to run it with. The hook is nil when the policy sandboxes nothing or when the user approved the
// command (now, for the session or by an execpolicy prefix): approved commands run outside the sandbox, as
// in the reference. ok is false when the command must not run; refused is then the model's text.
func (st *threadState) authorize(ctx context.Context, tc *thread.ToolContext, ci *commandItem, c *commandCall, self string) (wrap func([]string) ([]string, error), refused string, ok bool) {
	escalated := c.args.SandboxPermissions == "require_escalated"
	needs := commandNeedsApproval(tc.Settings.ApprovalPolicy, tc.Settings.Sandbox, escalated)
	approved := (needs || escalated) && st.approvals.commandApproved(c.display, c.pc)
	if needs && !approved {
		if out, refused := st.ask(ctx, tc, ci, c, c.args.Justification); refused {
			return nil, out, false
		}
		approved = true
	}
	if approved {
		return nil, "", true
	}
	w, err := SandboxWrapper(self, tc.Settings.Sandbox, tc.Settings.Cwd, c.cwd)
	if err != nil {
		return nil, c.tool + " failed: " + err.Error(), false
	}
	return w, "", true
}

// ask requests approval of the call, with reason as its justification; refused reports a command that must
// not run, with the model's text.
func (st *threadState) ask(ctx context.Context, tc *thread.ToolContext, ci *commandItem, c *commandCall, reason string) (out string, refused bool) {
	d := st.askCommand(ctx, tc, ci, c, reason)
	if d == decisionInterrupted {
		return c.tool + " failed: turn interrupted", true
	}
	return refuseCommand(tc, ci, d)
}

// askCommand sends item/commandExecution/requestApproval and returns the decision, remembering
// session-wide grants.
func (st *threadState) askCommand(ctx context.Context, tc *thread.ToolContext, ci *commandItem, c *commandCall, reason string) decision {
	proposal := c.args.PrefixRule
	if len(proposal) == 0 {
		proposal = c.pc.proposal()
	}
	params := protocol.CommandExecutionRequestApprovalParams{
		Kind: ptr(protocol.CommandExecutionApprovalKindCommand), ThreadID: tc.ThreadID(), TurnID: tc.TurnID(), ItemID: ci.item.ID,
		StartedAtMs: *ci.item.StartedAtMs, EnvironmentID: ptr("local"), Command: &c.display,
		Cwd: ptr(protocol.LegacyAppPathString(c.cwd)), CommandActions: ci.item.CommandActions,
	}
	if reason != "" {
		params.Reason = &reason
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
		st.approvals.approveCommand(c.display)
	case decisionAcceptWithAmendment:
		st.approvals.approvePrefix(amendment)
		st.savePrefix(tc, amendment)
	}
	return d
}

// savePrefix saves a prefix the user approved for good to the rules file, where later threads find it, and
// tells the model, as the reference does.
func (st *threadState) savePrefix(tc *thread.ToolContext, prefix []string) {
	if len(prefix) == 0 {
		return
	}
	if err := execpolicy.Append(st.codexHome, prefix); err != nil {
		tc.Log.Warn("could not save the approved command prefix", "error", err)
		return
	}
	tc.Thread.QueueDeveloperContext("Approved command prefix saved:\n- " + execpolicy.List(prefix))
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

// commandItem tracks one commandExecution item through approval, spawn and exit.
type commandItem struct {
	tc        *thread.ToolContext
	mu        sync.Mutex
	item      protocol.ThreadItemCommandExecution
	started   bool
	completed bool
}

func newCommandItem(tc *thread.ToolContext, callID string, c *commandCall) *commandItem {
	return &commandItem{tc: tc, item: protocol.ThreadItemCommandExecution{
		ID: callID, Command: c.display, Cwd: protocol.LegacyAppPathString(c.cwd), Status: protocol.CommandExecutionStatusInProgress,
		CommandActions: commandActions(c.args.Script, c.pc.cmds, c.cwd),
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

// exited completes the item of a process that ran: completed on exit code 0, else failed.
func (ci *commandItem) exited(exitCode int, output string, d time.Duration) {
	status := protocol.CommandExecutionStatusCompleted
	if exitCode != 0 {
		status = protocol.CommandExecutionStatusFailed
	}
	ci.complete(status, ptr(int32(exitCode)), nonEmpty(output), ptr(d.Milliseconds()))
}

// outputDelta streams a chunk of the command's output.
func (ci *commandItem) outputDelta(chunk []byte) {
	ci.tc.Emit(protocol.NotifyItemCommandExecutionOutputDelta, protocol.CommandExecutionOutputDeltaNotification{
		ThreadID: ci.tc.ThreadID(), TurnID: ci.tc.TurnID(), ItemID: ci.item.ID, Delta: string(chunk)})
}

func ptr[T any](v T) *T { return &v }

// nonEmpty is the item's aggregatedOutput: the reference leaves an empty transcript null.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
