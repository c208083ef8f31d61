package execmgr

import (
	"context"
	"time"

	"appserver/stopwatch"
)

// StartupWindow is how long exec_command waits after spawning before it announces the process, as the
// reference does: output from the window is not streamed as deltas. A command the sandbox refuses is
// announced and reported like any other failure (the reference's unified exec asks no retry approval).
const StartupWindow = 150 * time.Millisecond

// waitStartup waits for the startup window (a stopwatch of ctrl, so a paused thread freezes it like
// the yield deadline), the process's end (exit and output closed) or ctx.
func waitStartup(ctx context.Context, p *Process, ctrl *stopwatch.Controller) {
	if ctrl == nil {
		ctrl = stopwatch.NewController()
	}
	sw, release := ctrl.NewStopwatch(StartupWindow)
	defer release()
	select {
	case <-p.Done():
	case <-sw.Done():
	case <-ctx.Done():
	}
}
