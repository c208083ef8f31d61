package rollout

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 21, 22, 28, 31, 123_000_000, time.UTC)

func ptr[T any](v T) *T { return &v }

func testMeta(id string) SessionMeta {
	return SessionMeta{ID: id, Cwd: "/work/proj", Originator: "appserver", CLIVersion: "0.169.0",
		Source: StringSource("vscode"), ModelProvider: "openai", HistoryMode: HistoryModePaginated}
}

// writeTwoTurns records a two-turn thread the way the turn engine is expected to.
func writeTwoTurns(t *testing.T, home, id string) string {
	t.Helper()
	r, err := Create(home, testMeta(id), t0)
	require.NoError(t, err)
	clock := t0
	r.now = func() time.Time { clock = clock.Add(time.Millisecond); return clock }

	require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "t1", StartedAt: t0.Unix()}))
	require.NoError(t, r.AppendTurnContext(TurnContext{TurnID: "t1", Cwd: "/work/proj", ApprovalPolicy: "never",
		SandboxPolicy: map[string]any{"type": "read-only"}, Model: "gpt-x", Effort: "low", Summary: "auto"}))
	require.NoError(t, r.AppendResponseItem(json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"hi there"}]}`)))
	require.NoError(t, r.AppendEvent(ItemCompleted{ThreadID: id, TurnID: "t1",
		Item: UserMessageItem{ID: "u1", Content: []any{NewTextContent("hi there")}}, StartedAtMs: ptr(int64(1)), CompletedAtMs: ptr(int64(2))}))
	require.NoError(t, r.AppendEvent(ItemCompleted{ThreadID: id, TurnID: "t1",
		Item: ReasoningItem{ID: "rs_1", SummaryText: []string{"thinking"}}}))
	require.NoError(t, r.AppendResponseItem(json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"thinking"}],"encrypted_content":"enc"}`)))
	require.NoError(t, r.AppendEvent(ItemCompleted{ThreadID: id, TurnID: "t1",
		Item: AgentMessageItem{ID: "msg_1", Content: []AgentMessageContent{{Text: "hello"}}}}))
	require.NoError(t, r.AppendResponseItem(json.RawMessage(`{"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":"hello"}]}`)))
	require.NoError(t, r.AppendEvent(TokenCount{Info: &TokenUsageInfo{TotalTokenUsage: TokenUsage{InputTokens: 10, TotalTokens: 12}, LastTokenUsage: TokenUsage{InputTokens: 10, TotalTokens: 12}}}))
	require.NoError(t, r.AppendEvent(TaskComplete{TurnID: "t1", LastAgentMessage: ptr("hello"), StartedAt: t0.Unix(), CompletedAt: t0.Unix() + 1, DurationMs: ptr(int64(900))}))

	require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "t2", StartedAt: t0.Unix() + 5}))
	require.NoError(t, r.AppendResponseItem(json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"run ls"}]}`)))
	require.NoError(t, r.AppendEvent(ItemCompleted{ThreadID: id, TurnID: "t2", Item: UserMessageItem{ID: "u2", Content: []any{NewTextContent("run ls")}}}))
	require.NoError(t, r.AppendResponseItem(json.RawMessage(`{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"call_1"}`)))
	require.NoError(t, r.AppendEvent(ItemCompleted{ThreadID: id, TurnID: "t2", Item: CommandExecutionItem{ID: "call_1",
		ProcessID: ptr("77"), Command: []string{"/bin/bash", "-lc", "ls"}, Cwd: "/work/proj",
		ParsedCmd: []ParsedCommand{{Type: "list_files", Cmd: "ls"}}, Source: "unified_exec_startup", Status: "completed",
		AggregatedOutput: ptr("a\n"), ExitCode: ptr(0), Duration: &Duration{Secs: 0, Nanos: 12_000_000}}}))
	require.NoError(t, r.AppendResponseItem(json.RawMessage(`{"type":"function_call_output","call_id":"call_1","output":"a\n"}`)))
	require.NoError(t, r.AppendEvent(TokenCount{Info: &TokenUsageInfo{TotalTokenUsage: TokenUsage{InputTokens: 30, TotalTokens: 40}}}))
	require.NoError(t, r.AppendEvent(ItemCompleted{ThreadID: id, TurnID: "t2", Item: AgentMessageItem{ID: "msg_2", Content: []AgentMessageContent{{Text: "a"}}}}))
	require.NoError(t, r.AppendResponseItem(json.RawMessage(`{"type":"message","role":"assistant","id":"msg_2","content":[{"type":"output_text","text":"a"}]}`)))
	require.NoError(t, r.AppendEvent(TaskComplete{TurnID: "t2", LastAgentMessage: ptr("a"), StartedAt: t0.Unix() + 5, CompletedAt: t0.Unix() + 6, DurationMs: ptr(int64(1000))}))
	require.NoError(t, r.Close())
	require.ErrorIs(t, r.AppendEvent(TaskStarted{TurnID: "t3"}), ErrClosed)
	require.NoError(t, r.Close(), "second Close is a no-op")
	return r.Path()
}

func TestRoundTripTwoTurns(t *testing.T) {
	home := t.TempDir()
	id := "01c00000-0000-7000-8000-000000000001"
	path := writeTwoTurns(t, home, id)
	local := t0.Local()
	require.Equal(t, filepath.Join(home, "sessions", local.Format("2006"), local.Format("01"), local.Format("02"),
		"rollout-"+local.Format("2006-01-02T15-04-05")+"-"+id+".jsonl"), path)

	// Every line is a complete record with consecutive ordinals; session_meta first.
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := int64(0)
	for sc.Scan() {
		var rec map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		require.Equal(t, fmt.Sprint(n), string(rec["ordinal"]))
		require.Contains(t, string(rec["timestamp"]), "Z")
		if n == 0 {
			require.JSONEq(t, `"session_meta"`, string(rec["type"]))
			require.True(t, strings.HasPrefix(sc.Text(), `{"timestamp":"2026-11-21T22:28:31.123Z","ordinal":0,"type":"session_meta"`), sc.Text())
		}
		n++
	}
	require.EqualValues(t, 21, n)

	th, err := ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, id, th.Meta.ID)
	require.Equal(t, id, th.Meta.SessionID)
	require.Equal(t, "2026-11-21T22:28:31.123Z", th.Meta.Timestamp)
	require.Equal(t, "hi there", th.Preview)
	require.Equal(t, "gpt-x", th.Model)
	require.Equal(t, "low", th.ReasoningEffort)
	require.EqualValues(t, 21, th.NextOrdinal)
	require.EqualValues(t, 40, th.TokenUsage.TotalTokenUsage.TotalTokens)
	require.Len(t, th.ResponseItems, 7)
	require.JSONEq(t, `{"type":"function_call_output","call_id":"call_1","output":"a\n"}`, string(th.ResponseItems[5]))

	require.Len(t, th.Turns, 2)
	t1, t2 := th.Turns[0], th.Turns[1]
	require.Equal(t, "t1", t1.ID)
	require.Equal(t, TurnCompleted, t1.Status)
	require.EqualValues(t, 900, *t1.DurationMs)
	require.Nil(t, t1.Error)
	got, err := json.Marshal(t1.Items)
	require.NoError(t, err)
	require.JSONEq(t, `[
	 {"type":"userMessage","id":"u1","clientId":null,"content":[{"type":"text","text":"hi there","text_elements":[]}],"startedAtMs":1,"completedAtMs":2},
	 {"type":"reasoning","id":"rs_1","summary":["thinking"],"content":[],"startedAtMs":null,"completedAtMs":null},
	 {"type":"agentMessage","id":"msg_1","text":"hello","phase":null,"moderation":null,"memoryCitation":null,"delivery":null,"questions":null,"startedAtMs":null,"completedAtMs":null}
	]`, string(got))
	require.Equal(t, TurnCompleted, t2.Status)
	require.Len(t, t2.Items, 3)
	cmd, err := json.Marshal(t2.Items[1])
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"commandExecution","id":"call_1","pluginId":null,"scriptPath":null,
	 "command":"/bin/bash -lc ls","cwd":"/work/proj","processId":"77","source":"unifiedExecStartup","status":"completed",
	 "commandActions":[{"type":"listFiles","command":"ls","path":null}],"aggregatedOutput":"a\n","exitCode":0,"durationMs":12,
	 "startedAtMs":null,"completedAtMs":null}`, string(cmd))
}

