package review

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// Run is the body of an inline review turn: enteredReviewMode, the prompt as a userMessage item, one
// reviewer request (Instructions, the environment, the prompt and the diff; the thread's own history
// is not sent),
// then exitedReviewMode and an agentMessage with the rendered review. The thread's history gains the
// hand-off message and the rendered review, for the next turn to act on.
func Run(req Request) thread.TaskBody {
	return func(ctx context.Context, tc *thread.ToolContext) []json.RawMessage {
		now := func() *int64 { v := time.Now().UnixMilli(); return &v }
		id := func() string { return uuid.Must(uuid.NewV7()).String() }

		entered := protocol.ThreadItemEnteredReviewMode{ID: id(), Review: req.Hint, StartedAtMs: now()}
		tc.ItemStarted(protocol.ThreadItem{Value: entered})
		entered.CompletedAtMs = entered.StartedAtMs
		tc.ItemCompleted(protocol.ThreadItem{Value: entered})

		user := protocol.ThreadItemUserMessage{ID: id(), Content: []protocol.UserInput{{Value: protocol.UserInputText{Text: req.Prompt}}}, StartedAtMs: now()}
		tc.ItemStarted(protocol.ThreadItem{Value: user})
		user.CompletedAtMs = user.StartedAtMs
		tc.ItemCompleted(protocol.ThreadItem{Value: user})

		input := []json.RawMessage{thread.MessageItem("user", req.Prompt)}
		if req.Diff != "" {
			input = append(input, thread.MessageItem("user", DiffMessage(req.Diff)))
		}
		text, err := tc.Sample(ctx, Instructions, input)
		if err != nil {
			if ctx.Err() == nil {
				tc.Log.Warn("review request failed", "error", err)
			}
			text = ""
		}
		if ctx.Err() != nil {
			return nil
		}
		rendered := Render(Parse(text))
		if text == "" {
			rendered = Render(Output{})
		}

		exited := protocol.ThreadItemExitedReviewMode{ID: id(), Review: rendered, StartedAtMs: now()}
		tc.ItemStarted(protocol.ThreadItem{Value: exited})
		exited.CompletedAtMs = exited.StartedAtMs
		tc.ItemCompleted(protocol.ThreadItem{Value: exited})

		msgID := "msg_" + id()
		msg := protocol.ThreadItemAgentMessage{ID: msgID, Text: rendered, StartedAtMs: now()}
		tc.ItemStarted(protocol.ThreadItem{Value: msg})
		msg.CompletedAtMs = msg.StartedAtMs
		tc.ItemCompleted(protocol.ThreadItem{Value: msg})

		assistant, _ := json.Marshal(map[string]any{
			"type": "message", "id": msgID, "role": "assistant",
			"content": []map[string]string{{"type": "output_text", "text": rendered}},
		})
		return []json.RawMessage{thread.MessageItem("user", Handoff(rendered)), assistant}
	}
}
