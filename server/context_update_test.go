package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"

	"github.com/stretchr/testify/require"
)

// envTags matches the child tags of an environment context, one a line.
var envTags = regexp.MustCompile(`(?m)^  <([a-z_]+)>`)

// updateItems labels what a model request adds after the last assistant message of the history: the
// permissions, the model switch, the environment context (with its tags), then the prompt.
func updateItems(body map[string]any) []string {
	var out []string
	for _, text := range contextAfterHistoryTexts(body) {
		switch {
		case strings.HasPrefix(text, "<permissions instructions>"):
			out = append(out, "permissions")
		case strings.HasPrefix(text, "<model_switch>"):
			out = append(out, "model_switch")
		case strings.HasPrefix(text, "<model_instructions>\nThe current model is "):
			line, _, _ := strings.Cut(strings.TrimPrefix(text, "<model_instructions>\nThe current model is "), "\n")
			out = append(out, "model_instructions("+strings.TrimSuffix(line, ".")+")")
		case strings.HasPrefix(text, "<collaboration_mode>"):
			out = append(out, "collaboration_mode")
		case strings.HasPrefix(text, "<environment_context>"):
			var tags []string
			for _, m := range envTags.FindAllStringSubmatch(text, -1) {
				tags = append(tags, m[1])
			}
			out = append(out, "environment("+strings.Join(tags, ",")+")")
		default:
			out = append(out, text)
		}
	}
	return out
}

// contextAfterHistoryTexts is the texts of messagesAfterHistory.
func contextAfterHistoryTexts(body map[string]any) []string {
	var out []string
	for _, m := range messagesAfterHistory(body) {
		out = append(out, messageText(m))
	}
	return out
}

// TestContextAfterMidThreadChange: the second turn of a thread, with one setting changed by turn/start, sends
// the model what codex-cli 0.169.0 sends in the same case (compared on the same mock): the permissions after
// a sandbox or approval change, with an environment context of date, timezone and filesystem when the
// sandbox changed; the whole environment context after a move; the new model's instructions in a
// <model_switch> message after a model change (a <model_instructions> message naming the new model between
// catalogue models, then the collaboration mode between gpt-6.x models); nothing after an effort change.
func TestContextAfterMidThreadChange(t *testing.T) {
	full := "environment(cwd,shell,current_date,timezone,filesystem)"
	update := "environment(current_date,timezone,filesystem)"
	for _, tc := range []struct {
		name     string
		override func(work string) map[string]any
		want     []string
	}{
		{"none", func(string) map[string]any { return nil }, []string{"two"}},
		{"sandbox", func(string) map[string]any {
			return map[string]any{"sandboxPolicy": map[string]any{"type": "readOnly"}}
		},
			[]string{"permissions", update, "two"}},
		{"approval", func(string) map[string]any { return map[string]any{"approvalPolicy": "on-request"} },
			[]string{"permissions", "two"}},
		{"cwd", func(work string) map[string]any { return map[string]any{"cwd": filepath.Join(work, "sub")} },
			[]string{"permissions", full, "two"}},
		{"model", func(string) map[string]any { return map[string]any{"model": "mock-model-2"} },
			[]string{"model_switch", "two"}},
		{"effort", func(string) map[string]any { return map[string]any{"effort": "high"} }, []string{"two"}},
		{"model and sandbox", func(string) map[string]any {
			return map[string]any{"model": "mock-model-2", "sandboxPolicy": map[string]any{"type": "dangerFullAccess"}}
		}, []string{"model_switch", "permissions", update, "two"}},
		{"catalogue models", func(string) map[string]any { return map[string]any{"model": "gpt-6.1-sol"} },
			[]string{"model_instructions(gpt-6.1-sol)", "collaboration_mode", "two"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(okReply("reply one"))
			mm.Enqueue(okReply("reply two"))
			c := apptest.Start(t, apptest.Options{Model: mm})
			c.Initialize(false)
			require.NoError(t, os.Mkdir(filepath.Join(c.Work, "sub"), 0o755))
			start := map[string]any{"sandbox": "workspace-write", "approvalPolicy": "never"}
			if tc.name == "catalogue models" {
				start["model"] = "gpt-6-luna" // the configuration's is unknown
			}
			tid := c.StartThread(start)
			c.StartTurn(tid, "one")
			c.WaitTurnCompleted()
			params := map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "two"}}}
			for k, v := range tc.override(c.Work) {
				params[k] = v
			}
			c.Result("turn/start", params, nil)
			c.WaitTurnCompleted()
			reqs := mm.ResponseRequests()
			require.Len(t, reqs, 2)
			first := updateItems(reqs[0].Body)
			require.Equal(t, []string{full, "one"}, first[len(first)-2:], "the first request ends with the environment context and the prompt")
			require.Equal(t, tc.want, updateItems(reqs[1].Body))
		})
	}
}

