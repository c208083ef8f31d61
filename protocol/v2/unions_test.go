package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

func TestTaggedUnionMarshal(t *testing.T) {
	item := protocol.ThreadItem{Value: protocol.ThreadItemAgentMessage{ID: "msg_1", Text: "hi"}}
	out, err := json.Marshal(item)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"agentMessage","id":"msg_1","text":"hi","completedAtMs":null,"delivery":null,
		"memoryCitation":null,"moderation":null,"phase":null,"questions":null,"startedAtMs":null}`, string(out))

	// A variant marshals with its tag on its own and through a pointer too.
	out, err = json.Marshal(&protocol.ThreadStatusIdle{})
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"idle"}`, string(out))
	out, err = json.Marshal(protocol.ThreadStatus{Value: &protocol.ThreadStatusIdle{}})
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"idle"}`, string(out))

	// An empty wrapper is a programming error, reported instead of writing null.
	_, err = json.Marshal(protocol.ThreadItem{})
	require.ErrorContains(t, err, "ThreadItem has no variant set")
}

func TestTaggedUnionUnmarshal(t *testing.T) {
	var in protocol.UserInput
	require.NoError(t, json.Unmarshal([]byte(`{"type":"text","text":"hello","text_elements":[]}`), &in))
	text, ok := in.Value.(protocol.UserInputText)
	require.True(t, ok, "got %T", in.Value)
	require.Equal(t, "hello", text.Text)
	require.NotNil(t, text.TextElements)

	// Variants merging nested anyOf shapes: the image input takes url or fileId.
	require.NoError(t, json.Unmarshal([]byte(`{"type":"image","url":"https://x/y.png"}`), &in))
	img, ok := in.Value.(protocol.UserInputImage)
	require.True(t, ok)
	require.Equal(t, "https://x/y.png", *img.URL)
	out, err := json.Marshal(in)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"image","url":"https://x/y.png","detail":null}`, string(out))

	bad := []struct{ name, in, want string }{
		{"unknown tag", `{"type":"video"}`, "unknown variant `video`, expected one of `text`, `image`"},
		{"missing tag", `{"text":"x"}`, "missing field `type`"},
		{"tag not a string", `{"type":3}`, "invalid type for field `type`"},
		{"not an object", `"text"`, "invalid type: string \"text\", expected internally tagged enum UserInput"},
		{"bad field", `{"type":"text","text":5}`, "cannot unmarshal number"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			var v protocol.UserInput
			require.ErrorContains(t, json.Unmarshal([]byte(tc.in), &v), tc.want)
		})
	}
}

func TestUnionWithSharedProperties(t *testing.T) {
	// McpServerElicitationRequestParams: serverName/threadId/turnId are shared by every "mode" variant.
	raw := `{"mode":"url","serverName":"s","threadId":"t","turnId":null,"elicitationId":"e","message":"m","url":"u"}`
	var p protocol.McpServerElicitationRequestParams
	require.NoError(t, json.Unmarshal([]byte(raw), &p))
	v, ok := p.Value.(protocol.McpServerElicitationRequestParamsURL)
	require.True(t, ok, "got %T", p.Value)
	require.Equal(t, "s", v.ServerName)
	out, err := json.Marshal(p)
	require.NoError(t, err)
	require.JSONEq(t, raw, string(out))
}

