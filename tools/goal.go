package tools

import (
	"context"
	"encoding/json"
	"sync"

	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// goalSet offers get_goal, create_goal and update_goal over the thread's goal (thread/goal/*).
type goalSet struct{}

var goalSpecs = sync.OnceValue(func() []json.RawMessage {
	return []json.RawMessage{
		functionSpec("get_goal", "Read this thread's goal: objective, status, token budget and usage so far.", map[string]any{}, nil),
		functionSpec("create_goal",
			"Start a goal for this thread, only when the user or the instructions ask for one. Give a token_budget only when one was asked for. Fails while an unfinished goal exists.",
			map[string]any{
				"objective":    str("The concrete objective to pursue."),
				"token_budget": map[string]any{"type": "integer", "description": "A positive token budget, only when one was requested."},
			}, []string{"objective"}),
		functionSpec("update_goal",
			"Change the status of this thread's goal: complete once the objective is met, blocked after the same obstacle stopped progress repeatedly, paused only when the user asks.",
			map[string]any{"status": map[string]any{"type": "string", "description": "The new status.", "enum": []string{"complete", "blocked", "paused"}}},
			[]string{"status"}),
	}
})

func (goalSet) Specs() []json.RawMessage { return goalSpecs() }

// goalResult is the JSON the goal tools answer with (the reference's field names and order).
type goalResult struct {
	Goal                   *goalJSON `json:"goal"`
	RemainingTokens        *int64    `json:"remainingTokens"`
	CompletionBudgetReport *string   `json:"completionBudgetReport"`
}

// goalJSON is a goal with its fields in the order the reference tells the model.
type goalJSON struct {
	ThreadID        string                    `json:"threadId"`
	Objective       string                    `json:"objective"`
	Status          protocol.ThreadGoalStatus `json:"status"`
	TokenBudget     *int64                    `json:"tokenBudget"`
	TokensUsed      int64                     `json:"tokensUsed"`
	TimeUsedSeconds int64                     `json:"timeUsedSeconds"`
	CreatedAt       int64                     `json:"createdAt"`
	UpdatedAt       int64                     `json:"updatedAt"`
}

func goalOutput(callID string, g *protocol.ThreadGoal, report *string) json.RawMessage {
	r := goalResult{CompletionBudgetReport: report}
	if g != nil {
		r.Goal = &goalJSON{ThreadID: g.ThreadID, Objective: g.Objective, Status: g.Status, TokenBudget: g.TokenBudget,
			TokensUsed: g.TokensUsed, TimeUsedSeconds: g.TimeUsedSeconds, CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt}
	}
	if g != nil && g.TokenBudget != nil {
		rem := max(*g.TokenBudget-g.TokensUsed, 0)
		r.RemainingTokens = &rem
	}
	b, _ := json.Marshal(r)
	return thread.FunctionOutput(callID, string(b))
}

func (goalSet) Call(_ context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Namespace != "" {
		return nil, false
	}
	turnID := tc.TurnID()
	switch call.Name {
	case "get_goal":
		g, ok := tc.Thread.Goal()
		if !ok {
			return goalOutput(call.CallID, nil, nil), true
		}
		return goalOutput(call.CallID, &g, nil), true
	case "create_goal":
		var args struct {
			Objective   string `json:"objective"`
			TokenBudget *int64 `json:"token_budget"`
		}
		if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil || args.Objective == "" {
			return thread.FunctionOutput(call.CallID, "create_goal needs an `objective`"), true
		}
		if args.TokenBudget != nil && *args.TokenBudget <= 0 {
			return thread.FunctionOutput(call.CallID, "token_budget must be positive"), true
		}
		g, err := tc.Thread.SetGoal(thread.GoalChange{Objective: &args.Objective, TokenBudget: args.TokenBudget, Replace: true}, &turnID)
		if err != nil {
			return thread.FunctionOutput(call.CallID, err.Error()), true
		}
		return goalOutput(call.CallID, &g, nil), true
	case "update_goal":
		var args struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal([]byte(call.Arguments), &args)
		var st protocol.ThreadGoalStatus
		switch args.Status {
		case "complete":
			st = protocol.ThreadGoalStatusComplete
		case "blocked":
			st = protocol.ThreadGoalStatusBlocked
		case "paused":
			st = protocol.ThreadGoalStatusPaused
		default:
			return thread.FunctionOutput(call.CallID, "status must be one of complete, blocked, paused"), true
		}
		if _, ok := tc.Thread.Goal(); !ok {
			return thread.FunctionOutput(call.CallID, thread.ErrNoGoal.Error()), true
		}
		g, err := tc.Thread.SetGoal(thread.GoalChange{Status: &st}, &turnID)
		if err != nil {
			return thread.FunctionOutput(call.CallID, err.Error()), true
		}
		var report *string
		if st == protocol.ThreadGoalStatusComplete {
			report = ptr("Goal complete. Tell the user the final token usage from goal.tokensUsed (and goal.tokenBudget when set).")
		}
		return goalOutput(call.CallID, &g, report), true
	}
	return nil, false
}
