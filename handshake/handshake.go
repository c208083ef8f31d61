// Package handshake builds the answer to a client's `initialize` request: the server's versions, the
// user agent and the platform. The server's handler and the early answer of a stdio start
// (internal/early) both use it, so the two answers are the same bytes.
package handshake

import (
	"encoding/json"

	"appserver/handshake/reply"
	protocol "appserver/protocol/v2"
)

// Version is appserver's own version; CompatVersion is the codex-cli version whose protocol it speaks.
const (
	Version       = reply.Version
	CompatVersion = reply.CompatVersion
)

// UserAgentVersion is the version token in userAgent and cliVersion (reply.UserAgentVersion).
const UserAgentVersion = reply.UserAgentVersion

// Reply is the result of `initialize`. It encodes itself (jsonrpc.Appender) as json.Marshal encodes
// protocol.InitializeResponse, without reflection: encoding/json's first use is a noticeable part of
// an early answer.
type Reply protocol.InitializeResponse

// AppendJSON implements jsonrpc.Appender.
func (r Reply) AppendJSON(b []byte) []byte {
	return reply.AppendResult(b, string(r.CodexHome), r.PlatformFamily, r.PlatformOs, r.UserAgent)
}

// Response is the result of `initialize` for a client, with the server's CODEX_HOME.
func Response(ci protocol.ClientInfo, codexHome string) Reply {
	return Reply{
		UserAgent:      UserAgent(ci),
		CodexHome:      protocol.AbsolutePathBuf(codexHome),
		PlatformFamily: reply.PlatformFamily(),
		PlatformOs:     reply.PlatformOS(),
	}
}

// DecodeParams decodes the params of a well-formed `initialize` request; ok is false for anything
// the server's decoding refuses (the server then answers it itself): both decode with
// protocol.DecodeParams, so they cannot disagree.
func DecodeParams(raw json.RawMessage) (p *protocol.InitializeParams, ok bool) {
	spec := initializeSpec()
	if spec == nil {
		return nil, false
	}
	v, err := protocol.DecodeParams(spec, raw, nil)
	if err != nil {
		return nil, false
	}
	p, ok = v.(*protocol.InitializeParams)
	return p, ok && p != nil
}

// initializeSpec finds initialize in the method table without building the table's index (the early
// answer needs no other method).
func initializeSpec() *protocol.MethodSpec {
	for i := range protocol.ClientRequests {
		if protocol.ClientRequests[i].Name == protocol.MethodInitialize {
			return &protocol.ClientRequests[i]
		}
	}
	return nil
}

// UserAgent is the user agent reported to a client (and sent to the model provider): reply.UserAgent.
func UserAgent(ci protocol.ClientInfo) string { return reply.UserAgent(ci.Name, ci.Version) }