func TestExternalUnion(t *testing.T) {
	for _, raw := range []string{
		`"accept"`,
		`"cancel"`,
		`{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["echo","hi"]}}`,
	} {
		var d protocol.CommandExecutionApprovalDecision
		require.NoError(t, json.Unmarshal([]byte(raw), &d), raw)
		out, err := json.Marshal(d)
		require.NoError(t, err)
		require.JSONEq(t, raw, string(out))
	}
	d := protocol.CommandExecutionApprovalDecision{Name: protocol.CommandExecutionApprovalDecisionAccept}
	out, err := json.Marshal(protocol.CommandExecutionRequestApprovalResponse{Decision: d})
	require.NoError(t, err)
	require.JSONEq(t, `{"decision":"accept"}`, string(out))

	var got protocol.CommandExecutionApprovalDecision
	require.ErrorContains(t, json.Unmarshal([]byte(`"yes"`), &got), "unknown variant `yes`")
	require.ErrorContains(t, json.Unmarshal([]byte(`{"nope":{}}`), &got), "unknown variant `nope`")
	require.ErrorContains(t, json.Unmarshal([]byte(`{"a":1,"b":2}`), &got), "exactly one key")
	require.EqualError(t, json.Unmarshal([]byte(`7`), &got), "invalid type: integer `7`, expected string or map")
	_, err = json.Marshal(protocol.CommandExecutionApprovalDecision{})
	require.ErrorContains(t, err, "no variant set")

	var ap protocol.AskForApproval
	require.NoError(t, json.Unmarshal([]byte(`{"granular":{"mcp_elicitations":true,"rules":false,"sandbox_approval":true}}`), &ap))
	require.NotNil(t, ap.Granular)
	require.True(t, ap.Granular.McpElicitations)
}

func TestStringEnumAndIntegerFormats(t *testing.T) {
	var p protocol.ThreadListParams
	err := json.Unmarshal([]byte(`{"limit":"ten"}`), &p)
	require.ErrorContains(t, err, "uint32")
	require.ErrorContains(t, json.Unmarshal([]byte(`{"limit":-1}`), &p), "uint32")
	require.ErrorContains(t, json.Unmarshal([]byte(`{"limit":4294967296}`), &p), "uint32")
	require.NoError(t, json.Unmarshal([]byte(`{"limit":10}`), &p))
	require.Equal(t, uint32(10), *p.Limit)

	out, err := json.Marshal(protocol.SandboxModeReadOnly)
	require.NoError(t, err)
	require.Equal(t, `"read-only"`, string(out))
}

