package thread

import (
	"encoding/json"
	"strings"

	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

// liveItem is an output item being streamed.
type liveItem struct {
	typ       string
	startedAt int64
	text      strings.Builder
	summary   []string
	content   []string
}

// streamState turns one model response's events into item notifications.
type streamState struct {
	turn  *Turn
	items map[string]*liveItem
	// recorded holds the output items already appended to the rollout (as they completed).
	recorded map[string]bool
	// run executes the current attempt's tool calls, each as soon as its output item completes.
	run *toolRun
	// opened is set once the current attempt's stream delivered anything (the response was accepted).
	opened bool
}

func (ss *streamState) on(ev model.Event) {
	tn := ss.turn
	t := tn.thread
	switch ev.(type) {
	case model.RetryEvent, model.ResetEvent:
	default:
		if !ss.opened {
			ss.opened = true
			tn.streaming.Store(true)
		}
	}
	switch e := ev.(type) {
	case model.ItemAddedEvent:
		if e.ID == "" {
			return
		}
		switch e.Type {
		case "message":
			li := &liveItem{typ: e.Type, startedAt: nowMs()}
			ss.items[e.ID] = li
			item := protocol.ThreadItemAgentMessage{ID: e.ID, Text: "", StartedAtMs: ptr(li.startedAt)}
			t.emit(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: protocol.ThreadItem{Value: item}, ThreadID: t.ID, TurnID: tn.ID, StartedAtMs: li.startedAt})
		case "web_search_call":
			li := &liveItem{typ: e.Type, startedAt: nowMs()}
			ss.items[e.ID] = li
			item := protocol.ThreadItemWebSearch{ID: e.ID, Action: &protocol.WebSearchAction{Value: protocol.WebSearchActionOther{}}, StartedAtMs: ptr(li.startedAt)}
			t.emit(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: protocol.ThreadItem{Value: item}, ThreadID: t.ID, TurnID: tn.ID, StartedAtMs: li.startedAt})
		case "reasoning":
			li := &liveItem{typ: e.Type, startedAt: nowMs()}
			ss.items[e.ID] = li
			item := protocol.ThreadItemReasoning{ID: e.ID, Summary: []string{}, Content: []string{}, StartedAtMs: ptr(li.startedAt)}
			t.emit(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: protocol.ThreadItem{Value: item}, ThreadID: t.ID, TurnID: tn.ID, StartedAtMs: li.startedAt})
		}
	case model.TextDeltaEvent:
		if li := ss.items[e.ItemID]; li != nil {
			li.text.WriteString(e.Delta)
		}
		t.emit(protocol.NotifyItemAgentMessageDelta, protocol.AgentMessageDeltaNotification{ThreadID: t.ID, TurnID: tn.ID, ItemID: e.ItemID, Delta: e.Delta})
	case model.ReasoningSummaryPartAddedEvent:
		if li := ss.items[e.ItemID]; li != nil {
			li.summary = padTo(li.summary, e.SummaryIndex)
		}
		t.emit(protocol.NotifyItemReasoningSummaryPartAdded, protocol.ReasoningSummaryPartAddedNotification{ThreadID: t.ID, TurnID: tn.ID, ItemID: e.ItemID, SummaryIndex: int64(e.SummaryIndex)})
	case model.ReasoningSummaryDeltaEvent:
		if li := ss.items[e.ItemID]; li != nil {
			li.summary = padTo(li.summary, e.SummaryIndex)
			li.summary[e.SummaryIndex] += e.Delta
		}
		t.emit(protocol.NotifyItemReasoningSummaryTextDelta, protocol.ReasoningSummaryTextDeltaNotification{ThreadID: t.ID, TurnID: tn.ID, ItemID: e.ItemID, Delta: e.Delta, SummaryIndex: int64(e.SummaryIndex)})
	case model.ReasoningTextDeltaEvent:
		if li := ss.items[e.ItemID]; li != nil {
			li.content = padTo(li.content, e.ContentIndex)
			li.content[e.ContentIndex] += e.Delta
		}
		t.emit(protocol.NotifyItemReasoningTextDelta, protocol.ReasoningTextDeltaNotification{ThreadID: t.ID, TurnID: tn.ID, ItemID: e.ItemID, Delta: e.Delta, ContentIndex: int64(e.ContentIndex)})
	case model.ItemDoneEvent:
		calls := toolCalls([]json.RawMessage{e.Item})
		ss.complete(e)
		if len(e.Item) > 0 {
			// Like the reference, a completed output item joins the history at once: it stays there
			// if the stream then fails, and a retried attempt sends it back to the model.
			t.mu.Lock()
			t.history = append(t.history, e.Item)
			t.mu.Unlock()
		}
		// The reference records each output item as it completes (after its item_completed, if any).
		if len(e.Item) > 0 && !ss.recorded[string(e.Item)] {
			ss.recorded[string(e.Item)] = true
			t.record(func(r *rollout.Recorder) error { return r.AppendResponseItem(e.Item) })
		}
		// Like the reference, a tool call starts as soon as its item completes, while the response
		// may still stream other items.
		for _, call := range calls {
			ss.run.start(call)
		}
	case model.RetryEvent:
		// Like the reference, the calls the failed attempt started finish first and their outputs join
		// the history, so the retried request carries them (a retried attempt that repeats a call runs
		// it again, as the reference does).
		ss.drainCalls()
		// An attempt that had opened its stream is followed by a token count, as the reference does.
		if ss.opened {
			tn.emitTokenCount()
		}
		ss.opened = false
		tn.streaming.Store(false)
		details := e.Err.Message
		t.emit(protocol.NotifyError, protocol.ErrorNotification{
			Error:    protocol.TurnError{Message: e.Message(), CodexErrorInfo: errorInfo(e.CodexErrorInfo()), AdditionalDetails: &details},
			ThreadID: t.ID, TurnID: tn.ID, WillRetry: true,
		})
	case model.ResetEvent:
		ss.items = map[string]*liveItem{}
	}
}

