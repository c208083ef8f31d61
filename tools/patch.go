package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"appserver/applypatch"
	protocol "appserver/protocol/v2"
	"appserver/sandbox"
	"appserver/thread"
)

// patchSet is the freeform apply_patch tool.
type patchSet struct {
	deps *Deps
	st   *threadState
}

// patchSpecs is built once: every model request of every thread sends it (as the builtin sets' specs,
// the shared bytes are only ever encoded).
var patchSpecs = sync.OnceValue(func() []json.RawMessage { return []json.RawMessage{applypatch.ToolSpec()} })

func (p *patchSet) Specs() []json.RawMessage { return patchSpecs() }

func (p *patchSet) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Name != applypatch.ToolName || call.Namespace != "" {
		return nil, false
	}
	input := call.Input
	if call.Type == "function_call" { // tolerate a function-style call {"input": "..."}
		var a struct {
			Input string `json:"input"`
		}
		_ = json.Unmarshal([]byte(call.Arguments), &a)
		input = a.Input
	}
	out, _ := p.apply(ctx, tc, call.CallID, input, tc.Settings.Cwd)
	if call.Type == "function_call" {
		return thread.FunctionOutput(call.CallID, out), true
	}
	return thread.CustomOutput(call.CallID, out), true
}

type diffKey struct{ turn string }

// apply runs a patch whose paths are relative to cwd: the fileChange item, an approval when the policy
// or the sandbox asks for one, the edit and the turn's diff. ran is true when the patch was applied or
// failed while applying (the text is then an execution report); false for a refusal or a patch that did
// not verify (the text is the reason).
func (p *patchSet) apply(ctx context.Context, tc *thread.ToolContext, callID, input, cwd string) (text string, ran bool) {
	start := time.Now()
	patch, err := applypatch.Parse(input)
	if err != nil {
		return applypatch.VerificationFailedOutput(err), false
	}
	plan, err := patch.Plan(cwd)
	if err != nil {
		return applypatch.VerificationFailedOutput(err), false
	}
	item := protocol.ThreadItemFileChange{ID: callID, Status: protocol.PatchApplyStatusInProgress, Changes: fileChanges(plan), StartedAtMs: ptr(start.UnixMilli())}
	tc.ItemStarted(protocol.ThreadItem{Value: item})
	finish := func(status protocol.PatchApplyStatus) {
		item.Status = status
		item.CompletedAtMs = ptr(time.Now().UnixMilli())
		tc.ItemCompleted(protocol.ThreadItem{Value: item})
	}
	paths := plan.AffectedPaths()
	// untrusted asks before every patch, like the reference; the other policies only outside the writable roots
	untrusted := tc.Settings.ApprovalPolicy.Name == protocol.AskForApprovalUntrusted
	if (untrusted || !writesAllowed(tc.Settings.Sandbox, tc.Settings.Cwd, paths)) && !p.st.approvals.filesApproved(paths) {
		if tc.Settings.ApprovalPolicy.Name == protocol.AskForApprovalNever {
			finish(protocol.PatchApplyStatusDeclined)
			return "patch rejected: writing outside of the project; rejected by user approval settings", false
		}
		switch p.askPatch(ctx, tc, callID, *item.StartedAtMs, paths) {
		case decisionInterrupted:
			return applypatch.RejectedOutput, false
		case decisionCancel:
			finish(protocol.PatchApplyStatusDeclined)
			tc.Interrupt()
			return applypatch.RejectedOutput, false
		case decisionDecline, decisionFailed:
			finish(protocol.PatchApplyStatusDeclined)
			return applypatch.RejectedOutput, false
		}
		// the files may have changed while the human decided
		if plan, err = patch.Plan(cwd); err != nil {
			finish(protocol.PatchApplyStatusFailed)
			return applypatch.VerificationFailedOutput(err), false
		}
	}
	td := tc.Thread.AttachOnce(diffKey{tc.TurnID()}, func() any { return applypatch.NewTurnDiff(tc.Settings.Cwd) }).(*applypatch.TurnDiff)
	td.Track(plan)
	if err := plan.Apply(); err != nil {
		finish(protocol.PatchApplyStatusFailed)
		return applypatch.ApplyFailedOutput(err, time.Since(start)), true
	}
	finish(protocol.PatchApplyStatusCompleted)
	p.emitDiff(tc, td)
	return applypatch.SuccessOutput(plan, time.Since(start)), true
}

func (p *patchSet) emitDiff(tc *thread.ToolContext, td *applypatch.TurnDiff) {
	if diff, err := td.Diff(); err == nil {
		tc.Emit(protocol.NotifyTurnDiffUpdated, protocol.TurnDiffUpdatedNotification{ThreadID: tc.ThreadID(), TurnID: tc.TurnID(), Diff: diff})
	}
}

