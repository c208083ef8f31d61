package thread

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

func TestShellSplitInvertsShellJoin(t *testing.T) {
	for _, argv := range [][]string{
		{"/bin/bash", "-lc", "echo hello"},
		{"ls"},
		{"printf", "it's", "a \"quoted\" word", ""},
		{"a b", "c\td", "$HOME", "x'y'z"},
	} {
		require.Equal(t, argv, shellSplit(rollout.ShellJoin(argv)))
	}
	require.Equal(t, []string{}, shellSplit(""))
	require.Equal(t, []string{"a", "b c"}, shellSplit(`a "b c"`))
	require.Equal(t, []string{"unterminated"}, shellSplit(`'unterminated`))
}

func TestCamelToSnake(t *testing.T) {
	for in, want := range map[string]string{
		"unifiedExecStartup": "unified_exec_startup", "completed": "completed", "listFiles": "list_files", "": "",
	} {
		require.Equal(t, want, camelToSnake(in))
	}
}

func TestCoreItemShapes(t *testing.T) {
	phase := protocol.MessagePhase("final_answer")
	cases := []struct {
		item protocol.ThreadItem
		want string
	}{
		{protocol.ThreadItem{Value: protocol.ThreadItemAgentMessage{ID: "m1", Text: "hi", Phase: &phase}},
			`{"type":"AgentMessage","id":"m1","content":[{"type":"Text","text":"hi"}],"phase":"final_answer"}`},
		{protocol.ThreadItem{Value: protocol.ThreadItemReasoning{ID: "r1", Summary: []string{"s"}}},
			`{"type":"Reasoning","id":"r1","summary_text":["s"],"raw_content":[]}`},
		{protocol.ThreadItem{Value: protocol.ThreadItemUserMessage{ID: "u1", Content: []protocol.UserInput{{Value: protocol.UserInputText{Text: "q", TextElements: []protocol.TextElement{}}}}}},
			`{"type":"UserMessage","id":"u1","content":[{"type":"text","text":"q","text_elements":[]}]}`},
	}
	for _, tc := range cases {
		b, err := json.Marshal(coreItem(tc.item))
		require.NoError(t, err)
		require.JSONEq(t, tc.want, string(b))
	}
	out := "x"
	code := int32(1)
	dur := int64(1500)
	b, err := json.Marshal(coreItem(protocol.ThreadItem{Value: protocol.ThreadItemCommandExecution{ID: "c1", Command: "/bin/bash -lc 'false'",
		Cwd: "/w", Status: protocol.CommandExecutionStatusFailed, CommandActions: []protocol.CommandAction{}, AggregatedOutput: &out, ExitCode: &code, DurationMs: &dur}}))
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, "CommandExecution", got["type"])
	require.Equal(t, []any{"/bin/bash", "-lc", "false"}, got["command"])
	require.Equal(t, "file:///w", got["cwd"])
	require.Equal(t, "failed", got["status"])
	require.Equal(t, map[string]any{"secs": float64(1), "nanos": float64(500000000)}, got["duration"])
}

func TestSandboxCoreRoundTrip(t *testing.T) {
	for _, p := range []protocol.SandboxPolicy{
		{Value: protocol.SandboxPolicyReadOnly{NetworkAccess: ptr(false)}},
		{Value: protocol.SandboxPolicyDangerFullAccess{}},
		{Value: protocol.SandboxPolicyWorkspaceWrite{NetworkAccess: ptr(true), WritableRoots: []protocol.AbsolutePathBuf{"/a"}}},
	} {
		b, err := json.Marshal(sandboxCore(p))
		require.NoError(t, err)
		back := sandboxFromCore(b)
		require.NotNil(t, back, "%s", b)
		require.Equal(t, sandboxModeName(p), sandboxModeName(*back))
	}
	require.Nil(t, sandboxFromCore(json.RawMessage(`{"type":"mystery"}`)))
	require.Nil(t, sandboxFromCore(nil))
}
