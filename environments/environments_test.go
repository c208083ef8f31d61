package environments

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// settled waits for the connection attempt of id to end and returns its status.
func settled(t *testing.T, r *Registry, id string) Status {
	t.Helper()
	var st Status
	require.Eventually(t, func() bool { st = r.Status(id); return st.Kind != "pending" }, 20*time.Second, 5*time.Millisecond)
	return st
}

func TestLocalAndUnknown(t *testing.T) {
	t.Setenv("SHELL", "/usr/bin/zsh")
	r := New("/work")
	defer r.Close()
	require.Equal(t, Status{Kind: "ready"}, r.Status(LocalID))
	info, err := r.Info(LocalID)
	require.NoError(t, err)
	require.Equal(t, Info{ShellName: "zsh", ShellPath: "/usr/bin/zsh", Cwd: "/work"}, info)
	require.Equal(t, Status{Kind: "unknown", Error: "unknown environment id `x`"}, r.Status("x"))
	_, err = r.Info("x")
	require.ErrorIs(t, err, ErrUnknown)
}

func TestAddValidation(t *testing.T) {
	r := New("/")
	defer r.Close()
	require.ErrorIs(t, r.Add("", "ws://h", 0), ErrProtocol)
	err := r.Add(LocalID, "ws://h", 0)
	require.ErrorIs(t, err, ErrProtocol)
	require.Contains(t, err.Error(), "reserved")
}

func TestConnectionOutcomes(t *testing.T) {
	// A refused port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "ws://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	// A live WebSocket endpoint: the upgrade succeeds, but appserver speaks no exec-server protocol.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := websocket.Accept(w, req, nil)
		if err == nil {
			_, _, _ = c.Read(req.Context())
		}
	}))
	defer srv.Close()
	live := "ws" + strings.TrimPrefix(srv.URL, "http")

	r := New("/")
	defer r.Close()
	require.NoError(t, r.Add("bad", "not a url", 0))
	require.NoError(t, r.Add("refused", refused, 0))
	require.NoError(t, r.Add("live", live, 0))

	st := settled(t, r, "bad")
	require.Equal(t, "disconnected", st.Kind)
	require.Equal(t, "exec-server connection attempt failed: failed to connect to exec-server websocket `not a url`: IO error: invalid WebSocket URL", st.Error)
	st = settled(t, r, "refused")
	require.Equal(t, "disconnected", st.Kind)
	require.Contains(t, st.Error, "failed to connect to exec-server websocket `"+refused+"`: IO error:")
	st = settled(t, r, "live")
	require.Equal(t, "disconnected", st.Kind)
	require.Contains(t, st.Error, "not supported by appserver")
	_, err = r.Info("live")
	require.EqualError(t, err, st.Error)

	// Re-adding replaces the entry and starts over.
	require.NoError(t, r.Add("bad", refused, 0))
	require.Contains(t, settled(t, r, "bad").Error, refused)
}

func TestCloseStopsAttempts(t *testing.T) {
	// A listener that accepts but never answers the upgrade keeps the attempt pending until Close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	r := New("/")
	require.NoError(t, r.Add("slow", "ws://"+ln.Addr().String(), time.Hour))
	require.Equal(t, "pending", r.Status("slow").Kind)
	r.Close() // returns only once the attempt has ended
	require.Error(t, r.Add("later", "ws://h", 0))
}
