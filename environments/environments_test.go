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
	require.Eventually(t, func() bool { st = r.Status(id); return st.Kind != "pending" }, time.Minute, 5*time.Millisecond)
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
	require.ErrorIs(t, r.Add("", Remote{URL: "ws://h"}), ErrProtocol)
	err := r.Add(LocalID, Remote{URL: "ws://h"})
	require.ErrorIs(t, err, ErrProtocol)
	require.Contains(t, err.Error(), "reserved")
	for _, spec := range []Remote{
		{URL: "ws://10.1.2.3:9", BearerToken: "tok"},
		{URL: "ws://example.com:9", RequestID: "rid"},
		{URL: "not a url", BearerToken: "tok"},
	} {
		require.EqualError(t, r.Add("e", spec), "exec-server protocol error: exec-server WebSocket headers require wss:// or a loopback destination")
	}
	for _, spec := range []Remote{
		{URL: "wss://example.com:9", BearerToken: "tok"},
		{URL: "ws://127.0.0.1:1", RequestID: "rid"},
		{URL: "ws://localhost:1", BearerToken: "tok"},
		{URL: "ws://[::1]:1", BearerToken: "tok"},
	} {
		require.NoError(t, r.Add("e", spec), spec.URL)
	}
}

func TestConnectionOutcomes(t *testing.T) {
	// A refused port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "ws://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	// A live WebSocket endpoint: the upgrade succeeds, but appserver speaks no exec-server protocol.
	headers := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		headers <- req.Header.Clone()
		c, err := websocket.Accept(w, req, nil)
		if err == nil {
			_, _, _ = c.Read(req.Context())
		}
	}))
	defer srv.Close()
	live := "ws" + strings.TrimPrefix(srv.URL, "http")

	r := New("/")
	defer r.Close()
	require.NoError(t, r.Add("bad", Remote{URL: "not a url"}))
	require.NoError(t, r.Add("refused", Remote{URL: refused}))
	require.NoError(t, r.Add("live", Remote{URL: live, BearerToken: "tok", RequestID: "rid", ConnectTimeout: time.Minute}))
	require.NoError(t, r.Add("http", Remote{URL: "http://127.0.0.1:1"}))

	st := settled(t, r, "bad")
	require.Equal(t, "disconnected", st.Kind)
	require.Equal(t, "exec-server connection attempt failed: failed to connect to exec-server websocket `not a url`: IO error: invalid WebSocket URL", st.Error)
	st = settled(t, r, "refused")
	require.Equal(t, "disconnected", st.Kind)
	require.Equal(t, "exec-server connection attempt failed: failed to connect to exec-server websocket `"+refused+"`: IO error: Connection refused (os error 111)", st.Error)
	st = settled(t, r, "http")
	require.Equal(t, "exec-server connection attempt failed: failed to connect to exec-server websocket `http://127.0.0.1:1`: URL error: URL scheme not supported", st.Error)
	st = settled(t, r, "live")
	require.Equal(t, "disconnected", st.Kind)
	require.Contains(t, st.Error, "not supported by appserver")
	h := <-headers
	require.Equal(t, "Bearer tok", h.Get("Authorization"))
	require.Equal(t, "rid", h.Get("X-Request-ID"))
	_, err = r.Info("live")
	require.EqualError(t, err, st.Error)

	// Re-adding replaces the entry and starts over.
	require.NoError(t, r.Add("bad", Remote{URL: refused}))
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
	require.NoError(t, r.Add("slow", Remote{URL: "ws://" + ln.Addr().String(), ConnectTimeout: time.Hour}))
	require.Equal(t, "pending", r.Status("slow").Kind)
	r.Close() // returns only once the attempt has ended
	require.Error(t, r.Add("later", Remote{URL: "ws://h"}))
}