func TestRecorderConcurrentAppends(t *testing.T) {
	home := t.TempDir()
	r, err := Create(home, testMeta("01c00000-0000-7000-8000-000000000002"), t0)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				require.NoError(t, r.AppendEvent(AgentReasoning{Text: strings.Repeat("x", 5000)}))
			}
		}()
	}
	wg.Wait()
	require.NoError(t, r.Close())
	f, err := os.Open(r.Path())
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	seen := map[int64]bool{}
	for sc.Scan() {
		var rec line
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		require.False(t, seen[*rec.Ordinal])
		seen[*rec.Ordinal] = true
	}
	require.Len(t, seen, 401)
}

func TestCreateErrors(t *testing.T) {
	home := t.TempDir()
	_, err := Create(home, SessionMeta{}, t0)
	require.Error(t, err, "meta without id")
	r, err := Create(home, testMeta("01c00000-0000-7000-8000-000000000003"), t0)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	_, err = Create(home, testMeta("01c00000-0000-7000-8000-000000000003"), t0)
	require.Error(t, err, "the file already exists")
	_, err = Create(r.Path(), testMeta("01c00000-0000-7000-8000-00000000000f"), t0)
	require.Error(t, err, "CODEX_HOME is a regular file")
	require.Error(t, r.AppendResponseItem(json.RawMessage(`{not json`)))
	require.Error(t, r.AppendEvent(ItemCompleted{Item: func() {}}), "unmarshalable payload")
}

