package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// TestCatalogueModelContextMatchesReference: the first request of a thread on a catalogue model, and the
// request after a model change, carry the collaboration-mode and multi-agent messages codex-cli 0.169.0 sent
// with the same configuration on the same mock (labels as inputLabels, a message's parts joined; the
// reference's bundled skills, code-mode tools and deferred-tool notices aside): gpt-6.x models get the Default mode in their initial context; a
// thread started on a multi-agent v2 model gets the agent's role (tagged on gpt-6.x, bare on others) and the
// delegation mode; a model change re-sends the mode when either model has mode instructions (empty on a model
// without) and the role and delegation mode when the role's form changes.
func TestCatalogueModelContextMatchesReference(t *testing.T) {
	const full = "env(cwd,shell,current_date,timezone,filesystem;ro)"
	for _, tc := range []struct {
		name   string
		start  string
		change map[string]any // turn/start overrides of the second turn
		first  []string       // the first request's labels
		second []string       // the labels the second request adds after the first answer
	}{
		{"gpt-6 to gpt-6", "gpt-6.1-sol", map[string]any{"model": "gpt-6-luna"},
			[]string{"base", "perms(read-only)+collab", "role(tagged)", "ma_mode", full, "user:first"},
			[]string{"model_instructions", "collab", "user:second"}},
		{"gpt-6 to an unknown model", "gpt-6-sol", map[string]any{"model": "mock-model"},
			[]string{"base", "perms(read-only)+collab", "role(tagged)", "ma_mode", full, "user:first"},
			[]string{"model_switch", "collab(empty)", "role(bare)", "ma_mode", "user:second"}},
		{"gpt-6 to gpt-6 with a sandbox change", "gpt-6-sol",
			map[string]any{"model": "gpt-6-luna", "sandboxPolicy": map[string]any{"type": "workspaceWrite"}},
			[]string{"base", "perms(read-only)+collab", "role(tagged)", "ma_mode", full, "user:first"},
			[]string{"model_instructions", "perms(workspace-write)+collab", "env(current_date,timezone,filesystem;ww)", "user:second"}},
		{"developer instructions", "gpt-6-sol", map[string]any{"sandboxPolicy": map[string]any{"type": "workspaceWrite"}},
			[]string{"base", "developer:DEVX+perms(read-only)+collab", "role(tagged)", "ma_mode", full, "user:first"},
			[]string{"perms(workspace-write)", "env(current_date,timezone,filesystem;ww)", "user:second"}},
		{"multi-agent v2 gpt-5.6 to gpt-6", "gpt-5.6-sol", map[string]any{"model": "gpt-6-sol"},
			[]string{"base", "perms(read-only)", "role(bare)", "ma_mode", full, "user:first"},
			[]string{"model_instructions", "collab", "role(tagged)", "ma_mode", "user:second"}},
		{"multi-agent v1 gpt-5.6 to gpt-6", "gpt-5.6-luna", map[string]any{"model": "gpt-6-sol"},
			[]string{"base", "perms(read-only)", full, "user:first"},
			[]string{"model_instructions", "collab", "user:second"}},
		{"unknown model to gpt-6", "mock-model", map[string]any{"model": "gpt-6.1-sol"},
			[]string{"base", "perms(read-only)", full, "user:first"},
			[]string{"model_switch", "collab", "user:second"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(okReply("A1"), okReply("A2"))
			c := apptest.Start(t, apptest.Options{Model: mm})
			c.Initialize(false)
			start := map[string]any{"model": tc.start}
			if tc.name == "developer instructions" {
				start["developerInstructions"] = "DEVX"
			}
			tid := c.StartThread(start)
			c.StartTurn(tid, "first")
			c.WaitTurnCompleted()
			params := map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "second"}}}
			for k, v := range tc.change {
				params[k] = v
			}
			c.Result("turn/start", params, nil)
			c.WaitTurnCompleted()
			reqs := mm.ResponseRequests()
			require.Len(t, reqs, 2)
			first := inputLabels(reqs[0].Body)
			require.Equal(t, tc.first, first)
			second := inputLabels(reqs[1].Body)
			require.Equal(t, append(append(first, "assistant:A1"), tc.second...), second)
		})
	}
}

// TestMultiAgentVersionSurvivesResume: a thread started on a multi-agent v1 model keeps v1 after a switch to a
// v2 model and a resume (the turn_context's multi_agent_version, as the reference records it): a later switch
// to another model tells the empty mode and no agent role, as codex-cli 0.169.0 does.
func TestMultiAgentVersionSurvivesResume(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("A1"), okReply("A2"), okReply("A3"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(map[string]any{"model": "gpt-5.6-luna"})
	c.StartTurn(tid, "first")
	c.WaitTurnCompleted()
	c.Result("turn/start", map[string]any{"threadId": tid, "model": "gpt-6-sol",
		"input": []any{map[string]any{"type": "text", "text": "second"}}}, nil)
	c.WaitTurnCompleted()
	c.Close()
	c = apptest.Start(t, apptest.Options{Model: mm, Home: c.Home})
	c.Initialize(false)
	c.Result("thread/resume", map[string]any{"threadId": tid}, nil)
	c.Result("turn/start", map[string]any{"threadId": tid, "model": "mock-model",
		"input": []any{map[string]any{"type": "text", "text": "third"}}}, nil)
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 3)
	require.Equal(t, []string{"base", "perms(read-only)", "env(cwd,shell,current_date,timezone,filesystem;ro)",
		"user:first", "assistant:A1", "model_instructions", "collab", "user:second", "assistant:A2",
		"model_switch", "collab(empty)", "user:third"}, inputLabels(reqs[2].Body))
}
