package server_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	protocol "appserver/protocol/v2"
)

func requireError(t *testing.T, m apptest.Message, code int, message string) {
	t.Helper()
	require.NotNil(t, m.Error, "expected an error, got %s", m.Raw)
	require.Equal(t, code, m.Error.Code, string(m.Raw))
	require.Equal(t, message, m.Error.Message)
	require.Nil(t, m.Error.Data, "the reference never sends error data")
}

func requireErrorMatch(t *testing.T, m apptest.Message, code int, pattern string) {
	t.Helper()
	require.NotNil(t, m.Error, "expected an error, got %s", m.Raw)
	require.Equal(t, code, m.Error.Code, string(m.Raw))
	require.Regexp(t, regexp.MustCompile(pattern), m.Error.Message)
}

func TestHandshakeGate(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Notify("initialized", nil) // an early initialized notification is ignored
	requireError(t, c.Request("thread/list", map[string]any{}), -32600, "Not initialized")

	var init protocol.InitializeResponse
	c.Result("initialize", map[string]any{"clientInfo": map[string]any{"name": "ide", "title": "IDE", "version": "1.2.3"}}, &init)
	require.Regexp(t, `^ide/0\.169\.0\+appserver\.[^ ]+ \(.+; .+\) .+ \(ide; 1\.2\.3\)$`, init.UserAgent)
	require.Equal(t, c.Home, string(init.CodexHome))
	require.Equal(t, "unix", init.PlatformFamily)
	require.Equal(t, "linux", init.PlatformOs)
	rc := c.WaitNotification("remoteControl/status/changed", nil)
	require.JSONEq(t, `"disabled"`, string(mustField(t, rc.Params, "status")))
	require.NotNil(t, rc.EmittedAtMs, "every notification carries emittedAtMs")

	requireError(t, c.Request("initialize", map[string]any{"clientInfo": map[string]any{"name": "x", "version": "1"}}), -32600, "Already initialized")
}

// TestRequestsBeforeInitialize: a request sent before initialize is decoded first, as by the reference (an
// unknown method or bad params get their own errors, a valid one "Not initialized"), and it is refused
// even when initialize is pipelined right behind it.
func TestRequestsBeforeInitialize(t *testing.T) {
	for range 5 {
		c := apptest.Start(t, apptest.Options{})
		unknown := c.Send("no/such/method", map[string]any{})
		badParams := c.Send("thread/start", map[string]any{"cwd": 5})
		valid := c.Send("thread/start", map[string]any{})
		missing := c.Send("turn/start", map[string]any{"threadId": "x"})
		experimental := c.Send("thread/increment_elicitation", map[string]any{"threadId": "x"})
		init := c.Send("initialize", map[string]any{"clientInfo": map[string]any{"name": "ide", "version": "1"}})
		requireErrorMatch(t, c.WaitResponse(unknown), -32600, "^Invalid request: unknown variant `no/such/method`")
		requireError(t, c.WaitResponse(badParams), -32600, "Invalid request: invalid type: integer `5`, expected a string")
		requireError(t, c.WaitResponse(valid), -32600, "Not initialized")
		requireError(t, c.WaitResponse(missing), -32600, "Invalid request: missing field `input`")
		requireError(t, c.WaitResponse(experimental), -32600, "Not initialized")
		require.Nil(t, c.WaitResponse(init).Error)
		c.Close()
	}
}

func mustField(t *testing.T, raw json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return m[key]
}

