package refinterop_test

import (
	"os"
	"testing"

	"appserver/sandbox"
)

// TestMain lets this test binary act as the sandbox helper: the servers these tests start run their
// sandboxed commands through os.Executable(), which is this binary. Without it the "helper" would run
// the whole test suite again (holding the command's terminal) instead of the command.
func TestMain(m *testing.M) {
	sandbox.RunHelperIfRequested()
	os.Exit(m.Run())
}
