package execcli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	protocol "appserver/protocol/v2"
	"appserver/server"
)

// setupFailed is the outcome of a run that never started its turn (the error was printed).
const setupFailed outcome = -1

// forkedOnly is the outcome of `exec fork` without a prompt: the thread was forked, no turn ran.
const forkedOnly outcome = -2

// session is one exec run against the in-process engine.
type session struct {
	r        *runner
	e        *engine
	m        *mapper
	threadID string
	turnID   string
}

// startInfo is what the header (human output) shows about the thread.
type startInfo struct {
	threadID, model, provider, cwd string
	sandbox                        protocol.SandboxPolicy
	effort                         *protocol.ReasoningEffort
}

func (s *session) run(ctx context.Context, input []protocol.UserInput, schema json.RawMessage, prompt string) outcome {
	// Requests to the engine are not tied to ctx: a signal interrupts the turn, it does not abandon
	// the conversation with the engine mid-request.
	rpcCtx := context.WithoutCancel(ctx)
	originator := envOr("CODEX_INTERNAL_ORIGINATOR_OVERRIDE", "codex_exec")
	init := map[string]any{
		"clientInfo":   map[string]any{"name": originator, "title": nil, "version": server.Version},
		"capabilities": map[string]any{"experimentalApi": true},
	}
	if err := s.e.call(rpcCtx, protocol.MethodInitialize, init, nil); err != nil {
		s.r.fail("Error: %v", err)
		return setupFailed
	}
	info, err := s.openThread(rpcCtx)
	if err != nil {
		s.r.fail("Error: %v", err)
		return setupFailed
	}
	s.threadID = info.threadID
	if s.r.worktree != "" {
		if err := claimWorktree(rpcCtx, s.r.worktree, s.threadID); err != nil {
			s.r.fail("Error: %v", err)
			return setupFailed
		}
	}
	if s.r.opts.review {
		return s.review(ctx, info, prompt)
	}
	s.r.out.threadStarted(info, s.r.cfg, prompt)
	if input == nil {
		return forkedOnly
	}

	var started protocol.TurnStartResponse
	params := protocol.TurnStartParams{ThreadID: s.threadID, Input: input, OutputSchema: schema}
	if err := s.e.call(rpcCtx, protocol.MethodTurnStart, params, &started); err != nil {
		s.drainQueued()
		s.r.out.topLevelError(err.Error())
		return failed
	}
	s.turnID = started.Turn.ID
	return s.follow(ctx)
}

// openThread starts a thread, or resumes the one asked for (a new one when it cannot be found, as
// the reference does).
func (s *session) openThread(ctx context.Context) (startInfo, error) {
	o := s.r.opts
	never := protocol.AskForApproval{Name: protocol.AskForApprovalNever}
	var model *string
	if o.model != "" {
		model = &o.model
	}
	var sandbox *protocol.SandboxMode
	if o.sandbox != "" {
		m := protocol.SandboxMode(o.sandbox)
		sandbox = &m
	}
	if o.fork {
		id, err := s.findThread(ctx, o.forkID, false, false)
		if err != nil {
			return startInfo{}, err
		}
		if id == "" {
			return startInfo{}, fmt.Errorf("Session not found: %s", o.forkID)
		}
		exclude := true
		p := protocol.ThreadForkParams{ThreadID: id, ExcludeTurns: &exclude, Model: model, Cwd: &s.r.cwd, ApprovalPolicy: &never, Sandbox: sandbox}
		if o.ephemeral {
			t := true
			p.Ephemeral = &t
		}
		p.ThreadSource = threadSource(o)
		var resp protocol.ThreadForkResponse
		if err := s.e.call(ctx, protocol.MethodThreadFork, p, &resp); err != nil {
			return startInfo{}, describeCallError(protocol.MethodThreadFork, err)
		}
		return startInfo{threadID: resp.Thread.ID, model: resp.Model, provider: resp.ModelProvider, cwd: string(resp.Cwd), sandbox: resp.Sandbox, effort: resp.ReasoningEffort}, nil
	}
	if o.resume {
		id, err := s.findThread(ctx, o.resumeID, o.resumeLast, o.resumeAll)
		if err != nil {
			return startInfo{}, err
		}
		if id != "" {
			var resp protocol.ThreadResumeResponse
			exclude := true
			p := protocol.ThreadResumeParams{ThreadID: id, ExcludeTurns: &exclude, Model: model, Cwd: &s.r.cwd, ApprovalPolicy: &never, Sandbox: sandbox}
			err := s.e.call(ctx, protocol.MethodThreadResume, p, &resp)
			if err == nil {
				return startInfo{threadID: resp.Thread.ID, model: resp.Model, provider: resp.ModelProvider, cwd: string(resp.Cwd), sandbox: resp.Sandbox, effort: resp.ReasoningEffort}, nil
			}
			if !o.resumeLast && isUUID(o.resumeID) {
				// An id the store does not have fails, as in the reference (an unknown name starts a new session).
				return startInfo{}, describeCallError(protocol.MethodThreadResume, err)
			}
			if !strings.Contains(err.Error(), "not found") && !strings.Contains(err.Error(), "no rollout") {
				return startInfo{}, err
			}
		}
	}
	p := protocol.ThreadStartParams{Model: model, Cwd: &s.r.cwd, ApprovalPolicy: &never, Sandbox: sandbox}
	if o.ephemeral {
		t := true
		p.Ephemeral = &t
	}
	p.ThreadSource = threadSource(o)
	var resp protocol.ThreadStartResponse
	if err := s.e.call(ctx, protocol.MethodThreadStart, p, &resp); err != nil {
		return startInfo{}, err
	}
	return startInfo{threadID: resp.Thread.ID, model: resp.Model, provider: resp.ModelProvider, cwd: string(resp.Cwd), sandbox: resp.Sandbox, effort: resp.ReasoningEffort}, nil
}

