// Package request decodes the first line of a plain stdio start (package firstline) on a goroutine
// started as soon as the JSON-RPC and handshake packages are initialised, so that internal/early, which
// also needs the configuration and is initialised about fifteen packages later, finds it decoded: the
// decoding (and the user agent's /etc/os-release) runs beside those initialisers.
package request

import (
	"encoding/json"

	"appserver/handshake"
	"appserver/internal/early/firstline"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// First is the first line of stdin, decoded.
type First struct {
	// Read is what was read from stdin and EOL the index of its first newline (-1: none).
	Read []byte
	EOL  int
	// ID and Params are the request's when the line is a well-formed initialize; Params is nil
	// otherwise.
	ID     json.RawMessage
	Params *protocol.InitializeParams
}

var (
	done  = make(chan struct{})
	first First
)

func init() {
	if !firstline.Started() {
		return
	}
	go func() {
		first = Decode(firstline.Result())
		if first.Params != nil {
			_ = handshake.UserAgent(first.Params.ClientInfo) // reads /etc/os-release once
		}
		close(done)
	}()
}

// Result waits for the first line and returns it decoded; call it only if firstline.Started.
func Result() First {
	<-done
	return first
}

// Decode decodes what firstline read: Params is set when the first line is a well-formed initialize
// request (the server's strict decoding would accept it and nothing else).
func Decode(read []byte, eol int) First {
	f := First{Read: read, EOL: eol}
	if eol < 0 {
		return f
	}
	msg, err := jsonrpc.Decode(read[:eol])
	if err != nil || msg.Kind != jsonrpc.KindRequest || msg.Method != protocol.MethodInitialize || msg.Params == nil {
		return f
	}
	if p, ok := handshake.DecodeParams(msg.Params); ok {
		f.ID, f.Params = msg.ID, p
	}
	return f
}
