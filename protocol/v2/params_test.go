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
		`{"clientInfo":{"name":1}}`: "invalid type: number, expected a string for field `clientInfo.name`",
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
