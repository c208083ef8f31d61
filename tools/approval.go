package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// commandApproved reports a command approved for the session: the exact command line, or every simple
// command of its script (the whole argv for other scripts) matching a remembered prefix.
func (c *approvalCache) commandApproved(cmd string, pc parsedCommand) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.commands[cmd] {
		return true
	}
	cmds := pc.cmds
	if cmds == nil {
		cmds = [][]string{pc.full}
	}
	for _, argv := range cmds {
		if !c.prefixMatchLocked(argv) {
			return false
		}
	}
	return true
}

func (c *approvalCache) prefixMatchLocked(argv []string) bool {
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

// commandNeedsApproval applies the approval policy to one command: `untrusted` asks for every command
// (the reference prompted even for `pwd`), `on-request` only for escalations outside full access.
func commandNeedsApproval(policy protocol.AskForApproval, sb protocol.SandboxPolicy, escalated bool) bool {
	if policy.Granular != nil {
		return escalated && policy.Granular.SandboxApproval
	}
	switch policy.Name {
	case protocol.AskForApprovalNever:
		return false
	case protocol.AskForApprovalUntrusted:
		return true
	default: // on-request
		if _, full := sb.Value.(protocol.SandboxPolicyDangerFullAccess); full {
			return false
		}
		return escalated
	}
}

// parsedCommand is a command line as the approval flow sees it.
type parsedCommand struct {
	full []string   // the argv that runs: shell, flag, script
	cmds [][]string // the script's simple commands; nil when it uses other shell syntax
}

func parseCommand(full []string, script string) parsedCommand {
	cmds, ok := splitScript(script)
	if !ok {
		cmds = nil
	}
	return parsedCommand{full: full, cmds: cmds}
}

// proposal is the execpolicy prefix offered with an approval: the first simple command, or the whole
// argv when the script is not plain.
func (pc parsedCommand) proposal() []string {
	if len(pc.cmds) > 0 {
		return pc.cmds[0]
	}
	return pc.full
}

// splitScript parses a plain script: words of literal characters, '…' and "…" (no $, ` or \ inside),
// joined by &&, ||, ;, | and newlines. ok is false for anything else (redirections, expansions, globs,
// subshells, background jobs, leading variable assignments, comments).
func splitScript(script string) (cmds [][]string, ok bool) {
	var cur []string
	var word strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			cur = append(cur, word.String())
			word.Reset()
			inWord = false
		}
	}
	// endCmd closes a command at an operator; an operator needs a command on its left.
	endCmd := func() bool {
		endWord()
		if len(cur) == 0 {
			return false
		}
		if i := strings.IndexByte(cur[0], '='); i > 0 && isIdent(cur[0][:i]) {
			return false
		}
		cmds = append(cmds, cur)
		cur = nil
		return true
	}
	rs := []rune(script)
	pendingOp := false // an operator that still needs its right-hand command
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == ' ' || r == '\t':
			endWord()
		case r == '\n' || r == ';':
			if len(cur) == 0 && !inWord {
				if r == ';' || pendingOp {
					return nil, false
				}
				continue // blank line
			}
			if !endCmd() {
				return nil, false
			}
			pendingOp = r == ';'
		case r == '&' || r == '|':
			double := i+1 < len(rs) && rs[i+1] == r
			if r == '&' && !double {
				return nil, false // background job
			}
			if double {
				i++
			}
			if i+1 < len(rs) && rs[i+1] == '&' {
				return nil, false // |&
			}
			if !endCmd() {
				return nil, false
			}
			pendingOp = true
		case r == '\'' || r == '"':
			j := i + 1
			for j < len(rs) && rs[j] != r {
				if r == '"' && strings.ContainsRune("$`\\", rs[j]) {
					return nil, false // an expansion or escape inside double quotes
				}
				j++
			}
			if j == len(rs) {
				return nil, false
			}
			word.WriteString(string(rs[i+1 : j]))
			inWord, pendingOp = true, false
			i = j
		case strings.ContainsRune("<>()$`\\*?[]{}~#!", r):
			return nil, false
		default:
			word.WriteRune(r)
			inWord, pendingOp = true, false
		}
	}
	endWord()
	if len(cur) > 0 {
		if !endCmd() {
			return nil, false
		}
	} else if pendingOp && len(cmds) > 0 && !strings.HasSuffix(strings.TrimSpace(script), ";") {
		return nil, false // a dangling && / || / |
	}
	return cmds, len(cmds) > 0
}

func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
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
	// An answer that does not decode to a known decision is a failed approval request, as the reference.
	var resp protocol.CommandExecutionRequestApprovalResponse
	if json.Unmarshal(raw, &resp) != nil {
		return decisionFailed, nil
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
	case d.Name == protocol.CommandExecutionApprovalDecisionDecline, d.ApplyNetworkPolicyAmendment != nil:
		return decisionDecline, nil
	}
	return decisionFailed, nil
}

// Model-facing refusals of the escalation arguments, as the reference words them.
const (
	justificationWithoutPermissions = "`justification` requires an explicit `sandbox_permissions`; use `sandbox_permissions: \"require_escalated\"` for unsandboxed execution, or omit `justification`."
	additionalPermissionsDisabled   = "additional permissions are disabled; enable `features.exec_permission_approvals` before using `with_additional_permissions`"
	escalationUnderNever            = "approval policy is Never; reject command \u2014 you cannot ask for escalated permissions if the approval policy is Never"
)

// checkEscalationArgs validates sandbox_permissions and justification of a command call against the
// policy before anything is shown; refused is the text for the model (no item is emitted).
func checkEscalationArgs(arguments string, policy protocol.AskForApproval) (refused string, bad bool) {
	var present map[string]json.RawMessage
	if json.Unmarshal([]byte(arguments), &present) != nil {
		return "", false // the typed decode reports malformed arguments
	}
	perm := ""
	if raw, ok := present["sandbox_permissions"]; ok {
		if json.Unmarshal(raw, &perm) != nil {
			perm = "?"
		}
		switch perm {
		case "use_default", "require_escalated", "with_additional_permissions":
		default:
			return fmt.Sprintf("failed to parse function arguments: unknown variant `%s`, expected one of `use_default`, `require_escalated`, `with_additional_permissions` at %s", perm, valuePosition(arguments, "sandbox_permissions")), true
		}
	}
	if _, ok := present["justification"]; ok && perm == "" {
		return justificationWithoutPermissions, true
	}
	if perm == "with_additional_permissions" {
		return additionalPermissionsDisabled, true
	}
	if perm == "require_escalated" && policy.Granular == nil && policy.Name == protocol.AskForApprovalNever {
		return escalationUnderNever, true
	}
	return "", false
}

// valuePosition locates the end of key's value in a JSON object the way serde reports errors
// ("line L column C", C = 1-based column of the value's last character).
func valuePosition(doc, key string) string {
	dec := json.NewDecoder(strings.NewReader(doc))
	end := int64(len(doc))
	if _, err := dec.Token(); err == nil { // {
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				break
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				break
			}
			if k == key {
				end = dec.InputOffset()
				break
			}
		}
	}
	before := doc[:end]
	line := strings.Count(before, "\n") + 1
	col := len(before) - (strings.LastIndexByte(before, '\n') + 1)
	return fmt.Sprintf("line %d column %d", line, col)
}