func TestRequestErrors(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	cases := []struct {
		name    string
		method  string
		params  any
		code    int
		message string
		pattern string
	}{
		{name: "unknown method", method: "no/such/method", params: map[string]any{}, code: -32600, pattern: "^Invalid request: unknown variant `no/such/method`, expected one of `initialize`, .*`thread/start`"},
		{name: "unknown method without params", method: "no/such/method", code: -32600, pattern: "^Invalid request: unknown variant"},
		{name: "wrong type", method: "thread/list", params: map[string]any{"limit": "ten"}, code: -32600, pattern: `^Invalid request: .*(limit|u32)`},
		{name: "params not an object", method: "thread/list", params: "oops", code: -32600, pattern: `^Invalid request: invalid type: string "oops", expected struct ThreadListParams$`},
		{name: "missing field", method: "turn/start", params: map[string]any{"input": []any{}}, code: -32600, message: "Invalid request: missing field `threadId`"},
		{name: "missing required list", method: "turn/start", params: map[string]any{"threadId": "x"}, code: -32600, message: "Invalid request: missing field `input`"},
		{name: "missing params", method: "thread/loaded/list", code: -32600, message: "Invalid request: missing field `params`"},
		{name: "null params", method: "thread/loaded/list", params: nil, code: -32600, message: "Invalid request: missing field `params`"},
		{name: "bad union tag", method: "turn/start", params: map[string]any{"threadId": "x", "input": []any{map[string]any{"type": "bogus"}}}, code: -32600, pattern: "^Invalid request: .*unknown variant `bogus`"},
		{name: "unknown thread read", method: "thread/read", params: map[string]any{"threadId": "00000000-0000-0000-0000-000000000000"}, code: -32600, message: "thread not loaded: 00000000-0000-0000-0000-000000000000"},
		{name: "invalid thread id", method: "thread/read", params: map[string]any{"threadId": "not-a-uuid"}, code: -32600, message: "invalid thread id: invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `n` at 1"},
		{name: "turn on unknown thread", method: "turn/start", params: map[string]any{"threadId": "00000000-0000-0000-0000-000000000001", "input": []any{}}, code: -32600, message: "thread not found: 00000000-0000-0000-0000-000000000001"},
		{name: "experimental method gated", method: "mock/experimentalMethod", params: map[string]any{}, code: -32600, message: "mock/experimentalMethod requires experimentalApi capability"},
		{name: "experimental counter gated", method: "thread/increment_elicitation", params: map[string]any{"threadId": "x"}, code: -32600, message: "thread/increment_elicitation requires experimentalApi capability"},
		{name: "experimental field gated", method: "thread/start", params: map[string]any{"mockExperimentalField": "x"}, code: -32600, message: "thread/start.mockExperimentalField requires experimentalApi capability"},
		{name: "not implemented", method: "windowsSandbox/readiness", code: -32600, message: "windowsSandbox/readiness is not supported by appserver"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m apptest.Message
			if tc.params == nil && tc.name != "null params" {
				m = c.WaitResponse(c.Send(tc.method, nil))
			} else if tc.name == "null params" {
				c.SendRaw(`{"id":777,"method":"thread/loaded/list","params":null}`)
				m = c.WaitResponse(777)
			} else {
				m = c.Request(tc.method, tc.params)
			}
			if tc.pattern != "" {
				requireErrorMatch(t, m, tc.code, tc.pattern)
			} else {
				requireError(t, m, tc.code, tc.message)
			}
		})
	}
}

func TestMalformedInputIsIgnoredAndConnectionLives(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	mark := c.Mark()
	for _, line := range []string{
		`{this is not json`,
		`[{"id":900,"method":"thread/loaded/list","params":{}}]`,
		`{}`,
		`{"id":902}`,
		`{"id":99999,"result":{}}`,
		`{"method":"no/such/notification","params":{}}`,
		`{"method":"x"}`,
		"\x00\xff",
	} {
		c.SendRaw(line)
	}
	time.Sleep(300 * time.Millisecond)
	require.Empty(t, c.Since(mark), "malformed input must get no response")
	require.Nil(t, c.Request("thread/loaded/list", map[string]any{}).Error, "server still healthy")
}

func TestStringIDsAndJSONRPCMemberEchoed(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	c.SendRaw(`{"jsonrpc":"2.0","id":"str-id","method":"thread/loaded/list","params":{}}`)
	deadline := time.Now().Add(apptest.WaitLimit)
	for time.Now().Before(deadline) {
		for _, m := range c.Messages() {
			if m.ID == "str-id" {
				require.JSONEq(t, `{"id":"str-id","result":{"data":[],"nextCursor":null}}`, string(m.Raw))
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no answer to the string id")
}

func TestExperimentalOptInAndNoInitializedNeeded(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Result("initialize", map[string]any{"clientInfo": map[string]any{"name": "x", "version": "1"}, "capabilities": map[string]any{"experimentalApi": true}}, nil)
	// No `initialized` notification: requests are served anyway, as by the reference.
	require.JSONEq(t, `{"echoed":null}`, string(c.Result("mock/experimentalMethod", map[string]any{}, nil)))
	require.JSONEq(t, `{"echoed":"v"}`, string(c.Result("mock/experimentalMethod", map[string]any{"value": "v"}, nil)))
}

func TestOptOutNotificationMethods(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Result("initialize", map[string]any{"clientInfo": map[string]any{"name": "x", "version": "1"},
		"capabilities": map[string]any{"optOutNotificationMethods": []string{"remoteControl/status/changed", "thread/started"}}}, nil)
	var res struct {
		Thread struct{ ID string } `json:"thread"`
	}
	c.Result("thread/start", map[string]any{"cwd": c.Work, "ephemeral": true}, &res)
	require.NotEmpty(t, res.Thread.ID)
	time.Sleep(200 * time.Millisecond)
	for _, m := range c.Messages() {
		require.NotEqual(t, "remoteControl/status/changed", m.Method)
		require.NotEqual(t, "thread/started", m.Method)
	}
}

// TestEveryMethodIsRouted sends every client request method of the schema and requires an answer: a
// result or an error, never silence.
func TestEveryMethodIsRouted(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	skip := map[string]bool{protocol.MethodInitialize: true}
	var ids []int64
	flush := func() {
		for _, id := range ids {
			m := c.WaitResponse(id)
			if m.Error != nil {
				require.Contains(t, []int{-32600, -32602, -32603}, m.Error.Code, string(m.Raw))
			}
		}
		ids = nil
	}
	for _, spec := range protocol.ClientRequests {
		if skip[spec.Name] {
			continue
		}
		ids = append(ids, c.Send(spec.Name, map[string]any{}))
		if len(ids) == 32 { // stay under the ingress queue bound
			flush()
		}
	}
	flush()
}
