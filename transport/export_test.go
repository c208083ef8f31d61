package transport

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
)

// StallFirstConnection wraps the first connection h accepts; calling the returned function makes it
// behave like a peer that stopped reading: from then on writes block until the connection is dropped.
func StallFirstConnection(h *WSHandler) (stall func()) {
	var once sync.Once
	var stalled atomic.Bool
	h.wrap = func(s frameSocket) frameSocket {
		wrapped := s
		once.Do(func() { wrapped = &stalledSocket{frameSocket: s, stalled: &stalled} })
		return wrapped
	}
	return func() { stalled.Store(true) }
}

type stalledSocket struct {
	frameSocket
	stalled *atomic.Bool
}

func (s *stalledSocket) Write(ctx context.Context, typ websocket.MessageType, p []byte) error {
	if s.stalled.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.frameSocket.Write(ctx, typ, p)
}
