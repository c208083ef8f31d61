package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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

// waitForFile waits until a command created path (a marker it touches at a known point of its run).
func waitForFile(t *testing.T, path string) {
	t.Helper()
	require.Eventually(t, func() bool { _, err := os.Stat(path); return err == nil }, 2*time.Minute,
		5*time.Millisecond, "the command did not reach %s", path)
}

// releaseFIFO opens a FIFO the command reads and writes a line to it, letting the command go on.
func releaseFIFO(t *testing.T, fifo string) {
	t.Helper()
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("go\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// fifoAndMarker makes a FIFO and names a marker file in a fresh directory.
func fifoAndMarker(t *testing.T) (fifo, marker string) {
	t.Helper()
	dir := t.TempDir()
	fifo, marker = filepath.Join(dir, "fifo"), filepath.Join(dir, "marker")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	return fifo, marker
}