// diffSet offers no tool: after every model response of a turn whose patches changed files it repeats
// the turn's diff, as the reference does (so a turn that patched ends with its diff announced).
type diffSet struct{}

func (diffSet) Specs() []json.RawMessage { return nil }

func (diffSet) Call(context.Context, *thread.ToolContext, thread.ToolCall) (json.RawMessage, bool) {
	return nil, false
}

func (diffSet) RoundEnded(tc *thread.ToolContext) {
	td, ok := tc.Thread.Attached(diffKey{tc.TurnID()}).(*applypatch.TurnDiff)
	if !ok {
		return
	}
	if diff, err := td.Diff(); err == nil && diff != "" {
		tc.Emit(protocol.NotifyTurnDiffUpdated, protocol.TurnDiffUpdatedNotification{ThreadID: tc.ThreadID(), TurnID: tc.TurnID(), Diff: diff})
	}
}

// shellPatch runs an apply_patch heredoc a model sent through exec_command as the patch it is, like the
// reference: a fileChange item (no commandExecution), the patch approval, and exec_command's framing of
// the report ("Wall time: 0.0000 seconds\nOutput:\n…"; a refusal is the bare reason).
func (p *patchSet) shellPatch(ctx context.Context, tc *thread.ToolContext, callID, body, cwd string) string {
	text, ran := p.apply(ctx, tc, callID, body, cwd)
	if !ran {
		return text
	}
	return "Wall time: 0.0000 seconds\nOutput:\n" + text
}

func (p *patchSet) askPatch(ctx context.Context, tc *thread.ToolContext, itemID string, startedAt int64, paths []string) decision {
	params := protocol.FileChangeRequestApprovalParams{ThreadID: tc.ThreadID(), TurnID: tc.TurnID(), ItemID: itemID, StartedAtMs: startedAt}
	tc.SetWaitingOnApproval(true)
	raw, err := tc.Request(ctx, protocol.ServerRequestItemFileChangeRequestApproval, params)
	var d decision
	if err != nil {
		d = classifyFailure(ctx, err)
	} else {
		var resp protocol.FileChangeRequestApprovalResponse
		d = decisionDecline
		if json.Unmarshal(raw, &resp) == nil {
			switch resp.Decision {
			case protocol.FileChangeApprovalDecisionAccept:
				d = decisionAccept
			case protocol.FileChangeApprovalDecisionAcceptForSession:
				d = decisionAcceptForSession
				p.st.approvals.approveFiles(paths)
			case protocol.FileChangeApprovalDecisionCancel:
				d = decisionCancel
			}
		}
	}
	if d != decisionInterrupted {
		// unlike a command refusal, a patch refusal lowers the flag before the item completes
		tc.SetWaitingOnApproval(false)
	}
	return d
}

func fileChanges(plan *applypatch.Plan) []protocol.FileUpdateChange {
	out := []protocol.FileUpdateChange{}
	raw, err := json.Marshal(plan.Changes())
	if err != nil {
		return out
	}
	_ = json.Unmarshal(raw, &out)
	return out
}

// writesAllowed reports whether the sandbox policy lets the patch write every path without asking.
func writesAllowed(sb protocol.SandboxPolicy, cwd string, paths []string) bool {
	switch v := sb.Value.(type) {
	case protocol.SandboxPolicyDangerFullAccess, protocol.SandboxPolicyExternalSandbox:
		return true
	case protocol.SandboxPolicyWorkspaceWrite:
		roots := []string{cwd}
		for _, r := range v.WritableRoots {
			roots = append(roots, string(r))
		}
		if v.ExcludeSlashTmp == nil || !*v.ExcludeSlashTmp {
			roots = append(roots, "/tmp")
		}
		if v.ExcludeTmpdirEnvVar == nil || !*v.ExcludeTmpdirEnvVar {
			if t := os.Getenv("TMPDIR"); t != "" {
				roots = append(roots, t)
			}
		}
		for _, p := range paths {
			if !underAny(p, roots) || protectedPath(p, roots) {
				return false
			}
		}
		return true
	}
	return false
}

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if rel, err := filepath.Rel(r, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// protectedPath is a path inside a protected entry (.git, .codex…) of a writable root (those stay read-only).
func protectedPath(p string, roots []string) bool {
	for _, r := range roots {
		rel, err := filepath.Rel(r, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		first := strings.SplitN(rel, string(filepath.Separator), 2)[0]
		if slices.Contains(sandbox.ProtectedNames, first) {
			return true
		}
	}
	return false
}
