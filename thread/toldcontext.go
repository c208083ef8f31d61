package thread

import (
	"bytes"
	"encoding/json"
	"strings"

	protocol "appserver/protocol/v2"
)

// toldState is what the model of a resumed or forked thread was last told, as far as the next turn compares it.
type toldState struct {
	permissions string // the permissions text of the recorded sandbox, approval policy and cwd
	filesystem  string // the <filesystem> part of the recorded sandbox and cwd
	model       string // the recorded model ("" when not recorded)
	cwdMoved    bool   // the thread's cwd now differs from the recorded one
}

// toldContext reads what the model of a resumed or forked thread was last told from the rollout's last
// turn_context. As the reference does, the next turn then repeats the permissions only when they changed,
// the environment context when the cwd moved or the sandbox's filesystem changed, and gives the model its
// instructions when the model changed. ok is false without a readable turn_context.
func toldContext(lastTurnContext json.RawMessage, s Settings) (told toldState, ok bool) {
	if len(lastTurnContext) == 0 {
		return toldState{}, false
	}
	var tc struct {
		Cwd            string          `json:"cwd"`
		Model          string          `json:"model"`
		ApprovalPolicy string          `json:"approval_policy"`
		SandboxPolicy  json.RawMessage `json:"sandbox_policy"`
	}
	if json.Unmarshal(lastTurnContext, &tc) != nil {
		return toldState{}, false
	}
	// The permissions are compared with the recorded cwd: like the reference's, ours name it as a writable root
	// under workspace-write, so a thread moved there is told both (under read-only, the environment alone).
	was := s
	if tc.Cwd != "" {
		was.Cwd = tc.Cwd
	}
	if sb := sandboxFromCore(tc.SandboxPolicy); sb != nil {
		was.Sandbox = *sb
	}
	switch {
	case tc.ApprovalPolicy == "" || tc.ApprovalPolicy == approvalName(s.ApprovalPolicy):
	case tc.ApprovalPolicy == "granular":
		was.ApprovalPolicy = protocol.AskForApproval{Granular: &protocol.AskForApprovalGranular{}}
	default:
		was.ApprovalPolicy = protocol.AskForApproval{Name: tc.ApprovalPolicy}
	}
	told.permissions = permissionsText(was)
	told.filesystem = filesystemText(was)
	told.model = tc.Model
	told.cwdMoved = tc.Cwd != "" && tc.Cwd != s.Cwd
	return told, true
}

// rereadToldLocked makes what the model was told the last instructions, permissions and environment context
// left in the history, after a compaction or a rollback dropped some: the next turn then tells it again what
// differs from the settings. t.mu must be held.
func (t *Thread) rereadToldLocked() {
	t.told, t.permissions = toldFromHistory(t.history, t.base)
	cwd, fs := toldEnvironment(t.history)
	t.filesystem = fs
	if cwd != t.settings.Cwd {
		t.cwdChanged = true
	}
}

// toldFreshLocked makes what the model was told the fresh initial context of s a compaction put in the history:
// the next turn tells it only what differs from s (the base instructions, when s calls for others, are told
// again: the messages that gave them are gone). t.mu must be held.
func (t *Thread) toldFreshLocked(s Settings) {
	t.told, _ = toldFromHistory(t.history, t.base)
	t.permissions, t.filesystem, t.toldModel = permissionsText(s), filesystemText(s), s.Model
	t.cwdChanged = false
}

// toldEnvironment returns the cwd and the <filesystem> part of the last environment contexts in history ("" for
// what none tells).
func toldEnvironment(history []json.RawMessage) (cwd, filesystem string) {
	for i := len(history) - 1; i >= 0 && (cwd == "" || filesystem == ""); i-- {
		if !bytes.Contains(history[i], []byte("<environment_context>")) {
			continue
		}
		var msg struct {
			Role    string `json:"role"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(history[i], &msg) != nil || msg.Role != "user" || len(msg.Content) == 0 ||
			!strings.HasPrefix(msg.Content[0].Text, "<environment_context>") {
			continue
		}
		text := msg.Content[0].Text
		if cwd == "" {
			if _, rest, ok := strings.Cut(text, "\n  <cwd>"); ok {
				cwd, _, _ = strings.Cut(rest, "</cwd>")
			}
		}
		if filesystem == "" {
			if start := strings.Index(text, "<filesystem>"); start >= 0 {
				if end := strings.Index(text[start:], "</filesystem>"); end >= 0 {
					filesystem = text[start : start+end+len("</filesystem>")]
				}
			}
		}
	}
	return cwd, filesystem
}
