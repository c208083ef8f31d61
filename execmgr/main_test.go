package execmgr

import (
	"os"
	"testing"
)

// TestMain lets the test binary act as the Managers' watchdog.
func TestMain(m *testing.M) {
	RunReaperIfRequested()
	os.Exit(m.Run())
}
