package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// decision is the outcome of an approval request, after failures were mapped to a safe default.
type decision int

const (
	decisionAccept decision = iota
	decisionAcceptForSession
	decisionAcceptWithAmendment
	decisionDecline
	decisionCancel
	// decisionFailed is a JSON-RPC error answer: the command is not run (never a grant).
	decisionFailed
	// decisionInterrupted is a wait cut short by the turn ending: nothing more is reported.
	decisionInterrupted
)

// approvalCache remembers what the client approved for the rest of the thread.
type approvalCache struct {
	mu       sync.Mutex
	commands map[string]bool
	prefixes [][]string
	files    map[string]bool
}

func newApprovalCache() *approvalCache {
	return &approvalCache{commands: map[string]bool{}, files: map[string]bool{}}
}

func (c *approvalCache) commandApproved(cmd string, argv []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.commands[cmd] {
		return true
	}
	for _, p := range c.prefixes {
		if len(argv) >= len(p) && equalStrings(argv[:len(p)], p) {
			return true
		}
	}
	return false
}

func (c *approvalCache) approveCommand(cmd string) {
	c.mu.Lock()
	c.commands[cmd] = true
	c.mu.Unlock()
}

func (c *approvalCache) approvePrefix(prefix []string) {
	if len(prefix) == 0 {
		return
	}
	c.mu.Lock()
	c.prefixes = append(c.prefixes, append([]string(nil), prefix...))
	c.mu.Unlock()
}

func (c *approvalCache) filesApproved(paths []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(paths) == 0 {
		return false
	}
	for _, p := range paths {
		if !c.files[p] {
			return false
		}
	}
	return true
}

func (c *approvalCache) approveFiles(paths []string) {
	c.mu.Lock()
	for _, p := range paths {
		c.files[p] = true
	}
	c.mu.Unlock()
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// knownSafe are commands `untrusted` runs without asking: read-only, argument-free inspections.
var knownSafe = map[string]bool{"pwd": true, "true": true, "whoami": true}

// commandNeedsApproval applies the approval policy to one command.
func commandNeedsApproval(policy protocol.AskForApproval, sb protocol.SandboxPolicy, argv []string, escalated bool) bool {
	if policy.Granular != nil {
		return escalated && policy.Granular.SandboxApproval
	}
	switch policy.Name {
	case protocol.AskForApprovalNever:
		return false
	case protocol.AskForApprovalUntrusted:
		return !(len(argv) == 1 && knownSafe[argv[0]])
	default: // on-request
		if _, full := sb.Value.(protocol.SandboxPolicyDangerFullAccess); full {
			return false
		}
		return escalated
	}
}

// simpleArgv splits a command into words when it has no shell syntax beyond spaces and quotes; nil
// otherwise (such commands get no prefix-rule proposal).
func simpleArgv(cmd string) []string {
	if strings.ContainsAny(cmd, "|&;<>()$`\\*?[]{}~\n") {
		return nil
	}
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range cmd {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// classifyFailure maps a failed approval request: the turn ending (ctx done) stops quietly, a JSON-RPC
// error answer is a failure, and anything else (timeout, disconnect, undecodable answer) is a decline.
func classifyFailure(ctx context.Context, err error) decision {
	if ctx.Err() != nil {
		return decisionInterrupted
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return decisionFailed
	}
	return decisionDecline
}

// parseCommandDecision maps the client's answer (or failure) to a decision; nothing but an explicit
// accept grants.
func parseCommandDecision(ctx context.Context, raw json.RawMessage, err error) (decision, []string) {
	if err != nil {
		return classifyFailure(ctx, err), nil
	}
	var resp protocol.CommandExecutionRequestApprovalResponse
	if json.Unmarshal(raw, &resp) != nil {
		return decisionDecline, nil
	}
	d := resp.Decision
	switch {
	case d.AcceptWithExecpolicyAmendment != nil:
		return decisionAcceptWithAmendment, d.AcceptWithExecpolicyAmendment.ExecpolicyAmendment
	case d.Name == protocol.CommandExecutionApprovalDecisionAccept:
		return decisionAccept, nil
	case d.Name == protocol.CommandExecutionApprovalDecisionAcceptForSession:
		return decisionAcceptForSession, nil
	case d.Name == protocol.CommandExecutionApprovalDecisionCancel:
		return decisionCancel, nil
	}
	return decisionDecline, nil
}
