package thread

import (
	"bytes"

	"appserver/jsonrpc/jsonstr"
	protocol "appserver/protocol/v2"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
)

// baseInstructions is appserver's own system prompt, sent as the first developer input item.
const baseInstructions = `You are a coding agent working inside the user's workspace through an IDE. You can read and change files and run commands with the tools you are given; use them rather than guessing.

How to work:
- Understand the request and the code before you change anything. Look at the files involved, search the tree, run the project's own commands.
- Make the smallest change that solves the problem well, in the style of the surrounding code. Do not reformat or rename what you were not asked to touch.
- Run the relevant tests or checks after a change when the project has them, and say what you ran.
- Commands may run in a sandbox. If one fails because of the sandbox and the task needs it, ask for escalation with a short justification instead of working around the restriction.
- Never run destructive commands (deleting data, rewriting history, force pushes) unless the user asked for exactly that.

How to answer:
- Be brief and concrete. Lead with the outcome, then the details that matter: files changed, commands run, what is left.
- Reference files with their paths, and code identifiers in backticks.
- If you could not finish, say what stands in the way and what you would do next.`

// messageItem builds a Responses API input message with an id, like the reference's context items.
// It writes what marshal makes of the item as a map (members sorted by name) without reflection: the
// base instructions' message is built for every model request.
func messageItem(role, text string) json.RawMessage {
	b := make([]byte, 0, len(text)+len(role)+128)
	b = append(b, `{"content":[{"text":`...)
	b = jsonstr.Append(b, text)
	b = append(b, `,"type":"input_text"}],"id":"msg_`...)
	b = appendUUIDv7(b)
	b = append(b, `","role":`...)
	b = jsonstr.Append(b, role)
	return append(b, `,"type":"message"}`...)
}

// developerMessage builds a developer message with one input_text part per text, as the reference groups the
// settings it tells together (written as messageItem writes its one part).
func developerMessage(texts ...string) json.RawMessage {
	if len(texts) == 1 {
		return messageItem("developer", texts[0])
	}
	n := 0
	for _, text := range texts {
		n += len(text) + 40
	}
	b := make([]byte, 0, n+128)
	b = append(b, `{"content":[`...)
	for i, text := range texts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"text":`...)
		b = jsonstr.Append(b, text)
		b = append(b, `,"type":"input_text"}`...)
	}
	b = append(b, `],"id":"msg_`...)
	b = appendUUIDv7(b)
	return append(b, `","role":"developer","type":"message"}`...)
}

// appendUUIDv7 appends a new version 7 UUID's canonical text (hex digits and dashes: nothing to escape).
func appendUUIDv7(b []byte) []byte {
	id := uuid.Must(uuid.NewV7())
	n := len(b)
	b = append(b, make([]byte, 36)...)
	encodeUUID(b[n:], id)
	return b
}

// encodeUUID writes id's canonical form (as uuid.UUID.String) into dst[:36].
func encodeUUID(dst []byte, id uuid.UUID) {
	const hexDigits = "0123456789abcdef"
	j := 0
	for i, c := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst[j] = '-'
			j++
		}
		dst[j], dst[j+1] = hexDigits[c>>4], hexDigits[c&0xf]
		j += 2
	}
}

// initialContext is what a new thread's history starts with, in the reference's order and grouping: one
// developer message of the developer instructions (if any), the skills (if any), the permissions commands run
// under and the collaboration mode (see modeAndAgentContext), then, in a multi-agent v2 thread, the agent's
// role and delegation mode (a developer message each), then the environment context. The deferred tools'
// `<tools>` note ends the developer message.
func initialContext(s Settings, role agentRole, skills, toolsNotice string) []json.RawMessage {
	var parts []string
	if s.DeveloperInstructions != "" {
		parts = append(parts, s.DeveloperInstructions)
	}
	if skills != "" {
		parts = append(parts, skills)
	}
	parts = append(parts, permissionsText(s))
	mode, agent := modeAndAgentContext(s, role)
	if mode != "" {
		parts = append(parts, mode)
	}
	if toolsNotice != "" {
		parts = append(parts, toolsNotice)
	}
	items := []json.RawMessage{developerMessage(parts...)}
	for _, text := range agent {
		items = append(items, messageItem("developer", text))
	}
	return append(items, messageItem("user", environmentContext(s, time.Now())))
}