func TestOpenAppendAfterTornLine(t *testing.T) {
	home := t.TempDir()
	path := writeTwoTurns(t, home, "01c00000-0000-7000-8000-000000000004")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"timestamp":"2026-11-21T22:30:00.000Z","ordinal":21,"type":"event_msg","payload":{"type":"task_st`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	th, err := ReadFile(path)
	require.NoError(t, err, "a torn last line is skipped")
	require.Len(t, th.Turns, 2)

	r, err := OpenAppend(path)
	require.NoError(t, err)
	require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "t3"}))
	require.NoError(t, r.Close())
	th, err = ReadFile(path)
	require.NoError(t, err)
	require.Len(t, th.Turns, 3)
	require.Equal(t, "t3", th.Turns[2].ID)
	require.Equal(t, TurnInterrupted, th.Turns[2].Status, "a turn without task_complete is interrupted")
	require.EqualValues(t, 22, th.NextOrdinal, "the torn ordinal 21 is reused")

	_, err = OpenAppend(filepath.Join(home, "missing.jsonl"))
	require.Error(t, err)
}

func TestReadFixturePaginated(t *testing.T) {
	th, err := ReadFile("testdata/paginated_three_turns.jsonl")
	require.NoError(t, err)
	require.Equal(t, "List files", th.Preview)
	require.Equal(t, "gpt-test", th.Model)
	require.Equal(t, "high", th.ReasoningEffort)
	require.EqualValues(t, 18, th.NextOrdinal)
	require.Equal(t, "be nice", th.Meta.BaseInstructions.Text)
	require.Len(t, th.ResponseItems, 5)
	require.NotContains(t, string(th.ResponseItems[0]), "internal_chat_message_metadata_passthrough")
	require.Len(t, th.Turns, 3)

	a, b, c := th.Turns[0], th.Turns[1], th.Turns[2]
	require.Equal(t, TurnCompleted, a.Status)
	require.Equal(t, "turn-a", *a.RootTurnID)
	require.EqualValues(t, 1795165201, *a.StartedAt)
	require.EqualValues(t, 302, *a.DurationMs)
	types := []string{}
	for _, it := range a.Items {
		types = append(types, it["type"].(string))
	}
	require.Equal(t, []string{"userMessage", "commandExecution", "agentMessage"}, types)
	require.Equal(t, "One file: a.txt", a.Items[2]["text"])
	require.Equal(t, "/bin/bash -lc 'ls -la'", a.Items[1]["command"])
	require.Equal(t, "/work/proj", a.Items[1]["cwd"])
	require.EqualValues(t, 1500, a.Items[1]["durationMs"])
	require.EqualValues(t, 1795165201100, a.Items[1]["startedAtMs"])

	require.Equal(t, TurnInterrupted, b.Status)
	require.Nil(t, b.Error)
	require.EqualValues(t, 500, *b.DurationMs)

	require.Equal(t, TurnFailed, c.Status)
	errJSON, err := json.Marshal(c.Error)
	require.NoError(t, err)
	require.JSONEq(t, `{"message":"boom","codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":401}},"additionalDetails":null,"misalignment":null}`, string(errJSON))
	require.Empty(t, c.Items)
}

func TestReadLegacyNoOrdinalGarbageMiddle(t *testing.T) {
	th, err := ReadFile("testdata/legacy_no_ordinal.jsonl")
	require.NoError(t, err)
	require.Equal(t, "cli", SourceString(th.Meta.Source))
	require.Equal(t, "Old chat", th.Name)
	require.Equal(t, "hello old", th.Preview)
	require.JSONEq(t, `{"commit_hash":"abc123","branch":"main","repository_url":"https://example.invalid/r.git"}`, string(th.Meta.Git))
	require.EqualValues(t, 13, th.NextOrdinal, "13 readable records, no ordinals")
	require.Len(t, th.ResponseItems, 5)
	require.Len(t, th.Turns, 2)
	got, err := json.Marshal(th.Turns)
	require.NoError(t, err)
	require.JSONEq(t, `[
	 {"id":"turn-1","rootTurnId":null,"itemsView":"full","status":"completed","error":null,"startedAt":null,"completedAt":null,"durationMs":null,"items":[
	  {"type":"userMessage","id":"item-1","clientId":null,"content":[{"type":"text","text":"hello old","text_elements":[]},{"type":"image","url":"data:image/png;base64,AAAA"}],"startedAtMs":null,"completedAtMs":null},
	  {"type":"reasoning","id":"item-2","summary":["Thinking.","More thinking."],"content":[],"startedAtMs":null,"completedAtMs":null},
	  {"type":"agentMessage","id":"item-3","text":"Hi there.","phase":null,"moderation":null,"memoryCitation":null,"delivery":null,"questions":null,"startedAtMs":null,"completedAtMs":null}]},
	 {"id":"turn-2","rootTurnId":null,"itemsView":"full","status":"completed","error":null,"startedAt":null,"completedAt":null,"durationMs":null,"items":[
	  {"type":"userMessage","id":"item-4","clientId":null,"content":[{"type":"text","text":"second question","text_elements":[]}],"startedAtMs":null,"completedAtMs":null},
	  {"type":"agentMessage","id":"item-5","text":"Second answer.","phase":null,"moderation":null,"memoryCitation":null,"delivery":null,"questions":null,"startedAtMs":null,"completedAtMs":null}]}
	]`, string(got))
}

