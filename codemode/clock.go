package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// The gpt-6.x extras of the reference's code mode: a `clock` namespace offered to the model (sleep), a
// nested clock__curr_time, and request_user_input_async next to request_user_input.
const (
	clockNS       = "clock"
	sleepTool     = "sleep"
	currTimeTool  = "curr_time"
	asyncInput    = "request_user_input_async"
	maxSleepMs    = 43200000
	sleepRangeMsg = "duration_ms must be between 1 and 43200000"
)

// clockNested is the nested half of the clock namespace: clock__curr_time.
type clockNested struct{}

var currTimeSpec = sync.OnceValue(func() json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "namespace", "name": clockNS, "description": "Reading the time.", "tools": []any{
		map[string]any{"type": "function", "name": currTimeTool, "strict": false, "description": "The current time, in UTC.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}},
	}})
	return b
})

func (clockNested) Specs() []json.RawMessage { return []json.RawMessage{currTimeSpec()} }

func (clockNested) Call(_ context.Context, _ *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Namespace != clockNS || call.Name != currTimeTool {
		return nil, false
	}
	b, _ := json.Marshal(map[string]string{"current_time": time.Now().UTC().Format("2006-01-02 15:04:05") + " UTC"})
	return thread.FunctionOutput(call.CallID, string(b)), true
}

// clockNamespace is the clock namespace of the additional_tools item: sleep.
var clockNamespace = sync.OnceValue(func() namespace {
	sleep := function(sleepTool, "Waits for the given time (ended early by new input for the turn or its interruption) and reports how long it waited.",
		[]prop{{"duration_ms", simple("number", "Milliseconds to wait, 1 to 43200000.")}}, []string{"duration_ms"})
	return namespace{Type: "namespace", Name: clockNS, Description: "Time tools.", Tools: []json.RawMessage{sleep}}
})

// sleep runs clock.sleep: a sleep item for the client, the wait (bounded by the turn) and the wall time.
func sleep(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) json.RawMessage {
	var args struct {
		DurationMs float64 `json:"duration_ms"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return thread.FunctionOutput(call.CallID, "failed to parse function arguments: "+err.Error())
	}
	if args.DurationMs < 1 || args.DurationMs > maxSleepMs {
		return thread.FunctionOutput(call.CallID, sleepRangeMsg)
	}
	start := time.Now()
	started := start.UnixMilli()
	item := protocol.ThreadItemSleep{ID: call.CallID, DurationMs: uint64(args.DurationMs), StartedAtMs: &started}
	// Watch for input before the item is announced: a client may steer as soon as it sees the item.
	arrived := tc.InputArrived()
	tc.ItemStarted(protocol.ThreadItem{Value: item})
	timer := time.NewTimer(time.Duration(args.DurationMs * float64(time.Millisecond)))
	defer timer.Stop()
	end := "Sleep completed."
	select {
	case <-timer.C:
	case <-arrived:
		end = "Sleep interrupted by new input."
	case <-ctx.Done():
	}
	done := time.Now().UnixMilli()
	item.CompletedAtMs = &done
	tc.ItemCompleted(protocol.ThreadItem{Value: item})
	return thread.FunctionOutput(call.CallID, fmt.Sprintf("Wall time: %.4f seconds\n%s", time.Since(start).Seconds(), end))
}

// asyncInputSpec is request_user_input_async (its parameters are the reference's).
var asyncInputSpec = sync.OnceValue(func() json.RawMessage {
	question, _ := json.Marshal(struct {
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
		AddProps   bool            `json:"additionalProperties"`
	}{"object", json.RawMessage(`{"options":{"type":"array","description":` + mustString("Suggested answers, the recommended first (preselected); omit for a free-text question.") +
		`,"items":{"type":"string"},"minItems":1},"title":{"type":"string","description":` + mustString("The whole question, with the context needed to answer it.") + `}}`),
		[]string{"title"}, false})
	questions := json.RawMessage(`{"type":"array","description":` + mustString("The questions, in the order shown.") + `,"items":` + string(question) + `,"minItems":1}`)
	return function(asyncInput, "Puts questions to the user without stopping: the call returns at once, the turn goes on, and an answer comes later as a new user message. Ask only for what you are missing (information, a preference, a decision); the user may always answer in free text.",
		[]prop{{"questions", questions}}, []string{"questions"})
})

func mustString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// askAsync runs request_user_input_async: the questions become an agentMessage delivered "async" (its
// text lists them), and the model is told they were accepted.
func askAsync(tc *thread.ToolContext, call thread.ToolCall) json.RawMessage {
	var args struct {
		Questions []protocol.AsyncUserInputQuestion `json:"questions"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return thread.FunctionOutput(call.CallID, "failed to parse function arguments: "+err.Error())
	}
	if len(args.Questions) == 0 {
		return thread.FunctionOutput(call.CallID, "questions must not be empty")
	}
	var text []string
	for i := range args.Questions {
		q := &args.Questions[i]
		if q.Options == nil {
			q.Options = []string{}
		}
		text = append(text, q.Title)
		for _, o := range q.Options {
			text = append(text, "- "+o)
		}
	}
	now := time.Now().UnixMilli()
	delivery, phase := protocol.AgentMessageDeliveryAsync, protocol.MessagePhaseFinalAnswer
	item := protocol.ThreadItemAgentMessage{ID: call.CallID, Text: strings.Join(text, "\n"), Delivery: &delivery, Phase: &phase,
		Questions: args.Questions, StartedAtMs: &now}
	tc.ItemStarted(protocol.ThreadItem{Value: item})
	item.CompletedAtMs = &now
	tc.ItemCompleted(protocol.ThreadItem{Value: item})
	return thread.FunctionOutput(call.CallID, `{"accepted":true}`)
}
