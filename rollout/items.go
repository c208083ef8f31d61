package rollout

import (
	"encoding/json"
	"net/url"
	"sort"
	"strings"

	"appserver/review/findings"
)

// convertCoreItem turns an item_completed item (the reference's core TurnItem, PascalCase type) into the protocol
// ThreadItem shape thread/read returns. Items already in the protocol shape (camelCase type) pass through.
func convertCoreItem(raw json.RawMessage) map[string]any {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	typ, _ := m["type"].(string)
	id, _ := m["id"].(string)
	switch typ {
	case "UserMessage":
		content, _ := m["content"].([]any)
		if content == nil {
			content = []any{}
		}
		return map[string]any{"type": "userMessage", "id": id, "clientId": m["client_id"], "content": content}
	case "AgentMessage":
		var parts []string
		if cs, ok := m["content"].([]any); ok {
			for _, c := range cs {
				if cm, ok := c.(map[string]any); ok {
					if s, ok := cm["text"].(string); ok {
						parts = append(parts, s)
					}
				}
			}
		}
		return map[string]any{"type": "agentMessage", "moderation": nil, "id": id, "text": strings.Join(parts, ""),
			"phase": m["phase"], "memoryCitation": m["memory_citation"], "delivery": nil, "questions": nil}
	case "Reasoning":
		return map[string]any{"type": "reasoning", "id": id, "summary": orEmpty(m["summary_text"]),
			"content": orEmpty(m["raw_content"])}
	case "CommandExecution":
		var ci CommandExecutionItem
		_ = json.Unmarshal(raw, &ci)
		return commandItem(id, ci.ProcessID, ci.Command, ci.Cwd, ci.ParsedCmd, ci.Source, ci.Status,
			ci.AggregatedOutput, ci.ExitCode, ci.Duration)
	case "McpToolCall":
		var d *Duration
		if dm, ok := m["duration"].(map[string]any); ok {
			d = &Duration{Secs: toInt(dm["secs"]), Nanos: toInt(dm["nanos"])}
		}
		ro, _ := m["readOnlyHint"].(bool)
		status, _ := m["status"].(string)
		var result any
		if r, ok := m["result"].(map[string]any); ok {
			result = mcpResult(r)
		}
		return map[string]any{"type": "mcpToolCall", "id": id, "server": m["server"], "tool": m["tool"],
			"status": snakeToCamel(status), "arguments": m["arguments"], "appContext": nil, "mcpAppUi": nil,
			"pluginId": nil, "readOnlyHint": ro, "result": result, "error": m["error"], "durationMs": durationMs(d)}
	case "FileChange":
		status, _ := m["status"].(string)
		ch, _ := json.Marshal(m["changes"])
		return map[string]any{"type": "fileChange", "id": id, "changes": convertChanges(ch),
			"status": snakeToCamel(status)}
	case "WebSearch":
		return map[string]any{"type": "webSearch", "id": id, "query": m["query"], "action": camelizeKeysOnly(m["action"])}
	case "ContextCompaction":
		return map[string]any{"type": "contextCompaction", "id": id}
	case "EnteredReviewMode":
		hint, _ := m["user_facing_hint"].(string)
		return map[string]any{"type": "enteredReviewMode", "id": id, "review": hint}
	case "ExitedReviewMode":
		var it struct {
			Output *findings.Output `json:"review_output"`
		}
		_ = json.Unmarshal(raw, &it)
		out := findings.Output{}
		if it.Output != nil {
			out = *it.Output
		}
		return map[string]any{"type": "exitedReviewMode", "id": id, "review": findings.Render(out)}
	case "Plan":
		return map[string]any{"type": "plan", "id": id, "text": m["text"]}
	case "CollabAgentToolCall":
		return collabItem(id, m)
	case "":
		return nil
	}
	out := map[string]any{}
	for k, v := range m {
		out[snakeToCamel(k)] = v
	}
	if typ != "" && typ[0] >= 'A' && typ[0] <= 'Z' {
		out["type"] = strings.ToLower(typ[:1]) + typ[1:]
	}
	return out
}

func orEmpty(v any) any {
	if v == nil {
		return []any{}
	}
	return v
}

func toInt(v any) int64 {
	if f, ok := v.(float64); ok {
		return int64(f)
	}
	return 0
}

func durationMs(d *Duration) any {
	if d == nil {
		return nil
	}
	return d.Millis()
}

// mcpResult maps a recorded CallToolResult to the protocol's {content, structuredContent, _meta}.
func mcpResult(r map[string]any) map[string]any {
	if r == nil {
		return nil
	}
	content := r["content"]
	if content == nil {
		content = []any{}
	}
	return map[string]any{"content": content, "structuredContent": r["structuredContent"], "_meta": r["_meta"]}
}

