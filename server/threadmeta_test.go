package server_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// turnBody runs one turn with turn/start params extra and returns the body of the model request it made.
func turnBody(t *testing.T, c *apptest.Client, id string, extra map[string]any) map[string]any {
	t.Helper()
	c.Model.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	n := len(c.Model.ResponseRequests())
	params := map[string]any{"threadId": id, "input": []any{map[string]any{"type": "text", "text": "go"}}}
	for k, v := range extra {
		params[k] = v
	}
	c.Result("turn/start", params, nil)
	require.Equal(t, "completed", c.WaitTurnCompleted()["status"])
	reqs := c.Model.ResponseRequests()
	require.Len(t, reqs, n+1)
	return reqs[n].Body
}

// modelInstructions lists the developer messages of a request that replace the base instructions.
func modelInstructions(body map[string]any) []string {
	var out []string
	for _, d := range developerTexts(body) {
		if strings.HasPrefix(d, "<model_instructions>") {
			out = append(out, d)
		}
	}
	return out
}

// str renders an optional string ("<nil>" for none), so a missing value fails a comparison instead of panicking.
func str(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

type metaResponse struct {
	ServiceTier     *string `json:"serviceTier"`
	Model           string  `json:"model"`
	ReasoningEffort *string `json:"reasoningEffort"`
	ApprovalPolicy  string  `json:"approvalPolicy"`
	Sandbox         struct {
		Type string `json:"type"`
	} `json:"sandbox"`
	Thread struct {
		ID string `json:"id"`
	} `json:"thread"`
}

// TestServiceTierSentToModel: the thread's tier goes out as service_tier, as the reference sends it ("fast" is
// "priority"; serviceTierForTurn applies to one turn; a null tier asks for standard speed, reported "default"; a
// tier the model does not advertise is omitted, with the reference's warning).
func TestServiceTierSentToModel(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	var st metaResponse
	c.Result("thread/start", map[string]any{"cwd": c.Work, "model": "gpt-6.1-sol", "serviceTier": "fast"}, &st)
	id := st.Thread.ID
	require.Equal(t, "priority", str(st.ServiceTier))
	require.Equal(t, "priority", turnBody(t, c, id, nil)["service_tier"])

	c.Result("thread/settings/update", map[string]any{"threadId": id, "serviceTier": "flex"}, nil)
	require.Equal(t, "flex", turnBody(t, c, id, nil)["service_tier"])
	require.NotContains(t, turnBody(t, c, id, map[string]any{"serviceTierForTurn": "default"}), "service_tier")
	require.Equal(t, "priority", turnBody(t, c, id, map[string]any{"serviceTierForTurn": "priority"})["service_tier"])
	require.Equal(t, "flex", turnBody(t, c, id, nil)["service_tier"], "serviceTierForTurn leaves the thread's tier")
	require.Equal(t, "priority", turnBody(t, c, id, map[string]any{"serviceTier": "fast"})["service_tier"])

	c.Result("thread/settings/update", map[string]any{"threadId": id, "serviceTier": nil}, nil)
	n := c.WaitNotification("thread/settings/updated", func(p json.RawMessage) bool { return strings.Contains(string(p), `"serviceTier":"default"`) })
	require.Contains(t, string(n.Params), id)
	require.NotContains(t, turnBody(t, c, id, nil), "service_tier")

	// mock-model advertises no tier: priority is dropped (flex is accepted for every model).
	var mock metaResponse
	c.Result("thread/start", map[string]any{"cwd": c.Work, "serviceTier": "fast"}, &mock)
	require.Nil(t, mock.ServiceTier)
	w := c.WaitNotification("warning", threadIDIs(mock.Thread.ID))
	require.Contains(t, string(w.Params), "Configured service tier `priority` is not advertised as supported for model `mock-model` and will be omitted from requests.")
	require.NotContains(t, turnBody(t, c, mock.Thread.ID, nil), "service_tier")
	c.Result("thread/start", map[string]any{"cwd": c.Work, "serviceTier": "flex"}, &mock)
	require.Equal(t, "flex", str(mock.ServiceTier))
	require.Equal(t, "flex", turnBody(t, c, mock.Thread.ID, nil)["service_tier"])
}

// TestServiceTierFromConfig: config.toml's service_tier is a new thread's tier.
func TestServiceTierFromConfig(t *testing.T) {
	c := apptest.Start(t, apptest.Options{Config: `service_tier = "flex"`})
	c.Initialize(false)
	var st metaResponse
	c.Result("thread/start", map[string]any{"cwd": c.Work}, &st)
	require.Equal(t, "flex", str(st.ServiceTier))
	require.Equal(t, "flex", turnBody(t, c, st.Thread.ID, nil)["service_tier"])
}

// TestPersonalityChangesInstructions: personality "none" leaves the personality out of a catalogue model's base
// instructions; a later change gives the model its new instructions in a <model_instructions> developer message
// (friendly and pragmatic are the same), the base message staying first and unchanged, as the reference does.
// A model without catalogue metadata ignores the personality.
func TestPersonalityChangesInstructions(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	id := c.StartThread(map[string]any{"model": "gpt-6.1-sol", "personality": "none"})
	b := turnBody(t, c, id, nil)
	base := developerTexts(b)[0]
	require.NotContains(t, base, "# Personality")
	require.Empty(t, modelInstructions(b))

	c.Result("thread/settings/update", map[string]any{"threadId": id, "personality": "friendly"}, nil)
	b = turnBody(t, c, id, nil)
	require.Equal(t, base, developerTexts(b)[0])
	mi := modelInstructions(b)
	require.Len(t, mi, 1)
	require.Contains(t, mi[0], "# Personality")
	require.Contains(t, mi[0], base, "the replacement is the base with the personality")

	b = turnBody(t, c, id, map[string]any{"personality": "pragmatic"})
	require.Len(t, modelInstructions(b), 1, "pragmatic selects the same instructions: nothing new to tell")
	b = turnBody(t, c, id, map[string]any{"personality": "none"})
	mi = modelInstructions(b)
	require.Len(t, mi, 2)
	require.NotContains(t, mi[1], "# Personality")

	def := c.StartThread(map[string]any{"model": "gpt-6.1-sol"})
	require.Contains(t, developerTexts(turnBody(t, c, def, nil))[0], "# Personality", "the default personality")

	mock := c.StartThread(map[string]any{"personality": "none"})
	b = turnBody(t, c, mock, nil)
	c.Result("thread/settings/update", map[string]any{"threadId": mock, "personality": "friendly"}, nil)
	b2 := turnBody(t, c, mock, nil)
	require.Equal(t, developerTexts(b)[0], developerTexts(b2)[0])
	require.Empty(t, modelInstructions(b2))
}

// TestResumeAppliesStoredSettings: a resume without overrides restores the thread's model, effort, approval
// policy, service tier and personality from its rollout (a workspace-write sandbox gives way to config.toml's,
// as in the reference); explicit resume parameters win.
func TestResumeAppliesStoredSettings(t *testing.T) {
	mm := mockmodel.New(t)
	c1 := apptest.Start(t, apptest.Options{Model: mm})
	c1.Initialize(true)
	id := c1.StartThread(map[string]any{"model": "gpt-6-luna", "serviceTier": "flex", "personality": "none",
		"approvalPolicy": "on-request", "sandbox": "workspace-write"})
	b := turnBody(t, c1, id, map[string]any{"effort": "high"})
	require.Equal(t, "flex", b["service_tier"])
	base := developerTexts(b)[0]
	require.NotContains(t, base, "# Personality")
	home := c1.Home
	c1.Close()

	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c2.Initialize(true)
	var rs metaResponse
	mark := c2.Mark()
	c2.Result("thread/resume", map[string]any{"threadId": id}, &rs)
	for _, m := range c2.Since(mark) {
		require.NotEqual(t, "warning", m.Method, "the recorded model: no warning")
	}
	require.Equal(t, "gpt-6-luna", rs.Model)
	require.Equal(t, "flex", str(rs.ServiceTier))
	require.Equal(t, "high", str(rs.ReasoningEffort))
	require.Equal(t, "on-request", rs.ApprovalPolicy)
	require.Equal(t, "readOnly", rs.Sandbox.Type, "config.toml's sandbox, as the reference")
	b = turnBody(t, c2, id, nil)
	require.Equal(t, "flex", b["service_tier"])
	require.Equal(t, "high", b["reasoning"].(map[string]any)["effort"])
	require.Equal(t, base, developerTexts(b)[0])
	require.Empty(t, modelInstructions(b), "the personality is still none: nothing to tell")
	c2.Close()

	c3 := apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c3.Initialize(true)
	mark = c3.Mark()
	c3.Result("thread/resume", map[string]any{"threadId": id, "model": "gpt-6.1-sol", "serviceTier": "fast", "personality": "friendly"}, &rs)
	var order []string
	for _, m := range c3.Since(mark) {
		switch {
		case m.Method == "warning":
			require.Contains(t, string(m.Params), "This session was recorded with model `gpt-6-luna` but is resuming with `gpt-6.1-sol`. "+
				"Consider switching back to `gpt-6-luna` as it may affect Codex performance.")
			order = append(order, m.Method)
		case m.Method == "thread/status/changed", m.Method == "" && m.Result != nil:
			order = append(order, m.Method)
		}
	}
	require.Equal(t, []string{"warning", "thread/status/changed", ""}, order, "the warning, then the status, then the answer (as the reference)")
	require.Equal(t, "priority", str(rs.ServiceTier))
	require.Nil(t, rs.ReasoningEffort, "another model starts from its own default effort")
	b = turnBody(t, c3, id, nil)
	require.Equal(t, "priority", b["service_tier"])
	require.Equal(t, "low", b["reasoning"].(map[string]any)["effort"])
	mi := modelInstructions(b)
	require.Len(t, mi, 1)
	require.Contains(t, mi[0], "# Personality")
	require.True(t, strings.HasPrefix(mi[0], "<model_instructions>\nThe current model is gpt-6.1-sol.\n"),
		"another catalogue model than the last turn's is named, as the reference does")

	// A change after the last turn is recorded too, in the reference's record (which it reads back only with a
	// permission profile).
	c3.Result("thread/settings/update", map[string]any{"threadId": id, "serviceTier": "flex"}, nil)
	c3.WaitNotification("thread/settings/updated", threadIDIs(id))
	c3.Close()
	var last map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(must(os.ReadFile(rolloutFile(t, home, id))))), "\n") {
		var rec struct {
			Type    string         `json:"type"`
			Payload map[string]any `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec.Type == "event_msg" && rec.Payload["type"] == "thread_settings_applied" {
			last = rec.Payload["thread_settings"].(map[string]any)
		}
	}
	require.Equal(t, "flex", last["service_tier"])
	require.Equal(t, "gpt-6.1-sol", last["model"])
	require.Equal(t, "friendly", last["personality"])
	require.Equal(t, map[string]any{"type": "managed", "network": "restricted", "file_system": map[string]any{"type": "restricted",
		"entries": []any{map[string]any{"path": map[string]any{"type": "special", "value": map[string]any{"kind": "root"}}, "access": "read"}}}},
		last["permission_profile"])
	c4 := apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c4.Initialize(true)
	c4.Result("thread/resume", map[string]any{"threadId": id}, &rs)
	require.Equal(t, "flex", str(rs.ServiceTier))
	c4.Close()

	// A tier the resumed thread's model does not advertise: null, and the reference's warning before the answer.
	c5 := apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c5.Initialize(true)
	mark = c5.Mark()
	c5.Result("thread/resume", map[string]any{"threadId": id, "model": "mock-model", "serviceTier": "fast"}, &rs)
	require.Nil(t, rs.ServiceTier)
	var warnings []string
	for _, m := range c5.Since(mark) {
		if m.Method == "warning" {
			warnings = append(warnings, string(m.Params))
		}
	}
	require.Len(t, warnings, 2)
	require.Contains(t, warnings[1], "Configured service tier `priority` is not advertised as supported for model `mock-model` and will be omitted from requests.")
}

// TestResumeSandbox: which recorded sandbox a resume keeps, as the reference decides (read-only and
// danger-full-access are restored, workspace-write gives way to config.toml's sandbox_mode).
func TestResumeSandbox(t *testing.T) {
	for _, tc := range []struct{ config, thread, resumed string }{
		{"read-only", "workspace-write", "readOnly"},
		{"danger-full-access", "workspace-write", "dangerFullAccess"},
		{"workspace-write", "read-only", "readOnly"},
		{"workspace-write", "danger-full-access", "dangerFullAccess"},
	} {
		t.Run(tc.config+"/"+tc.thread, func(t *testing.T) {
			mm := mockmodel.New(t)
			c1 := apptest.Start(t, apptest.Options{Model: mm, SandboxMode: tc.config})
			c1.Initialize(false)
			id := c1.StartThread(map[string]any{"sandbox": tc.thread})
			turnBody(t, c1, id, nil)
			home := c1.Home
			c1.Close()
			c2 := apptest.Start(t, apptest.Options{Model: mm, Home: home, SandboxMode: tc.config})
			c2.Initialize(false)
			var rs metaResponse
			c2.Result("thread/resume", map[string]any{"threadId": id}, &rs)
			require.Equal(t, tc.resumed, rs.Sandbox.Type)
		})
	}
}

// TestResumeReadsReferenceThreadSettings: a rollout the reference wrote restores the service tier, personality
// and reasoning summary of its last thread_settings_applied record (its turn_context's summary is not the
// setting), as the reference's own resume does.
func TestResumeReadsReferenceThreadSettings(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	path := installFixture(t, c.Home, c.Work, "rollout-2026-11-20T09-00-00-"+fixturePaginatedID+".jsonl")
	// The record as the reference 0.169.0 wrote it (a thread started with serviceTier flex and personality none).
	tsa := `{"timestamp":"2026-11-20T09:00:07.000Z","ordinal":18,"type":"event_msg","payload":{"type":"thread_settings_applied",` +
		`"thread_id":"` + fixturePaginatedID + `","thread_settings":{"model":"gpt-6.1-sol","model_provider_id":"mock","service_tier":"flex",` +
		`"approval_policy":"never","approvals_reviewer":"user","requested_approvals_reviewer":"user","permission_profile":{"type":"managed",` +
		`"file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"restricted"},` +
		`"cwd":"` + c.Work + `","runtime_workspace_roots":["` + c.Work + `"],"reasoning_summary":"concise","personality":"none",` +
		`"collaboration_mode":{"mode":"default","settings":{"model":"gpt-6.1-sol","reasoning_effort":null,"developer_instructions":null}},"disabled_plugin_ids":[]}}}` + "\n"
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(tsa)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	var rs metaResponse
	c.Result("thread/resume", map[string]any{"threadId": fixturePaginatedID}, &rs)
	require.Equal(t, "gpt-6.1-sol", rs.Model)
	require.Equal(t, "flex", str(rs.ServiceTier))
	b := turnBody(t, c, fixturePaginatedID, nil)
	require.Equal(t, "flex", b["service_tier"])
	require.Equal(t, "concise", b["reasoning"].(map[string]any)["summary"])
	require.Empty(t, modelInstructions(b))
}
