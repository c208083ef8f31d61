package server_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
)

// holdStartupWindow makes a short command end inside exec_command's 150 ms startup window whatever the
// machine's load: the window is a stopwatch of the thread's controller, so with the out-of-band counter
// raised before the command starts it cannot run out, while the process still runs and ends. The
// returned release waits for the command's item to complete (the process ended) and lowers the counter.
// The client must have been initialized with the experimental API.
func holdStartupWindow(t *testing.T, c *apptest.Client, tid, callID string) (release func()) {
	t.Helper()
	require.Equal(t, counterResult{1, true}, elicit(t, c, "thread/increment_elicitation", tid))
	return func() {
		t.Helper()
		c.WaitNotification("item/completed", func(p json.RawMessage) bool {
			var n struct {
				Item struct{ Type, ID string }
			}
			return json.Unmarshal(p, &n) == nil && n.Item.ID == callID
		})
		require.Equal(t, counterResult{0, false}, elicit(t, c, "thread/decrement_elicitation", tid))
	}
}
