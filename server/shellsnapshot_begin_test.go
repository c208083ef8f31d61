package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
)

// gateWriter holds the write that carries the reply to request id gate (when set) until release is closed,
// after telling held what it holds.
type gateWriter struct {
	w        io.Writer
	mu       sync.Mutex
	gate     string
	gateText string // the last gate set
	held     chan string
	release  chan struct{}
}

func (g *gateWriter) hold(id int64) (held <-chan string, release chan<- struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = fmt.Sprintf(`{"id":%d,"result"`, id)
	g.gateText = g.gate
	g.held, g.release = make(chan string, 1), make(chan struct{})
	return g.held, g.release
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	gate, held, release := g.gate, g.held, g.release
	if gate != "" && strings.Contains(string(p), gate) {
		g.gate = ""
	} else {
		release = nil
	}
	g.mu.Unlock()
	if release != nil {
		held <- string(p)
		<-release
	}
	return g.w.Write(p)
}

// heldThreadID returns the thread id of the reply (starting with prefix) among the lines of chunk.
func heldThreadID(t *testing.T, chunk, prefix string) string {
	t.Helper()
	for line := range strings.Lines(chunk) {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		var m struct {
			Result struct {
				Thread struct {
					ID string `json:"id"`
				} `json:"thread"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		require.NotEmpty(t, m.Result.Thread.ID, line)
		return m.Result.Thread.ID
	}
	t.Fatalf("no reply in %q", chunk)
	return ""
}

// TestShellSnapshotBeginsAfterTheLoadReply: the capture of a loaded thread's login shell begins once the
// load's reply (thread/start, thread/resume, thread/fork) is written, not while the load works or while
// its reply waits for the output, and still happens.
func TestShellSnapshotBeginsAfterTheLoadReply(t *testing.T) {
	snapshotHome(t)
	home := filepath.Join(t.TempDir(), "codex_home")
	stored := "01e00000-0000-7000-8000-5ca1e0000b01"
	writeScaleRollout(t, home, stored, 2) // its cwd (home) exists: the capture runs there
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(`model = "mock-model"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
`), 0o644))
	var gw *gateWriter
	c := serveWire(t, home, "t", func(w io.Writer) io.Writer { gw = &gateWriter{w: w}; return gw })
	defer c.close()

	for _, tc := range []struct {
		method string
		params map[string]any
	}{
		{"thread/start", map[string]any{}},
		{"thread/resume", map[string]any{"threadId": stored}},
		{"thread/fork", map[string]any{"threadId": stored}},
	} {
		held, gate := gw.hold(c.nextID + 1)
		release := sync.OnceFunc(func() { close(gate) })
		defer release() // a failing check must not leave the server's writer held
		result := make(chan json.RawMessage, 1)
		go func() { result <- c.call(tc.method, tc.params) }()
		var chunk string
		select {
		case chunk = <-held:
		case <-time.After(apptest.WaitLimit):
			t.Fatalf("%s: no reply", tc.method)
		}
		id := heldThreadID(t, chunk, gw.gateText)
		snap := c.srv.ShellSnapshotForTest(id)
		require.NotNil(t, snap, "%s: the thread has a shell snapshot", tc.method)
		require.False(t, snap.Begun(), "%s: the capture began before the reply was written", tc.method)
		release()
		<-result
		waitSnapshot(t, home, id)
		require.True(t, snap.Begun())
	}
}
