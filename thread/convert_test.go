package thread

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

// convertCases is a rollout exercising every item the reader builds, in both history modes, with ordinary and
// odd values.
var convertCases = []string{
	// legacy events
	`{"type":"user_message","message":"hello","images":[],"local_images":[],"text_elements":[]}`,
	`{"type":"user_message","message":"no elements"}`,
	`{"type":"user_message","message":"with elements","text_elements":[{"byte_range":{"start":0,"end":4},"placeholder":"x"}]}`,
	`{"type":"user_message","message":"pic","images":["https://x/y.png"],"local_images":["/tmp/a.png"]}`,
	`{"type":"user_message","message":"bad ` + "\xff" + ` utf8"}`,
	`{"type":"agent_message","message":"answer"}`,
	`{"type":"agent_message","message":"phased","phase":"final_answer"}`,
	`{"type":"agent_message","message":"odd phase","phase":"whatever"}`,
	`{"type":"agent_reasoning","text":"thinking"}`,
	`{"type":"agent_reasoning","text":"more"}`,
	`{"type":"agent_reasoning_raw_content","text":"raw"}`,
	`{"type":"exec_command_end","call_id":"c1","command":["bash","-lc","ls -la"],"cwd":"/w","parsed_cmd":[{"type":"list_files","cmd":"ls -la","path":null}],"aggregated_output":"a\nb","exit_code":0,"duration":{"secs":1,"nanos":5000000},"source":"agent"}`,
	`{"type":"exec_command_end","call_id":"c2","command":["cat","a b"],"cwd":"file:///w","parsed_cmd":[{"type":"read","cmd":"cat 'a b'","name":"a b","path":"/w/a b"},{"type":"search","cmd":"rg x","query":"x","path":"src"},{"type":"noop","cmd":"true"}],"exit_code":2,"process_id":"p1","source":"unified_exec_startup"}`,
	`{"type":"exec_command_end","call_id":"c3","command":[],"cwd":"","parsed_cmd":[],"exit_code":4294967296}`,
	`{"type":"exec_command_end","call_id":"c4","command":["x"],"cwd":"/w","status":"declined"}`,
	`{"type":"patch_apply_end","call_id":"p1","success":true,"changes":{"a.txt":{"add":{"content":"hi"}},"b.txt":{"update":{"unified_diff":"@@","move_path":null}}}}`,
	`{"type":"mcp_tool_call_end","call_id":"m1","invocation":{"server":"s","tool":"t","arguments":{"a":1}},"duration":{"secs":0,"nanos":2000000},"result":{"Ok":{"content":[{"type":"text","text":"ok"}],"isError":false}}}`,
	`{"type":"mcp_tool_call_end","call_id":"m2","invocation":{"server":"s","tool":"t"},"result":{"Err":"boom"}}`,
}

