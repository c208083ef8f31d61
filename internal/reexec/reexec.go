// Package reexec turns our own binary into the sandbox helper from a package initializer, so that a
// sandboxed tool call does not pay for the server's heavier dependencies.
//
// Go initialises packages in import-path order as their imports become ready, and the helper exits
// or execs the target without returning, so every package that is not yet initialised when this one
// runs (net/http, crypto/tls, regexp, the SQLite driver, the MCP SDK, the protocol tables of the
// server, ...) is never initialised in the helper process at all. The server imports this package
// for its side effect (cmd/appserver); nothing else may depend on it.
package reexec

import "appserver/sandbox"

func init() { sandbox.RunHelperIfRequested() }