// TestModelSwitchGivesTheInstructions: after a model change the model gets the base instructions the thread
// uses (the client's own here), as codex-cli 0.169.0 does, and a later turn on the same model gets nothing new.
func TestModelSwitchGivesTheInstructions(t *testing.T) {
	mm := mockmodel.New(t)
	for i := 0; i < 3; i++ {
		mm.Enqueue(okReply(fmt.Sprint("reply ", i)))
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(map[string]any{"baseInstructions": "Custom base."})
	c.StartTurn(tid, "one")
	c.WaitTurnCompleted()
	c.Result("turn/start", map[string]any{"threadId": tid, "model": "mock-model-2",
		"input": []any{map[string]any{"type": "text", "text": "two"}}}, nil)
	c.WaitTurnCompleted()
	c.StartTurn(tid, "three")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	texts := contextAfterHistoryTexts(reqs[1].Body)
	require.Len(t, texts, 2)
	require.Regexp(t, `(?s)^<model_switch>\n.+\n\nCustom base\.\n</model_switch>$`, texts[0])
	require.Equal(t, []string{"three"}, updateItems(reqs[2].Body))
}

// TestFilesystemPartDescribesTheSandbox: the environment context's <filesystem> part says what the sandbox
// lets commands touch, in the reference's form, with the entries our sandbox keeps read-only.
func TestFilesystemPartDescribesTheSandbox(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("reply one"))
	mm.Enqueue(okReply("reply two"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(map[string]any{"sandbox": "read-only"})
	c.StartTurn(tid, "one")
	c.WaitTurnCompleted()
	extra := filepath.Join(c.Home, "extra")
	c.Result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "two"}},
		"sandboxPolicy": map[string]any{"type": "workspaceWrite", "writableRoots": []any{extra}, "excludeSlashTmp": true}}, nil)
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	first := contextAfterHistoryTexts(reqs[0].Body)
	require.Contains(t, first[len(first)-2], "\n  <filesystem><workspace_roots><root>"+c.Work+`</root></workspace_roots><permission_profile type="managed"><file_system type="restricted"><entry access="read"><special>:root</special></entry></file_system></permission_profile></filesystem>`+"\n</environment_context>")
	second := contextAfterHistoryTexts(reqs[1].Body)
	require.Len(t, second, 3)
	w := c.Work
	require.Equal(t, "<environment_context>\n  <current_date>"+second[1][len("<environment_context>\n  <current_date>"):len("<environment_context>\n  <current_date>")+10]+"</current_date>\n",
		second[1][:len("<environment_context>\n  <current_date>")+10+len("</current_date>\n")])
	require.Contains(t, second[1], "\n  <filesystem><workspace_roots><root>"+w+`</root></workspace_roots><permission_profile type="managed"><file_system type="restricted">`+
		`<entry access="read"><special>:root</special></entry><entry access="write"><path>`+w+`</path></entry>`+
		`<entry access="write"><special>:tmpdir</special></entry><entry access="write"><path>`+extra+`</path></entry>`+
		`<entry access="read"><path>`+w+`/.git</path></entry><entry access="read"><path>`+w+`/.agents</path></entry>`+
		`<entry access="read"><path>`+w+`/.codex</path></entry><entry access="read"><path>`+w+`/.aws</path></entry>`+
		`<entry access="read"><path>`+extra+`/.git</path></entry><entry access="read"><path>`+extra+`/.agents</path></entry>`+
		`<entry access="read"><path>`+extra+`/.codex</path></entry><entry access="read"><path>`+extra+`/.aws</path></entry>`+
		`</file_system></permission_profile></filesystem>`+"\n</environment_context>")
}