// findThread resolves a SESSION_ID of resume or fork (a UUID or a thread name), or --last (of the
// working directory, of any with all), to a thread id; "" means none was found.
func (s *session) findThread(ctx context.Context, idOrName string, last, all bool) (string, error) {
	if idOrName != "" && isUUID(idOrName) {
		return idOrName, nil
	}
	params := map[string]any{
		"sortKey": protocol.ThreadSortKeyUpdatedAt,
		"sourceKinds": []protocol.ThreadSourceKind{protocol.ThreadSourceKindCli, protocol.ThreadSourceKindVscode,
			protocol.ThreadSourceKindExec, protocol.ThreadSourceKindAppServer},
	}
	if last {
		params["limit"] = 1
		if !all {
			params["cwd"] = s.r.cwd
		}
	} else {
		params["searchTerm"] = idOrName
	}
	var list protocol.ThreadListResponse
	if err := s.e.call(ctx, protocol.MethodThreadList, params, &list); err != nil {
		return "", err
	}
	for _, t := range list.Data {
		if last || (t.Name != nil && *t.Name == idOrName) {
			return t.ID, nil
		}
	}
	return "", nil
}

// review runs `exec review` on the new thread: review/start with the command line's target. The
// header shows the review's hint, and turn.started comes with the response, as the reference prints.
func (s *session) review(ctx context.Context, info startInfo, prompt string) outcome {
	o := s.r.opts
	var target protocol.ReviewTargetVariant
	switch {
	case o.reviewUncommitted:
		target = protocol.ReviewTargetUncommittedChanges{}
	case o.reviewBase != "":
		target = protocol.ReviewTargetBaseBranch{Branch: o.reviewBase}
	case o.reviewCommit != "":
		c := protocol.ReviewTargetCommit{Sha: o.reviewCommit}
		if o.reviewTitle != "" {
			c.Title = &o.reviewTitle
		}
		target = c
	default:
		target = protocol.ReviewTargetCustom{Instructions: prompt}
	}
	var resp protocol.ReviewStartResponse
	params := protocol.ReviewStartParams{ThreadID: s.threadID, Target: protocol.ReviewTarget{Value: target}}
	if err := s.e.call(context.WithoutCancel(ctx), protocol.MethodReviewStart, params, &resp); err != nil {
		s.r.out.threadStarted(info, s.r.cfg, prompt)
		s.drainQueued()
		s.r.out.topLevelError(err.Error())
		return failed
	}
	s.r.out.threadStarted(info, s.r.cfg, reviewHint(resp.Turn, prompt))
	s.turnID = resp.Turn.ID
	s.m.turnAnnounced = true
	s.r.out.notification("", nil, []any{TurnStarted{Type: EventTurnStarted}})
	return s.follow(ctx)
}

// reviewHint is the text of the review turn's user message (what the reference shows as the prompt).
func reviewHint(t protocol.Turn, fallback string) string {
	for _, it := range t.Items {
		if um, ok := it.Value.(protocol.ThreadItemUserMessage); ok {
			for _, in := range um.Content {
				if txt, ok := in.Value.(protocol.UserInputText); ok {
					return txt.Text
				}
			}
		}
	}
	return fallback
}

