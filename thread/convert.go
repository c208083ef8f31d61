package thread

import (
	"encoding/json"
	"math"
	"unicode/utf8"

	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

// ConvertTurns turns the reader's JSON-ready turns into protocol turns; undecodable items are dropped.
//
// The result is what a JSON round trip (marshal the reader's maps, unmarshal into the protocol types) gives. The
// common shapes the reader builds are converted field by field; anything else (an unexpected key or value type, a
// turn error, non-text user input…) takes the round trip itself, so the two paths cannot disagree.
func ConvertTurns(in []rollout.Turn) []protocol.Turn {
	out := make([]protocol.Turn, 0, len(in))
	for _, rt := range in {
		pt, ok := quickTurn(rt)
		if !ok {
			if pt, ok = roundTripTurn(rt); !ok {
				continue
			}
		}
		pt.Items = make([]protocol.ThreadItem, 0, len(rt.Items))
		for _, it := range rt.Items {
			ti, ok := quickItem(it)
			if !ok {
				ti, ok = roundTripItem(it)
			}
			if ok {
				pt.Items = append(pt.Items, ti)
			}
		}
		if pt.ItemsView == nil {
			pt.ItemsView = ptr(protocol.TurnItemsViewFull)
		}
		out = append(out, pt)
	}
	return out
}

// roundTripTurn converts a turn's fields (not its items) through JSON.
func roundTripTurn(rt rollout.Turn) (protocol.Turn, bool) {
	rt.Items = nil
	b, err := json.Marshal(rt)
	if err != nil {
		return protocol.Turn{}, false
	}
	var pt protocol.Turn
	if err := json.Unmarshal(b, &pt); err != nil {
		return protocol.Turn{}, false
	}
	return pt, true
}

// roundTripItem converts one item through JSON.
func roundTripItem(it map[string]any) (protocol.ThreadItem, bool) {
	ib, err := json.Marshal(it)
	if err != nil {
		return protocol.ThreadItem{}, false
	}
	var ti protocol.ThreadItem
	if json.Unmarshal(ib, &ti) != nil {
		return protocol.ThreadItem{}, false
	}
	return ti, true
}

// quickTurn converts a turn without a JSON round trip; ok is false when the turn needs one.
func quickTurn(rt rollout.Turn) (protocol.Turn, bool) {
	if rt.Error != nil || !utf8.ValidString(rt.ID) || !utf8.ValidString(rt.ItemsView) || !utf8.ValidString(rt.Status) ||
		(rt.RootTurnID != nil && !utf8.ValidString(*rt.RootTurnID)) {
		return protocol.Turn{}, false
	}
	view := protocol.TurnItemsView(rt.ItemsView)
	return protocol.Turn{ID: rt.ID, RootTurnID: copyPtr(rt.RootTurnID), ItemsView: &view,
		Status: protocol.TurnStatus(rt.Status), StartedAt: copyPtr(rt.StartedAt), CompletedAt: copyPtr(rt.CompletedAt),
		DurationMs: copyPtr(rt.DurationMs)}, true
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// itemFields checks that m has exactly the given keys besides "type" and "id"; a key the round trip would match
// case-insensitively or ignore makes the caller fall back to it.
func itemFields(m map[string]any, keys ...string) bool {
	if len(m) != len(keys)+2 {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// quickItem converts the item shapes the rollout reader builds most (user and agent messages, reasoning,
// commands, plans, compactions); ok is false for anything else.
func quickItem(m map[string]any) (protocol.ThreadItem, bool) {
	typ, _ := m["type"].(string)
	id, ok := m["id"].(string)
	if !ok || !utf8.ValidString(id) {
		return protocol.ThreadItem{}, false
	}
	started, ok1 := optInt64(m["startedAtMs"])
	completed, ok2 := optInt64(m["completedAtMs"])
	if !ok1 || !ok2 {
		return protocol.ThreadItem{}, false
	}
	switch typ {
	case "userMessage":
		if !itemFields(m, "clientId", "content", "startedAtMs", "completedAtMs") {
			break
		}
		clientID, ok := optString(m["clientId"])
		content, ok2 := textInputs(m["content"])
		if !ok || !ok2 {
			break
		}
		return protocol.ThreadItem{Value: protocol.ThreadItemUserMessage{ID: id, ClientID: clientID, Content: content,
			StartedAtMs: started, CompletedAtMs: completed}}, true
	case "agentMessage":
		if !itemFields(m, "moderation", "text", "phase", "memoryCitation", "delivery", "questions", "startedAtMs",
			"completedAtMs") || m["moderation"] != nil || m["memoryCitation"] != nil || m["delivery"] != nil ||
			m["questions"] != nil {
			break
		}
		text, ok := m["text"].(string)
		phase, ok2 := optString(m["phase"])
		if !ok || !ok2 || !utf8.ValidString(text) {
			break
		}
		return protocol.ThreadItem{Value: protocol.ThreadItemAgentMessage{ID: id, Text: text,
			Phase:       (*protocol.MessagePhase)(phase),
			StartedAtMs: started, CompletedAtMs: completed}}, true
	case "reasoning":
		if !itemFields(m, "summary", "content", "startedAtMs", "completedAtMs") {
			break
		}
		summary, ok := stringList(m["summary"])
		content, ok2 := stringList(m["content"])
		if !ok || !ok2 {
			break
		}
		return protocol.ThreadItem{Value: protocol.ThreadItemReasoning{ID: id, Summary: summary, Content: content,
			StartedAtMs: started, CompletedAtMs: completed}}, true
	case "commandExecution":
		return quickCommand(m, id, started, completed)
	case "plan":
		if !itemFields(m, "text", "startedAtMs", "completedAtMs") {
			break
		}
		text, ok := m["text"].(string)
		if !ok || !utf8.ValidString(text) {
			break
		}
		return protocol.ThreadItem{Value: protocol.ThreadItemPlan{ID: id, Text: text, StartedAtMs: started,
			CompletedAtMs: completed}}, true
	case "contextCompaction":
		if !itemFields(m, "startedAtMs", "completedAtMs") {
			break
		}
		return protocol.ThreadItem{Value: protocol.ThreadItemContextCompaction{ID: id, StartedAtMs: started,
			CompletedAtMs: completed}}, true
	}
	return protocol.ThreadItem{}, false
}

// quickCommand converts a commandExecution item; its command actions (a union) still go through JSON.
func quickCommand(m map[string]any, id string, started, completed *int64) (protocol.ThreadItem, bool) {
	if !itemFields(m, "pluginId", "scriptPath", "command", "cwd", "processId", "source", "status", "commandActions",
		"aggregatedOutput", "exitCode", "durationMs", "startedAtMs", "completedAtMs") || m["pluginId"] != nil ||
		m["scriptPath"] != nil {
		return protocol.ThreadItem{}, false
	}
	command, ok1 := m["command"].(string)
	cwd, ok2 := m["cwd"].(string)
	source, ok3 := m["source"].(string)
	status, ok4 := m["status"].(string)
	pid, ok5 := optString(m["processId"])
	output, ok6 := optString(m["aggregatedOutput"])
	dur, ok7 := optInt64(m["durationMs"])
	code, ok8 := optInt64(m["exitCode"])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || !ok7 || !ok8 || !utf8.ValidString(command) ||
		!utf8.ValidString(cwd) || !utf8.ValidString(source) || !utf8.ValidString(status) ||
		(code != nil && (*code < math.MinInt32 || *code > math.MaxInt32)) {
		return protocol.ThreadItem{}, false
	}
	actions := []protocol.CommandAction{}
	if raw, ok := m["commandActions"].([]any); !ok {
		return protocol.ThreadItem{}, false
	} else if len(raw) > 0 {
		b, err := json.Marshal(raw)
		if err != nil || json.Unmarshal(b, &actions) != nil {
			return protocol.ThreadItem{}, false
		}
	}
	var exit *int32
	if code != nil {
		exit = ptr(int32(*code))
	}
	src := protocol.CommandExecutionSource(source)
	return protocol.ThreadItem{Value: protocol.ThreadItemCommandExecution{ID: id, Command: command,
		Cwd: protocol.LegacyAppPathString(cwd), ProcessID: pid, Source: &src, Status: protocol.CommandExecutionStatus(status),
		CommandActions: actions, AggregatedOutput: output, ExitCode: exit, DurationMs: dur, StartedAtMs: started,
		CompletedAtMs: completed}}, true
}

// textInputs converts user content made only of text elements without text_elements entries.
func textInputs(v any) ([]protocol.UserInput, bool) {
	if v == nil {
		return nil, true
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]protocol.UserInput, 0, len(list))
	for _, e := range list {
		em, ok := e.(map[string]any)
		if !ok || em["type"] != "text" {
			return nil, false
		}
		text, ok := em["text"].(string)
		if !ok || !utf8.ValidString(text) {
			return nil, false
		}
		in := protocol.UserInputText{Text: text}
		switch len(em) {
		case 2:
		case 3:
			te, present := em["text_elements"]
			if !present {
				return nil, false
			}
			if te != nil {
				if l, ok := te.([]any); !ok || len(l) != 0 {
					return nil, false
				}
				in.TextElements = []protocol.TextElement{}
			}
		default:
			return nil, false
		}
		out = append(out, protocol.UserInput{Value: in})
	}
	return out, true
}

// stringList converts a list of strings; nil stays nil.
func stringList(v any) ([]string, bool) {
	if v == nil {
		return nil, true
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok || !utf8.ValidString(s) {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// optString converts nil or a valid UTF-8 string.
func optString(v any) (*string, bool) {
	switch s := v.(type) {
	case nil:
		return nil, true
	case string:
		if !utf8.ValidString(s) {
			return nil, false
		}
		return &s, true
	}
	return nil, false
}

// optInt64 converts nil or an integer (a JSON number that is whole and exactly representable).
func optInt64(v any) (*int64, bool) {
	switch n := v.(type) {
	case nil:
		return nil, true
	case int64:
		return &n, true
	case int:
		x := int64(n)
		return &x, true
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return nil, false
		}
		x := int64(n)
		return &x, true
	}
	return nil, false
}