// coreItems are item_completed items of a paginated rollout.
var coreItems = []string{
	`{"type":"UserMessage","id":"u1","content":[{"type":"text","text":"question","text_elements":[]}]}`,
	`{"type":"UserMessage","id":"u2","content":[{"type":"text","text":"q"},{"type":"image","url":"https://x"}],"client_id":"cid"}`,
	`{"type":"UserMessage","id":"u3","content":[]}`,
	`{"type":"UserMessage","id":"u4"}`,
	`{"type":"UserMessage","id":"u5","content":[{"type":"text","text":"elements","text_elements":[{"byteRange":{"start":0,"end":1},"placeholder":null}]}]}`,
	`{"type":"UserMessage","id":"u6","content":[{"type":"text","text":"null elements","text_elements":null}]}`,
	`{"type":"UserMessage","id":"u7","content":"not a list"}`,
	`{"type":"UserMessage","id":"u8","content":[{"type":"text","text":"x","text_elements":[],"extra":1}]}`,
	`{"type":"UserMessage","id":"u9","client_id":7,"content":[]}`,
	`{"type":"AgentMessage","id":"a1","content":[{"type":"Text","text":"ans"},{"type":"Text","text":"wer"}],"phase":"commentary"}`,
	`{"type":"AgentMessage","id":"a2","content":[],"memory_citation":{"entries":[]}}`,
	`{"type":"AgentMessage","id":"a3","phase":3}`,
	`{"type":"Reasoning","id":"r1","summary_text":["s1","s2"],"raw_content":["c"]}`,
	`{"type":"Reasoning","id":"r2","summary_text":["s",1]}`,
	`{"type":"CommandExecution","id":"x1","command":["ls"],"cwd":"file:///w","parsed_cmd":[],"source":"agent","status":"completed","aggregated_output":"out","exit_code":0,"duration":{"secs":0,"nanos":1000000}}`,
	`{"type":"CommandExecution","id":"x2","command":["rg","x"],"cwd":"/w","parsed_cmd":[{"type":"search","cmd":"rg x","query":"x","path":null}],"source":"user_shell","status":"failed","exit_code":1,"process_id":"9"}`,
	`{"type":"CommandExecution","id":"x3","command":["sleep","1"],"cwd":"/w","status":"in_progress"}`,
	`{"type":"McpToolCall","id":"m1","server":"s","tool":"t","status":"completed","arguments":{"q":1},"result":{"content":[]},"duration":{"secs":1,"nanos":0}}`,
	`{"type":"FileChange","id":"f1","status":"completed","changes":[{"path":"a","kind":{"type":"add"},"diff":"x"}]}`,
	`{"type":"WebSearch","id":"w1","query":"go","action":{"type":"search","query":"go"}}`,
	`{"type":"ContextCompaction","id":"cc1"}`,
	`{"type":"Plan","id":"pl1","text":"1. do"}`,
	`{"type":"Plan","id":"pl2","text":null}`,
	`{"type":"SomethingNew","id":"n1","some_field":"v"}`,
	`{"type":"HookPrompt","id":"h1","fragments":[]}`,
}

// writeConvertRollout writes a rollout in the given history mode holding every case, one turn each.
func writeConvertRollout(t *testing.T, dir string, paginated bool) string {
	mode := "legacy"
	if paginated {
		mode = rollout.HistoryModePaginated
	}
	var b strings.Builder
	ts := "2026-01-02T03:04:05.000Z"
	id := "01e00000-0000-7000-8000-c0417e000001"
	fmt.Fprintf(&b, `{"timestamp":%q,"type":"session_meta","payload":{"id":%q,"timestamp":%q,"cwd":"/w","originator":"t","cli_version":"0.169.0","source":"vscode","history_mode":%q}}`+"\n", ts, id, ts, mode)
	turn := 0
	event := func(payload string) {
		fmt.Fprintf(&b, `{"timestamp":%q,"type":"event_msg","payload":%s}`+"\n", ts, payload)
	}
	if paginated {
		for _, it := range coreItems {
			turn++
			event(fmt.Sprintf(`{"type":"task_started","turn_id":"t%d","started_at":%d}`, turn, 1700000000+turn))
			event(fmt.Sprintf(`{"type":"item_completed","thread_id":%q,"turn_id":"t%d","item":%s,"started_at_ms":%d,"completed_at_ms":null}`, id, turn, it, 1700000000000+turn))
			event(fmt.Sprintf(`{"type":"task_complete","turn_id":"t%d","completed_at":%d,"duration_ms":12}`, turn, 1700000001+turn))
		}
		// A failed turn (turn error) and an interrupted one.
		event(`{"type":"task_started","turn_id":"tf","started_at":1}`)
		event(`{"type":"task_complete","turn_id":"tf","error":{"message":"boom","codex_error_info":"usage_limit_exceeded"}}`)
		event(`{"type":"task_started","turn_id":"ti","root_turn_id":"root"}`)
	} else {
		for _, c := range convertCases {
			event(c)
		}
	}
	p := filepath.Join(dir, "rollout-"+mode+".jsonl")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	return p
}

