package server_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
)

// The official TUI's /permissions picks a built-in permission profile with thread/settings/update's
// `permissions` (":read-only", ":workspace", ":danger-full-access"); thread/start takes one too. The profile
// selects the sandbox and is reported as activePermissionProfile, as the reference does.
func TestPermissionProfiles(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)

	type started struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
		Sandbox                 json.RawMessage `json:"sandbox"`
		ActivePermissionProfile json.RawMessage `json:"activePermissionProfile"`
		ApprovalPolicy          string          `json:"approvalPolicy"`
	}
	for _, tc := range []struct {
		params           map[string]any
		sandbox, profile string
	}{
		// apptest's config.toml sets sandbox_mode: the sandbox comes from it, not from a profile.
		{map[string]any{}, `{"type":"readOnly","networkAccess":false}`, `null`},
		{map[string]any{"sandbox": "workspace-write"}, `{"type":"workspaceWrite","writableRoots":[],"networkAccess":false,"excludeTmpdirEnvVar":false,"excludeSlashTmp":false}`, `null`},
		{map[string]any{"permissions": ":danger-full-access"}, `{"type":"dangerFullAccess"}`, `{"id":":danger-full-access","extends":null}`},
		{map[string]any{"permissions": ":workspace", "approvalPolicy": "never"}, `{"type":"workspaceWrite","writableRoots":[],"networkAccess":false,"excludeTmpdirEnvVar":false,"excludeSlashTmp":false}`, `{"id":":workspace","extends":null}`},
		{map[string]any{"config": map[string]any{"default_permissions": ":workspace"}}, `{"type":"workspaceWrite","writableRoots":[],"networkAccess":false,"excludeTmpdirEnvVar":false,"excludeSlashTmp":false}`, `{"id":":workspace","extends":null}`},
	} {
		var r started
		c.Result("thread/start", tc.params, &r)
		require.JSONEq(t, tc.sandbox, string(r.Sandbox), "%v", tc.params)
		require.JSONEq(t, tc.profile, string(r.ActivePermissionProfile), "%v", tc.params)
	}
	for _, tc := range []struct {
		params map[string]any
		msg    string
	}{
		{map[string]any{"permissions": ":workspace", "sandbox": "read-only"}, "`permissions` cannot be combined with `sandbox`"},
		{map[string]any{"permissions": ":nope"}, "failed to load configuration: default_permissions refers to unknown built-in profile `:nope`"},
		{map[string]any{"permissions": "nope"}, "failed to load configuration: default_permissions requires a `[permissions]` table"},
	} {
		m := c.Request("thread/start", tc.params)
		require.NotNil(t, m.Error, "%v", tc.params)
		require.Equal(t, -32600, m.Error.Code)
		require.Equal(t, tc.msg, m.Error.Message)
	}

	id := c.StartThread(nil)
	type settings struct {
		SandboxPolicy           json.RawMessage `json:"sandboxPolicy"`
		ActivePermissionProfile json.RawMessage `json:"activePermissionProfile"`
		ApprovalPolicy          string          `json:"approvalPolicy"`
		ApprovalsReviewer       string          `json:"approvalsReviewer"`
	}
	updated := func() settings {
		n := c.WaitNotification("thread/settings/updated", threadIDIs(id))
		var v struct {
			ThreadSettings settings `json:"threadSettings"`
		}
		require.NoError(t, json.Unmarshal(n.Params, &v))
		return v.ThreadSettings
	}
	// What the TUI sends for "Approve for me".
	require.JSONEq(t, `{}`, string(c.Result("thread/settings/update", map[string]any{"threadId": id, "permissions": ":workspace",
		"approvalPolicy": "on-request", "approvalsReviewer": "auto_review", "sandboxPolicy": nil}, nil)))
	st := updated()
	require.JSONEq(t, `{"type":"workspaceWrite","writableRoots":[],"networkAccess":false,"excludeTmpdirEnvVar":false,"excludeSlashTmp":false}`, string(st.SandboxPolicy))
	require.JSONEq(t, `{"id":":workspace","extends":null}`, string(st.ActivePermissionProfile))
	require.Equal(t, "auto_review", st.ApprovalsReviewer)

	// "Full Access".
	c.Result("thread/settings/update", map[string]any{"threadId": id, "permissions": ":danger-full-access", "approvalPolicy": "never", "approvalsReviewer": "user"}, nil)
	st = updated()
	require.JSONEq(t, `{"type":"dangerFullAccess"}`, string(st.SandboxPolicy))
	require.JSONEq(t, `{"id":":danger-full-access","extends":null}`, string(st.ActivePermissionProfile))
	require.Equal(t, "never", st.ApprovalPolicy)

	// A sandbox policy replaces the profile; its absent fields read as the reference's defaults.
	c.Result("thread/settings/update", map[string]any{"threadId": id, "sandboxPolicy": map[string]any{"type": "readOnly"}}, nil)
	st = updated()
	require.JSONEq(t, `{"type":"readOnly","networkAccess":false}`, string(st.SandboxPolicy))
	require.JSONEq(t, `null`, string(st.ActivePermissionProfile))

	for _, tc := range []struct {
		params map[string]any
		msg    string
	}{
		{map[string]any{"threadId": id, "permissions": ":workspace", "sandboxPolicy": map[string]any{"type": "readOnly"}}, "`permissions` cannot be combined with `sandboxPolicy`"},
		{map[string]any{"threadId": id, "permissions": ":nope"}, "failed to load configuration: default_permissions refers to unknown built-in profile `:nope`"},
		{map[string]any{"threadId": id, "permissions": ""}, "failed to load configuration: default_permissions requires a `[permissions]` table"},
	} {
		m := c.Request("thread/settings/update", tc.params)
		require.NotNil(t, m.Error, "%v", tc.params)
		require.Equal(t, -32600, m.Error.Code)
		require.Equal(t, tc.msg, m.Error.Message)
	}
}
