package rollout

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Record types (the "type" member of a rollout line).
const (
	TypeSessionMeta      = "session_meta"
	TypeResponseItem     = "response_item"
	TypeEventMsg         = "event_msg"
	TypeTurnContext      = "turn_context"
	TypeCompacted        = "compacted"
	TypeWorldState       = "world_state"
	TypeTokenUsageRecord = "token_usage_record"
)

// HistoryModePaginated is the session_meta history_mode the reference 0.169 writes; in that mode the UI history is
// rebuilt from item_completed events. Files without it ("legacy") are rebuilt from user_message/agent_message events.
const HistoryModePaginated = "paginated"

// Paginated reports whether a session_meta history_mode is paginated. Any other value, none included, is
// legacy: the reference 0.169 reads a rollout without history_mode as legacy.
func Paginated(historyMode string) bool { return historyMode == HistoryModePaginated }

// line is the envelope of one rollout line.
type line struct {
	Timestamp string          `json:"timestamp"`
	Ordinal   *int64          `json:"ordinal,omitempty"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// SessionMeta is the payload of the first line of a rollout. Field names are the reference's.
type SessionMeta struct {
	ID           string `json:"id"`
	SessionID    string `json:"session_id,omitempty"`
	ForkedFromID string `json:"forked_from_id,omitempty"`
	// ForkedFromOrdinalExclusive repeats HistoryBase.EndOrdinalExclusive, as the reference writes it for a fork.
	ForkedFromOrdinalExclusive *int64            `json:"forked_from_ordinal_exclusive,omitempty"`
	ParentThreadID             string            `json:"parent_thread_id,omitempty"` // a sub-agent's parent thread
	Timestamp                  string            `json:"timestamp"`
	Cwd                        string            `json:"cwd"`
	RuntimeWorkspaceRoots      []string          `json:"runtime_workspace_roots,omitempty"`
	Originator                 string            `json:"originator"`
	CLIVersion                 string            `json:"cli_version"`
	Source                     json.RawMessage   `json:"source,omitempty"`
	ThreadSource               string            `json:"thread_source,omitempty"` // "subagent" for a sub-agent
	AgentNickname              string            `json:"agent_nickname,omitempty"`
	AgentRole                  string            `json:"agent_role,omitempty"`
	ModelProvider              string            `json:"model_provider,omitempty"`
	BaseInstructions           *BaseInstructions `json:"base_instructions,omitempty"`
	DynamicTools               json.RawMessage   `json:"dynamic_tools,omitempty"`
	HistoryMode                string            `json:"history_mode,omitempty"`
	HistoryBase                *HistoryBase      `json:"history_base,omitempty"`
	Git                        json.RawMessage   `json:"git,omitempty"`
	ContextWindow              json.RawMessage   `json:"context_window,omitempty"`
}

// BaseInstructions is the system prompt recorded in session_meta.
type BaseInstructions struct {
	Text       string          `json:"text"`
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// HistoryBase is how the reference records a fork: the new file starts with the parent's records
// [0, EndOrdinalExclusive), i.e. the parent's first EndByteOffset bytes, which are not copied.
type HistoryBase struct {
	ThreadID            string `json:"thread_id"`
	EndOrdinalExclusive int64  `json:"end_ordinal_exclusive"`
	EndByteOffset       int64  `json:"end_byte_offset"`
}

// StringSource returns the JSON form of a plain session source such as "vscode", "cli", "exec" or "mcp".
func StringSource(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// ValidSource reports whether a session_meta source is one the reference reads (its SessionSource): any
// name, {"custom": name}, or {"subagent": s} where s is "review", "compact", "memory_consolidation",
// {"other": name} or {"thread_spawn": {…}} with a parent_thread_id and a depth. An absent source is
// valid; anything else (null, a number, another object) makes the record no session metadata at all, so
// the rollout is left out of lists and cannot be read, as in the reference.
func ValidSource(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return true
	}
	if isJSONString(raw) {
		return true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || len(obj) != 1 {
		return false
	}
	if c, ok := obj["custom"]; ok {
		return isJSONString(c)
	}
	sub, ok := obj["subagent"]
	if !ok {
		return false
	}
	if isJSONString(sub) {
		var s string
		_ = json.Unmarshal(sub, &s)
		return s == "review" || s == "compact" || s == "memory_consolidation"
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(sub, &inner) != nil || len(inner) != 1 {
		return false
	}
	if o, ok := inner["other"]; ok {
		return isJSONString(o)
	}
	spawn, ok := inner["thread_spawn"]
	if !ok {
		return false
	}
	var ts struct {
		Parent json.RawMessage `json:"parent_thread_id"`
		Depth  *int32          `json:"depth"`
	}
	return json.Unmarshal(spawn, &ts) == nil && isJSONString(ts.Parent) && ts.Depth != nil
}

// isJSONString reports whether raw is a JSON string (not null).
func isJSONString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	var s string
	return len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil
}

// SourceKind maps a recorded session source to the protocol's ThreadSourceKind ("cli", "vscode", "exec",
// "appServer", "subAgent…", "unknown"), or to CustomSourceKind for a {"custom": …} source. As in the
// reference, only "mcp" is the app server's; any other unrecognised name is "unknown".
func SourceKind(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "cli", "vscode", "exec":
			return s
		case "mcp":
			return "appServer"
		}
		return "unknown"
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return "unknown"
	}
	var custom string
	if c, ok := obj["custom"]; ok && len(obj) == 1 && json.Unmarshal(c, &custom) == nil {
		return CustomSourceKind
	}
	sub, ok := obj["subagent"]
	if !ok {
		return "unknown"
	}
	var subName string
	if json.Unmarshal(sub, &subName) == nil {
		switch subName {
		case "review":
			return "subAgentReview"
		case "compact":
			return "subAgentCompact"
		}
		return "subAgentOther"
	}
	var subObj map[string]json.RawMessage
	if json.Unmarshal(sub, &subObj) == nil {
		if _, ok := subObj["thread_spawn"]; ok {
			return "subAgentThreadSpawn"
		}
		if _, ok := subObj["other"]; ok {
			return "subAgentOther"
		}
	}
	return "subAgent"
}

// CustomSourceKind is the indexed kind of a {"custom": …} session source. It is no protocol
// ThreadSourceKind, so no thread/list source filter selects it (the reference's default filter does not either).
const CustomSourceKind = "custom"

// subAgentKinds are the kinds the source filter "subAgent" selects: every sub-agent's, as in the reference.
var subAgentKinds = []string{"subAgent", "subAgentReview", "subAgentCompact", "subAgentThreadSpawn", "subAgentOther"}

// filterKinds is the recorded kinds a thread/list source filter selects: "subAgent" stands for every
// sub-agent kind, and "subAgentOther" also selects the rows indexed as "subAgent" before {"other": …}
// sources had their own kind.
func filterKinds(kinds []string) []string {
	out := kinds
	for _, k := range kinds {
		switch k {
		case "subAgent":
			out = append(out[:len(out):len(out)], subAgentKinds[1:]...)
		case "subAgentOther":
			out = append(out[:len(out):len(out)], "subAgent")
		}
	}
	return out
}

// SourceString returns the protocol's `source` string for a recorded source (the string itself, or the kind).
func SourceString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) == 0 {
		return ""
	}
	return SourceKind(raw)
}

// TokenUsage is one usage tally in the reference's snake_case shape.
type TokenUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
	TotalTokens           int64 `json:"total_tokens"`
}

// TokenUsageInfo is the info member of a token_count event.
type TokenUsageInfo struct {
	TotalTokenUsage            TokenUsage `json:"total_token_usage"`
	LastTokenUsage             TokenUsage `json:"last_token_usage"`
	LastUsageIncludesReasoning bool       `json:"last_usage_includes_reasoning"`
	ModelContextWindow         *int64     `json:"model_context_window"`
}

// TurnError is the error member of a failed task_complete; CodexErrorInfo is snake_case
// ("internal_server_error" or {"http_connection_failed":{"http_status_code":401}}).
type TurnError struct {
	Message        string `json:"message"`
	CodexErrorInfo any    `json:"codex_error_info,omitempty"`
}

// ThreadSettingsApplied is the event_msg that records a thread's settings when they are first set and whenever
// they change; a resume restores the last one's service tier and personality, as the reference does.
type ThreadSettingsApplied struct {
	ThreadID string         `json:"thread_id"`
	Settings ThreadSettings `json:"thread_settings"`
}

// ThreadSettings is the thread_settings member of thread_settings_applied, in the reference's shape.
type ThreadSettings struct {
	Model             string `json:"model"`
	ModelProviderID   string `json:"model_provider_id"`
	ServiceTier       string `json:"service_tier,omitempty"`
	ApprovalPolicy    string `json:"approval_policy"`
	ApprovalsReviewer string `json:"approvals_reviewer"`
	// RequestedApprovalsReviewer and PermissionProfile complete the record for the reference, which skips a
	// thread_settings_applied without a permission profile.
	RequestedApprovalsReviewer string   `json:"requested_approvals_reviewer,omitempty"`
	PermissionProfile          any      `json:"permission_profile,omitempty"`
	Cwd                        string   `json:"cwd"`
	RuntimeWorkspaceRoots      []string `json:"runtime_workspace_roots"`
	ReasoningEffort            string   `json:"reasoning_effort,omitempty"`
	ReasoningSummary           string   `json:"reasoning_summary,omitempty"`
	Personality                string   `json:"personality,omitempty"`
	CollaborationMode          any      `json:"collaboration_mode,omitempty"`
	DisabledPluginIDs          []string `json:"disabled_plugin_ids"`
}

// EventType returns "thread_settings_applied".
func (ThreadSettingsApplied) EventType() string { return "thread_settings_applied" }

// TaskStarted is the event_msg that opens a turn.
type TaskStarted struct {
	TurnID                string `json:"turn_id"`
	RootTurnID            string `json:"root_turn_id,omitempty"`
	StartedAt             int64  `json:"started_at,omitempty"`
	ModelContextWindow    *int64 `json:"model_context_window,omitempty"`
	CollaborationModeKind string `json:"collaboration_mode_kind,omitempty"`
	// TurnAttribution names a sub-agent turn's parent turn (the reference's reviewer turn).
	TurnAttribution *TurnAttribution `json:"turn_attribution,omitempty"`
}

// TurnAttribution is task_started's turn_attribution.
type TurnAttribution struct {
	TurnID              string  `json:"turn_id"`
	TurnTrigger         *string `json:"turn_trigger"`
	ParentTurnID        *string `json:"parent_turn_id"`
	InitiatingAgentPath *string `json:"initiating_agent_path"`
	RootTurnID          string  `json:"root_turn_id"`
}

// TaskComplete is the event_msg that closes a turn; a non-nil Error marks the turn failed.
type TaskComplete struct {
	TurnID             string     `json:"turn_id"`
	RootTurnID         string     `json:"root_turn_id,omitempty"`
	LastAgentMessage   *string    `json:"last_agent_message"`
	Error              *TurnError `json:"error,omitempty"`
	StartedAt          int64      `json:"started_at,omitempty"`
	CompletedAt        int64      `json:"completed_at,omitempty"`
	DurationMs         *int64     `json:"duration_ms,omitempty"`
	TimeToFirstTokenMs *int64     `json:"time_to_first_token_ms,omitempty"`
}

// TurnAborted is the event_msg that closes an interrupted turn (Reason "interrupted", "replaced", …).
type TurnAborted struct {
	TurnID      string `json:"turn_id,omitempty"`
	RootTurnID  string `json:"root_turn_id,omitempty"`
	Reason      string `json:"reason"`
	StartedAt   int64  `json:"started_at,omitempty"`
	CompletedAt int64  `json:"completed_at,omitempty"`
	DurationMs  *int64 `json:"duration_ms,omitempty"`
}

// TokenCount is the event_msg recorded after each model response.
type TokenCount struct {
	Info       *TokenUsageInfo `json:"info"`
	RateLimits json.RawMessage `json:"rate_limits,omitempty"`
}

// ItemCompleted is the event_msg carrying one finished item of a turn (0.169 "paginated" history); Item is one of
// the *Item types below (UserMessageItem, AgentMessageItem, ReasoningItem, CommandExecutionItem, McpToolCallItem,
// FileChangeItem) or any value marshalling to the reference's shape.
type ItemCompleted struct {
	ThreadID      string `json:"thread_id"`
	TurnID        string `json:"turn_id"`
	Item          any    `json:"item"`
	StartedAtMs   *int64 `json:"started_at_ms,omitempty"`
	CompletedAtMs *int64 `json:"completed_at_ms,omitempty"`
}

// UserMessage is the legacy (pre-paginated) event_msg for user input; 0.169 records an ItemCompleted instead.
type UserMessage struct {
	Message      string `json:"message"`
	Images       []any  `json:"images,omitempty"`
	LocalImages  []any  `json:"local_images,omitempty"`
	TextElements []any  `json:"text_elements,omitempty"`
}

// AgentMessage is the legacy event_msg for a final assistant message.
type AgentMessage struct {
	Message string `json:"message"`
	Phase   string `json:"phase,omitempty"`
}

// AgentReasoning is the legacy event_msg for a reasoning summary.
type AgentReasoning struct {
	Text string `json:"text"`
}

// ThreadNameUpdated is the event_msg some versions record on rename (0.169 writes session_index.jsonl instead).
type ThreadNameUpdated struct {
	ThreadID   string `json:"thread_id"`
	ThreadName string `json:"thread_name"`
}

// Duration is Rust's serialized std::time::Duration.
type Duration struct {
	Secs  int64 `json:"secs"`
	Nanos int64 `json:"nanos"`
}

// Millis returns the duration in whole milliseconds.
func (d Duration) Millis() int64 { return d.Secs*1000 + d.Nanos/1_000_000 }

// TextContent is one text element of a user message item: {"type":"text","text":…,"text_elements":[]}.
type TextContent struct {
	Type         string `json:"type"`
	Text         string `json:"text"`
	TextElements []any  `json:"text_elements"`
}

// NewTextContent returns a text user-input element.
func NewTextContent(text string) TextContent {
	return TextContent{Type: "text", Text: text, TextElements: []any{}}
}

// UserMessageItem is the item_completed item for user input (type "UserMessage").
type UserMessageItem struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// ClientID is the turn's clientUserMessageId, kept so a fork or resume of the rollout still reports it.
	ClientID string `json:"client_id,omitempty"`
	Content  []any  `json:"content"`
}

// AgentMessageContent is one part of an agent message ({"type":"Text","text":…}).
type AgentMessageContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// AgentMessageItem is the item_completed item for an assistant message (type "AgentMessage").
type AgentMessageItem struct {
	Type    string                `json:"type"`
	ID      string                `json:"id"`
	Content []AgentMessageContent `json:"content"`
	Phase   string                `json:"phase,omitempty"`
}

// ReasoningItem is the item_completed item for reasoning (type "Reasoning").
type ReasoningItem struct {
	Type        string   `json:"type"`
	ID          string   `json:"id"`
	SummaryText []string `json:"summary_text"`
	RawContent  []string `json:"raw_content"`
}

// ParsedCommand is one entry of parsed_cmd: Type is "read", "list_files", "search" or "unknown".
type ParsedCommand struct {
	Type  string  `json:"type"`
	Cmd   string  `json:"cmd"`
	Name  string  `json:"name,omitempty"`
	Path  *string `json:"path,omitempty"`
	Query *string `json:"query,omitempty"`
}

// CommandExecutionItem is the item_completed item for a shell command (type "CommandExecution"). Cwd is a file://
// URL in 0.169; Source and Status are snake_case ("unified_exec_startup", "completed", "failed", "declined").
type CommandExecutionItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	ProcessID        *string         `json:"process_id,omitempty"`
	Command          []string        `json:"command"`
	Cwd              string          `json:"cwd"`
	ParsedCmd        []ParsedCommand `json:"parsed_cmd"`
	Source           string          `json:"source"`
	Status           string          `json:"status"`
	AggregatedOutput *string         `json:"aggregated_output"`
	ExitCode         *int            `json:"exit_code"`
	Duration         *Duration       `json:"duration"`
}

// McpToolCallResult is the result of an MCP tool call as recorded.
type McpToolCallResult struct {
	Content           []any `json:"content"`
	StructuredContent any   `json:"structuredContent,omitempty"`
	IsError           bool  `json:"isError"`
	Meta              any   `json:"_meta,omitempty"`
}

// McpToolCallError is the error of a failed MCP tool call.
type McpToolCallError struct {
	Message string `json:"message"`
}

// McpToolCallItem is the item_completed item for an MCP tool call (type "McpToolCall").
type McpToolCallItem struct {
	Type         string             `json:"type"`
	ID           string             `json:"id"`
	Server       string             `json:"server"`
	Tool         string             `json:"tool"`
	Arguments    any                `json:"arguments"`
	ReadOnlyHint bool               `json:"readOnlyHint"`
	Status       string             `json:"status"`
	Result       *McpToolCallResult `json:"result,omitempty"`
	Error        *McpToolCallError  `json:"error,omitempty"`
	Duration     *Duration          `json:"duration,omitempty"`
}

// FileChange is one file of a FileChangeItem in the v2 shape ({path, kind:{type, move_path?}, diff}).
type FileChange struct {
	Path string         `json:"path"`
	Kind map[string]any `json:"kind"`
	Diff string         `json:"diff"`
}

// FileChangeItem is the item_completed item for an apply_patch (type "FileChange"). The reference's exact on-disk
// shape for this item was not observed (the mock model cannot drive apply_patch); the reader also accepts the
// v2 shape.
type FileChangeItem struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Changes []FileChange `json:"changes"`
	Status  string       `json:"status"`
}

// snakeToCamel converts "internal_server_error" to "internalServerError".
func snakeToCamel(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	parts := strings.Split(s, "_")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p == "" {
			continue
		}
		b.WriteString(strings.ToUpper(p[:1]))
		b.WriteString(p[1:])
	}
	return b.String()
}

// camelizeValue converts string values and object keys from snake_case to camelCase, recursively.
func camelizeValue(v any) any {
	switch x := v.(type) {
	case string:
		return snakeToCamel(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[snakeToCamel(k)] = camelizeKeysOnly(val)
		}
		return out
	}
	return v
}

// camelizeKeysOnly converts object keys (not values) below the top level of a codex_error_info.
func camelizeKeysOnly(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[snakeToCamel(k)] = camelizeKeysOnly(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = camelizeKeysOnly(val)
		}
		return out
	}
	return v
}

// TokenUsageRecord is the payload of a token_usage_record line the reference writes after each model response.
type TokenUsageRecord struct {
	ThreadID         string     `json:"thread_id"`
	TurnID           string     `json:"turn_id"`
	SessionID        string     `json:"session_id,omitempty"`
	RootTurnID       string     `json:"root_turn_id,omitempty"`
	ResponseID       string     `json:"response_id,omitempty"`
	Usage            TokenUsage `json:"usage"`
	TurnTokenUsage   TokenUsage `json:"turn_token_usage"`
	ThreadTokenUsage TokenUsage `json:"thread_token_usage"`
}

// Compacted is the payload of a compacted line: the summary and, when known, the history that replaces everything
// recorded before it.
type Compacted struct {
	Message            string            `json:"message"`
	ReplacementHistory []json.RawMessage `json:"replacement_history,omitempty"`
}

// GitInfo converts session_meta.git ({commit_hash, branch, repository_url}) to the protocol's
// {sha, branch, originUrl}; nil when absent.
func GitInfo(raw json.RawMessage) map[string]any {
	var g struct {
		CommitHash    *string `json:"commit_hash"`
		Branch        *string `json:"branch"`
		RepositoryURL *string `json:"repository_url"`
	}
	if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &g) != nil {
		return nil
	}
	return map[string]any{"sha": g.CommitHash, "branch": g.Branch, "originUrl": g.RepositoryURL}
}