// TestConvertTurnsMatchesRoundTrip checks that the direct conversion gives exactly what the JSON round trip gives,
// for every item and turn the reader builds from the cases, the repository's rollout fixtures and odd maps.
func TestConvertTurnsMatchesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	paths := []string{writeConvertRollout(t, dir, false), writeConvertRollout(t, dir, true)}
	for _, glob := range []string{"../rollout/testdata/*.jsonl", "../server/testdata/*.jsonl"} {
		m, err := filepath.Glob(glob)
		require.NoError(t, err)
		paths = append(paths, m...)
	}
	var turns []rollout.Turn
	for _, p := range paths {
		th, err := rollout.ReadFile(p)
		require.NoError(t, err, p)
		turns = append(turns, th.Turns...)
	}
	odd := []map[string]any{
		{"type": "agentMessage", "id": "x", "text": "t", "phase": nil, "moderation": nil, "memoryCitation": nil,
			"delivery": nil, "questions": nil, "startedAtMs": 1.5, "completedAtMs": nil},
		{"type": "agentMessage", "id": "x", "text": "t", "phase": nil, "moderation": nil, "memoryCitation": nil,
			"delivery": nil, "questions": nil, "startedAtMs": float64(1 << 60), "completedAtMs": nil},
		{"type": "agentMessage", "id": "x", "Text": "t", "phase": nil, "moderation": nil, "memoryCitation": nil,
			"delivery": nil, "questions": nil, "startedAtMs": nil, "completedAtMs": nil},
		{"type": "agentMessage", "id": "bad \xff", "text": "t", "phase": nil, "moderation": nil, "memoryCitation": nil,
			"delivery": nil, "questions": nil, "startedAtMs": nil, "completedAtMs": nil},
		{"type": "agentMessage", "id": "x", "text": "t", "phase": nil, "moderation": nil, "memoryCitation": nil,
			"delivery": nil, "questions": []any{}, "startedAtMs": int64(5), "completedAtMs": 7},
		{"type": "agentMessage", "id": 3, "text": "t"},
		{"type": "reasoning", "id": "r", "summary": nil, "content": []any{}, "startedAtMs": nil, "completedAtMs": nil},
		{"type": "contextCompaction", "id": "c", "startedAtMs": nil, "completedAtMs": nil, "extra": true},
		{"id": "no type", "startedAtMs": nil, "completedAtMs": nil},
	}
	turns = append(turns, rollout.Turn{ID: "odd", ItemsView: "full", Status: "completed", Items: odd},
		rollout.Turn{ID: "empty view", Status: "inProgress"})

	quick := 0
	for _, rt := range turns {
		want, wantOK := roundTripTurn(rt)
		if got, ok := quickTurn(rt); ok {
			require.True(t, wantOK, rt.ID)
			require.Equal(t, want, got, rt.ID)
		}
		for _, it := range rt.Items {
			want, wantOK := roundTripItem(it)
			got, ok := quickItem(it)
			if !ok {
				continue
			}
			quick++
			require.True(t, wantOK, "%v", it)
			require.Equal(t, want, got, "%v", it)
			wb, err := json.Marshal(want)
			require.NoError(t, err)
			gb, err := json.Marshal(got)
			require.NoError(t, err)
			require.Equal(t, string(wb), string(gb))
		}
	}
	require.Greater(t, quick, 20, "the direct conversion was hardly used")

	// And ConvertTurns as a whole equals converting everything through JSON.
	got := ConvertTurns(turns)
	var want []protocol.Turn
	for _, rt := range turns {
		pt, ok := roundTripTurn(rt)
		if !ok {
			continue
		}
		pt.Items = make([]protocol.ThreadItem, 0, len(rt.Items))
		for _, it := range rt.Items {
			if ti, ok := roundTripItem(it); ok {
				pt.Items = append(pt.Items, ti)
			}
		}
		if pt.ItemsView == nil {
			pt.ItemsView = ptr(protocol.TurnItemsViewFull)
		}
		want = append(want, pt)
	}
	require.Equal(t, want, got)
}
