package thread

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

// recordItemCompleted appends the item_completed event of a finished turn item, in the reference's core shape,
// the moment the item completes (written, at the latest, before the notifications held with it go out: a crash
// after the client saw the item keeps it).
// A non-nil core is recorded as the item instead of the form coreItem derives; turnID is the turn it is
// recorded under (tn's, or its announced sub-agent turn's), threadID the thread it names (the
// sub-agent's for its items, as the reference records them).
func (tn *Turn) recordItemCompleted(threadID, turnID string, item protocol.ThreadItem, core any) {
	if core == nil {
		core = coreItem(item)
	}
	if core == nil {
		return
	}
	started, completed := itemTimes(item)
	if completed == nil {
		completed = ptr(nowMs())
	}
	if started == nil {
		started = completed
	}
	t := tn.thread
	rec := func() {
		t.record(func(r *rollout.Recorder) error {
			return r.AppendEvent(rollout.ItemCompleted{ThreadID: threadID, TurnID: turnID, Item: core, StartedAtMs: started, CompletedAtMs: completed})
		})
	}
	if t.legacyHistory() {
		// A legacy rollout is read from its legacy events, as the reference writes them there (and nothing
		// for the other items).
		events := legacyEvents(item)
		rec = func() {
			t.record(func(r *rollout.Recorder) error {
				for _, ev := range events {
					if err := r.AppendEvent(ev); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	tn.mu.Lock()
	if tn.holding {
		tn.held = append(tn.held, rec)
		tn.mu.Unlock()
		return
	}
	tn.mu.Unlock()
	rec()
}

// legacyHistory reports whether the thread's rollout is legacy (not paginated): its items are then recorded
// as legacy events.
func (t *Thread) legacyHistory() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.meta.HistoryMode != nil && *t.meta.HistoryMode == protocol.ThreadHistoryModeLegacy
}

// legacyEvents returns the events the reference records for a finished item in a legacy rollout: user_message,
// one agent_reasoning per summary part, agent_message; none for any other item.
func legacyEvents(item protocol.ThreadItem) []rollout.Event {
	switch v := item.Value.(type) {
	case protocol.ThreadItemUserMessage:
		var ev rollout.UserMessage
		var texts []string
		for _, in := range v.Content {
			switch c := in.Value.(type) {
			case protocol.UserInputText:
				texts = append(texts, c.Text)
				if len(v.Content) == 1 {
					for _, te := range c.TextElements {
						ev.TextElements = append(ev.TextElements, te)
					}
				}
			case protocol.UserInputImage:
				if c.URL != nil {
					ev.Images = append(ev.Images, *c.URL)
				}
			case protocol.UserInputLocalImage:
				ev.LocalImages = append(ev.LocalImages, c.Path)
			}
		}
		ev.Message = strings.Join(texts, "\n")
		return []rollout.Event{ev}
	case protocol.ThreadItemReasoning:
		events := make([]rollout.Event, 0, len(v.Summary))
		for _, s := range v.Summary {
			events = append(events, rollout.AgentReasoning{Text: s})
		}
		return events
	case protocol.ThreadItemAgentMessage:
		ev := rollout.AgentMessage{Message: v.Text}
		if v.Phase != nil {
			ev.Phase = string(*v.Phase)
		}
		return []rollout.Event{ev}
	}
	return nil
}

// holdRecords defers item records (a task's prelude runs before its start is recorded);
// releaseRecords writes them.
func (tn *Turn) holdRecords() {
	tn.mu.Lock()
	tn.holding = true
	tn.mu.Unlock()
}

func (tn *Turn) releaseRecords() {
	tn.mu.Lock()
	held := tn.held
	tn.holding, tn.held = false, nil
	tn.mu.Unlock()
	for _, rec := range held {
		rec()
	}
}

// itemTimes returns an item's startedAtMs and completedAtMs when its variant carries them.
func itemTimes(item protocol.ThreadItem) (started, completed *int64) {
	switch v := item.Value.(type) { // the items of every turn, read without encoding them
	case protocol.ThreadItemUserMessage:
		return copyInt(v.StartedAtMs), copyInt(v.CompletedAtMs)
	case protocol.ThreadItemAgentMessage:
		return copyInt(v.StartedAtMs), copyInt(v.CompletedAtMs)
	}
	b, err := json.Marshal(item)
	if err != nil {
		return nil, nil
	}
	var ts struct {
		StartedAtMs   *int64 `json:"startedAtMs"`
		CompletedAtMs *int64 `json:"completedAtMs"`
	}
	_ = json.Unmarshal(b, &ts)
	return ts.StartedAtMs, ts.CompletedAtMs
}

func copyInt(p *int64) *int64 {
	if p == nil {
		return nil
	}
	return ptr(*p)
}

// coreItem converts a protocol ThreadItem into the item the reference records in item_completed (PascalCase
// type, snake_case members). Variants without a known core shape are recorded in their protocol shape, which
// our reader passes through unchanged.
func coreItem(item protocol.ThreadItem) any {
	switch v := item.Value.(type) {
	case protocol.ThreadItemUserMessage:
		content := make([]any, 0, len(v.Content))
		for _, in := range v.Content {
			content = append(content, in)
		}
		um := rollout.UserMessageItem{ID: v.ID, Content: content}
		if v.ClientID != nil {
			um.ClientID = *v.ClientID
		}
		return um
	case protocol.ThreadItemAgentMessage:
		am := rollout.AgentMessageItem{ID: v.ID, Content: []rollout.AgentMessageContent{{Type: "Text", Text: v.Text}}}
		if v.Phase != nil {
			am.Phase = string(*v.Phase)
		}
		return am
	case protocol.ThreadItemReasoning:
		return rollout.ReasoningItem{ID: v.ID, SummaryText: v.Summary, RawContent: v.Content}
	case protocol.ThreadItemCommandExecution:
		return commandCoreItem(v)
	case protocol.ThreadItemContextCompaction:
		return map[string]string{"type": "ContextCompaction", "id": v.ID}
	}
	raw, err := json.Marshal(item)
	if err != nil {
		return nil
	}
	return json.RawMessage(raw)
}

func commandCoreItem(v protocol.ThreadItemCommandExecution) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m struct {
		ID               string  `json:"id"`
		Command          string  `json:"command"`
		Cwd              string  `json:"cwd"`
		ProcessID        *string `json:"processId"`
		Source           string  `json:"source"`
		Status           string  `json:"status"`
		AggregatedOutput *string `json:"aggregatedOutput"`
		ExitCode         *int    `json:"exitCode"`
		DurationMs       *int64  `json:"durationMs"`
		CommandActions   []struct {
			Type    string  `json:"type"`
			Command string  `json:"command"`
			Name    string  `json:"name"`
			Path    *string `json:"path"`
			Query   *string `json:"query"`
		} `json:"commandActions"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	ci := rollout.CommandExecutionItem{ID: m.ID, ProcessID: m.ProcessID, Command: shellSplit(m.Command), Cwd: m.Cwd,
		Source: camelToSnake(firstNonEmpty(m.Source, "agent")), Status: camelToSnake(m.Status),
		AggregatedOutput: m.AggregatedOutput, ExitCode: m.ExitCode}
	if m.DurationMs != nil {
		ci.Duration = &rollout.Duration{Secs: *m.DurationMs / 1000, Nanos: (*m.DurationMs % 1000) * 1_000_000}
	}
	for _, a := range m.CommandActions {
		pc := rollout.ParsedCommand{Type: camelToSnake(a.Type), Cmd: a.Command, Name: a.Name, Path: a.Path, Query: a.Query}
		ci.ParsedCmd = append(ci.ParsedCmd, pc)
	}
	return ci
}

// camelToSnake converts "unifiedExecStartup" to "unified_exec_startup".
func camelToSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// shellSplit inverts rollout.ShellJoin: words separated by spaces, with single quotes, double quotes and
// backslashes honoured.
func shellSplit(s string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				cur.WriteString(s[i+1:])
				i = len(s)
				continue
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				cur.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			cur.WriteByte(s[i])
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// recordStart appends what the reference writes when a turn begins: task_started, the initial context of a new
// thread (first turn only; it joins the history then), then turn_context.
func (tn *Turn) recordStart(s Settings) {
	tn.recordTaskStarted(s)
	tn.recordTurnContext(s)
}

// recordTaskStarted appends task_started and, at a new thread's first turn, its initial context.
func (tn *Turn) recordTaskStarted(s Settings) {
	t := tn.thread
	t.record(func(r *rollout.Recorder) error {
		ts := rollout.TaskStarted{TurnID: tn.ID, RootTurnID: tn.root(), StartedAt: tn.startedAt.Unix(),
			ModelContextWindow: ptr(model.ContextWindow(s.Model)), CollaborationModeKind: "default"}
		if p := tn.opts.ParentTurnID; p != "" {
			ts.TurnAttribution = &rollout.TurnAttribution{TurnID: tn.ID, ParentTurnID: &p, RootTurnID: p}
		}
		return r.AppendEvent(ts)
	})
	if p, ok := t.mgr.takePendingContext(t.ID); ok {
		var items []json.RawMessage
		if p.initial != nil {
			items = p.initial(t.openingToolsNotice(s))
			if t.mgr.deps.Tools != nil {
				// A code-mode thread's additional_tools item opens its recorded context, as the
				// reference's (a thread switching to code mode later records none). It stays out of the
				// history: every request leads with the turn's own (under the same id,
				// RecordedToolsItemID after a resume or fork).
				for _, it := range leadItems(t.mgr.deps.Tools(t, s)) {
					t.record(func(r *rollout.Recorder) error { return r.AppendResponseItem(it) })
				}
			}
		}
		t.appendHistory(append(items, p.items...)...)
	}
}

// recordTurnContext appends the turn's turn_context (after the context it tells the model, as the reference
// writes it) and thread_settings_applied when the settings changed.
func (tn *Turn) recordTurnContext(s Settings) {
	t := tn.thread
	tc := rollout.TurnContext{TurnID: tn.ID, RootTurnID: tn.root(), Cwd: s.Cwd, ApprovalPolicy: approvalName(s.ApprovalPolicy),
		ApprovalsReviewer: string(s.ApprovalsReviewer), SandboxPolicy: sandboxCore(s.Sandbox), Model: s.Model,
		CollaborationMode: map[string]any{"mode": "default", "settings": map[string]any{
			"model": s.Model, "reasoning_effort": s.Effort, "developer_instructions": nil}},
		MultiAgentVersion: "v1",
	}
	t.mu.Lock()
	if t.multiAgentV2 {
		tc.MultiAgentVersion = "v2"
	}
	t.mu.Unlock()
	if s.Effort != nil {
		tc.Effort = string(*s.Effort)
	}
	if s.Summary != nil {
		tc.Summary = string(*s.Summary)
	}
	t.record(func(r *rollout.Recorder) error { return r.AppendTurnContext(tc) })
	t.recordSettings(s)
}

// recordSettings appends thread_settings_applied when s differs from the settings last recorded, as the reference
// records a thread's settings (a resume restores its service tier and personality from the last one).
func (t *Thread) recordSettings(s Settings) {
	ts := rollout.ThreadSettings{Model: s.Model, ModelProviderID: s.ModelProvider, ServiceTier: deref(s.ServiceTier),
		ApprovalPolicy: approvalName(s.ApprovalPolicy), ApprovalsReviewer: string(s.ApprovalsReviewer),
		RequestedApprovalsReviewer: string(s.ApprovalsReviewer), PermissionProfile: permissionProfile(s.Sandbox, s.Cwd), Cwd: s.Cwd,
		RuntimeWorkspaceRoots: []string{s.Cwd}, Personality: string(deref(s.Personality)),
		CollaborationMode: map[string]any{"mode": "default", "settings": map[string]any{
			"model": s.Model, "reasoning_effort": s.Effort, "developer_instructions": nil}},
		DisabledPluginIDs: s.DisabledPluginIDs,
	}
	if s.Effort != nil {
		ts.ReasoningEffort = string(*s.Effort)
	}
	if s.Summary != nil {
		ts.ReasoningSummary = string(*s.Summary)
	}
	if ts.DisabledPluginIDs == nil {
		ts.DisabledPluginIDs = []string{}
	}
	key := string(marshal(ts))
	t.mu.Lock()
	if t.recorded == key {
		t.mu.Unlock()
		return
	}
	t.recorded = key
	t.mu.Unlock()
	t.record(func(r *rollout.Recorder) error {
		return r.AppendEvent(rollout.ThreadSettingsApplied{ThreadID: t.ID, Settings: ts})
	})
}

// recordSubStart appends the task_started of a task's announced sub-agent turn (the reference records its
// reviewer's turn so in the parent thread, in place of the task's own start).
func (tn *Turn) recordSubStart(s Settings) {
	t := tn.thread
	t.record(func(r *rollout.Recorder) error {
		return r.AppendEvent(rollout.TaskStarted{TurnID: tn.taskOpts.AnnounceID, RootTurnID: tn.ID, StartedAt: tn.startedAt.Unix(),
			ModelContextWindow: ptr(model.ContextWindow(s.Model)), CollaborationModeKind: "default",
			TurnAttribution: &rollout.TurnAttribution{TurnID: tn.taskOpts.AnnounceID, ParentTurnID: &tn.ID, RootTurnID: tn.ID}})
	})
}

// recordUsage appends the token_usage_record written after each model response.
func (tn *Turn) recordUsage(responseID string, u *model.Usage) {
	if u == nil {
		return
	}
	t := tn.thread
	last := rollout.TokenUsage{InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens, OutputTokens: u.OutputTokens,
		ReasoningOutputTokens: u.ReasoningOutputTokens, TotalTokens: u.TotalTokens}
	tn.mu.Lock()
	tn.usage.InputTokens += u.InputTokens
	tn.usage.CachedInputTokens += u.CachedInputTokens
	tn.usage.OutputTokens += u.OutputTokens
	tn.usage.ReasoningOutputTokens += u.ReasoningOutputTokens
	tn.usage.TotalTokens += u.TotalTokens
	turnUsage := tokenUsage(tn.usage)
	tn.mu.Unlock()
	t.mu.Lock()
	threadUsage := tokenUsage(t.total)
	t.mu.Unlock()
	threadUsage.InputTokens += last.InputTokens
	threadUsage.CachedInputTokens += last.CachedInputTokens
	threadUsage.OutputTokens += last.OutputTokens
	threadUsage.ReasoningOutputTokens += last.ReasoningOutputTokens
	threadUsage.TotalTokens += last.TotalTokens
	t.record(func(r *rollout.Recorder) error {
		return r.Append(rollout.TypeTokenUsageRecord, rollout.TokenUsageRecord{ThreadID: t.ID, TurnID: tn.ID, SessionID: t.ID,
			RootTurnID: tn.root(), ResponseID: responseID, Usage: last, TurnTokenUsage: turnUsage, ThreadTokenUsage: threadUsage})
	})
}

// recordEnd appends task_complete (with the error of a failed turn) or turn_aborted.
func (tn *Turn) recordEnd(status protocol.TurnStatus, turnErr *protocol.TurnError, lastText string, completedAt time.Time, dur int64) {
	t := tn.thread
	if !tn.task || tn.taskOpts.NoteRead { // the reference leaves the read state alone after a user shell or compaction turn
		readAs := status
		if tn.taskErr != nil {
			readAs = protocol.TurnStatusCompleted // a failed review still shows its items: the reference marks it unread
		}
		defer t.noteTurnEnd(tn.ID, readAs)
	}
	if status == protocol.TurnStatusInterrupted {
		t.record(func(r *rollout.Recorder) error {
			return r.AppendEvent(rollout.TurnAborted{TurnID: tn.ID, RootTurnID: tn.root(), Reason: "interrupted",
				StartedAt: tn.startedAt.Unix(), CompletedAt: completedAt.Unix(), DurationMs: ptr(dur)})
		})
		return
	}
	tc := rollout.TaskComplete{TurnID: tn.ID, RootTurnID: tn.root(), LastAgentMessage: ptrIf(lastText), StartedAt: tn.startedAt.Unix(),
		CompletedAt: completedAt.Unix(), DurationMs: ptr(dur)}
	if turnErr != nil {
		tc.Error = &rollout.TurnError{Message: turnErr.Message}
		if turnErr.CodexErrorInfo != nil {
			if b, err := json.Marshal(turnErr.CodexErrorInfo); err == nil {
				var v any
				if json.Unmarshal(b, &v) == nil {
					tc.Error.CodexErrorInfo = snakeValue(v)
				}
			}
		}
	}
	t.record(func(r *rollout.Recorder) error { return r.AppendEvent(tc) })
}

// snakeValue converts a protocol codexErrorInfo (camelCase string or object keys) into the recorded snake_case form.
func snakeValue(v any) any {
	switch x := v.(type) {
	case string:
		return camelToSnake(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if m, ok := val.(map[string]any); ok {
				out[camelToSnake(k)] = snakeKeys(m)
			} else {
				out[camelToSnake(k)] = val
			}
		}
		return out
	}
	return v
}

func snakeKeys(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if inner, ok := v.(map[string]any); ok {
			v = snakeKeys(inner)
		}
		out[camelToSnake(k)] = v
	}
	return out
}

// sandboxCore renders a sandbox policy the way turn_context records it ({"type":"workspace-write",
// "network_access":false,…}).
func sandboxCore(p protocol.SandboxPolicy) any {
	b, err := json.Marshal(p)
	if err != nil {
		return map[string]any{"type": "read-only"}
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return map[string]any{"type": "read-only"}
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[camelToSnake(k)] = v
	}
	out["type"] = sandboxModeName(p)
	return out
}

// sandboxFromCore reads a recorded sandbox policy back (nil when absent or unknown).
func sandboxFromCore(raw json.RawMessage) *protocol.SandboxPolicy {
	var m map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	typ, _ := m["type"].(string)
	switch typ {
	case "danger-full-access":
		return &protocol.SandboxPolicy{Value: protocol.SandboxPolicyDangerFullAccess{}}
	case "read-only":
		na, _ := m["network_access"].(bool)
		return &protocol.SandboxPolicy{Value: protocol.SandboxPolicyReadOnly{NetworkAccess: ptr(na)}}
	case "workspace-write":
		ww := protocol.SandboxPolicyWorkspaceWrite{}
		if v, ok := m["network_access"].(bool); ok {
			ww.NetworkAccess = ptr(v)
		}
		if v, ok := m["exclude_tmpdir_env_var"].(bool); ok {
			ww.ExcludeTmpdirEnvVar = ptr(v)
		}
		if v, ok := m["exclude_slash_tmp"].(bool); ok {
			ww.ExcludeSlashTmp = ptr(v)
		}
		if roots, ok := m["writable_roots"].([]any); ok {
			for _, r := range roots {
				if s, ok := r.(string); ok {
					ww.WritableRoots = append(ww.WritableRoots, protocol.AbsolutePathBuf(s))
				}
			}
		}
		return &protocol.SandboxPolicy{Value: ww}
	}
	return nil
}

// permissionProfile renders a sandbox policy as the reference's permission_profile (thread_settings_applied
// needs one for the reference to read the record back): full access is "disabled"; the others are managed
// file-system entries, the writable roots' .git, .agents, .codex and .aws kept read-only.
func permissionProfile(p protocol.SandboxPolicy, cwd string) any {
	special := func(kind, access string) map[string]any {
		return map[string]any{"path": map[string]any{"type": "special", "value": map[string]any{"kind": kind}}, "access": access}
	}
	path := func(p, access string, skip bool) map[string]any {
		e := map[string]any{"path": map[string]any{"type": "path", "path": p}, "access": access}
		if skip {
			e["missing_path_behavior"] = "skip"
		}
		return e
	}
	network := func(on *bool) string {
		if on != nil && *on {
			return "enabled"
		}
		return "restricted"
	}
	entries := []any{special("root", "read")}
	var net string
	switch v := p.Value.(type) {
	case protocol.SandboxPolicyReadOnly:
		net = network(v.NetworkAccess)
	case protocol.SandboxPolicyWorkspaceWrite:
		roots := []string{cwd}
		for _, r := range v.WritableRoots {
			roots = append(roots, string(r))
		}
		for _, r := range roots {
			entries = append(entries, path(r, "write", false))
		}
		if v.ExcludeSlashTmp == nil || !*v.ExcludeSlashTmp {
			entries = append(entries, special("slash_tmp", "write"))
		}
		if v.ExcludeTmpdirEnvVar == nil || !*v.ExcludeTmpdirEnvVar {
			entries = append(entries, special("tmpdir", "write"))
		}
		for _, r := range roots {
			for _, d := range []string{".git", ".agents", ".codex", ".aws"} {
				entries = append(entries, path(filepath.Join(r, d), "read", true))
			}
		}
		net = network(v.NetworkAccess)
	default:
		return map[string]any{"type": "disabled"}
	}
	return map[string]any{"type": "managed", "file_system": map[string]any{"type": "restricted", "entries": entries}, "network": net}
}
