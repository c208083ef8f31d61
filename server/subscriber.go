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

// Hold implements thread.Holder.
func (c *connection) Hold() (release func()) { return c.rpc.Hold() }

// Call implements thread.Subscriber: a server→client request on this connection. When the connection
// ends before answering, the error wraps thread.ErrSubscriberGone so the thread re-routes the request.
func (c *connection) Call(ctx context.Context, method string, params any, onSent func(requestID any)) (json.RawMessage, error) {
	var onID func(int64)
	if onSent != nil {
		// The id is recorded before the request is written: another subscriber's answer may arrive
		// before this goroutine runs again, and serverRequest/resolved must still reach this connection.
		onID = func(id int64) { onSent(id) }
	}
	id, ch, err := c.rpc.SendReporting(method, params, onID)
	if err != nil {
		return nil, gone(err)
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
