package server

import (
	"context"
	"encoding/json"
)

// Notify implements thread.Subscriber.
func (c *connection) Notify(method string, params any) { c.notify(method, params) }

// Call implements thread.Subscriber: a server→client request on this connection.
func (c *connection) Call(ctx context.Context, method string, params any, onSent func(requestID any)) (json.RawMessage, error) {
	id, ch, err := c.rpc.Send(method, params)
	if err != nil {
		return nil, err
	}
	if onSent != nil {
		onSent(id)
	}
	return c.rpc.Wait(ctx, id, ch)
}