// commandItem builds a protocol commandExecution item.
func commandItem(id string, processID *string, command []string, cwd string, parsed []ParsedCommand, source,
	status string, output *string, exitCode *int, d *Duration) map[string]any {
	if strings.HasPrefix(cwd, "file://") {
		if u, err := url.Parse(cwd); err == nil {
			cwd = u.Path
		}
	}
	actions := make([]any, 0, len(parsed))
	for _, p := range parsed {
		a := map[string]any{"command": p.Cmd}
		switch p.Type {
		case "read":
			a["type"] = "read"
			a["name"] = p.Name
			if p.Path != nil {
				a["path"] = *p.Path
			}
		case "list_files":
			a["type"] = "listFiles"
			a["path"] = p.Path
		case "search":
			a["type"] = "search"
			a["query"] = p.Query
			a["path"] = p.Path
		default:
			a["type"] = "unknown"
		}
		actions = append(actions, a)
	}
	if source == "" {
		source = "agent"
	}
	var pid any
	if processID != nil {
		pid = *processID
	}
	var out any
	if output != nil {
		out = *output
	}
	var code any
	if exitCode != nil {
		code = *exitCode
	}
	return map[string]any{"type": "commandExecution", "id": id, "pluginId": nil, "scriptPath": nil,
		"command": ShellJoin(command), "cwd": cwd, "processId": pid, "source": snakeToCamel(source),
		"status": snakeToCamel(status), "commandActions": actions, "aggregatedOutput": out, "exitCode": code,
		"durationMs": durationMs(d), "startedAtMs": nil, "completedAtMs": nil}
}

// convertChanges accepts the protocol's array of {path, kind, diff} or a legacy map path → {add|delete|update}.
func convertChanges(raw json.RawMessage) []any {
	var arr []any
	if json.Unmarshal(raw, &arr) == nil && arr != nil {
		return arr
	}
	var m map[string]map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return []any{}
	}
	paths := make([]string, 0, len(m))
	for p := range m {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	out := make([]any, 0, len(m))
	for _, p := range paths {
		ch := m[p]
		kind := map[string]any{}
		diff := ""
		t, _ := ch["type"].(string)
		if t == "" && len(ch) == 1 {
			for k, v := range ch {
				t = k
				if inner, ok := v.(map[string]any); ok {
					ch = inner
				}
			}
		}
		switch t {
		case "add":
			kind["type"] = "add"
			diff, _ = ch["content"].(string)
		case "delete":
			kind["type"] = "delete"
			diff, _ = ch["content"].(string)
		default:
			kind["type"] = "update"
			kind["move_path"] = ch["move_path"]
			diff, _ = ch["unified_diff"].(string)
		}
		out = append(out, map[string]any{"path": p, "kind": kind, "diff": diff})
	}
	return out
}

// ShellJoin renders argv the way the protocol shows commands ("/bin/bash -lc 'echo hello'").
func ShellJoin(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = shellQuote(a)
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("@%+=:,./-_", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// collabTools are the protocol names of the reference's core multi-agent tool names.
var collabTools = map[string]string{"spawn_agent": "spawnAgent", "send_input": "sendInput", "wait": "wait",
	"close_agent": "closeAgent", "resume_agent": "resumeAgent"}

// collabItem is the protocol form of a recorded CollabAgentToolCall: its agent states, recorded as the model
// reads them ("pending_init", {"completed": message}), become {status, message}.
func collabItem(id string, m map[string]any) map[string]any {
	tool, _ := m["tool"].(string)
	if t, ok := collabTools[tool]; ok {
		tool = t
	}
	states := map[string]any{}
	if sm, ok := m["agents_states"].(map[string]any); ok {
		for aid, st := range sm {
			switch v := st.(type) {
			case string:
				states[aid] = map[string]any{"status": snakeToCamel(v), "message": nil}
			case map[string]any:
				for k, msg := range v {
					states[aid] = map[string]any{"status": snakeToCamel(k), "message": msg}
				}
			}
		}
	}
	receivers := m["receiver_thread_ids"]
	if receivers == nil {
		receivers = []any{}
	}
	return map[string]any{"type": "collabAgentToolCall", "id": id, "tool": tool, "status": m["status"],
		"senderThreadId": m["sender_thread_id"], "receiverThreadIds": receivers, "prompt": m["prompt"],
		"model": m["model"], "reasoningEffort": m["reasoning_effort"], "agentsStates": states}
}
