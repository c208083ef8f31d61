package thread

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/google/uuid"

	protocol "appserver/protocol/v2"
)

// ToolCall is one call the model made: a function_call (Arguments) or a custom_tool_call (Input).
type ToolCall struct {
	// Type is "function_call", "custom_tool_call" or "tool_search_call" (Name "tool_search", Arguments the
	// JSON text of its arguments object).
	Type      string
	CallID    string
	Name      string
	Namespace string
	Arguments string
	Input     string
	// Item is the raw output item as the model sent it.
	Item json.RawMessage
}

// ToolSet is a group of tools offered to the model on a turn (unified exec, apply_patch, an MCP server…).
type ToolSet interface {
	// Specs are the entries this set adds to the Responses `tools` array.
	Specs() []json.RawMessage
	// Call runs the call if it belongs to this set and returns the output item for the next request
	// (function_call_output / custom_tool_call_output); ok is false when the call is not this set's. A
	// JSON array instead is the output item followed by extra items for the history (code mode's notify).
	Call(ctx context.Context, tc *ToolContext, call ToolCall) (output json.RawMessage, ok bool)
}

// InputTools is implemented by a ToolSet whose tools reach the model as an input item rather than in the
// request's `tools` array (the reference's code mode: an `additional_tools` item leads the input, the
// request has no `tools` key and parallel_tool_calls is false).
type InputTools interface {
	// ToolsItem is the input item placed before everything else in the request's input (nil: none).
	ToolsItem() json.RawMessage
}

// DeferredTools is implemented by the ToolSet that tells the model, in `<tools>` notes, which namespaces hold
// tools it finds through tool_search rather than in its tools (the reference's deferred tools).
type DeferredTools interface {
	// DeferredNamespaces names those namespaces (none on a model that does not search for tools).
	DeferredNamespaces() []string
	// ToolsNotice is the note naming the namespaces names: the whole list in a context's opening, or, added,
	// those that appeared since the model's last request.
	ToolsNotice(names []string, added bool) string
}

// RoundEnder is implemented by a ToolSet that wants to hear when one model response of a turn is done:
// its tool calls finished and its token usage announced, before the next request or the turn's end.
type RoundEnder interface {
	RoundEnded(tc *ToolContext)
}

// ToolProvider builds the tool sets of one turn from the thread and its settings.
type ToolProvider func(t *Thread, s Settings) []ToolSet

// ToolContext is what a tool handler may use: the thread's notification order, approvals and clock.
type ToolContext struct {
	Thread   *Thread
	Turn     *Turn
	Settings Settings
	Log      *slog.Logger
}

// ThreadID and TurnID identify the call's place.
func (tc *ToolContext) ThreadID() string { return tc.Thread.ID }

// TurnID is the id of the turn that made the call.
func (tc *ToolContext) TurnID() string { return tc.Turn.ID }

// Emit sends a notification in the thread's order.
func (tc *ToolContext) Emit(method string, params any) { tc.Thread.emit(method, params) }

// ItemStarted announces an item of this turn.
func (tc *ToolContext) ItemStarted(item protocol.ThreadItem) {
	tc.Thread.emit(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: item, ThreadID: tc.Thread.ID, TurnID: tc.Turn.ID, StartedAtMs: nowMs()})
}

// ItemCompleted finishes an item of this turn and keeps it for the turn's history.
func (tc *ToolContext) ItemCompleted(item protocol.ThreadItem) {
	if um, ok := item.Value.(protocol.ThreadItemUserMessage); ok {
		tc.Thread.notePreview(userText(um.Content)) // a task's own user message (review) names the thread too
	}
	tc.Turn.addItem(item)
	tc.Thread.emit(protocol.NotifyItemCompleted, protocol.ItemCompletedNotification{Item: item, ThreadID: tc.Thread.ID, TurnID: tc.Turn.ID, CompletedAtMs: nowMs()})
}

// ItemCompletedAs is ItemCompleted recording core as the item's rollout form (the reference's core
// item, for a variant whose protocol form lacks what the reference records).
func (tc *ToolContext) ItemCompletedAs(item protocol.ThreadItem, core any) {
	tc.Turn.addItemAs(item, core)
	tc.Thread.emit(protocol.NotifyItemCompleted, protocol.ItemCompletedNotification{Item: item, ThreadID: tc.Thread.ID, TurnID: tc.Turn.ID, CompletedAtMs: nowMs()})
}

