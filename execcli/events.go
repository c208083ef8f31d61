package execcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	protocol "appserver/protocol/v2"
)

// The `exec --json` event types (one JSON object per stdout line).
const (
	EventThreadStarted  = "thread.started"
	EventTurnStarted    = "turn.started"
	EventTurnCompleted  = "turn.completed"
	EventTurnFailed     = "turn.failed"
	EventItemStarted    = "item.started"
	EventItemUpdated    = "item.updated"
	EventItemCompleted  = "item.completed"
	EventError          = "error"
	EventMCPInitStarted = "mcp.server.init_started"
	EventMCPReady       = "mcp.server.ready"
	EventMCPFailed      = "mcp.server.failed"
	EventMCPCancelled   = "mcp.server.cancelled"
)

// ThreadStarted is the first event: the id to resume the thread with.
type ThreadStarted struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
}

// TurnStarted marks the start of the turn.
type TurnStarted struct {
	Type string `json:"type"`
}

// Usage is the thread's token usage so far, as turn.completed reports it.
type Usage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
}

// TurnCompleted ends a successful turn.
type TurnCompleted struct {
	Type  string `json:"type"`
	Usage Usage  `json:"usage"`
}

// ErrorBody is the error of turn.failed.
type ErrorBody struct {
	Message string `json:"message"`
}

// TurnFailed ends a failed turn.
type TurnFailed struct {
	Type  string    `json:"type"`
	Error ErrorBody `json:"error"`
}

// ErrorEvent is a top-level error (a model error, possibly retried).
type ErrorEvent struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// ItemEvent is item.started, item.updated or item.completed.
type ItemEvent struct {
	Type string `json:"type"`
	Item any    `json:"item"`
}

// MCPServerEvent is one startup status change of a configured MCP server (appserver's extension).
type MCPServerEvent struct {
	Type  string  `json:"type"`
	Name  string  `json:"name"`
	Error *string `json:"error,omitempty"`
}

// Items, each with the exec-local id ("item_<n>") and type first.
type (
	// TextItem is agent_message or reasoning.
	TextItem struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Text string `json:"text"`
	}
	// ErrorItem is a non-fatal error or warning.
	ErrorItem struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	// CommandItem is a command_execution.
	CommandItem struct {
		ID               string `json:"id"`
		Type             string `json:"type"`
		Command          string `json:"command"`
		AggregatedOutput string `json:"aggregated_output"`
		ExitCode         *int32 `json:"exit_code"`
		Status           string `json:"status"`
	}
	// FileChange is one file of a file_change item.
	FileChange struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	}
	// FileChangeItem is a file_change.
	FileChangeItem struct {
		ID      string       `json:"id"`
		Type    string       `json:"type"`
		Changes []FileChange `json:"changes"`
		Status  string       `json:"status"`
	}
	// MCPResult is a finished MCP call's result.
	MCPResult struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structured_content"`
	}
	// MCPToolCallItem is an mcp_tool_call.
	MCPToolCallItem struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		Server    string          `json:"server"`
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
		Result    *MCPResult      `json:"result"`
		Error     *ErrorBody      `json:"error"`
		Status    string          `json:"status"`
	}
	// TodoEntry is one step of a todo_list.
	TodoEntry struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	}
	// TodoListItem is the turn's plan.
	TodoListItem struct {
		ID    string      `json:"id"`
		Type  string      `json:"type"`
		Items []TodoEntry `json:"items"`
	}
	// WebSearchItem is a web_search. The reference writes the search's own id as a second "id" member
	// after the exec id; RawID reproduces that duplicate key.
	WebSearchItem struct {
		ID     string
		RawID  string
		Query  string
		Action json.RawMessage
	}
)

// MarshalJSON writes {"id","type","id","query","action"} like the reference (the duplicate "id" is
// the search's own id; JSON parsers keep the last one).
func (w WebSearchItem) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	str := func(s string) []byte { v, _ := json.Marshal(s); return v }
	b.WriteString(`{"id":`)
	b.Write(str(w.ID))
	b.WriteString(`,"type":"web_search","id":`)
	b.Write(str(w.RawID))
	b.WriteString(`,"query":`)
	b.Write(str(w.Query))
	b.WriteString(`,"action":`)
	b.Write(w.Action)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// mapper turns the thread engine's notifications into exec events. It is the only place that knows
