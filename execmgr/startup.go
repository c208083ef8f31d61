package execmgr

import (
	"context"
	"strings"
	"syscall"
	"time"

	"appserver/stopwatch"
)

// StartupWindow is how long exec_command waits after spawning before it announces the process, as the
// reference does: output from the window is not streamed as deltas, and a sandboxed command that fails
// within it with a denial goes back to the model without any item events.
const StartupWindow = 150 * time.Millisecond

// sandboxDenialKeywords are the output fragments (lower case) the reference takes as a sandbox denial.
var sandboxDenialKeywords = []string{
	"operation not permitted", "permission denied", "read-only file system", "seccomp", "sandbox", "landlock",
	"failed to write file",
}

// LikelySandboxDenial reports whether a failed sandboxed command looks refused by the sandbox: a non-zero
// exit with a denial keyword in its output, or death by SIGSYS (a seccomp kill).
func LikelySandboxDenial(exitCode int, output string) bool {
	if exitCode == 0 {
		return false
	}
	if exitCode == 128+int(syscall.SIGSYS) {
		return true
	}
	lower := strings.ToLower(output)
	for _, k := range sandboxDenialKeywords {
		if strings.Contains(lower, k) {
			return true
		}
	}
	return false
}

// waitStartup waits for the startup window (a stopwatch of ctrl, so a paused thread freezes it like
// the yield deadline), the process's end (exit and output closed) or ctx; it reports whether the
// process ended.
func waitStartup(ctx context.Context, p *Process, ctrl *stopwatch.Controller) bool {
	if ctrl == nil {
		ctrl = stopwatch.NewController()
	}
	sw, release := ctrl.NewStopwatch(StartupWindow)
	defer release()
	select {
	case <-p.Done():
		return true
	case <-sw.Done():
	case <-ctx.Done():
	}
	return false
}
