// Package reexec turns our own binary into the sandbox helper from a package initializer, so that a
// sandboxed tool call does not pay for the server's heavier dependencies.
//
// Go initialises packages in import-path order as their imports become ready, and the helper exits
// or execs the target without returning, so every package that is not yet initialised when this one
// runs is never initialised in the helper process at all. This package imports only
// sandbox/confine, whose few dependencies are ready right after os: it runs a confinement the
// server computed (a read-only command, see sandbox.Starts) before about 75 of the binary's
// packages are initialised. Package reexec/full runs the complete helper, which decodes a policy
// and may build a mount tree (workspace-write), after the sandbox package's own dependencies (still
// before net/http, crypto/tls, regexp, the SQLite driver, the MCP SDK, the protocol tables of the
// server, ...). The server imports both for their side effect (cmd/appserver); nothing else may
// depend on them.
package reexec

import "appserver/sandbox/confine"

func init() { confine.RunIfRequested() }