func TestLegacyModeIgnoresItemCompleted(t *testing.T) {
	// The reference rebuilds files without history_mode from legacy events only; item_completed is ignored there.
	home := t.TempDir()
	meta := testMeta("01c00000-0000-7000-8000-000000000005")
	meta.HistoryMode = ""
	r, err := Create(home, meta, t0)
	require.NoError(t, err)
	require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "x"}))
	require.NoError(t, r.AppendEvent(ItemCompleted{TurnID: "x", Item: UserMessageItem{ID: "u", Content: []any{NewTextContent("q")}}}))
	require.NoError(t, r.AppendEvent(UserMessage{Message: "q"}))
	require.NoError(t, r.AppendEvent(AgentMessage{Message: "a", Phase: "final_answer"}))
	require.NoError(t, r.AppendEvent(TurnAborted{Reason: "interrupted"}))
	require.NoError(t, r.Close())
	th, err := ReadFile(r.Path())
	require.NoError(t, err)
	require.Len(t, th.Turns, 1)
	require.Equal(t, "x", th.Turns[0].ID)
	require.Equal(t, TurnInterrupted, th.Turns[0].Status)
	require.Len(t, th.Turns[0].Items, 2)
	require.Equal(t, "item-1", th.Turns[0].Items[0]["id"])
	require.Equal(t, "final_answer", th.Turns[0].Items[1]["phase"])
}

func TestReadFileBadInputs(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadFile(filepath.Join(dir, "missing.jsonl"))
	require.Error(t, err)
	for name, content := range map[string]string{
		"empty":    "",
		"garbage":  "not json\n{\"also\": \"no type\"}\n",
		"no meta":  `{"timestamp":"2026-01-01T00:00:00.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"a"}}` + "\n",
		"bad meta": `{"timestamp":"2026-01-01T00:00:00.000Z","type":"session_meta","payload":"str"}` + "\n",
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".jsonl")
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		_, err := ReadFile(p)
		require.ErrorIs(t, err, ErrNoSessionMeta, name)
		_, err = ReadMeta(p)
		require.ErrorIs(t, err, ErrNoSessionMeta, name)
	}
}

