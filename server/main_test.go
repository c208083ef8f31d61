package server_test

import (
	"os"
	"testing"

	"appserver/sandbox"
)

// TestMain lets the test binary double as the sandbox helper: sandboxed commands re-execute it.
func TestMain(m *testing.M) {
	sandbox.RunHelperIfRequested()
	os.Exit(m.Run())
}
