package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"appserver/jsonrpc"
	"appserver/thread"
)

// Notify implements thread.Subscriber.
func (c *connection) Notify(method string, params any) { c.notify(method, params) }

// Call implements thread.Subscriber: a server→client request on this connection. When the connection
// ends before answering, the error wraps thread.ErrSubscriberGone so the thread re-routes the request.
func (c *connection) Call(ctx context.Context, method string, params any, onSent func(requestID any)) (json.RawMessage, error) {
	id, ch, err := c.rpc.Send(method, params)
	if err != nil {
		return nil, gone(err)
	}
	if onSent != nil {
		onSent(id)
	}
	res, err := c.rpc.Wait(ctx, id, ch)
	return res, gone(err)
}

func gone(err error) error {
	if errors.Is(err, jsonrpc.ErrClosed) {
		return fmt.Errorf("%w: %w", thread.ErrSubscriberGone, err)
	}
	return err
}

// leaveThreads unsubscribes a connection that ended from every thread (server requests waiting on it are
// re-routed to another subscriber).
func (s *Server) leaveThreads(c *connection) { s.threads.Disconnect(c) }