// how one becomes the other; the JSONL and human printers both consume its decisions.
type mapper struct {
	next      int
	ids       map[string]string // engine item id → exec item id, for started-but-unfinished items
	todo      *TodoListItem
	usage     *protocol.ThreadTokenUsage
	lastError string // the last top-level error, for a failed turn without its own
	// turnAnnounced: turn.started was already printed (a review's, with review/start's response);
	// the engine's turn/started is not shown again.
	turnAnnounced bool
	final         *string
}

func newMapper() *mapper { return &mapper{ids: map[string]string{}} }

func (m *mapper) nextID() string {
	id := fmt.Sprintf("item_%d", m.next)
	m.next++
	return id
}

func (m *mapper) startedID(raw string) string {
	if id, ok := m.ids[raw]; ok {
		return id
	}
	id := m.nextID()
	m.ids[raw] = id
	return id
}

func (m *mapper) completedID(raw string) string {
	if id, ok := m.ids[raw]; ok {
		delete(m.ids, raw)
		return id
	}
	return m.nextID()
}

// outcome is how a turn ended, decided by the mapper from turn/completed.
type outcome int

const (
	running outcome = iota
	completed
	failed
	interrupted
)

func withDetails(msg string, details *string) string {
	if details != nil && *details != "" {
		return msg + " (" + *details + ")"
	}
	return msg
}

func (m *mapper) errorItem(msg string) ItemEvent {
	return ItemEvent{Type: EventItemCompleted, Item: ErrorItem{ID: m.nextID(), Type: "error", Message: msg}}
}

// notification maps one notification to events; end is not running once the turn has ended.
func (m *mapper) notification(method string, params json.RawMessage) (events []any, end outcome) {
	switch method {
	case protocol.NotifyConfigWarning:
		var n protocol.ConfigWarningNotification
		if json.Unmarshal(params, &n) == nil {
			events = append(events, m.errorItem(withDetails(n.Summary, n.Details)))
		}
	case protocol.NotifyDeprecationNotice:
		var n protocol.DeprecationNoticeNotification
		if json.Unmarshal(params, &n) == nil {
			events = append(events, m.errorItem(withDetails(n.Summary, n.Details)))
		}
	case protocol.NotifyWarning:
		var n protocol.WarningNotification
		if json.Unmarshal(params, &n) == nil {
			events = append(events, m.errorItem(n.Message))
		}
	case protocol.NotifyError:
		var n protocol.ErrorNotification
		if json.Unmarshal(params, &n) == nil {
			msg := withDetails(n.Error.Message, n.Error.AdditionalDetails)
			m.lastError = msg
			events = append(events, ErrorEvent{Type: EventError, Message: msg})
		}
	case protocol.NotifyModelRerouted:
		var n protocol.ModelReroutedNotification
		if json.Unmarshal(params, &n) == nil {
			events = append(events, m.errorItem(fmt.Sprintf("model rerouted: %s -> %s (%s)", n.FromModel, n.ToModel, pascal(string(n.Reason)))))
		}
	case protocol.NotifyMcpServerStartupStatusUpdated:
		var n protocol.McpServerStatusUpdatedNotification
		if json.Unmarshal(params, &n) == nil {
			if ev, ok := mcpEvent(n); ok {
				events = append(events, ev)
			}
		}
	case protocol.NotifyTurnStarted:
		if !m.turnAnnounced {
			events = append(events, TurnStarted{Type: EventTurnStarted})
		}
	case protocol.NotifyItemStarted:
		var n protocol.ItemStartedNotification
		if json.Unmarshal(params, &n) != nil {
			break
		}
		switch n.Item.Value.(type) {
		case protocol.ThreadItemAgentMessage, protocol.ThreadItemReasoning:
			break
		default:
			raw := itemID(n.Item)
			_, again := m.ids[raw]
			if item := mapItem(n.Item, func() string { return m.startedID(raw) }); item != nil {
				typ := EventItemStarted
				if _, isPatch := n.Item.Value.(protocol.ThreadItemFileChange); isPatch && again {
					typ = EventItemUpdated
				}
				events = append(events, ItemEvent{Type: typ, Item: item})
			}
		}
	case protocol.NotifyItemCompleted:
		var n protocol.ItemCompletedNotification
		if json.Unmarshal(params, &n) != nil {
			break
		}
		if item := m.completedItem(n.Item); item != nil {
			if t, ok := item.(TextItem); ok && t.Type == "agent_message" {
				m.final = &t.Text
			}
			events = append(events, ItemEvent{Type: EventItemCompleted, Item: item})
		}
	case protocol.NotifyItemFileChangePatchUpdated:
		var n protocol.FileChangePatchUpdatedNotification
		if json.Unmarshal(params, &n) == nil {
			item := protocol.ThreadItem{Value: protocol.ThreadItemFileChange{ID: n.ItemID, Changes: n.Changes, Status: protocol.PatchApplyStatusInProgress}}
			events = append(events, ItemEvent{Type: EventItemUpdated, Item: mapItem(item, func() string { return m.startedID(n.ItemID) })})
		}
	case protocol.NotifyThreadTokenUsageUpdated:
		var n protocol.ThreadTokenUsageUpdatedNotification
		if json.Unmarshal(params, &n) == nil {
			m.usage = &n.TokenUsage
		}
	case protocol.NotifyTurnPlanUpdated:
		var n protocol.TurnPlanUpdatedNotification
		if json.Unmarshal(params, &n) != nil {
			break
		}
		entries := make([]TodoEntry, 0, len(n.Plan))
		for _, s := range n.Plan {
			entries = append(entries, TodoEntry{Text: s.Step, Completed: s.Status == protocol.TurnPlanStepStatusCompleted})
		}
		if m.todo == nil {
			m.todo = &TodoListItem{ID: m.nextID(), Type: "todo_list", Items: entries}
			events = append(events, ItemEvent{Type: EventItemStarted, Item: *m.todo})
		} else {
			m.todo.Items = entries
			events = append(events, ItemEvent{Type: EventItemUpdated, Item: *m.todo})
		}
	case protocol.NotifyTurnCompleted:
		var n protocol.TurnCompletedNotification
		if json.Unmarshal(params, &n) != nil {
			break
		}
		if m.todo != nil {
			events = append(events, ItemEvent{Type: EventItemCompleted, Item: *m.todo})
			m.todo = nil
		}
		for _, it := range n.Turn.Items {
			if _, open := m.ids[itemID(it)]; open {
				if item := m.completedItem(it); item != nil {
					events = append(events, ItemEvent{Type: EventItemCompleted, Item: item})
				}
			}
		}
		switch n.Turn.Status {
		case protocol.TurnStatusCompleted:
			if msg, ok := finalFromItems(n.Turn.Items); ok {
				m.final = &msg
			}
			events = append(events, TurnCompleted{Type: EventTurnCompleted, Usage: m.totalUsage()})
			return events, completed
		case protocol.TurnStatusFailed:
			m.final = nil
			msg := m.lastError
			if n.Turn.Error != nil {
				msg = withDetails(n.Turn.Error.Message, n.Turn.Error.AdditionalDetails)
			}
			if msg == "" {
				msg = "turn failed"
			}
			events = append(events, TurnFailed{Type: EventTurnFailed, Error: ErrorBody{Message: msg}})
			return events, failed
		case protocol.TurnStatusInterrupted:
			m.final = nil
			return events, interrupted
		}
	}
	return events, running
}

