package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultQueueSize is the capacity of the ingress and egress queues, as the reference's CHANNEL_CAPACITY.
const DefaultQueueSize = 128

// MaxLineBytes is the longest input line accepted; longer lines are discarded with a log entry.
const MaxLineBytes = 256 << 20

// ErrClosed is returned by calls on a connection that has ended.
var ErrClosed = errors.New("jsonrpc: connection closed")

// Handler serves the requests and notifications of one connection. HandleRequest runs on the
// connection's single dispatch goroutine, in arrival order: a handler that may block must call
// req.Defer and finish on a goroutine of its own.
type Handler interface {
	HandleRequest(ctx context.Context, req *Request) (result any, err error)
	HandleNotification(ctx context.Context, method string, params json.RawMessage)
}

// Options tune a connection.
type Options struct {
	// QueueSize bounds the ingress and egress queues (DefaultQueueSize when zero).
	QueueSize int
	// Logger receives diagnostics (slog.Default when nil).
	Logger *slog.Logger
	// Now stamps emittedAtMs (time.Now when nil).
	Now func() time.Time
}

// Conn is one JSON-RPC peer over a reader and a writer.
type Conn struct {
	r       io.Reader
	w       io.Writer
	handler Handler
	log     *slog.Logger
	now     func() time.Time

	ingress chan *Message
	egress  chan []byte

	ctx    context.Context
	cancel context.CancelCauseFunc

	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan *Message

	stopWriter chan struct{}
	writerDone chan struct{}
	done       chan struct{}
	closeOnce  sync.Once
}

// NewConn prepares a connection; Run starts it.
func NewConn(r io.Reader, w io.Writer, h Handler, opts Options) *Conn {
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Conn{
		r: r, w: w, handler: h, log: opts.Logger, now: opts.Now,
		ingress:    make(chan *Message, opts.QueueSize),
		egress:     make(chan []byte, opts.QueueSize),
		pending:    map[int64]chan *Message{},
		stopWriter: make(chan struct{}),
		writerDone: make(chan struct{}),
		done:       make(chan struct{}),
	}
}

// Context is cancelled when the connection ends (input EOF, read error or Close).
func (c *Conn) Context() context.Context { return c.ctx }

// Done is closed when the connection has ended and its queues are drained.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Run reads until EOF or ctx ends, dispatching requests in order; it returns after the dispatcher
// finished and the writer flushed what was queued.
func (c *Conn) Run(ctx context.Context) error {
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	go c.writeLoop()
	dispatchDone := make(chan struct{})
	go func() {
		defer close(dispatchDone)
		c.dispatchLoop()
	}()
	readErr := c.readLoop()
	close(c.ingress)
	<-dispatchDone
	c.cancel(ErrClosed)
	c.failPending()
	close(c.stopWriter)
	<-c.writerDone
	c.closeOnce.Do(func() { close(c.done) })
	if errors.Is(readErr, io.EOF) {
		return nil
	}
	return readErr
}

func (c *Conn) readLoop() error {
	br := bufio.NewReaderSize(c.r, 64<<10)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			c.handleLine(line)
		}
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				c.log.Warn("discarded an input line longer than the limit", "limit", MaxLineBytes)
				continue
			}
			return err
		}
		if c.ctx.Err() != nil {
			return c.ctx.Err()
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its terminator; an over-long line is consumed and reported.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLineBytes {
			buf = nil
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if n := len(buf); n > 0 && buf[n-1] == '\n' {
			buf = buf[:n-1]
			if n := len(buf); n > 0 && buf[n-1] == '\r' {
				buf = buf[:n-1]
			}
		}
		return buf, err
	}
}

