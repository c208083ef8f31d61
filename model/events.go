package model

import (
	"encoding/json"
	"fmt"
	"time"
)

// Event is one thing Stream reports while a response streams: one of the *Event types below.
type Event interface{ isEvent() }

// CreatedEvent is response.created.
type CreatedEvent struct {
	ResponseID string
}

// ItemAddedEvent is response.output_item.added: a new output item (partial) starts.
type ItemAddedEvent struct {
	OutputIndex int
	Type        string          // item type: "message", "reasoning", "function_call", ...
	ID          string          // item id ("msg_…", "rs_…", "fc_…"); may be empty
	Item        json.RawMessage // the item as sent
}

// ItemDoneEvent is response.output_item.done: the authoritative, complete item. Item holds
// the exact bytes the server sent, unknown fields (e.g. encrypted_content) included, so it
// can be replayed verbatim as input of the next request.
type ItemDoneEvent struct {
	OutputIndex int
	Type        string
	ID          string
	Item        json.RawMessage
}

// TextDeltaEvent is response.output_text.delta.
type TextDeltaEvent struct {
	ItemID       string
	OutputIndex  int
	ContentIndex int
	Delta        string
}

// ReasoningSummaryPartAddedEvent is response.reasoning_summary_part.added.
type ReasoningSummaryPartAddedEvent struct {
	ItemID       string
	OutputIndex  int
	SummaryIndex int
}

// ReasoningSummaryDeltaEvent is response.reasoning_summary_text.delta.
type ReasoningSummaryDeltaEvent struct {
	ItemID       string
	OutputIndex  int
	SummaryIndex int
	Delta        string
}

// ReasoningTextDeltaEvent is response.reasoning_text.delta (raw reasoning content).
type ReasoningTextDeltaEvent struct {
	ItemID       string
	OutputIndex  int
	ContentIndex int
	Delta        string
}

// RetryEvent announces that the stream failed and is retried after Delay. The turn engine turns
// it into `error {error:{message: Message(), codexErrorInfo: CodexErrorInfo(), additionalDetails:
// Err.Message}, willRetry: true}`.
type RetryEvent struct {
	Attempt int           // 1-based retry number
	Max     int           // stream_max_retries; 0 = unlimited wait for the network
	Err     *Error        // why the previous attempt failed
	Delay   time.Duration // sleep before the retry
}

// Message returns the reference's notice text: "Reconnecting... n/N", or
// "Reconnecting... waiting for network" for connection failures.
func (r RetryEvent) Message() string {
	if r.Max == 0 {
		return "Reconnecting... waiting for network"
	}
	return fmt.Sprintf("Reconnecting... %d/%d", r.Attempt, r.Max)
}

// CodexErrorInfo returns {"responseStreamDisconnected":{"httpStatusCode":<status or null>}}.
func (r RetryEvent) CodexErrorInfo() json.RawMessage { return r.Err.retryNotice() }

// ResetEvent follows a RetryEvent when the failed attempt had already delivered events: the
// consumer should discard partial output of that attempt (the next attempt starts from scratch).
type ResetEvent struct {
	Attempt int // the retry number that follows
}

func (CreatedEvent) isEvent()                   {}
func (ItemAddedEvent) isEvent()                 {}
func (ItemDoneEvent) isEvent()                  {}
func (TextDeltaEvent) isEvent()                 {}
func (ReasoningSummaryPartAddedEvent) isEvent() {}
func (ReasoningSummaryDeltaEvent) isEvent()     {}
func (ReasoningTextDeltaEvent) isEvent()        {}
func (RetryEvent) isEvent()                     {}
func (ResetEvent) isEvent()                     {}

// Usage is the token usage of one response (response.completed's usage).
type Usage struct {
	InputTokens           int64
	CachedInputTokens     int64
	OutputTokens          int64
	ReasoningOutputTokens int64
	TotalTokens           int64
}

// Completed is the result of a successful Stream.
type Completed struct {
	ResponseID string
	Usage      *Usage            // nil when the server sent none
	Items      []json.RawMessage // every output_item.done item of the successful attempt, in order
}