func TestReadMeta(t *testing.T) {
	m, err := ReadMeta("testdata/paginated_three_turns.jsonl")
	require.NoError(t, err)
	require.Equal(t, "List files", m.Preview)
	require.Equal(t, "gpt-test", m.Model)
	require.Equal(t, "01b00000-0000-7000-8000-000000000001", m.Session.ID)
	require.Equal(t, "2026-11-20T09:00:06.1Z", m.LastRecordAt.Format(time.RFC3339Nano), "the torn line's timestamp is not used")
	require.Equal(t, time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC), m.CreatedAt)

	m, err = ReadMeta("testdata/legacy_no_ordinal.jsonl")
	require.NoError(t, err)
	require.Equal(t, "hello old", m.Preview)
	require.Equal(t, "Old chat", m.Name)

	// A huge first user message (bigger than the per-line window) still yields the preview.
	home := t.TempDir()
	r, err := Create(home, testMeta("01c00000-0000-7000-8000-000000000006"), t0)
	require.NoError(t, err)
	big := strings.Repeat("y", 200<<10)
	require.NoError(t, r.AppendResponseItem(json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"`+big+`"}]}`)))
	require.NoError(t, r.AppendEvent(ItemCompleted{TurnID: "t", Item: UserMessageItem{ID: "u", Content: []any{NewTextContent(big)}}}))
	require.NoError(t, r.AppendEvent(ThreadNameUpdated{ThreadName: "named"}))
	require.NoError(t, r.Close())
	m, err = ReadMeta(r.Path())
	require.NoError(t, err)
	require.Equal(t, big, m.Preview)
	require.Equal(t, "named", m.Name)
}

// forkOf writes a fork of parent whose inherited history is the parent's whole file, then one turn of its own.
func forkOf(t *testing.T, home, parentID, parentPath, id, text string, at time.Time) string {
	t.Helper()
	info, err := os.Stat(parentPath)
	require.NoError(t, err)
	data, err := os.ReadFile(parentPath)
	require.NoError(t, err)
	meta := testMeta(id)
	meta.ForkedFromID = parentID
	meta.HistoryBase = &HistoryBase{ThreadID: parentID, EndOrdinalExclusive: int64(strings.Count(string(data), "\n")), EndByteOffset: info.Size()}
	r, err := Create(home, meta, at)
	require.NoError(t, err)
	if text != "" {
		require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "turn-" + id}))
		require.NoError(t, r.AppendEvent(ItemCompleted{TurnID: "turn-" + id, Item: UserMessageItem{ID: "u-" + id, Content: []any{NewTextContent(text)}}}))
		require.NoError(t, r.AppendEvent(TaskComplete{TurnID: "turn-" + id}))
	}
	require.NoError(t, r.Close())
	return r.Path()
}

// The reference lists a fork (and a fork of a fork) under the root's first message; a fork's own message is
// its preview only when nothing it inherited has one.
func TestReadMetaForkPreview(t *testing.T) {
	home := t.TempDir()
	rootID := "01c00000-0000-7000-8000-000000000011"
	root := writeTwoTurns(t, home, rootID)
	fk := forkOf(t, home, rootID, root, "01c00000-0000-7000-8000-000000000012", "fork q", t0.Add(time.Second))
	fk2 := forkOf(t, home, "01c00000-0000-7000-8000-000000000012", fk, "01c00000-0000-7000-8000-000000000013", "fork2 q", t0.Add(2*time.Second))
	for _, p := range []string{fk, fk2} {
		m, err := ReadMeta(p)
		require.NoError(t, err)
		require.Equal(t, "hi there", m.Preview)
	}

	emptyID := "01c00000-0000-7000-8000-000000000014"
	r, err := Create(home, testMeta(emptyID), t0)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	own := forkOf(t, home, emptyID, r.Path(), "01c00000-0000-7000-8000-000000000015", "own q", t0.Add(time.Second))
	m, err := ReadMeta(own)
	require.NoError(t, err)
	require.Equal(t, "own q", m.Preview)
	own2 := forkOf(t, home, "01c00000-0000-7000-8000-000000000015", own, "01c00000-0000-7000-8000-000000000016", "own2 q", t0.Add(2*time.Second))
	m, err = ReadMeta(own2)
	require.NoError(t, err)
	require.Equal(t, "own q", m.Preview)
}

func TestReadForkWithHistoryBase(t *testing.T) {
	home := t.TempDir()
	parentID := "01c00000-0000-7000-8000-00000000000a"
	parent := writeTwoTurns(t, home, parentID)
	// The fork keeps the parent's first turn: records [0, 11) (task_complete of t1 has ordinal 10).
	data, err := os.ReadFile(parent)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	offset := int64(len(strings.Join(lines[:11], "")))

	meta := testMeta("01c00000-0000-7000-8000-00000000000b")
	meta.ForkedFromID = parentID
	meta.HistoryBase = &HistoryBase{ThreadID: parentID, EndOrdinalExclusive: 11, EndByteOffset: offset}
	r, err := Create(home, meta, t0.Add(time.Second))
	require.NoError(t, err)
	require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "f1"}))
	require.NoError(t, r.AppendEvent(ItemCompleted{TurnID: "f1", Item: UserMessageItem{ID: "uf", Content: []any{NewTextContent("forked q")}}}))
	require.NoError(t, r.AppendEvent(TaskComplete{TurnID: "f1"}))
	require.NoError(t, r.Close())

	th, err := ReadFile(r.Path())
	require.NoError(t, err)
	require.Equal(t, meta.ID, th.Meta.ID)
	require.EqualValues(t, 15, th.NextOrdinal, "ordinals continue after the parent's")
	require.Len(t, th.Turns, 2)
	require.Equal(t, "t1", th.Turns[0].ID)
	require.Equal(t, "f1", th.Turns[1].ID)
	require.Len(t, th.ResponseItems, 3, "the parent's first-turn model history")
	require.Equal(t, "hi there", th.Preview)

	m, err := ReadMeta(r.Path())
	require.NoError(t, err)
	require.Equal(t, "hi there", m.Preview, "the parent's first message wins, as in the reference's list")

	// Parent gone: the fork still reads, with its own records only.
	require.NoError(t, os.Remove(parent))
	th, err = ReadFile(r.Path())
	require.NoError(t, err)
	require.Len(t, th.Turns, 1)
}

func TestLineReader(t *testing.T) {
	lr := newLineReader(strings.NewReader("abc\n" + strings.Repeat("z", 100) + "\nlast"))
	ln, tr, complete, err := lr.next(10)
	require.NoError(t, err)
	require.Equal(t, "abc", string(ln))
	require.False(t, tr)
	require.True(t, complete)
	ln, tr, complete, err = lr.next(10)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("z", 10), string(ln))
	require.True(t, tr)
	require.True(t, complete)
	ln, tr, complete, err = lr.next(10)
	require.NoError(t, err)
	require.Equal(t, "last", string(ln))
	require.False(t, tr)
	require.False(t, complete)
	_, _, _, err = lr.next(10)
	require.ErrorIs(t, err, io.EOF)
}

// ValidSource accepts what the reference reads as a session source and nothing else.
func TestValidSource(t *testing.T) {
	for _, raw := range []string{"", `"vscode"`, `"weird"`, `{"custom":"x"}`, `{"custom":""}`, `{"subagent":"review"}`,
		`{"subagent":"compact"}`, `{"subagent":"memory_consolidation"}`, `{"subagent":{"other":"x"}}`,
		`{"subagent":{"thread_spawn":{"parent_thread_id":"p","depth":1}}}`,
		`{"subagent":{"thread_spawn":{"parent_thread_id":"p","depth":1,"agent_nickname":null}}}`} {
		require.True(t, ValidSource(json.RawMessage(raw)), raw)
	}
	for _, raw := range []string{`null`, `5`, `true`, `[]`, `{}`, `{"weird":1}`, `{"custom":5}`, `{"custom":null}`,
		`{"custom":"x","extra":1}`, `{"subagent":"weird"}`, `{"subagent":"review","x":1}`, `{"subagent":{"other":1}}`,
		`{"subagent":{"thread_spawn":{}}}`, `{"subagent":{"thread_spawn":{"parent_thread_id":"p"}}}`,
		`{"subagent":{"thread_spawn":{"depth":1}}}`, `{"subagent":{"thread_spawn":{"parent_thread_id":"p","depth":1e10}}}`} {
		require.False(t, ValidSource(json.RawMessage(raw)), raw)
	}
}

func TestSourceKindAndShellJoin(t *testing.T) {
	for raw, want := range map[string]string{
		`"vscode"`: "vscode", `"cli"`: "cli", `"exec"`: "exec", `"mcp"`: "appServer", `"weird"`: "unknown",
		`"appServer"`: "unknown", `"app_server"`: "unknown", `{"custom":"x"}`: "custom",
		`{"subagent":"review"}`: "subAgentReview", `{"subagent":"compact"}`: "subAgentCompact",
		`{"subagent":{"thread_spawn":{"parent_thread_id":"x"}}}`: "subAgentThreadSpawn",
		`{"subagent":"other"}`: "subAgentOther", `{"x":1}`: "unknown", `12`: "unknown",
	} {
		require.Equal(t, want, SourceKind(json.RawMessage(raw)), raw)
	}
	require.Equal(t, `/bin/bash -lc 'echo '"'"'hi'"'"' && ls' ''`, ShellJoin([]string{"/bin/bash", "-lc", "echo 'hi' && ls", ""}))
	require.Equal(t, "internalServerError", snakeToCamel("internal_server_error"))
}

func TestCompactedAndHelpers(t *testing.T) {
	home := t.TempDir()
	r, err := Create(home, testMeta("01c00000-0000-7000-8000-000000000007"), t0)
	require.NoError(t, err)
	require.NoError(t, r.AppendResponseItem(json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"old"}]}`)))
	require.NoError(t, r.Append(TypeCompacted, Compacted{Message: "sum", ReplacementHistory: []json.RawMessage{json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"summary"}]}`)}}))
	require.NoError(t, r.AppendResponseItem(json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"new"}]}`)))
	require.NoError(t, r.Append(TypeTokenUsageRecord, TokenUsageRecord{ThreadID: "x", TurnID: "y"}))
	require.NoError(t, r.Append(TypeCompacted, Compacted{Message: "only summary"}))
	require.NoError(t, r.Sync())
	require.NoError(t, r.Close())
	require.ErrorIs(t, r.Sync(), ErrClosed)
	th, err := ReadFile(r.Path())
	require.NoError(t, err)
	require.Len(t, th.ResponseItems, 1)
	require.Contains(t, string(th.ResponseItems[0]), "only summary")

	require.Nil(t, GitInfo(nil))
	require.Equal(t, "abc", *(GitInfo(json.RawMessage(`{"commit_hash":"abc","branch":null}`))["sha"].(*string)))
}

