// Package early answers the first request of a stdio app-server, `initialize`, from a package
// initializer, so the answer does not wait for the rest of the binary's start-up.
//
// Go initialises packages in import-path order as their imports become ready (see internal/reexec).
// This package needs only the Codex home (config/codexhome), the protocol types, the JSON-RPC encoding
// and the handshake; when it is initialised, about half of a start is still ahead: the configuration
// (TOML), the SQLite driver, the MCP SDK and its JSON schema, net/http, crypto, the server's own
// packages, then main. Its initializer starts a goroutine that reads the first line of stdin and, when
// it is a well-formed `initialize`, writes the answer the server's handler would have written
// (handshake.Response, jsonrpc.EncodeResult). The answer does not depend on config.toml: as the
// reference, the server answers initialize even when the configuration does not load, and says so in a
// configWarning after the answer. Everything else (an error, another method, a malformed line, a
// Codex home that cannot be created) is left untouched for the server, which then reads the same
// bytes. The server starts the connection initialized and sends the notifications that follow the
// answer (server.ServeConnInitialized), so the client sees the same messages in the same order; only
// the answer comes earlier.
//
// It runs only for `appserver` and `appserver app-server` without options (firstline.Wanted): any
// option (-c, --listen, --strict-config, ...) or subcommand leaves the start-up as it was. The first
// line is read by package firstline and decoded by package request, whose initializers run earlier.
// A simple initialize (package quick's subset) is answered sooner still, by package quick from one of
// the binary's first initialisers; this package then only decodes it as the server does and hands
// the rest of the input over.
package early

import (
	"bytes"
	"context"
	"io"
	"os"

	"appserver/config/codexhome"
	"appserver/handshake"
	"appserver/internal/early/firstline"
	"appserver/internal/early/quick"
	"appserver/internal/early/request"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// Start is what the early start did.
type Start struct {
	// Initialized is the initialize request answered on stdout, nil when none was.
	Initialized *protocol.InitializeParams
	// Input is what the server reads: the bytes read from stdin and not consumed, then stdin.
	Input io.Reader
}

var (
	engaged   bool
	inputDone = make(chan struct{}) // closed when result is set
	result    Start
)

func init() {
	if !firstline.Started() {
		return // not a plain stdio start (firstline.Wanted)
	}
	engaged = true
	go run(os.Stdin, os.Stdout)
}

// Wait returns what the early start did once it has read the first line; ok is false when it did not
// run. It returns ctx's error if ctx ends first (stdin then still belongs to the early start).
func Wait(ctx context.Context) (s Start, ok bool, err error) {
	if !engaged {
		return Start{}, false, nil
	}
	select {
	case <-inputDone:
		return result, true, nil
	case <-ctx.Done():
		return Start{}, true, ctx.Err()
	}
}

func run(stdin io.Reader, stdout io.Writer) {
	answered := quick.Answered()
	f := request.Result()
	home := ""
	if !answered {
		var err error
		if home, err = codexhome.Dir(); err != nil {
			f.Params = nil // the server reports the error as usual
		}
	}
	result = answer(answered, f, stdin, stdout, home)
	close(inputDone)
}

// answer answers the first line of stdin when it is a well-formed initialize that package quick did
// not answer (answered).
func answer(answered bool, f request.First, stdin io.Reader, stdout io.Writer, codexHome string) Start {
	if answered {
		p := f.Params
		if p == nil { // not expected (TestQuickIsTheServers): keep what quick understood
			l, _ := quick.Parse(f.Read, f.EOL)
			p = &protocol.InitializeParams{ClientInfo: protocol.ClientInfo{Name: l.Name, Title: l.Title, Version: l.Version}}
		}
		return Start{Initialized: p, Input: io.MultiReader(bytes.NewReader(f.Read[f.EOL+1:]), stdin)}
	}
	if f.Params == nil {
		return Start{Input: io.MultiReader(bytes.NewReader(f.Read), stdin)}
	}
	line := append(jsonrpc.EncodeResult(f.ID, handshake.Response(f.Params.ClientInfo, codexHome)), '\n')
	// A failed write is the server's failed write: the client is gone either way.
	_, _ = stdout.Write(line)
	return Start{Initialized: f.Params, Input: io.MultiReader(bytes.NewReader(f.Read[f.EOL+1:]), stdin)}
}
