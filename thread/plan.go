package thread

import (
	"encoding/json"

	"github.com/google/uuid"
)

// approvedPlanPrompt is the first user prompt of a thread prepared with an approved plan.
const approvedPlanPrompt = "Implement the plan."

// PrepareApprovedPlan puts an approved plan into the thread's context, as the output of the agent's
// proposed_plan tool (the reference's shape), and returns the prompt that starts its implementation.
func (t *Thread) PrepareApprovedPlan(markdown string) string {
	item := map[string]any{
		"type":      "function_call_output",
		"id":        "fco_" + uuid.Must(uuid.NewV7()).String(),
		"name":      "proposed_plan",
		"namespace": "agent",
		"output":    markdown,
	}
	raw, _ := json.Marshal(item)
	t.appendHistory(raw)
	return approvedPlanPrompt
}
