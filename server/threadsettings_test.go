package server_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
)

func TestThreadSettingsUpdate(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	id := c.StartThread(nil)

	type settings struct {
		Model             string  `json:"model"`
		Effort            *string `json:"effort"`
		Cwd               string  `json:"cwd"`
		ServiceTier       *string `json:"serviceTier"`
		Personality       *string `json:"personality"`
		ApprovalsReviewer string  `json:"approvalsReviewer"`
		DisabledPluginIDs []string
		CollaborationMode struct {
			Settings struct {
				Model string `json:"model"`
			} `json:"settings"`
		} `json:"collaborationMode"`
	}
	updated := func() settings {
		n := c.WaitNotification("thread/settings/updated", threadIDIs(id))
		var v struct {
			ThreadSettings settings `json:"threadSettings"`
		}
		require.NoError(t, json.Unmarshal(n.Params, &v))
		return v.ThreadSettings
	}

	require.JSONEq(t, `{}`, string(c.Result("thread/settings/update", map[string]any{"threadId": id, "model": "gpt-5.2", "effort": "high"}, nil)))
	st := updated()
	require.Equal(t, "gpt-5.2", st.Model)
	require.Equal(t, "high", *st.Effort)
	require.Equal(t, "gpt-5.2", st.CollaborationMode.Settings.Model)

	mark := c.Mark()
	c.Result("thread/settings/update", map[string]any{"threadId": id}, nil)
	c.Result("thread/settings/update", map[string]any{"threadId": id, "model": "gpt-5.2"}, nil)
	for _, m := range c.Since(mark) {
		require.NotEqual(t, "thread/settings/updated", m.Method, "nothing changed: no notification")
	}

	c.Result("thread/settings/update", map[string]any{"threadId": id, "serviceTier": "fast", "personality": "friendly", "approvalsReviewer": "auto_review"}, nil)
	st = updated()
	require.Equal(t, "priority", *st.ServiceTier, "fast is reported as priority, as the reference")
	require.Equal(t, "friendly", *st.Personality)
	require.Equal(t, "auto_review", st.ApprovalsReviewer)

	before := st.Cwd
	c.Result("thread/settings/update", map[string]any{"threadId": id, "cwd": "sub/dir"}, nil)
	require.Equal(t, filepath.Join(before, "sub/dir"), updated().Cwd, "a relative cwd resolves against the thread's")

	// The next turn runs with the new settings.
	var read struct {
		Thread struct {
			Model string `json:"model"`
		} `json:"thread"`
	}
	c.Result("thread/read", map[string]any{"threadId": id}, &read)
	require.Equal(t, "gpt-5.2", read.Thread.Model)

	for _, tc := range []struct {
		params map[string]any
		code   int
		msg    string
	}{
		{map[string]any{"threadId": "00000000-0000-0000-0000-000000000000", "model": "x"}, -32600, "thread not found: 00000000-0000-0000-0000-000000000000"},
		{map[string]any{"threadId": "bogus"}, -32600, "invalid thread id: "},
		{map[string]any{"threadId": id, "permissions": "nope"}, -32600, "failed to load configuration: default_permissions requires a `[permissions]` table"},
		{map[string]any{"model": "x"}, -32600, "Invalid request: missing field `threadId`"},
	} {
		m := c.Request("thread/settings/update", tc.params)
		require.NotNil(t, m.Error, "%v", tc.params)
		require.Equal(t, tc.code, m.Error.Code, "%v: %s", tc.params, m.Raw)
		require.Contains(t, m.Error.Message, tc.msg)
	}
}

func TestTurnSettingsUpdate(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	id := c.StartThread(nil)
	for _, tc := range []struct {
		params map[string]any
		msg    string
	}{
		{map[string]any{"threadId": id, "turnId": "t", "model": "x"}, "turn settings updates require the step_model_switching feature"},
		{map[string]any{"threadId": "00000000-0000-0000-0000-000000000000", "turnId": "t"}, "thread not found: 00000000-0000-0000-0000-000000000000"},
	} {
		m := c.Request("turn/settings/update", tc.params)
		require.NotNil(t, m.Error)
		require.Equal(t, -32600, m.Error.Code)
		require.Equal(t, tc.msg, m.Error.Message)
	}
}
