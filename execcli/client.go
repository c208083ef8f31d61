package execcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/server"
)

// note is one notification from the engine.
type note struct {
	method string
	params json.RawMessage
}

// engine is the app-server run in this process, spoken to over in-memory pipes with the same
// JSON-RPC messages an IDE would send: exec shares every code path of the thread engine and adds
// no socket and no second process.
type engine struct {
	srv *server.Server
	rpc *jsonrpc.Conn
	log *slog.Logger

	toServer   *io.PipeWriter
	fromServer *io.PipeWriter
	served     chan struct{} // closed when the server side of the connection has ended
	clientDone chan struct{} // closed when the client side has ended

	mu     sync.Mutex
	queue  []note
	signal chan struct{} // has a token when queue is non-empty or the connection ended
	ended  bool
}

// startEngine serves one in-memory connection of srv; notifications are queued in arrival order
// (without bound, so the server never waits for the printer) and taken with next.
func startEngine(ctx context.Context, srv *server.Server, log *slog.Logger) *engine {
	cr, sw := io.Pipe() // server writes, client reads
	sr, cw := io.Pipe() // client writes, server reads
	e := &engine{srv: srv, log: log, toServer: cw, fromServer: sw, served: make(chan struct{}), clientDone: make(chan struct{}),
		signal: make(chan struct{}, 1)}
	go func() { // owned by the engine: ends when toServer is closed (close)
		defer close(e.served)
		if err := srv.ServeConn(context.WithoutCancel(ctx), sr, sw); err != nil {
			log.Debug("in-process connection ended", "error", err)
		}
		_ = sw.Close()
	}()
	e.rpc = jsonrpc.NewConn(cr, cw, e, jsonrpc.Options{Logger: log, ReleaseMemory: debug.FreeOSMemory})
	go func() { // owned by the engine: ends when the server side closes its writer
		defer close(e.clientDone)
		_ = e.rpc.Run(context.WithoutCancel(ctx))
		e.mu.Lock()
		e.ended = true
		e.mu.Unlock()
		e.wake()
	}()
	return e
}

func (e *engine) wake() {
	select {
	case e.signal <- struct{}{}:
	default:
	}
}

// HandleNotification queues a notification for next.
func (e *engine) HandleNotification(_ context.Context, method string, params json.RawMessage) {
	e.mu.Lock()
	e.queue = append(e.queue, note{method: method, params: append(json.RawMessage(nil), params...)})
	e.mu.Unlock()
	e.wake()
}

// HandleRequest answers the engine's questions the way exec's non-interactive policy does: nothing is
// ever approved and elicitations are cancelled. With approval policy "never" the engine asks no
// approval questions; the answers here are the safe default should one come anyway.
func (e *engine) HandleRequest(_ context.Context, req *jsonrpc.Request) (any, error) {
	switch req.Method {
	case protocol.ServerRequestItemCommandExecutionRequestApproval, protocol.ServerRequestItemFileChangeRequestApproval:
		return map[string]any{"decision": "decline"}, nil
	case protocol.ServerRequestExecCommandApproval, protocol.ServerRequestApplyPatchApproval:
		return map[string]any{"decision": "denied"}, nil
	case protocol.ServerRequestMcpServerElicitationRequest:
		return map[string]any{"action": "cancel", "content": nil}, nil
	case protocol.ServerRequestItemPermissionsRequestApproval:
		return map[string]any{"permissions": map[string]any{}, "scope": "turn"}, nil
	case protocol.ServerRequestItemToolRequestUserInput:
		return map[string]any{"answers": map[string]any{}}, nil
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "%s is not supported by appserver exec", req.Method)
}

// callError is the engine's error answer to a request; it reads as the engine's message.
type callError struct {
	code int
	msg  string
}

func (e *callError) Error() string { return e.msg }

// describeCallError is how the reference's exec reports a request of its own that failed:
// "<method>: <method> failed: <message> (code <code>)".
func describeCallError(method string, err error) error {
	var ce *callError
	if errors.As(err, &ce) {
		return fmt.Errorf("%s: %s failed: %s (code %d)", method, method, ce.msg, ce.code)
	}
	return fmt.Errorf("%s: %w", method, err)
}

// call sends a request and decodes its result into out (when non-nil).
func (e *engine) call(ctx context.Context, method string, params, out any) error {
	raw, err := e.rpc.Call(ctx, method, params)
	if err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			return &callError{code: int(rpcErr.Code), msg: rpcErr.Message}
		}
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// next returns the oldest queued notification, waiting for one until ctx ends; ok is false when
// the connection has ended and nothing is left, or ctx ended.
func (e *engine) next(ctx context.Context) (n note, ok bool) {
	for {
		e.mu.Lock()
		if len(e.queue) > 0 {
			n = e.queue[0]
			e.queue = e.queue[1:]
			e.mu.Unlock()
			return n, true
		}
		ended := e.ended
		e.mu.Unlock()
		if ended {
			return note{}, false
		}
		select {
		case <-e.signal:
		case <-ctx.Done():
			return note{}, false
		}
	}
}

// close stops the server (threads, their turns, MCP servers and processes) and then ends the
// connection; notifications sent while stopping stay queued for next.
func (e *engine) close() {
	e.srv.Close()
	_ = e.toServer.Close()
	<-e.served
	<-e.clientDone
}
