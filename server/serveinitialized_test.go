package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/config"
	"appserver/internal/apptest"
	protocol "appserver/protocol/v2"
	"appserver/server"
)

// TestServeConnInitializedWithATinyQueue: the notifications that follow an early initialize answer are more
// than a one-line queue holds; they still go out, first, and the connection serves its requests.
func TestServeConnInitializedWithATinyQueue(t *testing.T) {
	cfg, err := config.Defaults(t.TempDir(), nil)
	require.NoError(t, err)
	srv := server.New(server.Options{Config: cfg, QueueSize: 1, Logger: slog.New(slog.DiscardHandler),
		ConfigError: errors.New("config.toml: broken"),
		UnknownKeys: func() []config.UnknownKey { return []config.UnknownKey{{File: "config.toml", Line: 1, Key: "nope"}} }})
	defer srv.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeConnInitialized(context.Background(), inR, outW,
			&protocol.InitializeParams{ClientInfo: protocol.ClientInfo{Name: "t", Version: "1"}})
		_ = outW.Close()
	}()
	got := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		got <- lines
	}()
	go func() {
		_, _ = io.WriteString(inW, `{"id":2,"method":"thread/loaded/list","params":{}}`+"\n")
		_ = inW.Close()
	}()
	var lines []string
	select {
	case lines = <-got:
	case <-time.After(apptest.WaitLimit):
		t.Fatal("the connection is wedged")
	}
	require.NoError(t, <-done)
	require.GreaterOrEqual(t, len(lines), 4, lines)
	last := len(lines) - 1
	for _, l := range lines[:last] {
		require.True(t, strings.HasPrefix(l, `{"method":"`), "a notification before the reply: %s", l)
	}
	require.True(t, strings.HasPrefix(lines[last], `{"id":2,"result"`), lines[last])
}