// follow prints the turn's events until it ends. ctx ending (a signal) interrupts the turn; so does
// a model that stays unreachable for MaxNetworkWaits retries.
func (s *session) follow(ctx context.Context) outcome {
	waitCtx, cancelWait := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWait()
	nextCtx := ctx // until the turn is interrupted, a signal also ends the wait for a notification
	netWaits := 0
	giveUp, cause := "", ""
	interrupt := func() {
		if nextCtx == waitCtx {
			return
		}
		nextCtx = waitCtx
		time.AfterFunc(interruptGrace, cancelWait)
		turnID := s.turnID
		go func() { // owned by the turn: the request returns once the engine answered
			err := s.e.call(waitCtx, protocol.MethodTurnInterrupt, protocol.TurnInterruptParams{ThreadID: s.threadID, TurnID: turnID}, nil)
			if err != nil && waitCtx.Err() == nil {
				s.r.log.Error("turn/interrupt failed; waiting for the turn to end", "turn", turnID, "error", err)
			}
		}()
	}
	for {
		n, ok := s.e.next(nextCtx)
		if !ok {
			if nextCtx != waitCtx && ctx.Err() != nil {
				interrupt()
				continue
			}
			// The engine went away, or the interrupted turn did not end within the grace period.
			return interruptedOutcome(giveUp, s)
		}
		if n.method == protocol.NotifyError {
			var en protocol.ErrorNotification
			if json.Unmarshal(n.params, &en) == nil {
				if en.WillRetry && strings.Contains(en.Error.Message, "waiting for network") {
					netWaits++
					cause = en.Error.Message
					if en.Error.AdditionalDetails != nil && *en.Error.AdditionalDetails != "" {
						cause = *en.Error.AdditionalDetails
					}
				} else {
					netWaits = 0
				}
			}
		} else if n.method == protocol.NotifyItemStarted || n.method == protocol.NotifyItemAgentMessageDelta {
			netWaits = 0
		} else if n.method == protocol.NotifyTurnStarted {
			// A review's reviewer runs under a turn id of its own: that is the one to interrupt.
			var ts protocol.TurnStartedNotification
			if json.Unmarshal(n.params, &ts) == nil && ts.Turn.ID != "" {
				s.turnID = ts.Turn.ID
			}
		}
		events, end := s.m.notification(n.method, n.params)
		s.r.out.notification(n.method, n.params, events)
		if netWaits >= MaxNetworkWaits && giveUp == "" {
			giveUp = fmt.Sprintf("%s (model unreachable: gave up after %d attempts)", cause, netWaits)
			interrupt()
		}
		switch end {
		case running:
		case interrupted:
			return interruptedOutcome(giveUp, s)
		default:
			return end
		}
	}
}

// interruptedOutcome ends an interrupted turn: when exec itself gave up on an unreachable model the
// turn is reported failed.
func interruptedOutcome(giveUp string, s *session) outcome {
	if giveUp != "" {
		s.r.out.turnFailed(giveUp)
		return failed
	}
	return interrupted
}

// drainQueued prints what the engine already sent (used before reporting a setup error).
func (s *session) drainQueued() {
	for {
		s.e.mu.Lock()
		empty := len(s.e.queue) == 0
		s.e.mu.Unlock()
		if empty {
			return
		}
		n, _ := s.e.next(context.Background())
		events, _ := s.m.notification(n.method, n.params)
		s.r.out.notification(n.method, n.params, events)
	}
}

// drain prints the MCP startup statuses sent while the engine stopped (servers still starting are
// cancelled); everything else that late is of no interest.
func (s *session) drain() {
	for {
		n, ok := s.e.next(context.Background())
		if !ok {
			return
		}
		if n.method != protocol.NotifyMcpServerStartupStatusUpdated {
			continue
		}
		events, _ := s.m.notification(n.method, n.params)
		s.r.out.notification(n.method, n.params, events)
	}
}

func (e *engine) isEnded() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended
}

func envOr(key, def string) string {
	if v := strings.TrimSpace(os.Getenv(key)); v != "" {
		return v
	}
	return def
}

func describeSandbox(p protocol.SandboxPolicy) string {
	switch v := p.Value.(type) {
	case protocol.SandboxPolicyDangerFullAccess:
		return "danger-full-access"
	case protocol.SandboxPolicyReadOnly:
		return "read-only"
	case protocol.SandboxPolicyExternalSandbox:
		return "external-sandbox"
	case protocol.SandboxPolicyWorkspaceWrite:
		parts := []string{"workdir"}
		if v.ExcludeSlashTmp == nil || !*v.ExcludeSlashTmp {
			parts = append(parts, "/tmp")
		}
		if v.ExcludeTmpdirEnvVar == nil || !*v.ExcludeTmpdirEnvVar {
			parts = append(parts, "$TMPDIR")
		}
		for _, r := range v.WritableRoots {
			parts = append(parts, string(r))
		}
		s := fmt.Sprintf("workspace-write [%s]", strings.Join(parts, ", "))
		if v.NetworkAccess != nil && *v.NetworkAccess {
			s += " (network access enabled)"
		}
		return s
	}
	return "unknown"
}

// defaultThreadSource is the thread source exec gives the threads it starts or forks without --thread-source,
// as the reference's exec does.
const defaultThreadSource = "user"

// threadSource is the threadSource of exec's thread/start and thread/fork: --thread-source, else "user".
func threadSource(o *options) *string {
	if o.threadSource != "" {
		return &o.threadSource
	}
	s := defaultThreadSource
	return &s
}
