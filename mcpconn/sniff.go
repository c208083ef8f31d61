package mcpconn

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sniffTransport wraps a stdio connection to keep the raw JSON of the initialize result and of the
// tools listed, so statuses echo exactly what the server sent (the SDK's structs re-serialize with
// different defaults). Only used for stdio: the streamable HTTP connection must not be wrapped.
type sniffTransport struct {
	inner mcp.Transport
	raw   *rawCapture
}

func (t *sniffTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &sniffConn{Connection: c, raw: t.raw}, nil
}

// rawCapture holds raw server payloads captured from the wire.
type rawCapture struct {
	mu      sync.Mutex
	pending map[string]string // request id → method
	init    json.RawMessage
	tools   map[string]json.RawMessage
}

func newRawCapture() *rawCapture {
	return &rawCapture{pending: map[string]string{}, tools: map[string]json.RawMessage{}}
}

func (r *rawCapture) initResult() json.RawMessage {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.init
}

func (r *rawCapture) tool(name string) json.RawMessage {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tools[name]
}

type sniffConn struct {
	mcp.Connection
	raw *rawCapture
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

func (c *sniffConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() && (req.Method == "initialize" || req.Method == "tools/list") {
		c.raw.mu.Lock()
		c.raw.pending[idKey(req.ID)] = req.Method
		c.raw.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c *sniffConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && resp.Error == nil {
		c.raw.mu.Lock()
		key := idKey(resp.ID)
		method := c.raw.pending[key]
		delete(c.raw.pending, key)
		switch method {
		case "initialize":
			c.raw.init = append(json.RawMessage(nil), resp.Result...)
		case "tools/list":
			var page struct {
				Tools []json.RawMessage `json:"tools"`
			}
			if json.Unmarshal(resp.Result, &page) == nil {
				for _, t := range page.Tools {
					var named struct {
						Name string `json:"name"`
					}
					if json.Unmarshal(t, &named) == nil {
						c.raw.tools[named.Name] = append(json.RawMessage(nil), t...)
					}
				}
			}
		}
		c.raw.mu.Unlock()
	}
	return msg, err
}
