package handshake

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/jsonrpc"
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

// TestReplyEncoding: the hand-written encoding is json.Marshal's, odd characters included.
func TestReplyEncoding(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\\s`, "<&>", "tab\tnl\ncr\r\x00\x1f\x7f", "é ß 日本", "\u2028\u2029",
		"bad \xff\xfe utf8", "emoji 🎉"} {
		r := Reply{CodexHome: "/h/" + s, PlatformFamily: s, PlatformOs: "linux", UserAgent: "ua " + s}
		want, err := jsonrpc.Marshal(protocol.InitializeResponse(r))
		require.NoError(t, err)
		require.Equal(t, string(want), string(r.AppendJSON(nil)), "%q", s)
	}
	// Every field is encoded: a field added to the protocol type must be added here too.
	var zero protocol.InitializeResponse
	b, err := json.Marshal(zero)
	require.NoError(t, err)
	require.Equal(t, string(b), string(Reply(zero).AppendJSON(nil)))
}
