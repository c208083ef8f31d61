package handshake

import (
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

func TestInitializeSpec(t *testing.T) {
	want, ok := protocol.LookupClientRequest(protocol.MethodInitialize)
	require.True(t, ok)
	require.Same(t, want, initializeSpec())
}

func TestDecodeParams(t *testing.T) {
	p, ok := DecodeParams([]byte(` {"clientInfo":{"name":"n","version":"1"},"capabilities":{"experimentalApi":true}}`))
	require.True(t, ok)
	require.Equal(t, "n", p.ClientInfo.Name)
	require.True(t, *p.Capabilities.ExperimentalAPI)
	for _, bad := range []string{``, `null`, `[]`, `{}`, `{"clientInfo":7}`, `{"clientInfo":`} {
		_, ok := DecodeParams([]byte(bad))
		require.False(t, ok, bad)
	}
}

func TestUserAgent(t *testing.T) {
	t.Setenv("TERM_PROGRAM", "term")
	t.Setenv("TERM_PROGRAM_VERSION", "2")
	ua := UserAgent(protocol.ClientInfo{Name: "", Version: "9"})
	require.Regexp(t, `^codex_vscode/0\.169\.0\+appserver\.0\.1\.0 \(.+; .+\) term/2 \(codex_vscode; 9\)$`, ua)
}
