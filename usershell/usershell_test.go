package usershell

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTranscriptShape(t *testing.T) {
	raw := Transcript("echo hi; exit 3", 3, 9*time.Second, "hi\n")
	var m struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal(raw, &m))
	require.Equal(t, "message", m.Type)
	require.Equal(t, "user", m.Role)
	require.Regexp(t, `^msg_`, m.ID)
	require.Equal(t, "input_text", m.Content[0].Type)
	// the reference's layout, observed on the same command
	require.Equal(t, "<user_shell_command>\n<command>\necho hi; exit 3\n</command>\n<result>\nExit code: 3\nDuration: 9.0000 seconds\nOutput:\nhi\n\n</result>\n</user_shell_command>", m.Content[0].Text)
}

func TestShellDefault(t *testing.T) {
	t.Setenv("SHELL", "")
	require.Equal(t, "/bin/bash", Shell())
	t.Setenv("SHELL", "/bin/zsh")
	require.Equal(t, "/bin/zsh", Shell())
}