func (m *mapper) completedItem(it protocol.ThreadItem) any {
	switch v := it.Value.(type) {
	case protocol.ThreadItemAgentMessage:
		return mapItem(it, m.nextID)
	case protocol.ThreadItemReasoning:
		if strings.TrimSpace(strings.Join(v.Summary, "\n")) == "" {
			return nil
		}
		return mapItem(it, m.nextID)
	}
	raw := itemID(it)
	return mapItem(it, func() string { return m.completedID(raw) })
}

func (m *mapper) totalUsage() Usage {
	if m.usage == nil {
		return Usage{}
	}
	t := m.usage.Total
	u := Usage{InputTokens: t.InputTokens, CachedInputTokens: t.CachedInputTokens, OutputTokens: t.OutputTokens, ReasoningOutputTokens: t.ReasoningOutputTokens}
	if t.CacheWriteInputTokens != nil {
		u.CacheWriteInputTokens = *t.CacheWriteInputTokens
	}
	return u
}

// totalTokens is the thread's total token count (the human output's "tokens used").
func (m *mapper) totalTokens() int64 {
	if m.usage == nil {
		return 0
	}
	return m.usage.Total.TotalTokens
}

// finalFromItems is the turn's last agent message, or else its last plan.
func finalFromItems(items []protocol.ThreadItem) (string, bool) {
	for i := len(items) - 1; i >= 0; i-- {
		if v, ok := items[i].Value.(protocol.ThreadItemAgentMessage); ok {
			return v.Text, true
		}
	}
	for i := len(items) - 1; i >= 0; i-- {
		if v, ok := items[i].Value.(protocol.ThreadItemPlan); ok {
			return v.Text, true
		}
	}
	return "", false
}

