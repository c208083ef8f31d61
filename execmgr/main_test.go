package execmgr

import (
	"os"
	"testing"

	"appserver/sandbox"
)

// TestMain lets the test binary act as the Managers' watchdog and as the sandbox helper and
// launcher.
func TestMain(m *testing.M) {
	sandbox.RunHelperIfRequested()
	RunReaperIfRequested()
	os.Exit(m.Run())
}
