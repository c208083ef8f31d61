package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

const (
	fixturePaginatedID = "01b00000-0000-7000-8000-000000000001"
	fixtureLegacyID    = "01b00000-0000-7000-8000-000000000002"
)

// rolloutFile finds a thread's rollout under CODEX_HOME (live or archived).
func rolloutFile(t *testing.T, home, id string) string {
	t.Helper()
	for _, pat := range []string{
		filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"),
		filepath.Join(home, "archived_sessions", "rollout-*-"+id+".jsonl"),
	} {
		if m, _ := filepath.Glob(pat); len(m) == 1 {
			return m[0]
		}
	}
	t.Fatalf("no rollout for %s under %s", id, home)
	return ""
}

// recordKinds renders each record of a rollout as type[:subtype[:item type or role]].
func recordKinds(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec struct {
			Type    string `json:"type"`
			Payload struct {
				Type string `json:"type"`
				Role string `json:"role"`
				Item struct {
					Type string `json:"type"`
				} `json:"item"`
			} `json:"payload"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), "line %q", sc.Text())
		k := rec.Type
		switch rec.Type {
		case "event_msg":
			k += ":" + rec.Payload.Type
			if rec.Payload.Type == "item_completed" {
				k += ":" + rec.Payload.Item.Type
			}
		case "response_item":
			k += ":" + rec.Payload.Type
			if rec.Payload.Role != "" {
				k += ":" + rec.Payload.Role
			}
		}
		out = append(out, k)
	}
	require.NoError(t, sc.Err())
	return out
}

// installFixture copies a hand-written reference rollout into CODEX_HOME, its cwd set to work.
func installFixture(t *testing.T, home, work, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	date := strings.TrimPrefix(name, "rollout-")[:10]
	dir := filepath.Join(home, "sessions", date[:4], date[5:7], date[8:10])
	require.NoError(t, os.MkdirAll(dir, 0o755))
	dst := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(dst, []byte(strings.ReplaceAll(string(b), "__WORK__", work)), 0o644))
	return dst
}

type threadObj struct {
	ID           string          `json:"id"`
	Name         *string         `json:"name"`
	Preview      string          `json:"preview"`
	Path         *string         `json:"path"`
	ForkedFromID *string         `json:"forkedFromId"`
	Status       map[string]any  `json:"status"`
	Turns        []turnObj       `json:"turns"`
	Raw          json.RawMessage `json:"-"`
}

type turnObj struct {
	ID     string           `json:"id"`
	Status string           `json:"status"`
	Items  []map[string]any `json:"items"`
}

func listThreads(t testing.TB, c *apptest.Client, params map[string]any) ([]threadObj, *string) {
	t.Helper()
	var res struct {
		Data       []threadObj `json:"data"`
		NextCursor *string     `json:"nextCursor"`
	}
	c.Result("thread/list", params, &res)
	return res.Data, res.NextCursor
}

func readThread(t testing.TB, c *apptest.Client, id string, turns bool) threadObj {
	t.Helper()
	var res struct {
		Thread threadObj `json:"thread"`
	}
	c.Result("thread/read", map[string]any{"threadId": id, "includeTurns": turns}, &res)
	return res.Thread
}

func inputTexts(req mockmodel.Request) []string {
	var out []string
	for _, it := range req.Body["input"].([]any) {
		m := it.(map[string]any)
		for _, c := range asSlice(m["content"]) {
			if cm, ok := c.(map[string]any); ok {
				if s, ok := cm["text"].(string); ok {
					out = append(out, m["role"].(string)+":"+s)
				}
			}
		}
	}
	return out
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func TestRolloutRoundTripAcrossRestart(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("Answer one.", 2)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Reasoning("Pondering."), mockmodel.Message("Answer two.", 2)}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("Answer three.", 2)}},
	)
	c1 := apptest.Start(t, apptest.Options{Model: mm})
	c1.Initialize(false)
	tid := c1.StartThread(nil)
	c1.StartTurn(tid, "Question one")
	require.Equal(t, "completed", c1.WaitTurnCompleted()["status"])
	c1.StartTurn(tid, "Question two")
	require.Equal(t, "completed", c1.WaitTurnCompleted()["status"])
	home := c1.Home
	c1.Close()

	// The exact record order the reference writes (simple turn, then a turn with reasoning).
	require.Equal(t, []string{
		"session_meta",
		"event_msg:task_started", "response_item:message:developer", "response_item:message:user", "turn_context",
		"event_msg:thread_settings_applied", // the first turn records the thread's settings, as the reference
		"response_item:message:user", "event_msg:item_completed:UserMessage",
		"event_msg:item_completed:AgentMessage", "response_item:message:assistant",
		"token_usage_record", "event_msg:token_count", "event_msg:task_complete",
		"event_msg:task_started", "turn_context",
		"response_item:message:user", "event_msg:item_completed:UserMessage",
		"event_msg:item_completed:Reasoning", "response_item:reasoning",
		"event_msg:item_completed:AgentMessage", "response_item:message:assistant",
		"token_usage_record", "event_msg:token_count", "event_msg:task_complete",
	}, recordKinds(t, rolloutFile(t, home, tid)))

	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c2.Initialize(false)
	var loaded struct {
		Data []string `json:"data"`
	}
	c2.Result("thread/loaded/list", map[string]any{}, &loaded)
	require.Empty(t, loaded.Data)
	list, next := listThreads(t, c2, map[string]any{})
	require.Nil(t, next)
	require.Len(t, list, 1)
	require.Equal(t, tid, list[0].ID)
	require.Equal(t, "Question one", list[0].Preview)
	require.Equal(t, "notLoaded", list[0].Status["type"])

	read := readThread(t, c2, tid, true)
	require.Equal(t, "notLoaded", read.Status["type"])
	require.Len(t, read.Turns, 2)
	require.Equal(t, "userMessage", read.Turns[1].Items[0]["type"])
	require.Equal(t, "reasoning", read.Turns[1].Items[1]["type"])
	require.Equal(t, "Answer two.", read.Turns[1].Items[2]["text"])
	c2.WaitNotification("deprecationNotice", nil)

	var res struct {
		Thread threadObj `json:"thread"`
		Model  string    `json:"model"`
	}
	c2.Result("thread/resume", map[string]any{"threadId": tid}, &res)
	require.Equal(t, "idle", res.Thread.Status["type"])
	require.Len(t, res.Thread.Turns, 2)
	require.Equal(t, "mock-model", res.Model)
	c2.WaitNotification("thread/status/changed", nil)
	c2.WaitNotification("thread/tokenUsage/updated", nil)

	c2.StartTurn(tid, "Question three")
	require.Equal(t, "completed", c2.WaitTurnCompleted()["status"])
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	texts := inputTexts(reqs[2])
	joined := strings.Join(texts, "\n")
	for _, want := range []string{"user:Question one", "assistant:Answer one.", "user:Question two", "assistant:Answer two.", "user:Question three"} {
		require.Contains(t, joined, want)
	}
	require.Less(t, strings.Index(joined, "Answer two."), strings.Index(joined, "Question three"))
	require.Len(t, readThread(t, c2, tid, true).Turns, 3)
}

// fakeExec is a tool set whose exec_command completes a commandExecution item without running anything.
type fakeExec struct{}

func (fakeExec) Specs() []json.RawMessage {
	return []json.RawMessage{json.RawMessage(`{"type":"function","name":"exec_command","description":"run","strict":false,"parameters":{"type":"object","properties":{}}}`)}
}

func (fakeExec) Call(_ context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Name != "exec_command" {
		return nil, false
	}
	now := time.Now().UnixMilli()
	out, code, dur := "a.txt\n", int32(0), int64(12)
	item := protocol.ThreadItemCommandExecution{ID: call.CallID, Command: "/bin/bash -lc 'ls -la'", Cwd: protocol.AbsolutePathBuf(tc.Settings.Cwd),
		Status: protocol.CommandExecutionStatusCompleted, CommandActions: []protocol.CommandAction{},
		AggregatedOutput: &out, ExitCode: &code, DurationMs: &dur, StartedAtMs: &now}
	tc.ItemStarted(protocol.ThreadItem{Value: item})
	done := time.Now().UnixMilli()
	item.CompletedAtMs = &done
	tc.ItemCompleted(protocol.ThreadItem{Value: item})
	return thread.FunctionOutput(call.CallID, out), true
}

func TestToolTurnRecordOrderAndItemsReadBack(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "ls -la"})}},
		mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("One file.", 1)}},
	)
	// The call starts as its item completes; like a real command it outlasts the response, so its item is
	// recorded after the response's usage (see TestToolCallStartsWhileResponseStreams for the other case).
	// It runs until the response's usage is on disk (a fixed delay raced the stream's end under load).
	var home atomic.Value
	slow := delayedExec{until: func(id string) bool {
		h, _ := home.Load().(string)
		m, _ := filepath.Glob(filepath.Join(h, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
		if h == "" || len(m) != 1 {
			return false
		}
		b, _ := os.ReadFile(m[0])
		return bytes.Contains(b, []byte(`"type":"token_usage_record"`))
	}}
	c := apptest.Start(t, apptest.Options{Model: mm, Tools: func(*thread.Thread, thread.Settings) []thread.ToolSet { return []thread.ToolSet{slow} }})
	home.Store(c.Home)
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "List files")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	path := rolloutFile(t, c.Home, tid)
	require.Equal(t, []string{
		"session_meta",
		"event_msg:task_started", "response_item:message:developer", "response_item:message:user", "turn_context", "event_msg:thread_settings_applied",
		"response_item:message:user", "event_msg:item_completed:UserMessage",
		"response_item:function_call", "token_usage_record",
		"event_msg:item_completed:CommandExecution", "response_item:function_call_output", "event_msg:token_count",
		"event_msg:item_completed:AgentMessage", "response_item:message:assistant",
		"token_usage_record", "event_msg:token_count", "event_msg:task_complete",
	}, recordKinds(t, path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), `"command":["/bin/bash","-lc","ls -la"]`)
	require.Contains(t, string(b), `"history_mode":"paginated"`)

	// Unload, then read back from disk: the command item survives the round trip.
	c.Srv.Threads().Unload(tid)
	read := readThread(t, c, tid, true)
	require.Equal(t, "notLoaded", read.Status["type"])
	require.Len(t, read.Turns, 1)
	items := read.Turns[0].Items
	require.Len(t, items, 3)
	require.Equal(t, "commandExecution", items[1]["type"])
	require.Equal(t, "/bin/bash -lc 'ls -la'", items[1]["command"])
	require.Equal(t, "a.txt\n", items[1]["aggregatedOutput"])
	require.Equal(t, "One file.", items[2]["text"])
}

func TestReadsReferenceFormatFixtures(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("Resumed fine.", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	installFixture(t, c.Home, c.Work, "rollout-2026-11-20T09-00-00-"+fixturePaginatedID+".jsonl")
	installFixture(t, c.Home, c.Work, "rollout-2025-06-01T12-00-00-"+fixtureLegacyID+".jsonl")
	c.Initialize(false)

	list, _ := listThreads(t, c, map[string]any{})
	require.Len(t, list, 2)
	require.Equal(t, fixturePaginatedID, list[0].ID, "newest first")
	require.Equal(t, "List files", list[0].Preview)
	require.Equal(t, fixtureLegacyID, list[1].ID)
	require.Equal(t, "hello old", list[1].Preview)

	read := readThread(t, c, fixturePaginatedID, true)
	require.Len(t, read.Turns, 3)
	require.Equal(t, []string{"completed", "interrupted", "failed"}, []string{read.Turns[0].Status, read.Turns[1].Status, read.Turns[2].Status})
	var types []string
	for _, it := range read.Turns[0].Items {
		types = append(types, it["type"].(string))
	}
	require.Equal(t, []string{"userMessage", "commandExecution", "agentMessage"}, types)
	require.Equal(t, "One file: a.txt", read.Turns[0].Items[2]["text"])

	legacy := readThread(t, c, fixtureLegacyID, true)
	require.Equal(t, "Old chat", *legacy.Name)
	require.GreaterOrEqual(t, len(legacy.Turns), 2)

	var res struct {
		Thread threadObj `json:"thread"`
	}
	c.Result("thread/resume", map[string]any{"threadId": fixturePaginatedID}, &res)
	require.Len(t, res.Thread.Turns, 3)
	c.StartTurn(fixturePaginatedID, "Carry on")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	joined := strings.Join(inputTexts(mm.ResponseRequests()[0]), "\n")
	require.Contains(t, joined, "user:List files")
	require.Contains(t, joined, "assistant:One file: a.txt")
	require.Contains(t, joined, "user:Carry on")
	require.Len(t, readThread(t, c, fixturePaginatedID, true).Turns, 4)
}

func TestTornLastLineIsSkippedAndAppendsContinue(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("After the tear.", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	path := installFixture(t, c.Home, c.Work, "rollout-2026-11-20T09-00-00-"+fixturePaginatedID+".jsonl")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(`{"timestamp":"2026-11-20T09:00:07.000Z","ordinal":18,"type":"event_msg","payload":{"type":"task_sta`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	c.Initialize(false)

	require.Len(t, readThread(t, c, fixturePaginatedID, true).Turns, 3)
	c.Result("thread/resume", map[string]any{"threadId": fixturePaginatedID}, nil)
	c.StartTurn(fixturePaginatedID, "Next")
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	c.Srv.Threads().Unload(fixturePaginatedID)
	read := readThread(t, c, fixturePaginatedID, true)
	require.Len(t, read.Turns, 4)
	require.Equal(t, "After the tear.", read.Turns[3].Items[1]["text"])
	// Every line after the torn one is whole JSON.
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for _, ln := range lines[19:] {
		require.True(t, json.Valid([]byte(ln)), "line %q", ln)
	}
}

// writeRollout writes a minimal reference-format rollout with the given creation time.
func writeRollout(t testing.TB, home, id string, created time.Time, preview string) string {
	dir := filepath.Join(home, "sessions", created.UTC().Format("2006"), created.UTC().Format("01"), created.UTC().Format("02"))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	ts := created.UTC().Format("2006-01-02T15:04:05.000Z")
	path := filepath.Join(dir, "rollout-"+created.UTC().Format("2006-01-02T15-04-05")+"-"+id+".jsonl")
	var b strings.Builder
	fmt.Fprintf(&b, `{"timestamp":%q,"ordinal":0,"type":"session_meta","payload":{"id":%q,"session_id":%q,"timestamp":%q,"cwd":"/w","originator":"bench","cli_version":"0.169.0","source":"vscode","model_provider":"mock","history_mode":"paginated"}}`+"\n", ts, id, id, ts)
	fmt.Fprintf(&b, `{"timestamp":%q,"ordinal":1,"type":"event_msg","payload":{"type":"task_started","turn_id":"t1","started_at":%d}}`+"\n", ts, created.Unix())
	fmt.Fprintf(&b, `{"timestamp":%q,"ordinal":2,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}}`+"\n", ts, preview)
	fmt.Fprintf(&b, `{"timestamp":%q,"ordinal":3,"type":"event_msg","payload":{"type":"item_completed","thread_id":%q,"turn_id":"t1","item":{"type":"UserMessage","id":"u1","content":[{"type":"text","text":%q,"text_elements":[]}]}}}`+"\n", ts, id, preview)
	fmt.Fprintf(&b, `{"timestamp":%q,"ordinal":4,"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":null}}`+"\n", ts)
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	mt := created
	require.NoError(t, os.Chtimes(path, mt, mt))
	return path
}

func TestThreadListPaginationWithEqualTimestamps(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	same := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	want := map[string]bool{}
	for i := 0; i < 7; i++ {
		id := fmt.Sprintf("01b00000-0000-7000-8000-0000000001%02d", i)
		writeRollout(t, c.Home, id, same, fmt.Sprintf("thread %d", i))
		want[id] = true
	}
	c.Initialize(false)
	for _, tc := range []struct{ key, dir string }{{"created_at", "desc"}, {"created_at", "asc"}, {"updated_at", "desc"}, {"updated_at", "asc"}} {
		t.Run(tc.key+"_"+tc.dir, func(t *testing.T) {
			seen := map[string]bool{}
			var order []string
			var cursor any
			for pages := 0; pages < 10; pages++ {
				params := map[string]any{"limit": 3, "sortKey": tc.key, "sortDirection": tc.dir}
				if cursor != nil {
					params["cursor"] = cursor
				}
				data, next := listThreads(t, c, params)
				require.LessOrEqual(t, len(data), 3)
				for _, th := range data {
					require.False(t, seen[th.ID], "duplicate %s", th.ID)
					seen[th.ID] = true
					order = append(order, th.ID)
				}
				if next == nil {
					break
				}
				cursor = *next
			}
			require.Equal(t, want, seen)
			for i := 1; i < len(order); i++ {
				if tc.dir == "asc" {
					require.Less(t, order[i-1], order[i], "ties broken by id")
				} else {
					require.Greater(t, order[i-1], order[i], "ties broken by id")
				}
			}
		})
	}
	m := c.Request("thread/list", map[string]any{"cursor": "not-a-cursor"})
	require.NotNil(t, m.Error)
	require.Equal(t, -32600, m.Error.Code)
}
