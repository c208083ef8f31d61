package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/mockmodel"
	"appserver/thread"
)

// The thread index update of an ended turn is written after turn/completed, but a thread/list sent on
// turn/completed still shows the turn: the listing waits for the pending update (here held until the
// listing is waiting, so without that wait it would show the thread as before the turn).
func TestThreadListAfterTurnCompletedSeesTheTurn(t *testing.T) {
	// Each deferred update waits until something reads the index: the listing would otherwise race it.
	var mu sync.Mutex
	var held []chan struct{}
	update := func() func() { // registered before turn/completed goes out, so a later listing releases it
		ch := make(chan struct{})
		mu.Lock()
		held = append(held, ch)
		mu.Unlock()
		return func() { <-ch }
	}
	wait := func() {
		mu.Lock()
		for _, ch := range held {
			close(ch)
		}
		held = nil
		mu.Unlock()
	}
	thread.SetTouchHooksForTest(update, wait)
	t.Cleanup(func() { wait(); thread.SetTouchHooksForTest(nil, nil) })

	home := filepath.Join(t.TempDir(), "codex_home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	mm := mockmodel.New(t)
	c := startWire(t, home, mm)
	defer c.close()
	type listed struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	start := func() string {
		var started struct {
			Thread struct {
				ID string `json:"id"`
			} `json:"thread"`
		}
		require.NoError(t, json.Unmarshal(c.call("thread/start", map[string]any{}), &started))
		return started.Thread.ID
	}
	delay := 5 // ms: the turn ends well after the second thread was created
	turn := func(id string) {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}, EventDelayMs: &delay})
		c.call("turn/start", map[string]any{"threadId": id, "input": []any{map[string]any{"type": "text", "text": "hi"}}})
		c.waitMethod("turn/completed")
	}
	list := func() []string {
		var l listed
		require.NoError(t, json.Unmarshal(c.call("thread/list", map[string]any{"sortKey": "updated_at"}), &l))
		var ids []string
		for _, d := range l.Data {
			ids = append(ids, d.ID)
		}
		return ids
	}
	a := start()
	turn(a)
	b := start()
	turn(b)
	require.Equal(t, []string{b, a}, list()) // opens the index; b's turn ended last

	turn(a)
	require.Equal(t, []string{a, b}, list(), "the listing sent on turn/completed does not show a's turn")
}
