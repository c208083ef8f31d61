package server_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/compaction"
	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// inputLabels labels every item of a model request's input, in order (the parts of a message joined by "+"),
// for comparison with what codex-cli 0.169.0 sent on the same mock: "base" (the first developer message), "perms(<sandbox>)",
// "env(<tags>;ro|ww)" (the environment context's tags, and whether its filesystem has a writable entry),
// "model_switch", "model_instructions", "collab" ("collab(empty)"), "role(tagged|bare)", "ma_mode",
// "summary", "compact_prompt", "[<item type>]" for non-messages, else role:text. Texts in
// our own wording are compared by what they tell, the rest as they are.
func inputLabels(body map[string]any) []string {
	var out []string
	input := body["input"].([]any)
	if len(input) > 0 && input[0].(map[string]any)["type"] == "additional_tools" {
		input = input[1:] // a code-mode model's tools lead the input (see TestCodeModeFirstRequest)
	}
	for n, raw := range input {
		it := raw.(map[string]any)
		if it["type"] != "message" {
			out = append(out, "["+it["type"].(string)+"]")
			continue
		}
		role := it["role"].(string)
		var parts []string
		for _, part := range it["content"].([]any) {
			text, _ := part.(map[string]any)["text"].(string)
			parts = append(parts, inputLabel(n, role, text))
		}
		out = append(out, strings.Join(parts, "+"))
	}
	return out
}

var (
	sandboxLine = regexp.MustCompile(`(?m)^Sandbox: ([a-z-]+)`)
	envTag      = regexp.MustCompile(`(?m)^  <([a-z_]+)>`)
)

func inputLabel(n int, role, text string) string {
	switch {
	case n == 0 && role == "developer":
		return "base"
	case strings.HasPrefix(text, "<permissions instructions>"):
		if m := sandboxLine.FindStringSubmatch(text); m != nil {
			return "perms(" + m[1] + ")"
		}
		return "perms(?)"
	case strings.HasPrefix(text, "<environment_context>"):
		var tags []string
		for _, m := range envTag.FindAllStringSubmatch(text, -1) {
			tags = append(tags, m[1])
		}
		fs := "ro"
		if strings.Contains(text, `access="write"`) {
			fs = "ww"
		}
		return "env(" + strings.Join(tags, ",") + ";" + fs + ")"
	case strings.HasPrefix(text, "<model_switch>"):
		return "model_switch"
	case strings.HasPrefix(text, "<model_instructions>"):
		return "model_instructions"
	case text == "<collaboration_mode></collaboration_mode>":
		return "collab(empty)"
	case strings.HasPrefix(text, "<collaboration_mode>"):
		return "collab"
	case strings.HasPrefix(text, "<multi_agent_role>"):
		return "role(tagged)"
	case strings.HasPrefix(text, "You are `/root`"):
		return "role(bare)"
	case strings.HasPrefix(text, "<multi_agent_mode>"):
		return "ma_mode"
	case strings.HasPrefix(text, compaction.SummaryPrefix):
		return "summary"
	case text == compaction.Prompt:
		return "compact_prompt"
	}
	return role + ":" + text
}

// compactionStep is one step of a TestCompactionContextMatchesReference case.
type compactionStep struct {
	turn     string         // a turn with this prompt
	override map[string]any // its turn/start overrides
	compact  bool           // thread/compact/start
	resume   bool           // a new server resumes the thread
}

