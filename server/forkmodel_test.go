package server_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// TestForkStartsOnConfigSettings: like the reference, thread/fork starts the fork on config.toml's model,
// reasoning effort and service tier (or its own parameters), not the parent's, even when the parent recorded
// other settings (thread_settings_applied) or is not loaded; the approval policy is the parent's and the sandbox
// follows the resume rule (workspace-write gives way to config.toml's, full access is kept).
func TestForkStartsOnConfigSettings(t *testing.T) {
	type want struct {
		model, effort, tier, approval, sandbox string
		reqEffort                              any // the request's reasoning.effort (nil: none)
	}
	for _, tc := range []struct {
		name    string
		config  string // config.toml text after the mock defaults
		noModel bool   // config.toml sets no model
		sandbox string // the parent's
		update  map[string]any
		restart bool
		ephem   bool
		fork    map[string]any
		want    want
	}{
		{name: "config model", want: want{"mock-model", "<nil>", "<nil>", "on-request", "readOnly", nil}},
		{name: "config effort and tier", config: "model_reasoning_effort = \"low\"\nservice_tier = \"flex\"",
			want: want{"mock-model", "low", "flex", "on-request", "readOnly", "low"}},
		{name: "no config model", noModel: true, want: want{"gpt-6.1-sol", "<nil>", "<nil>", "on-request", "readOnly", "low"}},
		{name: "fork overrides", fork: map[string]any{"model": "fork-model", "serviceTier": "flex", "approvalPolicy": "never"},
			want: want{"fork-model", "<nil>", "flex", "never", "readOnly", nil}},
		{name: "settings recorded after the turn", update: map[string]any{"model": "updated-model", "effort": "minimal"},
			want: want{"mock-model", "<nil>", "<nil>", "on-request", "readOnly", nil}},
		{name: "parent not loaded", restart: true, config: `model_reasoning_effort = "low"`,
			want: want{"mock-model", "low", "<nil>", "on-request", "readOnly", "low"}},
		{name: "full access kept", sandbox: "danger-full-access", want: want{"mock-model", "<nil>", "<nil>", "on-request", "dangerFullAccess", nil}},
		{name: "ephemeral", ephem: true, want: want{"mock-model", "<nil>", "<nil>", "on-request", "readOnly", nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			opts := apptest.Options{Model: mm, Config: tc.config}
			if tc.noModel {
				opts.Raw = true
				opts.Config = fmt.Sprintf("model_provider = \"mock\"\napproval_policy = \"never\"\nsandbox_mode = \"read-only\"\n\n"+
					"[model_providers.mock]\nname = \"Mock\"\nbase_url = %q\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n", mm.URL())
			}
			c := apptest.Start(t, opts)
			c.Initialize(true)
			sandbox := tc.sandbox
			if sandbox == "" {
				sandbox = "workspace-write"
			}
			id := c.StartThread(map[string]any{"model": "parent-model", "serviceTier": "flex", "personality": "pragmatic",
				"approvalPolicy": "on-request", "sandbox": sandbox})
			b := turnBody(t, c, id, map[string]any{"effort": "high"})
			require.Equal(t, "parent-model", b["model"])
			if tc.update != nil {
				params := map[string]any{"threadId": id}
				for k, v := range tc.update {
					params[k] = v
				}
				c.Result("thread/settings/update", params, nil)
				require.Equal(t, tc.update["model"], turnBody(t, c, id, nil)["model"])
			}
			if tc.restart {
				home := c.Home
				c.Close()
				opts.Home = home
				c = apptest.Start(t, opts)
				c.Initialize(true)
			}
			params := map[string]any{"threadId": id}
			if tc.ephem {
				params["ephemeral"], params["excludeTurns"] = true, true
			}
			for k, v := range tc.fork {
				params[k] = v
			}
			var fk metaResponse
			c.Result("thread/fork", params, &fk)
			got := want{fk.Model, str(fk.ReasoningEffort), str(fk.ServiceTier), fk.ApprovalPolicy, fk.Sandbox.Type, nil}
			b = turnBody(t, c, fk.Thread.ID, nil)
			got.reqEffort = b["reasoning"].(map[string]any)["effort"]
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.want.model, b["model"])
			if tc.want.tier == "<nil>" {
				require.NotContains(t, b, "service_tier")
			} else {
				require.Equal(t, tc.want.tier, b["service_tier"])
			}
		})
	}
}
