package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/config"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

func TestWithTurnsMatchesMarshal(t *testing.T) {
	str := func(s string) *string { return &s }
	n := func(v int64) *int64 { return &v }
	view := protocol.TurnItemsViewFull
	phase := protocol.MessagePhaseFinalAnswer
	turns := []protocol.Turn{
		{ID: "t1", Status: protocol.TurnStatusCompleted, ItemsView: &view, StartedAt: n(1), Items: []protocol.ThreadItem{
			{Value: protocol.ThreadItemUserMessage{ID: "u1", Content: []protocol.UserInput{{Value: protocol.UserInputText{
				Text: "<b>a & b</b> \u2028 \u2029 é \xff \"q\" \\", TextElements: []protocol.TextElement{}}}}}},
			{Value: protocol.ThreadItemAgentMessage{ID: "a1", Text: "<script>", Phase: &phase, StartedAtMs: n(5)}},
		}},
		{ID: "t2", Status: protocol.TurnStatusInterrupted, RootTurnID: str("t1")},
		{ID: "t3", Status: protocol.TurnStatusFailed, Error: &protocol.TurnError{Message: "boom <x>"}, Items: []protocol.ThreadItem{
			{Value: protocol.ThreadItemReasoning{ID: "r", Summary: []string{"s"}}},
		}},
	}
	info := protocol.Thread{ID: "01e00000-0000-7000-8000-000000000001", Preview: `"turns":[] <&>`, Name: str("x"),
		Status: protocol.ThreadStatus{Value: protocol.ThreadStatusIdle{}}, Cwd: "/w", Source: protocol.SessionSource{Name: "vscode"}}
	for _, tc := range []struct {
		name  string
		turns []protocol.Turn
	}{{"none", nil}, {"one", turns[:1]}, {"all", turns}} {
		t.Run(tc.name, func(t *testing.T) {
			st := thread.Settings{Model: "m", ModelProvider: "p", Cwd: "/w", ApprovalPolicy: protocol.AskForApproval{Name: "never"},
				ApprovalsReviewer: protocol.ApprovalsReviewerUser, Sandbox: thread.SandboxFromMode("read-only", config.SandboxWorkspaceWrite{})}
			withTurnsIn := info
			withTurnsIn.Turns = tc.turns
			full := resumeResponse(withTurnsIn, st)
			want, err := jsonrpc.Marshal(full)
			require.NoError(t, err)
			resp := resumeResponse(info, st)
			got, err := withTurns(resp, &resp.Thread, tc.turns)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}
}
