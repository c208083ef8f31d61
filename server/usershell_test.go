package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	protocol "appserver/protocol/v2"
)

func TestThreadShellCommand(t *testing.T) {
	t.Setenv("SHELL", "/bin/sh") // a login bash can take seconds to read its profile
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	tid := c.StartThread(nil)

	requireError(t, c.Request("thread/shellCommand", map[string]any{"threadId": tid, "command": ""}), -32600, "command must not be empty")
	requireError(t, c.Request("thread/shellCommand", map[string]any{"threadId": "nope", "command": "ls"}), -32600,
		"invalid thread id: invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `n` at 1")

	require.JSONEq(t, `{}`, string(c.Request("thread/shellCommand", map[string]any{"threadId": tid, "command": "echo hi; pwd; echo err >&2; exit 3"}).Result))
	c.WaitNotification("turn/started", nil)
	m := c.WaitNotification("item/started", nil)
	var started protocol.ItemStartedNotification
	require.NoError(t, json.Unmarshal(m.Params, &started))
	item, ok := started.Item.Value.(protocol.ThreadItemCommandExecution)
	require.True(t, ok)
	require.Equal(t, "/bin/sh -lc 'echo hi; pwd; echo err >&2; exit 3'", item.Command)
	require.Equal(t, protocol.CommandExecutionSourceUserShell, *item.Source)
	require.Equal(t, c.Work, string(item.Cwd))
	m = c.WaitNotification("item/completed", nil)
	var done protocol.ItemCompletedNotification
	require.NoError(t, json.Unmarshal(m.Params, &done))
	item = done.Item.Value.(protocol.ThreadItemCommandExecution)
	require.Equal(t, protocol.CommandExecutionStatusFailed, item.Status)
	require.Equal(t, int32(3), *item.ExitCode)
	require.Contains(t, *item.AggregatedOutput, "hi\n")
	require.Contains(t, *item.AggregatedOutput, c.Work+"\n")
	require.Contains(t, *item.AggregatedOutput, "err\n")
	turn := c.WaitTurnCompleted()
	require.Equal(t, "completed", turn["status"])

	// the next model turn sees what the user ran
	c.StartTurn(tid, "what happened?")
	c.WaitTurnCompleted()
	reqs := c.Model.ResponseRequests()
	require.NotEmpty(t, reqs)
	raw, err := json.Marshal(reqs[len(reqs)-1].Body["input"])
	require.NoError(t, err)
	var input []struct {
		Role    string `json:"role"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal(raw, &input))
	found := false
	for _, it := range input {
		for _, ct := range it.Content {
			if it.Role == "user" && strings.HasPrefix(ct.Text, "<user_shell_command>\n<command>\necho hi; pwd; echo err >&2; exit 3\n</command>\n<result>\nExit code: 3\nDuration: ") {
				found = true
				require.Regexp(t, `Duration: \d+\.\d{4} seconds\nOutput:\n`, ct.Text)
				require.True(t, strings.HasSuffix(ct.Text, "\n\n</result>\n</user_shell_command>"))
			}
		}
	}
	require.True(t, found, "the transcript is in the next request: %s", raw)
}