func mcpEvent(n protocol.McpServerStatusUpdatedNotification) (MCPServerEvent, bool) {
	ev := MCPServerEvent{Name: n.Name}
	switch n.Status {
	case protocol.McpServerStartupStateStarting:
		ev.Type = EventMCPInitStarted
		return ev, true
	case protocol.McpServerStartupStateReady:
		ev.Type = EventMCPReady
		return ev, true
	case protocol.McpServerStartupStateFailed:
		ev.Type = EventMCPFailed
	case protocol.McpServerStartupStateCancelled:
		ev.Type = EventMCPCancelled
	default:
		return ev, false
	}
	if n.Error != nil && *n.Error != "" {
		ev.Error = n.Error
	}
	return ev, true
}

// itemID is the engine's id of an item.
func itemID(it protocol.ThreadItem) string {
	b, _ := json.Marshal(it)
	var v struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &v)
	return v.ID
}

// mapItem converts an engine item to its exec form (nil for kinds exec does not show); id is called
// only for items that are shown.
func mapItem(it protocol.ThreadItem, id func() string) any {
	switch v := it.Value.(type) {
	case protocol.ThreadItemAgentMessage:
		return TextItem{ID: id(), Type: "agent_message", Text: v.Text}
	case protocol.ThreadItemReasoning:
		text := strings.Join(v.Summary, "\n")
		if strings.TrimSpace(text) == "" {
			return nil
		}
		return TextItem{ID: id(), Type: "reasoning", Text: text}
	case protocol.ThreadItemCommandExecution:
		out := ""
		if v.AggregatedOutput != nil {
			out = *v.AggregatedOutput
		}
		return CommandItem{ID: id(), Type: "command_execution", Command: v.Command, AggregatedOutput: out, ExitCode: v.ExitCode, Status: snake(string(v.Status))}
	case protocol.ThreadItemFileChange:
		changes := make([]FileChange, 0, len(v.Changes))
		for _, c := range v.Changes {
			changes = append(changes, FileChange{Path: c.Path, Kind: patchKind(c.Kind)})
		}
		status := snake(string(v.Status))
		if v.Status == protocol.PatchApplyStatusDeclined {
			status = "failed"
		}
		return FileChangeItem{ID: id(), Type: "file_change", Changes: changes, Status: status}
	case protocol.ThreadItemMcpToolCall:
		item := MCPToolCallItem{ID: id(), Type: "mcp_tool_call", Server: v.Server, Tool: v.Tool, Arguments: v.Arguments, Status: snake(string(v.Status))}
		if len(item.Arguments) == 0 {
			item.Arguments = json.RawMessage("null")
		}
		if v.Result != nil {
			r := &MCPResult{Content: v.Result.Content, StructuredContent: v.Result.StructuredContent}
			if r.Content == nil {
				r.Content = []json.RawMessage{}
			}
			if len(r.StructuredContent) == 0 {
				r.StructuredContent = json.RawMessage("null")
			}
			item.Result = r
		}
		if v.Error != nil {
			item.Error = &ErrorBody{Message: v.Error.Message}
		}
		return item
	case protocol.ThreadItemWebSearch:
		return WebSearchItem{ID: id(), RawID: v.ID, Query: v.Query, Action: webSearchAction(v.Action)}
	}
	return nil
}

// webSearchAction is the reference's exec form of a search action (snake_case tags); an action it
// cannot express is "other".
func webSearchAction(a *protocol.WebSearchAction) json.RawMessage {
	if a != nil {
		switch v := a.Value.(type) {
		case protocol.WebSearchActionSearch:
			b, _ := json.Marshal(struct {
				Type    string   `json:"type"`
				Query   *string  `json:"query"`
				Queries []string `json:"queries"`
			}{"search", v.Query, v.Queries})
			return b
		case protocol.WebSearchActionOpenPage:
			b, _ := json.Marshal(struct {
				Type string  `json:"type"`
				URL  *string `json:"url"`
			}{"open_page", v.URL})
			return b
		case protocol.WebSearchActionFindInPage:
			b, _ := json.Marshal(struct {
				Type    string  `json:"type"`
				URL     *string `json:"url"`
				Pattern *string `json:"pattern"`
			}{"find_in_page", v.URL, v.Pattern})
			return b
		}
	}
	return json.RawMessage(`{"type":"other"}`)
}

func patchKind(k protocol.PatchChangeKind) string {
	b, _ := json.Marshal(k)
	var v struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &v)
	return snake(v.Type)
}

// snake converts the engine's camelCase enum values (inProgress) to exec's snake_case (in_progress).
func snake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// pascal converts a camelCase or snake_case value to PascalCase (the reference prints reroute reasons
// with Rust's Debug format).
func pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}
