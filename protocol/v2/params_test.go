package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

func TestDecodeParamsWording(t *testing.T) {
	spec, ok := protocol.LookupClientRequest(protocol.MethodInitialize)
	require.True(t, ok)
	for raw, want := range map[string]string{
		"":                          "missing field `params`",
		`[]`:                        "invalid type: sequence, expected struct InitializeParams",
		`{}`:                        "missing field `clientInfo`",
		`{"clientInfo":{"name":1}}`: "invalid type: integer `1`, expected a string",
	} {
		var in json.RawMessage
		if raw != "" {
			in = json.RawMessage(raw)
		}
		_, err := protocol.DecodeParams(spec, in, nil)
		var pe *protocol.ParamsError
		require.ErrorAs(t, err, &pe, raw)
		require.Equal(t, want, pe.Error(), raw)
	}
	p, err := protocol.DecodeParams(spec, json.RawMessage(`{"clientInfo":{"name":"n","version":"1"}}`), nil)
	require.NoError(t, err)
	require.Equal(t, "n", p.(*protocol.InitializeParams).ClientInfo.Name)
}

// TestDecodeParamsNullForNonNullable pins serde's refusal (seen on the reference, 0.169.0) of null for an
// optional member the schema does not let be null, while a nullable one takes it.
func TestDecodeParamsNullForNonNullable(t *testing.T) {
	for _, tc := range []struct {
		method, raw, want string // want "": accepted
	}{
		{protocol.MethodThreadFork, `{"threadId":"x","ephemeral":null}`, "invalid type: null, expected a boolean"},
		{protocol.MethodThreadFork, `{"threadId":"x","excludeTurns":null}`, "invalid type: null, expected a boolean"},
		{protocol.MethodThreadResume, `{"threadId":"x","excludeTurns":null}`, "invalid type: null, expected a boolean"},
		{protocol.MethodThreadList, `{"useStateDbOnly":null}`, "invalid type: null, expected a boolean"},
		{protocol.MethodThreadStart, `{"experimentalRawEvents":null}`, "invalid type: null, expected a boolean"},
		{protocol.MethodSkillsList, `{"cwds":null}`, "invalid type: null, expected a sequence"},
		{protocol.MethodThreadFork, `{"threadId":"x","model":null,"lastTurnId":null}`, ""},
		{protocol.MethodThreadStart, `{"ephemeral":null,"model":null}`, ""},
		{protocol.MethodThreadList, `{"useStateDbOnly":false,"note":"null"}`, ""},
	} {
		spec, ok := protocol.LookupClientRequest(tc.method)
		require.True(t, ok, tc.method)
		_, err := protocol.DecodeParams(spec, json.RawMessage(tc.raw), nil)
		if tc.want == "" {
			require.NoError(t, err, tc.raw)
			continue
		}
		var pe *protocol.ParamsError
		require.ErrorAs(t, err, &pe, tc.raw)
		require.Equal(t, tc.want, pe.Error(), tc.raw)
	}
}

// TestDecodeParamsNamesTheValue pins serde's wording of a wrongly typed member, as the reference (0.169.0)
// answers: the value is named with its literal, the member is not.
func TestDecodeParamsNamesTheValue(t *testing.T) {
	for _, tc := range []struct{ method, raw, want string }{
		{protocol.MethodThreadList, `{"limit":"x"}`, `invalid type: string "x", expected u32`},
		{protocol.MethodThreadList, `{"limit": -1}`, "invalid value: integer `-1`, expected u32"},
		{protocol.MethodThreadList, `{"limit":1.5}`, "invalid type: floating point `1.5`, expected u32"},
		{protocol.MethodThreadList, `{"archived":"yes"}`, `invalid type: string "yes", expected a boolean`},
		{protocol.MethodThreadList, `{"sourceKinds":"x"}`, `invalid type: string "x", expected a sequence`},
		{protocol.MethodThreadStart, `{"model":true}`, "invalid type: boolean `true`, expected a string"},
		{protocol.MethodThreadStart, `{"model":{"a":1}}`, "invalid type: map, expected a string"},
		{protocol.MethodThreadStart, `{"cwd":5}`, "invalid type: integer `5`, expected a string"},
		{protocol.MethodThreadStart, `{"model":"a\"b","cwd":["q"]}`, "invalid type: sequence, expected a string"},
		{protocol.MethodThreadList, `{"cwd":null,"limit":"q\"z"}`, `invalid type: string "q\"z", expected u32`},
	} {
		spec, ok := protocol.LookupClientRequest(tc.method)
		require.True(t, ok, tc.method)
		_, err := protocol.DecodeParams(spec, json.RawMessage(tc.raw), nil)
		var pe *protocol.ParamsError
		require.ErrorAs(t, err, &pe, tc.raw)
		require.Equal(t, tc.want, pe.Error(), tc.raw)
	}
}