func TestRecordsAreNotHTMLEscaped(t *testing.T) {
	home := t.TempDir()
	r, err := Create(home, testMeta("01c00000-0000-7000-8000-000000000008"), t0)
	require.NoError(t, err)
	require.NoError(t, r.AppendResponseItem(json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>a&b</environment_context>"}]}`)))
	require.NoError(t, r.AppendEvent(ItemCompleted{TurnID: "t", Item: UserMessageItem{ID: "u", Content: []any{NewTextContent("<b>&")}}}))
	require.NoError(t, r.AppendEvent(ItemCompleted{TurnID: "t", Item: CommandExecutionItem{ID: "c", Command: []string{"echo", "<x>"}, Cwd: "/a b", Status: "completed"}}))
	require.NoError(t, r.Close())
	data, err := os.ReadFile(r.Path())
	require.NoError(t, err)
	require.Contains(t, string(data), `"text":"<environment_context>a&b</environment_context>"`)
	require.Contains(t, string(data), `"text":"<b>&"`)
	require.Contains(t, string(data), `"command":["echo","<x>"],"cwd":"file:///a%20b"`)
	th, err := ReadFile(r.Path())
	require.NoError(t, err)
	require.Equal(t, "/a b", th.Turns[0].Items[1]["cwd"], "file URLs are decoded")
	require.Equal(t, "<b>&", th.Preview)
}

func TestForkBase(t *testing.T) {
	home := t.TempDir()
	parentID := "01c00000-0000-7000-8000-000000000009"
	parent := writeTwoTurns(t, home, parentID)
	info, err := os.Stat(parent)
	require.NoError(t, err)

	whole, err := ForkBase(parent, parentID, "")
	require.NoError(t, err)
	require.Equal(t, HistoryBase{ThreadID: parentID, EndOrdinalExclusive: 21, EndByteOffset: info.Size()}, whole)

	before, err := ForkBase(parent, parentID, "t2")
	require.NoError(t, err)
	require.EqualValues(t, 11, before.EndOrdinalExclusive)

	_, err = ForkBase(parent, parentID, "nope")
	require.Error(t, err)
	_, err = ForkBase(filepath.Join(home, "missing"), parentID, "")
	require.Error(t, err)

	// A fork made before t2 reads back as the parent's first turn plus its own.
	meta := testMeta("01c00000-0000-7000-8000-000000000010")
	meta.ForkedFromID = parentID
	meta.HistoryBase = &before
	r, err := Create(home, meta, t0.Add(time.Minute))
	require.NoError(t, err)
	require.NoError(t, r.Close())
	th, err := ReadFile(r.Path())
	require.NoError(t, err)
	require.Len(t, th.Turns, 1)
	require.Equal(t, "t1", th.Turns[0].ID)
	require.EqualValues(t, 12, th.NextOrdinal)

	// A torn last line is excluded from a whole-file fork.
	f, err := os.OpenFile(parent, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"timestamp":"x","ordinal":21,"type":"ev`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	torn, err := ForkBase(parent, parentID, "")
	require.NoError(t, err)
	require.Equal(t, whole, torn)
}

func TestItemConversions(t *testing.T) {
	home := t.TempDir()
	id := "01c00000-0000-7000-8000-000000000011"
	r, err := Create(home, testMeta(id), t0)
	require.NoError(t, err)
	require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "t"}))
	items := []any{
		McpToolCallItem{ID: "call_mcp", Server: "tiny", Tool: "echo", Arguments: map[string]any{"text": "hi"}, ReadOnlyHint: true,
			Status: "completed", Result: &McpToolCallResult{Content: []any{map[string]any{"type": "text", "text": "echo: hi"}}},
			Duration: &Duration{Nanos: 3_039_477}},
		McpToolCallItem{ID: "call_mcp2", Server: "tiny", Tool: "add", Status: "failed", Error: &McpToolCallError{Message: "user rejected MCP tool call"}},
		FileChangeItem{ID: "call_patch", Status: "completed", Changes: []FileChange{{Path: "a.txt", Kind: map[string]any{"type": "update", "move_path": nil}, Diff: "-a\n+b\n"}}},
		map[string]any{"type": "WebSearch", "id": "ws", "query": "go json", "action": map[string]any{"type": "search", "query": "go json"}},
		map[string]any{"type": "ContextCompaction", "id": "cc"},
		map[string]any{"type": "ImageView", "id": "iv", "path": "/x.png", "some_field": 1},
		map[string]any{"id": "no type"},
	}
	for _, it := range items {
		require.NoError(t, r.AppendEvent(ItemCompleted{ThreadID: id, TurnID: "t", Item: it}))
	}
	require.NoError(t, r.AppendEvent(TaskComplete{TurnID: "t"}))
	require.NoError(t, r.Close())
	th, err := ReadFile(r.Path())
	require.NoError(t, err)
	require.Len(t, th.Turns, 1)
	got, err := json.Marshal(th.Turns[0].Items)
	require.NoError(t, err)
	require.JSONEq(t, `[
	 {"type":"mcpToolCall","id":"call_mcp","server":"tiny","tool":"echo","status":"completed","arguments":{"text":"hi"},
	  "appContext":null,"mcpAppUi":null,"pluginId":null,"readOnlyHint":true,
	  "result":{"content":[{"type":"text","text":"echo: hi"}],"structuredContent":null,"_meta":null},"error":null,"durationMs":3,
	  "startedAtMs":null,"completedAtMs":null},
	 {"type":"mcpToolCall","id":"call_mcp2","server":"tiny","tool":"add","status":"failed","arguments":null,
	  "appContext":null,"mcpAppUi":null,"pluginId":null,"readOnlyHint":false,"result":null,
	  "error":{"message":"user rejected MCP tool call"},"durationMs":null,"startedAtMs":null,"completedAtMs":null},
	 {"type":"fileChange","id":"call_patch","status":"completed","changes":[{"path":"a.txt","kind":{"type":"update","move_path":null},"diff":"-a\n+b\n"}],
	  "startedAtMs":null,"completedAtMs":null},
	 {"type":"webSearch","id":"ws","query":"go json","action":{"type":"search","query":"go json"},"startedAtMs":null,"completedAtMs":null},
	 {"type":"contextCompaction","id":"cc","startedAtMs":null,"completedAtMs":null},
	 {"type":"imageView","id":"iv","path":"/x.png","someField":1,"startedAtMs":null,"completedAtMs":null}
	]`, string(got))
}