func TestNullVersusAbsent(t *testing.T) {
	// Nullable → null; optional non-nullable → absent; required → present.
	out, err := json.Marshal(protocol.ThreadListParams{})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(out, &m))
	require.Contains(t, m, "cursor")
	require.Nil(t, m["cursor"])
	require.NotContains(t, m, "currentAccountOnly")

	// An empty, non-nil optional list is kept (omitzero, not omitempty).
	out, err = json.Marshal(protocol.UserInputText{Text: "x", TextElements: []protocol.TextElement{}})
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"text","text":"x","text_elements":[]}`, string(out))
}

func TestRequestID(t *testing.T) {
	for _, raw := range []string{`7`, `"7"`, `0`, `"abc"`} {
		var id protocol.RequestId
		require.NoError(t, json.Unmarshal([]byte(raw), &id))
		out, err := json.Marshal(id)
		require.NoError(t, err)
		require.Equal(t, raw, string(out))
	}
	require.NotEqual(t, protocol.IntRequestID(7).String(), protocol.StringRequestID("7").String())
	var id protocol.RequestId
	require.ErrorContains(t, json.Unmarshal([]byte(`1.5`), &id), "RequestId")
	require.ErrorContains(t, json.Unmarshal([]byte(`{}`), &id), "RequestId")
}

func TestStringOrListAndOutputBody(t *testing.T) {
	for _, raw := range []string{`"a"`, `["a"]`, `["a","b"]`, `[]`} {
		var v protocol.ThreadListCwdFilter
		require.NoError(t, json.Unmarshal([]byte(raw), &v))
		out, err := json.Marshal(v)
		require.NoError(t, err)
		require.Equal(t, raw, string(out))
	}
	var v protocol.StringOrList
	require.Error(t, json.Unmarshal([]byte(`5`), &v))

	for _, raw := range []string{`"plain"`, `[{"type":"input_text","text":"x"}]`, `[]`} {
		var b protocol.FunctionCallOutputBody
		require.NoError(t, json.Unmarshal([]byte(raw), &b))
		out, err := json.Marshal(b)
		require.NoError(t, err)
		require.JSONEq(t, raw, string(out))
	}
	var b protocol.FunctionCallOutputBody
	require.Error(t, json.Unmarshal([]byte(`{}`), &b))
}

func TestDecodeRequired(t *testing.T) {
	var p protocol.TurnStartParams
	require.EqualError(t, protocol.Decode([]byte(`{"input":[]}`), &p), "missing field `threadId`")
	require.NoError(t, protocol.Decode([]byte(`{"threadId":"t","input":[]}`), &p))
	require.ErrorContains(t, protocol.Decode([]byte(`null`), &p), "invalid type: null")
	require.ErrorContains(t, protocol.Decode([]byte(`"oops"`), &p), "cannot unmarshal string")
	require.ErrorContains(t, protocol.Decode([]byte(`{}`), p), "needs a pointer")
	// Types without required fields accept {}.
	var l protocol.ThreadLoadedListParams
	require.NoError(t, protocol.Decode([]byte(`{}`), &l))
}

func TestOpenObjectKeepsExtraMembers(t *testing.T) {
	raw := `{"enabled":true,"custom_key":{"a":[1,2]},"other":"x"}`
	var c protocol.AnalyticsConfig
	require.NoError(t, json.Unmarshal([]byte(raw), &c))
	require.True(t, *c.Enabled)
	require.Len(t, c.Extra, 2)
	out, err := json.Marshal(c)
	require.NoError(t, err)
	require.JSONEq(t, raw, string(out))

	// A described field wins over an Extra member of the same name.
	c.Extra["enabled"] = json.RawMessage(`"shadow"`)
	out, err = json.Marshal(c)
	require.NoError(t, err)
	require.Contains(t, string(out), `"enabled":true`)
	require.ErrorContains(t, json.Unmarshal([]byte(`{"enabled":"yes"}`), &c), "cannot unmarshal")
}

func TestRequiredListsNeverNull(t *testing.T) {
	out, err := json.Marshal(protocol.Thread{
		ID:     "t",
		Source: protocol.SessionSource{Name: protocol.SessionSourceVscode},
		Status: protocol.ThreadStatus{Value: protocol.ThreadStatusIdle{}},
	})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(out, &m))
	require.Equal(t, []any{}, m["turns"])
	require.Nil(t, m["forkedFromId"])
	require.Contains(t, m, "forkedFromId")

	// Also inside a tagged-union variant.
	out, err = json.Marshal(protocol.ThreadItem{Value: protocol.ThreadItemUserMessage{ID: "u"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"userMessage","id":"u","content":[],"clientId":null,"completedAtMs":null,
		"startedAtMs":null}`, string(out))
}

func TestOpenExternalUnion(t *testing.T) {
	for _, raw := range []string{
		`"contextWindowExceeded"`,
		`"someFutureError"`,
		`{"httpConnectionFailed":{"httpStatusCode":502}}`,
		`{"activeTurnNotSteerable":{"turnKind":"review"}}`,
		`{"futureKind":{"a":1}}`,
		`{"a":1,"b":2}`,
	} {
		var c protocol.CodexErrorInfo
		require.NoError(t, json.Unmarshal([]byte(raw), &c), raw)
		out, err := json.Marshal(c)
		require.NoError(t, err)
		require.JSONEq(t, raw, string(out))
	}
	var c protocol.CodexErrorInfo
	require.NoError(t, json.Unmarshal([]byte(`{"httpConnectionFailed":{"httpStatusCode":null}}`), &c))
	require.NotNil(t, c.HTTPConnectionFailed)
	require.Nil(t, c.HTTPConnectionFailed.HTTPStatusCode)
	require.Error(t, json.Unmarshal([]byte(`5`), &c))
	require.Error(t, json.Unmarshal([]byte(`{"httpConnectionFailed":{"httpStatusCode":70000}}`), &c), "uint16 overflow")
}
