package review

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	protocol "appserver/protocol/v2"
	"appserver/review/findings"
	"appserver/thread"
)

// Options wire a review turn to the server.
type Options struct {
	// Tools picks the reviewer's tool sets from the thread's (nil: the reviewer gets no tools).
	Tools func([]thread.ToolSet) []thread.ToolSet
	// Announce runs around enteredReviewMode, before the turn is reported active (the reference warns
	// about unknown model metadata there).
	Announce func(tc *thread.ToolContext)
}

// Start runs an inline review as the task turn tn, as the reference does: enteredReviewMode, then the
// turn is reported started under the reviewer sub-agent's turn id (rootTurnId = tn), the prompt as a
// userMessage item, and the reviewer's conversation: its own history (Instructions, the environment,
// the prompt; not the thread's), the thread's tools as opts.Tools picks them, under the thread's
// sandbox with approvals never asked, request after request until it answers without a tool call. Its
// tool calls report their items on tn; its answer is announced started only. The answer, parsed, ends
// the turn as exitedReviewMode and an agentMessage, and joins the thread's history with the hand-off
// message for the next turn to act on.
func Start(tn *thread.Turn, req Request, opts Options) {
	subTurn := uuid.Must(uuid.NewV7()).String()
	tn.RunTaskWith(thread.TaskOptions{
		Prelude: func(tc *thread.ToolContext) {
			if opts.Announce != nil {
				opts.Announce(tc)
			}
			entered := protocol.ThreadItemEnteredReviewMode{ID: newID(), Review: req.Hint, StartedAtMs: nowMs()}
			tc.ItemStarted(protocol.ThreadItem{Value: entered})
			entered.CompletedAtMs = entered.StartedAtMs
			tc.ItemCompletedAs(protocol.ThreadItem{Value: entered}, enteredCore{Type: "EnteredReviewMode", ID: entered.ID, Target: req.Target, UserFacingHint: req.Hint})
			if opts.Announce != nil {
				opts.Announce(tc)
			}
		},
		AnnounceID:   subTurn,
		NoteRead:     true,
		NotSteerable: protocol.NonSteerableTurnKindReview,
	}, body(req, opts, subTurn))
}

func body(req Request, opts Options, subTurn string) thread.TaskBody {
	return func(ctx context.Context, tc *thread.ToolContext) []json.RawMessage {
		user := protocol.ThreadItemUserMessage{ID: newID(), Content: []protocol.UserInput{{Value: protocol.UserInputText{Text: req.Prompt, TextElements: []protocol.TextElement{}}}}, StartedAtMs: nowMs()}
		tc.ItemStarted(protocol.ThreadItem{Value: user})
		user.CompletedAtMs = user.StartedAtMs
		tc.ItemCompleted(protocol.ThreadItem{Value: user})

		s := tc.Settings
		s.ApprovalPolicy = protocol.AskForApproval{Name: protocol.AskForApprovalNever}
		text, err := tc.Converse(ctx, thread.ConverseOptions{
			Developer: Instructions,
			Input:     []json.RawMessage{thread.MessageItem("user", req.Prompt)},
			Tools:     opts.Tools,
			Settings:  &s,
			Subagent:  "review",
			TurnID:    subTurn,
		})
		tc.EndSubTurn()
		if ctx.Err() != nil {
			// interrupted: nothing more is shown; the exit (no output) and the cut-short message are
			// recorded, and the thread's history learns the review did not finish
			exited := protocol.ThreadItemExitedReviewMode{ID: newID(), Review: findings.Render(findings.Output{}), StartedAtMs: nowMs()}
			exited.CompletedAtMs = exited.StartedAtMs
			tc.ItemRecorded(protocol.ThreadItem{Value: exited}, exitedCore{Type: "ExitedReviewMode", ID: exited.ID})
			msgID := "msg_" + newID()
			msg := protocol.ThreadItemAgentMessage{ID: msgID, Text: CutShortMessage, StartedAtMs: nowMs()}
			msg.CompletedAtMs = msg.StartedAtMs
			tc.ItemRecorded(protocol.ThreadItem{Value: msg}, nil)
			return cutShort(msgID)
		}
		shown := ""
		if err != nil {
			tc.Log.Warn("review failed", "error", err)
			tc.Fail(err)
			text, shown = "", CutShortMessage
		}
		var output *findings.Output
		rendered := findings.Render(findings.Output{})
		if text != "" {
			out := findings.Parse(text)
			output, rendered = &out, findings.Render(out)
		}
		if shown == "" {
			shown = rendered
		}

		exited := protocol.ThreadItemExitedReviewMode{ID: newID(), Review: rendered, StartedAtMs: nowMs()}
		tc.ItemStarted(protocol.ThreadItem{Value: exited})
		exited.CompletedAtMs = exited.StartedAtMs
		tc.ItemCompletedAs(protocol.ThreadItem{Value: exited}, exitedCore{Type: "ExitedReviewMode", ID: exited.ID, ReviewOutput: output})

		msgID := "msg_" + newID()
		msg := protocol.ThreadItemAgentMessage{ID: msgID, Text: shown, StartedAtMs: nowMs()}
		tc.ItemStarted(protocol.ThreadItem{Value: msg})
		msg.CompletedAtMs = msg.StartedAtMs
		tc.ItemCompleted(protocol.ThreadItem{Value: msg})

		if err != nil {
			return []json.RawMessage{thread.MessageItem("user", HandoffCutShort()), assistantItem(msgID, shown)}
		}
		return []json.RawMessage{thread.MessageItem("user", Handoff(rendered)), assistantItem(msgID, rendered)}
	}
}

// CutShortMessage is what a review that did not finish (interrupted, or its model failed) tells the
// user and the thread, in the reference's words.
const CutShortMessage = "Review was interrupted. Please re-run /review and wait for it to complete."

// cutShort is the history an unfinished review leaves: the hand-off saying so and CutShortMessage.
func cutShort(msgID string) []json.RawMessage {
	return []json.RawMessage{thread.MessageItem("user", HandoffCutShort()), assistantItem(msgID, CutShortMessage)}
}

func assistantItem(id, text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"type": "message", "id": id, "role": "assistant",
		"content": []map[string]string{{"type": "output_text", "text": text}},
	})
	return b
}

// enteredCore and exitedCore are the review items as the reference records them in the rollout.
type enteredCore struct {
	Type           string                `json:"type"`
	ID             string                `json:"id"`
	Target         protocol.ReviewTarget `json:"target"`
	UserFacingHint string                `json:"user_facing_hint"`
}

type exitedCore struct {
	Type         string           `json:"type"`
	ID           string           `json:"id"`
	ReviewOutput *findings.Output `json:"review_output"`
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }
func nowMs() *int64 { v := time.Now().UnixMilli(); return &v }