func TestLegacyToolEvents(t *testing.T) {
	home := t.TempDir()
	meta := testMeta("01c00000-0000-7000-8000-000000000012")
	meta.HistoryMode = ""
	r, err := Create(home, meta, t0)
	require.NoError(t, err)
	events := []map[string]any{
		{"type": "task_started", "turn_id": "t"},
		{"type": "user_message", "message": "", "local_images": []string{"/img.png"}},
		{"type": "exec_command_end", "call_id": "c1", "command": []string{"false"}, "cwd": "/w", "exit_code": 1,
			"aggregated_output": "", "parsed_cmd": []any{map[string]any{"type": "read", "cmd": "cat a", "name": "a", "path": "/w/a"},
				map[string]any{"type": "search", "cmd": "rg x", "query": "x", "path": nil}}},
		{"type": "patch_apply_end", "call_id": "p1", "success": true, "changes": map[string]any{
			"b.txt": map[string]any{"add": map[string]any{"content": "new\n"}},
			"a.txt": map[string]any{"type": "update", "unified_diff": "@@\n-a\n+b\n", "move_path": "c.txt"},
			"d.txt": map[string]any{"type": "delete", "content": "old\n"}}},
		{"type": "mcp_tool_call_end", "call_id": "m1", "invocation": map[string]any{"server": "s", "tool": "t", "arguments": map[string]any{"a": 1}},
			"duration": map[string]any{"secs": 1, "nanos": 0}, "result": map[string]any{"Ok": map[string]any{"content": []any{}, "isError": true}}},
		{"type": "mcp_tool_call_end", "call_id": "m2", "invocation": map[string]any{"server": "s", "tool": "t"},
			"result": map[string]any{"Err": "boom"}},
		{"type": "agent_reasoning_raw_content", "text": "raw"},
		{"type": "task_complete", "turn_id": "t"},
	}
	for _, ev := range events {
		require.NoError(t, r.AppendEvent(ev))
	}
	require.NoError(t, r.Close())
	th, err := ReadFile(r.Path())
	require.NoError(t, err)
	require.Len(t, th.Turns, 1)
	it := th.Turns[0].Items
	require.Len(t, it, 6)
	require.Equal(t, []any{map[string]any{"type": "localImage", "path": "/img.png"}}, it[0]["content"])
	require.Equal(t, "failed", it[1]["status"])
	require.Equal(t, "false", it[1]["command"])
	acts, err := json.Marshal(it[1]["commandActions"])
	require.NoError(t, err)
	require.JSONEq(t, `[{"type":"read","command":"cat a","name":"a","path":"/w/a"},{"type":"search","command":"rg x","query":"x","path":null}]`, string(acts))
	ch, err := json.Marshal(it[2])
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"fileChange","id":"p1","status":"completed","startedAtMs":null,"completedAtMs":null,"changes":[
	 {"path":"a.txt","kind":{"type":"update","move_path":"c.txt"},"diff":"@@\n-a\n+b\n"},
	 {"path":"b.txt","kind":{"type":"add"},"diff":"new\n"},
	 {"path":"d.txt","kind":{"type":"delete"},"diff":"old\n"}]}`, string(ch))
	require.Equal(t, "failed", it[3]["status"], "isError results are failures")
	require.EqualValues(t, 1000, it[3]["durationMs"])
	require.Equal(t, map[string]any{"message": "boom"}, it[4]["error"])
	require.Equal(t, []any{"raw"}, it[5]["content"])
}

// A time-ordered id is found in its creation day's folder; one written under another day (another
// clock or time zone) is still found by the full search.
func TestFindRolloutByIDCreationDay(t *testing.T) {
	home := t.TempDir()
	id := uuid.Must(uuid.NewV7()).String()
	now := time.Now()
	dir := filepath.Join(home, "sessions", now.Format("2006"), now.Format("01"), now.Format("02"))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, "rollout-x-"+id+".jsonl")
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	require.Equal(t, p, findInCreationDays(home, id))
	got, err := findRolloutByID(home, id)
	require.NoError(t, err)
	require.Equal(t, p, got)

	other := uuid.Must(uuid.NewV7()).String()
	far := filepath.Join(home, "sessions", "1999", "01", "01")
	require.NoError(t, os.MkdirAll(far, 0o755))
	q := filepath.Join(far, "rollout-x-"+other+".jsonl")
	require.NoError(t, os.WriteFile(q, nil, 0o600))
	require.Empty(t, findInCreationDays(home, other))
	got, err = findRolloutByID(home, other)
	require.NoError(t, err)
	require.Equal(t, q, got)
}