func (c *Conn) handleLine(line []byte) {
	msg, err := Decode(line)
	if err != nil {
		c.log.Warn("Failed to deserialize JSONRPCMessage", "error", err.Error(), "line", truncate(line, 200))
		return
	}
	switch msg.Kind {
	case KindResponse, KindError:
		c.resolve(msg)
	case KindNotification, KindRequest:
		select {
		case c.ingress <- msg:
		default:
			if msg.Kind == KindRequest {
				c.tryWrite(encodeError(msg.ID, &Error{Code: CodeOverloaded, Message: OverloadedMessage}))
				return
			}
			select {
			case c.ingress <- msg:
			case <-c.ctx.Done():
			}
		}
	}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func (c *Conn) dispatchLoop() {
	for msg := range c.ingress {
		if msg.Kind == KindNotification {
			c.safeNotification(msg)
			continue
		}
		req := &Request{ID: msg.ID, Method: msg.Method, Params: msg.Params, conn: c}
		result, err := c.safeHandle(req)
		if req.deferred.Load() {
			continue
		}
		req.Reply(result, err)
	}
}

func (c *Conn) safeNotification(msg *Message) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("panic in notification handler", "method", msg.Method, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	c.handler.HandleNotification(c.ctx, msg.Method, msg.Params)
}

func (c *Conn) safeHandle(req *Request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("panic in request handler", "method", req.Method, "panic", p, "stack", string(debug.Stack()))
			if req.deferred.Load() {
				req.deferred.Store(false)
			}
			result, err = nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	return c.handler.HandleRequest(c.ctx, req)
}

func (c *Conn) writeLoop() {
	defer close(c.writerDone)
	bw := bufio.NewWriterSize(c.w, 64<<10)
	broken := false
	put := func(line []byte) {
		if broken {
			return
		}
		_, err := bw.Write(line)
		if err == nil {
			err = bw.WriteByte('\n')
		}
		if err == nil && len(c.egress) == 0 {
			err = bw.Flush()
		}
		if err != nil {
			broken = true
			c.log.Warn("output closed; dropping further messages", "error", err)
			c.cancel(ErrClosed)
		}
	}
	for {
		select {
		case line := <-c.egress:
			put(line)
		case <-c.stopWriter:
			for {
				select {
				case line := <-c.egress:
					put(line)
				default:
					if !broken {
						_ = bw.Flush()
					}
					return
				}
			}
		}
	}
}

// write queues one line, blocking while the queue is full, as stdio does in the reference.
func (c *Conn) write(line []byte) error {
	select {
	case <-c.writerDone:
		return ErrClosed
	default:
	}
	select {
	case c.egress <- line:
		return nil
	case <-c.writerDone:
		return ErrClosed
	}
}

// tryWrite queues a line unless the queue is full (then it is dropped, like the reference's overload reply).
func (c *Conn) tryWrite(line []byte) {
	select {
	case c.egress <- line:
	default:
		c.log.Warn("outbound queue full; dropped a message")
	}
}

// Notify sends a notification with a top-level emittedAtMs.
func (c *Conn) Notify(method string, params any) error {
	var raw json.RawMessage
	if params != nil {
		b, err := Marshal(params)
		if err != nil {
			return fmt.Errorf("encode %s params: %w", method, err)
		}
		raw = b
	}
	return c.write(encodeNotification(method, raw, c.now().UnixMilli()))
}

// Call sends a server→client request and waits for its answer until ctx ends or the connection closes.
// A JSON-RPC error answer is returned as *Error.
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id, ch, err := c.Send(method, params)
	if err != nil {
		return nil, err
	}
	return c.Wait(ctx, id, ch)
}

// Send writes a server→client request and returns its id and the channel its answer arrives on;
// Wait collects it. Splitting the two lets a caller publish the id before waiting.
func (c *Conn) Send(method string, params any) (int64, <-chan *Message, error) {
	var raw json.RawMessage
	if params != nil {
		b, err := Marshal(params)
		if err != nil {
			return 0, nil, fmt.Errorf("encode %s params: %w", method, err)
		}
		raw = b
	}
	id := c.nextID.Add(1) - 1
	ch := make(chan *Message, 1)
	c.mu.Lock()
	if c.pending == nil {
		c.mu.Unlock()
		return 0, nil, ErrClosed
	}
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.write(encodeRequest(id, method, raw)); err != nil {
		c.forget(id)
		return 0, nil, err
	}
	return id, ch, nil
}

// Wait waits for the answer to request id sent by Send.
func (c *Conn) Wait(ctx context.Context, id int64, ch <-chan *Message) (json.RawMessage, error) {
	select {
	case msg, ok := <-ch:
		if !ok || msg == nil {
			return nil, ErrClosed
		}
		if msg.Kind == KindError {
			return nil, msg.Error
		}
		return msg.Result, nil
	case <-ctx.Done():
		c.forget(id)
		return nil, context.Cause(ctx)
	}
}

func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *Conn) resolve(msg *Message) {
	var id int64
	if err := json.Unmarshal(msg.ID, &id); err != nil {
		c.log.Debug("response to an unknown request id", "id", string(msg.ID))
		return
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !ok {
		c.log.Debug("response to an unknown request id", "id", id)
		return
	}
	ch <- msg
}

func (c *Conn) failPending() {
	c.mu.Lock()
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
}

// Request is one client request being served.
type Request struct {
	ID     json.RawMessage
	Method string
	// Params is nil when absent or null.
	Params json.RawMessage

	conn     *Conn
	deferred atomic.Bool
	replied  atomic.Bool
}

// Conn returns the connection the request arrived on.
func (r *Request) Conn() *Conn { return r.conn }

// Defer tells the dispatcher that the handler will call Reply later (from another goroutine);
// the handler's return values are then ignored.
func (r *Request) Defer() { r.deferred.Store(true) }

// Reply answers the request once; later calls are ignored. A non-nil err that is not an *Error
// becomes -32603 with its text.
func (r *Request) Reply(result any, err error) {
	if !r.replied.CompareAndSwap(false, true) {
		return
	}
	if err != nil {
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			rpcErr = &Error{Code: CodeInternalError, Message: err.Error()}
		}
		_ = r.conn.write(encodeError(r.ID, rpcErr))
		return
	}
	var raw json.RawMessage
	switch v := result.(type) {
	case json.RawMessage:
		raw = v
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
	case nil:
		raw = json.RawMessage("{}")
	default:
		b, mErr := Marshal(v)
		if mErr != nil {
			_ = r.conn.write(encodeError(r.ID, &Error{Code: CodeInternalError, Message: "encode result: " + mErr.Error()}))
			return
		}
		raw = b
	}
	_ = r.conn.write(encodeResponse(r.ID, raw))
}

// Replied reports whether Reply was called.
func (r *Request) Replied() bool { return r.replied.Load() }
