// Package refinterop holds the interop test between our server and the reference codex app-server sharing
// one CODEX_HOME (history written by either is read by the other). It has no non-test code.
package refinterop
