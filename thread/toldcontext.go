package thread

import (
	"encoding/json"

	protocol "appserver/protocol/v2"
)

// toldContext returns what the model of a resumed or forked thread was last told, read from the rollout's last
// turn_context: the permissions text of the sandbox and approval policy it recorded (with today's cwd), and
// whether the thread's cwd now differs from the recorded one. As the reference does, the next turn then repeats the permissions
// only when they changed and the environment context only when the cwd moved. ok is false without a
// readable turn_context.
func toldContext(lastTurnContext json.RawMessage, s Settings) (permissions string, cwdMoved, ok bool) {
	if len(lastTurnContext) == 0 {
		return "", false, false
	}
	var tc struct {
		Cwd            string          `json:"cwd"`
		ApprovalPolicy string          `json:"approval_policy"`
		SandboxPolicy  json.RawMessage `json:"sandbox_policy"`
	}
	if json.Unmarshal(lastTurnContext, &tc) != nil {
		return "", false, false
	}
	// The cwd is not part of the comparison: a moved thread gets the environment context, as the reference
	// sends, not the permissions again (ours name the cwd as a writable root).
	told := s
	if sb := sandboxFromCore(tc.SandboxPolicy); sb != nil {
		told.Sandbox = *sb
	}
	switch {
	case tc.ApprovalPolicy == "" || tc.ApprovalPolicy == approvalName(s.ApprovalPolicy):
	case tc.ApprovalPolicy == "granular":
		told.ApprovalPolicy = protocol.AskForApproval{Granular: &protocol.AskForApprovalGranular{}}
	default:
		told.ApprovalPolicy = protocol.AskForApproval{Name: tc.ApprovalPolicy}
	}
	return permissionsText(told), tc.Cwd != "" && tc.Cwd != s.Cwd, true
}