// Request sends a server→client request (approval or elicitation) with the waitingOnApproval flag
// raised while it is pending; the wait is bounded by ctx and by the configured approval timeout.
func (tc *ToolContext) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return tc.request(ctx, method, params, true)
}

// RequestUnannounced is Request without the serverRequest/resolved that follows the answer (the
// reference sends none for item/tool/call).
func (tc *ToolContext) RequestUnannounced(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return tc.request(ctx, method, params, false)
}

func (tc *ToolContext) request(ctx context.Context, method string, params any, announce bool) (json.RawMessage, error) {
	ctx, cancel := tc.Thread.ApprovalContext(ctx, tc.Thread.mgr.Config().ApprovalTimeout)
	defer cancel()
	// A request cleared by the turn ending is reported resolved after turn/completed, as the reference does.
	return tc.Thread.requestThen(ctx, method, params, announce, func(err error) {
		if err != nil && tc.Turn.ctx.Err() != nil {
			select {
			case <-tc.Turn.done:
			case <-time.After(5 * time.Second):
			}
		}
	})
}

// SetWaitingOnApproval raises or lowers the thread's waitingOnApproval flag (announced at once).
func (tc *ToolContext) SetWaitingOnApproval(on bool) {
	tc.Thread.setFlag(protocol.ThreadActiveFlagWaitingOnApproval, on)
}

// InputArrived is closed when new input (turn/steer) next reaches the call's turn.
func (tc *ToolContext) InputArrived() <-chan struct{} { return tc.Turn.inputArrived() }

// Interrupt ends the turn as interrupted (an approval answered "cancel").
func (tc *ToolContext) Interrupt() { tc.Turn.cancelByTool() }

// functionOutputItem is a function_call_output in the reference's field order; like the reference it
// carries its own id ("fco_" + a UUIDv7).
type functionOutputItem struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	CallID string `json:"call_id"`
	Output any    `json:"output"`
}

// FunctionOutput builds a function_call_output item with a text output.
func FunctionOutput(callID, output string) json.RawMessage {
	return marshal(functionOutputItem{Type: "function_call_output", ID: functionOutputID(), CallID: callID, Output: output})
}

// FunctionOutputRaw builds a function_call_output item whose output is already JSON (e.g. a content list).
func FunctionOutputRaw(callID string, output json.RawMessage) json.RawMessage {
	return marshal(functionOutputItem{Type: "function_call_output", ID: functionOutputID(), CallID: callID, Output: output})
}

func functionOutputID() string { return "fco_" + uuid.Must(uuid.NewV7()).String() }

// CustomOutputRaw builds a custom_tool_call_output item whose output is already JSON (a content list).
func CustomOutputRaw(callID string, output json.RawMessage) json.RawMessage {
	return marshal(functionOutputItem{Type: "custom_tool_call_output", ID: "ctco_" + uuid.Must(uuid.NewV7()).String(), CallID: callID, Output: output})
}

// CustomOutput builds a custom_tool_call_output item; like the reference it carries its own id ("ctco_" +
// a UUIDv7).
func CustomOutput(callID, output string) json.RawMessage {
	return marshal(functionOutputItem{Type: "custom_tool_call_output", ID: "ctco_" + uuid.Must(uuid.NewV7()).String(), CallID: callID, Output: output})
}

// outputItems splits a Call result into its items (see ToolSet.Call).
func outputItems(out json.RawMessage) []json.RawMessage {
	if len(out) > 0 && out[0] == '[' {
		var items []json.RawMessage
		if json.Unmarshal(out, &items) == nil {
			return items
		}
	}
	return []json.RawMessage{out}
}

type resultSinkKey struct{}

// ResultSink receives a tool call's structured result, or failure: the text of a call that failed.
type ResultSink func(result json.RawMessage, failure string)

// WithResultSink returns a context under which a tool that has a structured result (an MCP tool's
// CallToolResult) or a failure hands it to sink besides answering the model: code mode's scripts get the
// result, or an exception with the failure.
func WithResultSink(ctx context.Context, sink ResultSink) context.Context {
	return context.WithValue(ctx, resultSinkKey{}, sink)
}

// SendResult hands a call's structured result to the context's sink, if any.
func SendResult(ctx context.Context, result json.RawMessage) {
	if sink, ok := ctx.Value(resultSinkKey{}).(ResultSink); ok {
		sink(result, "")
	}
}

// SendFailure tells the context's sink, if any, that the call failed.
func SendFailure(ctx context.Context, failure string) {
	if sink, ok := ctx.Value(resultSinkKey{}).(ResultSink); ok {
		sink(nil, failure)
	}
}