// permissionsText tells the model, in our own words, what its commands may do and when the user is asked.
func permissionsText(s Settings) string {
	var b strings.Builder
	b.WriteString("<permissions instructions>\n")
	network := false
	switch v := s.Sandbox.Value.(type) {
	case protocol.SandboxPolicyDangerFullAccess:
		b.WriteString("Sandbox: none. Commands run with the user's full permissions.\n")
		network = true
	case protocol.SandboxPolicyExternalSandbox:
		b.WriteString("Sandbox: provided outside this agent; assume writes and network may be restricted.\n")
	case protocol.SandboxPolicyWorkspaceWrite:
		roots := []string{s.Cwd}
		for _, r := range v.WritableRoots {
			roots = append(roots, string(r))
		}
		b.WriteString("Sandbox: workspace-write. Commands may read any file and write only under " + strings.Join(roots, ", ") +
			" and the temporary directory; .git and .codex stay read-only.\n")
		network = v.NetworkAccess != nil && *v.NetworkAccess
	case protocol.SandboxPolicyReadOnly:
		b.WriteString("Sandbox: read-only. Commands may read any file but cannot write anywhere.\n")
		network = v.NetworkAccess != nil && *v.NetworkAccess
	}
	if network {
		b.WriteString("Network access: enabled.\n")
	} else {
		b.WriteString("Network access: restricted.\n")
	}
	switch {
	case s.ApprovalPolicy.Granular != nil:
		b.WriteString("Approvals: granular. Some actions outside the sandbox are shown to the user for approval first.\n")
	case s.ApprovalPolicy.Name == protocol.AskForApprovalNever:
		b.WriteString("Approvals: never. The user is never asked; a command the sandbox refuses fails, so work within it.\n")
	case s.ApprovalPolicy.Name == protocol.AskForApprovalUntrusted:
		b.WriteString("Approvals: untrusted. Every command is shown to the user for approval before it runs.\n")
	default:
		b.WriteString("Approvals: on-request. Run commands in the sandbox; when one needs more (writes outside the " +
			"writable roots, network), run it with sandbox_permissions \"require_escalated\" and a one-sentence " +
			"justification, and the user decides.\n")
	}
	b.WriteString("</permissions instructions>")
	return b.String()
}

func shellName() string {
	if sh := os.Getenv("SHELL"); sh != "" {
		return filepath.Base(sh)
	}
	return "bash"
}

func timezoneName() string {
	if tz := os.Getenv("TZ"); tz != "" {
		return strings.TrimPrefix(tz, ":")
	}
	if b, err := os.ReadFile("/etc/timezone"); err == nil {
		if s := strings.TrimSpace(string(b)); s != "" {
			return s
		}
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if i := strings.Index(target, "zoneinfo/"); i >= 0 {
			return target[i+len("zoneinfo/"):]
		}
	}
	return time.Local.String()
}

// interruptedNotice tells the model that the previous turn was stopped by the user. The opening
// sentence is the one the reference sends (clients and tests key on it); the rest is our own wording.
const interruptedNotice = "<turn_aborted>\nThe user interrupted the previous turn on purpose. Anything it was doing may be incomplete, and commands it started may still be running; do not assume its last actions succeeded.\n</turn_aborted>"

// marshal encodes v without HTML escaping, so text sent to the model keeps its bytes.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// swapPermissions records p as the permissions the model was told and reports whether it differs from
// what it was told before.
func (t *Thread) swapPermissions(p string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.permissions == p {
		return false
	}
	t.permissions = p
	return true
}

// swapFilesystem records fs as the <filesystem> part the model was told and reports whether it differs from
// what it was told before.
func (t *Thread) swapFilesystem(fs string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.filesystem == fs {
		return false
	}
	t.filesystem = fs
	return true
}

// collaborationModeText tells the model, in our own words, which collaboration mode applies from now
// on; a client's own instructions for the mode replace ours.
func collaborationModeText(s Settings) string {
	body := s.ModeInstructions
	if body == "" {
		switch s.Mode {
		case protocol.ModeKindPlan:
			body = "Mode: Plan. Work out a complete, decision-ready plan with the user before anything is changed. " +
				"Explore with read-only actions, ask the questions that matter with request_user_input, and do not edit files " +
				"or run commands that change the workspace. Present the finished plan inside a <proposed_plan> block."
		default:
			body = "Mode: Default. Any instructions of an earlier mode (such as Plan) no longer apply. Carry out the " +
				"user's request, making reasonable assumptions; ask only when progress truly depends on the answer."
		}
	}
	return "<collaboration_mode>" + body + "</collaboration_mode>"
}

// baseItemLocked is the developer message of the base instructions every request starts with: the same item
// (and id) for as long as the base instructions stay the same, as the reference's sits in its history
// (t.mu held).
func (t *Thread) baseItemLocked() json.RawMessage {
	if t.baseItem == nil || t.baseFor != t.base {
		t.baseItem, t.baseFor = messageItem("developer", t.base), t.base
	}
	return t.baseItem
}