// complete finishes an agent message or reasoning item from the authoritative output item.
func (ss *streamState) complete(e model.ItemDoneEvent) {
	tn := ss.turn
	t := tn.thread
	switch e.Type {
	case "message":
		var msg struct {
			Role    string `json:"role"`
			Phase   string `json:"phase"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(e.Item, &msg) != nil || msg.Role != "assistant" {
			return
		}
		var text strings.Builder
		for _, c := range msg.Content {
			if c.Type == "output_text" {
				text.WriteString(c.Text)
			}
		}
		li := ss.items[e.ID]
		if li == nil {
			li = &liveItem{typ: "message", startedAt: nowMs()}
			item := protocol.ThreadItemAgentMessage{ID: e.ID, StartedAtMs: ptr(li.startedAt)}
			t.emit(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: protocol.ThreadItem{Value: item}, ThreadID: t.ID, TurnID: tn.ID, StartedAtMs: li.startedAt})
		}
		item := protocol.ThreadItemAgentMessage{ID: e.ID, Text: text.String(), StartedAtMs: ptr(li.startedAt), CompletedAtMs: ptr(nowMs())}
		if msg.Phase != "" {
			ph := protocol.MessagePhase(msg.Phase)
			item.Phase = &ph
		}
		ti := protocol.ThreadItem{Value: item}
		tn.addItem(ti)
		t.emit(protocol.NotifyItemCompleted, protocol.ItemCompletedNotification{Item: ti, ThreadID: t.ID, TurnID: tn.ID, CompletedAtMs: *item.CompletedAtMs})
	case "web_search_call":
		li := ss.items[e.ID]
		started := nowMs()
		if li != nil {
			started = li.startedAt
		}
		item := webSearchItem(e.ID, e.Item)
		item.StartedAtMs, item.CompletedAtMs = ptr(started), ptr(nowMs())
		ti := protocol.ThreadItem{Value: item}
		tn.addItem(ti)
		t.emit(protocol.NotifyItemCompleted, protocol.ItemCompletedNotification{Item: ti, ThreadID: t.ID, TurnID: tn.ID, CompletedAtMs: *item.CompletedAtMs})
	case "reasoning":
		var rs struct {
			Summary []struct {
				Text string `json:"text"`
			} `json:"summary"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		_ = json.Unmarshal(e.Item, &rs)
		summary := []string{}
		for _, s := range rs.Summary {
			summary = append(summary, s.Text)
		}
		content := []string{}
		for _, c := range rs.Content {
			content = append(content, c.Text)
		}
		li := ss.items[e.ID]
		started := nowMs()
		if li != nil {
			started = li.startedAt
			if len(summary) == 0 && len(li.summary) > 0 {
				summary = li.summary
			}
			if len(content) == 0 && len(li.content) > 0 {
				content = li.content
			}
		}
		item := protocol.ThreadItemReasoning{ID: e.ID, Summary: summary, Content: content, StartedAtMs: ptr(started), CompletedAtMs: ptr(nowMs())}
		ti := protocol.ThreadItem{Value: item}
		tn.addItem(ti)
		t.emit(protocol.NotifyItemCompleted, protocol.ItemCompletedNotification{Item: ti, ThreadID: t.ID, TurnID: tn.ID, CompletedAtMs: *item.CompletedAtMs})
	}
}

// drainCalls waits for the tool calls of a failed attempt, adds their outputs to the history and gives
// the next attempt a fresh tool run. An interruption meanwhile leaves "aborted" outputs.
func (ss *streamState) drainCalls() {
	tn := ss.turn
	if ss.run.count() == 0 {
		return
	}
	outputs, _ := ss.run.wait()
	tn.thread.appendHistory(outputs...)
	next := &toolRun{tn: tn, tc: ss.run.tc, sets: ss.run.sets}
	tn.mu.Lock()
	if tn.liveRun == ss.run {
		tn.liveRun = next
	}
	tn.mu.Unlock()
	ss.run = next
}

// padTo returns parts extended with empty strings so that index i exists.
func padTo(parts []string, i int) []string {
	for len(parts) <= i {
		parts = append(parts, "")
	}
	return parts
}

// webSearchItem converts a provider's web_search_call output item into a webSearch item: the query of a
// search action becomes the item's query; an action we cannot read is "other".
func webSearchItem(id string, raw json.RawMessage) protocol.ThreadItemWebSearch {
	var ws struct {
		Action struct {
			Type    string   `json:"type"`
			Query   *string  `json:"query"`
			Queries []string `json:"queries"`
			URL     *string  `json:"url"`
			Pattern *string  `json:"pattern"`
		} `json:"action"`
	}
	_ = json.Unmarshal(raw, &ws)
	item := protocol.ThreadItemWebSearch{ID: id, Action: &protocol.WebSearchAction{Value: protocol.WebSearchActionOther{}}}
	a := ws.Action
	switch a.Type {
	case "search":
		item.Action = &protocol.WebSearchAction{Value: protocol.WebSearchActionSearch{Query: a.Query, Queries: a.Queries}}
		if a.Query != nil {
			item.Query = *a.Query
		} else if len(a.Queries) > 0 {
			item.Query = a.Queries[0]
		}
	case "open_page":
		item.Action = &protocol.WebSearchAction{Value: protocol.WebSearchActionOpenPage{URL: a.URL}}
		item.Query = deref(a.URL)
	case "find_in_page":
		item.Action = &protocol.WebSearchAction{Value: protocol.WebSearchActionFindInPage{URL: a.URL, Pattern: a.Pattern}}
		item.Query = deref(a.Pattern)
	}
	return item
}