// TestResumeElsewhereUnderWorkspaceWrite: a thread resumed in another cwd under workspace-write is told the
// permissions again (they name the cwd as a writable root) before the whole environment context, as
// codex-cli 0.169.0 does; a resume with the same settings tells nothing.
func TestResumeElsewhereUnderWorkspaceWrite(t *testing.T) {
	mm := mockmodel.New(t)
	for i := 0; i < 3; i++ {
		mm.Enqueue(okReply(fmt.Sprint("reply ", i)))
	}
	ws := map[string]any{"sandbox": "workspace-write", "approvalPolicy": "never"}
	c := apptest.Start(t, apptest.Options{Model: mm})
	home := c.Home
	c.Initialize(false)
	require.NoError(t, os.Mkdir(filepath.Join(c.Work, "sub"), 0o755))
	tid := c.StartThread(ws)
	c.StartTurn(tid, "one")
	c.WaitTurnCompleted()
	c.Close()

	resumeTurn := func(extra map[string]any, text string) []string {
		t.Helper()
		c := apptest.Start(t, apptest.Options{Model: mm, Home: home})
		defer c.Close()
		c.Initialize(false)
		params := map[string]any{"threadId": tid}
		for k, v := range ws {
			params[k] = v
		}
		for k, v := range extra {
			params[k] = v
		}
		c.Result("thread/resume", params, nil)
		c.StartTurn(tid, text)
		c.WaitTurnCompleted()
		reqs := mm.ResponseRequests()
		return updateItems(reqs[len(reqs)-1].Body)
	}
	require.Equal(t, []string{"same"}, resumeTurn(nil, "same"))
	require.Equal(t, []string{"permissions", "environment(cwd,shell,current_date,timezone,filesystem)", "moved"},
		resumeTurn(map[string]any{"cwd": filepath.Join(c.Work, "sub")}, "moved"))
}

// TestRolloutRecordsTheUpdateBeforeTurnContext: like codex-cli 0.169.0, a turn's rollout has what the turn
// tells the model of a change before its turn_context, then the prompt.
func TestRolloutRecordsTheUpdateBeforeTurnContext(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("reply one"))
	mm.Enqueue(okReply("reply two"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(map[string]any{"sandbox": "workspace-write"})
	c.StartTurn(tid, "one")
	c.WaitTurnCompleted()
	c.Result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "two"}},
		"sandboxPolicy": map[string]any{"type": "readOnly"}, "model": "mock-model-2"}, nil)
	c.WaitTurnCompleted()
	var seq []string
	for _, line := range strings.Split(strings.TrimSpace(string(must(os.ReadFile(rolloutFile(t, c.Home, tid))))), "\n") {
		var rec struct {
			Type    string `json:"type"`
			Payload struct {
				Type    string `json:"type"`
				Role    string `json:"role"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		switch {
		case rec.Type == "turn_context":
			seq = append(seq, "turn_context")
		case rec.Type == "event_msg" && rec.Payload.Type == "task_started":
			seq = append(seq, "task_started")
		case rec.Type == "response_item" && rec.Payload.Role != "assistant" && len(rec.Payload.Content) > 0:
			text, _, _ := strings.Cut(rec.Payload.Content[0].Text, ">")
			seq = append(seq, rec.Payload.Role+":"+text)
		}
	}
	require.Equal(t, []string{
		"task_started", "developer:<permissions instructions", "user:<environment_context", "turn_context", "user:one",
		"task_started", "developer:<model_switch", "developer:<permissions instructions", "user:<environment_context", "turn_context", "user:two",
	}, seq)
}

// TestRevertKeepsTheModelToldOfChanges: thread/revert drops the reverted turns' updates from the history; the
// next turn tells the model again what differs from what is left (the sandbox changed by the reverted turn
// still applies).
func TestRevertKeepsTheModelToldOfChanges(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("reply one"), okReply("reply two"), okReply("reply three"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(map[string]any{"sandbox": "workspace-write"})
	c.StartTurn(tid, "one")
	c.WaitTurnCompleted()
	var started struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	c.Result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "two"}},
		"sandboxPolicy": map[string]any{"type": "readOnly"}}, &started)
	c.WaitTurnCompleted()
	c.Result("thread/revert", map[string]any{"threadId": tid, "beforeTurnId": started.Turn.ID}, nil)
	c.StartTurn(tid, "three")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	require.NotContains(t, contextAfterHistoryTexts(reqs[2].Body), "two", "the reverted turn is gone")
	require.Equal(t, []string{"permissions", "environment(current_date,timezone,filesystem)", "three"}, updateItems(reqs[2].Body))
}
