package mcpconn

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

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

// rawCapture holds raw server payloads captured from the wire, and counts the progress
// notifications read but not yet handled (the SDK hands notifications to a goroutine of their own,
// while a response completes its call at once: without the count a call could return before the
// progress its server sent first was reported).
type rawCapture struct {
	mu         sync.Mutex
	pending    map[string]string // request id → method
	init       json.RawMessage
	tools      map[string]json.RawMessage
	progress   map[int64]int // progress token → notifications read, not yet handled
	progressCh chan struct{} // closed and replaced whenever one is handled
}

func newRawCapture() *rawCapture {
	return &rawCapture{pending: map[string]string{}, tools: map[string]json.RawMessage{},
		progress: map[int64]int{}, progressCh: make(chan struct{})}
}

// progressDrainWait bounds how long a finished call waits for the progress read before its result.
const progressDrainWait = 5 * time.Second

// progressToken is the integer token of a notifications/progress message; ok is false for others.
func progressToken(msg jsonrpc.Message) (token int64, ok bool) {
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq || req.ID.IsValid() || req.Method != "notifications/progress" {
		return 0, false
	}
	var p struct {
		ProgressToken json.Number `json:"progressToken"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return 0, false
	}
	token, err := p.ProgressToken.Int64()
	return token, err == nil
}

// progressHandled records that a progress notification for token reached the hook (or was dropped).
func (r *rawCapture) progressHandled(token int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.progress[token] == 0 {
		return
	}
	if r.progress[token]--; r.progress[token] == 0 {
		delete(r.progress, token)
	}
	close(r.progressCh)
	r.progressCh = make(chan struct{})
}

// awaitProgress returns once every progress notification read so far for token was handled, ctx
// ended, stop closed or progressDrainWait passed.
func (r *rawCapture) awaitProgress(ctx context.Context, stop <-chan struct{}, token int64) {
	if r == nil {
		return
	}
	var timeout <-chan time.Time
	for {
		r.mu.Lock()
		n, changed := r.progress[token], r.progressCh
		r.mu.Unlock()
		if n == 0 {
			return
		}
		if timeout == nil {
			t := time.NewTimer(progressDrainWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-timeout:
			return
		}
	}
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
	if token, ok := progressToken(msg); ok && err == nil {
		c.raw.mu.Lock()
		c.raw.progress[token]++
		c.raw.mu.Unlock()
	}
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
