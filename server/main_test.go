package server_test

import (
	"os"
	"testing"

	"appserver/internal/testfs"
	"appserver/sandbox"
)

// TestMain lets the test binary double as the sandbox helper (sandboxed commands re-execute it) and
// gives the tests an empty HOME, so login shells read none of the host's profiles.
func TestMain(m *testing.M) {
	sandbox.RunHelperIfRequested()
	cleanup := testfs.IsolateHome()
	code := m.Run()
	cleanup()
	os.Exit(code)
}