// TestCompactionContextMatchesReference: every model request of a thread that is compacted (by
// thread/compact/start, or automatically before a turn or in the middle of one) and then resumed by a new
// server carries the input codex-cli 0.169.0 sent in the same steps on the same mock (its bundled skills aside):
// the replacement history is the user's messages with a fresh initial context (the settings as they are at
// the compaction) before the last of them, then the summary; no update told before the compaction is
// repeated after it.
func TestCompactionContextMatchesReference(t *testing.T) {
	const (
		fullRO   = "env(cwd,shell,current_date,timezone,filesystem;ro)"
		fullWW   = "env(cwd,shell,current_date,timezone,filesystem;ww)"
		updateRO = "env(current_date,timezone,filesystem;ro)"
		updateWW = "env(current_date,timezone,filesystem;ww)"
	)
	ww := map[string]any{"sandboxPolicy": map[string]any{"type": "workspaceWrite"}}
	big := map[string]any{"input_tokens": 5000, "output_tokens": 20, "total_tokens": 5020}
	reply := func(text string) mockmodel.Response { return okReply(text) }
	for _, tc := range []struct {
		name    string
		config  string
		replies []mockmodel.Response
		steps   []compactionStep
		want    [][]string // the labels of every request, as the reference's
	}{
		{"plain", "", []mockmodel.Response{reply("A1"), reply("SUMMARY1"), reply("A2"), reply("A3")},
			[]compactionStep{{turn: "first"}, {compact: true}, {turn: "second"}, {resume: true}, {turn: "third"}},
			[][]string{
				{"base", "perms(read-only)", fullRO, "user:first"},
				{"base", "perms(read-only)", fullRO, "user:first", "assistant:A1", "compact_prompt"},
				{"base", "perms(read-only)", fullRO, "user:first", "summary", "user:second"},
				{"base", "perms(read-only)", fullRO, "user:first", "summary", "user:second", "assistant:A2", "user:third"},
			}},
		{"after a sandbox change", "", []mockmodel.Response{reply("A1"), reply("A2"), reply("SUMMARY1"), reply("A3"), reply("A4")},
			[]compactionStep{{turn: "first"}, {turn: "second", override: ww}, {compact: true}, {turn: "third"}, {resume: true}, {turn: "fourth"}},
			[][]string{
				{"base", "perms(read-only)", fullRO, "user:first"},
				{"base", "perms(read-only)", fullRO, "user:first", "assistant:A1", "perms(workspace-write)", updateWW, "user:second"},
				{"base", "perms(read-only)", fullRO, "user:first", "assistant:A1", "perms(workspace-write)", updateWW, "user:second", "assistant:A2", "compact_prompt"},
				{"base", "user:first", "perms(workspace-write)", fullWW, "user:second", "summary", "user:third"},
				// the resumed thread's sandbox is the configuration's again
				{"base", "user:first", "perms(workspace-write)", fullWW, "user:second", "summary", "user:third", "assistant:A3", "perms(read-only)", updateRO, "user:fourth"},
			}},
		{"after a model change", "", []mockmodel.Response{reply("A1"), reply("A2"), reply("SUMMARY1"), reply("A3"), reply("A4")},
			[]compactionStep{{turn: "first"}, {turn: "second", override: map[string]any{"model": "gpt-5.4"}}, {compact: true}, {turn: "third"}, {resume: true}, {turn: "fourth"}},
			[][]string{
				{"base", "perms(read-only)", fullRO, "user:first"},
				{"base", "perms(read-only)", fullRO, "user:first", "assistant:A1", "model_switch", "user:second"},
				{"base", "perms(read-only)", fullRO, "user:first", "assistant:A1", "model_switch", "user:second", "assistant:A2", "compact_prompt"},
				{"base", "user:first", "perms(read-only)", fullRO, "user:second", "summary", "user:third"},
				{"base", "user:first", "perms(read-only)", fullRO, "user:second", "summary", "user:third", "assistant:A3", "user:fourth"},
			}},
		{"model and sandbox change after", "", []mockmodel.Response{reply("A1"), reply("SUMMARY1"), reply("A2"), reply("A3")},
			[]compactionStep{{turn: "first"}, {compact: true}, {turn: "second", override: map[string]any{"model": "gpt-5.4", "sandboxPolicy": ww["sandboxPolicy"]}}, {resume: true}, {turn: "third"}},
			[][]string{
				{"base", "perms(read-only)", fullRO, "user:first"},
				{"base", "perms(read-only)", fullRO, "user:first", "assistant:A1", "compact_prompt"},
				{"base", "perms(read-only)", fullRO, "user:first", "summary", "model_switch", "perms(workspace-write)", updateWW, "user:second"},
				{"base", "perms(read-only)", fullRO, "user:first", "summary", "model_switch", "perms(workspace-write)", updateWW, "user:second", "assistant:A2", "perms(read-only)", updateRO, "user:third"},
			}},
		{"twice", "", []mockmodel.Response{reply("A1"), reply("SUMMARY1"), reply("A2"), reply("SUMMARY2"), reply("A3"), reply("A4")},
			[]compactionStep{{turn: "first"}, {compact: true}, {turn: "second"}, {compact: true}, {turn: "third"}, {resume: true}, {turn: "fourth"}},
			[][]string{
				{"base", "perms(read-only)", fullRO, "user:first"},
				{"base", "perms(read-only)", fullRO, "user:first", "assistant:A1", "compact_prompt"},
				{"base", "perms(read-only)", fullRO, "user:first", "summary", "user:second"},
				{"base", "perms(read-only)", fullRO, "user:first", "summary", "user:second", "assistant:A2", "compact_prompt"},
				{"base", "user:first", "perms(read-only)", fullRO, "user:second", "summary", "user:third"},
				{"base", "user:first", "perms(read-only)", fullRO, "user:second", "summary", "user:third", "assistant:A3", "user:fourth"},
			}},
		{"automatic at turn start with a sandbox change", "model_auto_compact_token_limit = 1000",
			[]mockmodel.Response{{Items: []mockmodel.Item{mockmodel.Message("A1", 1)}, Usage: big}, reply("SUMMARY1"), reply("A2"), reply("A3")},
			[]compactionStep{{turn: "first"}, {turn: "second", override: ww}, {resume: true}, {turn: "third"}},
			[][]string{
				{"base", "perms(read-only)", fullRO, "user:first"},
				{"base", "perms(read-only)", fullRO, "user:first", "assistant:A1", "compact_prompt"},
				{"base", "perms(workspace-write)", fullWW, "user:first", "summary", "user:second"},
				{"base", "perms(workspace-write)", fullWW, "user:first", "summary", "user:second", "assistant:A2", "perms(read-only)", updateRO, "user:third"},
			}},
		{"automatic in a turn", "model_auto_compact_token_limit = 1000",
			[]mockmodel.Response{reply("A0"),
				{Items: []mockmodel.Item{mockmodel.FunctionCall("exec_command", "call_1", map[string]any{"cmd": "echo hi"})}, Usage: big},
				reply("SUMMARY1"), reply("A1"), reply("A2"), reply("A3")},
			[]compactionStep{{turn: "zeroth"}, {turn: "first", override: ww}, {turn: "second"}, {resume: true}, {turn: "third"}},
			[][]string{
				{"base", "perms(read-only)", fullRO, "user:zeroth"},
				{"base", "perms(read-only)", fullRO, "user:zeroth", "assistant:A0", "perms(workspace-write)", updateWW, "user:first"},
				{"base", "perms(read-only)", fullRO, "user:zeroth", "assistant:A0", "perms(workspace-write)", updateWW, "user:first", "[function_call]", "[function_call_output]", "compact_prompt"},
				{"base", "user:zeroth", "perms(workspace-write)", fullWW, "user:first", "summary"},
				{"base", "user:zeroth", "perms(workspace-write)", fullWW, "user:first", "summary", "assistant:A1", "user:second"},
				{"base", "user:zeroth", "perms(workspace-write)", fullWW, "user:first", "summary", "assistant:A1", "user:second", "assistant:A2", "perms(read-only)", updateRO, "user:third"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(tc.replies...)
			c := apptest.Start(t, apptest.Options{Model: mm, Config: tc.config})
			c.Initialize(false)
			tid := c.StartThread(nil)
			for _, st := range tc.steps {
				switch {
				case st.compact:
					c.Result("thread/compact/start", map[string]any{"threadId": tid}, nil)
					c.WaitTurnCompleted()
				case st.resume:
					c.Close()
					c = apptest.Start(t, apptest.Options{Model: mm, Config: tc.config, Home: c.Home})
					c.Initialize(false)
					c.Result("thread/resume", map[string]any{"threadId": tid}, nil)
				default:
					params := map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": st.turn}}}
					for k, v := range st.override {
						params[k] = v
					}
					c.Result("turn/start", params, nil)
					c.WaitTurnCompleted()
				}
			}
			reqs := mm.ResponseRequests()
			var got [][]string
			for _, r := range reqs {
				got = append(got, inputLabels(r.Body))
			}
			require.Equal(t, tc.want, got)
		})
	}
}
