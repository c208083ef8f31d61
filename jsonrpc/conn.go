package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"appserver/internal/stacksize"
)

// DefaultQueueSize is the capacity of the egress queue, as the reference's CHANNEL_CAPACITY.
const DefaultQueueSize = 128

// DefaultMaxInFlight bounds the requests a connection serves at once; past it the reader stops
// reading (back-pressure) until a reply has been written.
const DefaultMaxInFlight = 1024

// DefaultLaneLimit bounds the requests waiting in one lane; a request past it is refused with -32001.
const DefaultLaneLimit = 256

// MaxLineBytes is the longest input line accepted; longer lines are discarded with a log entry.
const MaxLineBytes = 256 << 20

// LargeLineBytes is the size from which a line counts as large: one large request is served at a time
// (the reader waits before dispatching the next), and its memory is returned to the system when it is
// over.
const LargeLineBytes = 8 << 20

// ErrClosed is returned by calls on a connection that has ended.
var ErrClosed = errors.New("jsonrpc: connection closed")

// Handler serves the requests and notifications of one connection. Each request runs on a goroutine
// of its own, concurrently with the others (see Orderer for ordering), so a Handler must be safe for
// concurrent use. HandleRequest's return values are the reply unless the handler replied already or
// handed the request to Request.Go. Notifications are handled on the reader, in arrival order, and
// must not block.
type Handler interface {
	HandleRequest(ctx context.Context, req *Request) (result any, err error)
	HandleNotification(ctx context.Context, method string, params json.RawMessage)
}

// Order says how a request is scheduled relative to the others of its connection.
type Order struct {
	// Lane names a queue: requests of one lane run one at a time, in arrival order, each after the
	// previous one's handler returned. The empty lane runs the request at once.
	Lane string
	// Barrier runs the request alone: no later request is read before its handler returned.
	Barrier bool
}

// Orderer is optionally implemented by a Handler to place each request in a lane before it runs.
// It is called on the reader goroutine and must be quick.
type Orderer interface {
	Order(method string, params json.RawMessage) Order
}

// Options tune a connection.
type Options struct {
	// QueueSize bounds the egress queue (DefaultQueueSize when zero).
	QueueSize int
	// MaxInFlight bounds the requests being served at once (DefaultMaxInFlight when zero).
	MaxInFlight int
	// LaneLimit bounds the requests waiting in one lane (DefaultLaneLimit when zero).
	LaneLimit int
	// Logger receives diagnostics (slog.Default when nil).
	Logger *slog.Logger
	// Now stamps emittedAtMs (time.Now when nil).
	Now func() time.Time
	// MaxLineBytes bounds an input line (MaxLineBytes when zero); a longer line is discarded.
	MaxLineBytes int
	// LargeLineBytes is the size from which a line counts as large (LargeLineBytes when zero).
	LargeLineBytes int
	// ReleaseMemory is called when a large line is done with, to return its pages to the system at
	// once (the server passes debug.FreeOSMemory: the runtime would otherwise keep them for
	// minutes); nil leaves them to the runtime. An option, not an import: this package is
	// initialised early (internal/early), and runtime/debug is among the last packages Go
	// initialises.
	ReleaseMemory func()
	// BeforeRead, when set, runs in Run once the writer has started and before the first line is read: what
	// it writes reaches the client before the answer to any request, and may fill the queue (its writes
	// block until the writer drains it, never on a writer not started yet).
	BeforeRead func()
}

// Conn is one JSON-RPC peer over a reader and a writer.
type Conn struct {
	r         io.Reader
	w         io.Writer
	handler   Handler
	orderer   Orderer
	log       *slog.Logger
	now       func() time.Time
	laneLimit int
	maxLine   int
	largeLine int
	release   func()
	before    func()

	egress chan outLine // replies, requests and notifications, in order
	bulk   chan outLine // bulk notifications (NotifyBulk), written when egress lets them
	// bulkPending and egressPending count the lines (and markers) queued and not yet written.
	bulkPending   atomic.Int64
	egressPending atomic.Int64
	out           output
	// readerInline is non-zero while the reader runs a handler itself (a barrier request, a notification):
	// lines are then queued, never written by their producer, so the reader cannot block on an output
	// the client does not read yet while the client blocks writing its next line.
	readerInline atomic.Int32
	// held counts the Holds in force: lines are not flushed while it is non-zero.
	held atomic.Int32

	ctx    context.Context
	cancel context.CancelCauseFunc

	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan *Message

	// slots holds one token per request in flight (read, not yet answered).
	slots chan struct{}
	// large holds the token of the large request in flight, if any.
	large    chan struct{}
	flightMu sync.Mutex
	inFlight map[*Request]struct{}
	lanes    map[string]*lane
	// work counts the goroutines serving requests (handlers and Request.Go).
	work sync.WaitGroup

	stopWriter chan struct{}
	// writerDone is closed once the writer wrote its last line: nothing enters a queue after it.
	// writerExited is closed once it also settled what entered meanwhile (settleQueued).
	writerDone   chan struct{}
	writerExited chan struct{}
	// beforeWriterExit, when set (tests), runs on the writer goroutine after its last drain, just
	// before it stops writing.
	beforeWriterExit func()
	done             chan struct{}
	closeOnce        sync.Once
}

// lane is the queue of requests waiting behind the one running in it.
type lane struct {
	waiting []*Request
}

// NewConn prepares a connection; Run starts it.
func NewConn(r io.Reader, w io.Writer, h Handler, opts Options) *Conn {
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.LaneLimit <= 0 {
		opts.LaneLimit = DefaultLaneLimit
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = MaxLineBytes
	}
	if opts.LargeLineBytes <= 0 {
		opts.LargeLineBytes = LargeLineBytes
	}
	o, _ := h.(Orderer)
	return &Conn{
		r: r, w: w, handler: h, orderer: o, log: opts.Logger, now: opts.Now, laneLimit: opts.LaneLimit,
		maxLine: opts.MaxLineBytes, largeLine: opts.LargeLineBytes, release: opts.ReleaseMemory, before: opts.BeforeRead,
		egress:       make(chan outLine, opts.QueueSize),
		bulk:         make(chan outLine, bulkQueueSize),
		pending:      map[int64]chan *Message{},
		slots:        make(chan struct{}, opts.MaxInFlight),
		large:        make(chan struct{}, 1),
		inFlight:     map[*Request]struct{}{},
		lanes:        map[string]*lane{},
		stopWriter:   make(chan struct{}),
		writerDone:   make(chan struct{}),
		writerExited: make(chan struct{}),
		done:         make(chan struct{}),
	}
}

// Context is cancelled when the connection ends (input EOF, read error or Close).
func (c *Conn) Context() context.Context { return c.ctx }

// Done is closed when the connection has ended and its queues are drained.
func (c *Conn) Done() <-chan struct{} { return c.done }

// InFlight returns how many requests have been read and not yet answered.
func (c *Conn) InFlight() int {
	c.flightMu.Lock()
	defer c.flightMu.Unlock()
	return len(c.inFlight)
}

// Run reads until EOF, the output closes or ctx ends (only then is the error non-nil), serving
// requests concurrently; it returns after every request read was answered and the writer flushed what
// was queued. At EOF the connection's context is
// cancelled and the server's own requests fail (no answer can come); requests still being served
// finish, and their replies are written while the output is open.
func (c *Conn) Run(ctx context.Context) error {
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	go c.writeLoop()
	if c.before != nil {
		c.before()
	}
	readErr := c.readLoop()
	c.cancel(ErrClosed)
	c.failPending()
	c.work.Wait()
	close(c.stopWriter)
	<-c.writerExited
	c.closeOnce.Do(func() { close(c.done) })
	if errors.Is(readErr, io.EOF) {
		return nil
	}
	return readErr
}

func (c *Conn) readLoop() error {
	br := bufio.NewReaderSize(c.r, 64<<10)
	for {
		line, err := readLine(br, c.maxLine)
		if len(line) > 0 {
			c.handleLine(line)
		}
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				c.log.Warn("discarded an input line longer than the limit", "limit", c.maxLine)
				continue
			}
			return err
		}
		if c.ctx.Err() != nil {
			if errors.Is(context.Cause(c.ctx), ErrClosed) {
				return nil // the output closed: the peer is gone, an end like EOF
			}
			return c.ctx.Err()
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its terminator; an over-long line is consumed and reported.
// A line longer than the reader's buffer is gathered in chunks and joined once into a slice of its
// exact size, so a huge line costs about twice its size while it is read, not the 4-5x of repeated
// growth.
func readLine(br *bufio.Reader, maxLine int) ([]byte, error) {
	chunk, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return trimEOL(bytes.Clone(chunk)), err
	}
	var chunks [][]byte
	total := 0
	for {
		if total+len(chunk) > maxLine {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		chunks = append(chunks, bytes.Clone(chunk))
		total += len(chunk)
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
		chunk, err = br.ReadSlice('\n')
	}
	line := make([]byte, 0, total)
	for i, ch := range chunks {
		line = append(line, ch...)
		chunks[i] = nil
	}
	return trimEOL(line), err
}

// trimEOL drops a trailing "\n" or "\r\n".
func trimEOL(buf []byte) []byte {
	if n := len(buf); n > 0 && buf[n-1] == '\n' {
		buf = buf[:n-1]
		if n := len(buf); n > 0 && buf[n-1] == '\r' {
			buf = buf[:n-1]
		}
	}
	return buf
}

func (c *Conn) handleLine(line []byte) {
	large := len(line) >= c.largeLine
	msg, err := Decode(line)
	if err != nil {
		c.log.Warn("Failed to deserialize JSONRPCMessage", "error", err.Error(), "line", truncate(line, 200))
		if large {
			c.giveBackMemory()
		}
		return
	}
	switch msg.Kind {
	case KindResponse, KindError:
		c.resolve(msg)
	case KindNotification:
		c.readerInline.Add(1)
		c.safeNotification(msg)
		c.readerInline.Add(-1)
		if large {
			c.giveBackMemory()
		}
	case KindRequest:
		c.dispatch(msg, large)
	}
}

// giveBackMemory returns freed memory to the system at once (Options.ReleaseMemory).
func (c *Conn) giveBackMemory() {
	if c.release != nil {
		c.release()
	}
}

// stack is the calling goroutine's stack, as debug.Stack formats it.
func stack() []byte {
	buf := make([]byte, 1024)
	for {
		n := runtime.Stack(buf, false)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// dispatch takes an in-flight slot (waiting for one stops the reader: back-pressure), records the
// request and starts it in its lane.
func (c *Conn) dispatch(msg *Message, large bool) {
	if large {
		// One huge request at a time: the next waits (the reader stops) until the previous one is over.
		select {
		case c.large <- struct{}{}:
		case <-c.ctx.Done():
			return
		}
	}
	select {
	case c.slots <- struct{}{}:
	case <-c.ctx.Done():
		if large {
			<-c.large
		}
		return
	}
	req := &Request{ID: msg.ID, Method: msg.Method, Params: msg.Params, conn: c, large: large}
	c.flightMu.Lock()
	c.inFlight[req] = struct{}{}
	c.flightMu.Unlock()
	var order Order
	if c.orderer != nil {
		order = c.orderer.Order(msg.Method, msg.Params)
	}
	if order.Barrier {
		c.work.Add(1)
		c.readerInline.Add(1)
		c.serve(req)
		c.readerInline.Add(-1)
		return
	}
	if order.Lane == "" {
		c.work.Add(1)
		go c.serve(req)
		yieldToHandler()
		return
	}
	c.flightMu.Lock()
	l, busy := c.lanes[order.Lane]
	if busy && len(l.waiting) >= c.laneLimit {
		c.flightMu.Unlock()
		c.log.Warn("request refused: too many requests waiting in its lane", "method", msg.Method, "lane", order.Lane)
		req.Reply(nil, &Error{Code: CodeOverloaded, Message: OverloadedMessage})
		req.finish()
		return
	}
	if busy {
		l.waiting = append(l.waiting, req)
		c.flightMu.Unlock()
		return
	}
	l = &lane{}
	c.lanes[order.Lane] = l
	c.flightMu.Unlock()
	c.work.Add(1)
	go c.runLane(order.Lane, l, req)
	yieldToHandler()
}

// yieldToHandler lets the handler goroutine just started run at once on the reader's thread, the reader
// continuing wherever the scheduler finds room (its next read usually just blocks). Otherwise the handler
// waits to be taken by another thread the runtime wakes for it, which on a loaded or virtualised machine
// is the largest delay between reading a request and starting to serve it.
func yieldToHandler() { runtime.Gosched() }

// runLane serves req and then each request queued behind it, until the lane is empty.
func (c *Conn) runLane(name string, l *lane, req *Request) {
	stacksize.Grow()
	for {
		c.work.Add(1)
		c.serve(req)
		c.flightMu.Lock()
		if len(l.waiting) == 0 {
			delete(c.lanes, name)
			c.flightMu.Unlock()
			c.work.Done()
			return
		}
		req = l.waiting[0]
		l.waiting[0] = nil
		l.waiting = l.waiting[1:]
		c.flightMu.Unlock()
	}
}

// serve runs the handler and answers with its result unless the request was answered or handed to
// Request.Go; a panic answers -32603. It balances one c.work.Add.
func (c *Conn) serve(req *Request) {
	defer c.work.Done()
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("panic in request handler", "method", req.Method, "panic", p, "stack", string(stack()))
			req.Reply(nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("internal error: %v", p)})
		}
		req.finish()
		c.releaseClaims(req)
	}()
	result, err := c.handler.HandleRequest(c.ctx, req)
	if !req.handedOff.Load() {
		req.Reply(result, err)
	}
}

// settle removes an answered request from the in-flight table and frees its slot.
func (c *Conn) settle(req *Request) {
	c.flightMu.Lock()
	_, ok := c.inFlight[req]
	delete(c.inFlight, req)
	c.flightMu.Unlock()
	if ok {
		<-c.slots
	}
}

func (c *Conn) safeNotification(msg *Message) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("panic in notification handler", "method", msg.Method, "panic", p, "stack", string(stack()))
		}
	}()
	c.handler.HandleNotification(c.ctx, msg.Method, msg.Params)
}

// Notify sends a notification with a top-level emittedAtMs.
func (c *Conn) Notify(method string, params any) error {
	if a, ok := params.(Appender); ok {
		return c.write(c.appendNotification(method, a))
	}
	if params == nil {
		return c.write(outLine{b: encodeNotification(method, nil, c.now().UnixMilli())})
	}
	l, err := c.marshalNotification(method, params)
	if err != nil {
		return fmt.Errorf("encode %s params: %w", method, err)
	}
	return c.write(l)
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
	return c.SendReporting(method, params, nil)
}

// SendReporting is Send that hands the request's id to onID before the request is written, so whoever
// tracks the id knows it before the peer can possibly have seen (and answered) the request.
func (c *Conn) SendReporting(method string, params any, onID func(id int64)) (int64, <-chan *Message, error) {
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
	if onID != nil {
		onID(id)
	}
	if err := c.write(outLine{b: encodeRequest(id, method, raw)}); err != nil {
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

	conn      *Conn
	handedOff atomic.Bool
	replied   atomic.Bool
	large     bool // its line was at least the connection's large-line size: it holds the connection's large token
	finished  sync.Once
	claims    []claim // lanes held until the handler returns (guarded by conn.flightMu)
}

type claim struct {
	name string
	l    *lane
}

// Claim makes later requests of a lane that is idle wait until this request's handler has returned,
// as if this request had arrived in it: a handler that creates what the lane names (thread/start
// creating a thread) keeps its own notifications ahead of any request for it. It reports false, and
// does nothing, when the lane is busy. Call it from the handler, before replying.
func (r *Request) Claim(name string) bool {
	c := r.conn
	c.flightMu.Lock()
	defer c.flightMu.Unlock()
	if _, busy := c.lanes[name]; busy || name == "" {
		return false
	}
	l := &lane{}
	c.lanes[name] = l
	r.claims = append(r.claims, claim{name, l})
	return true
}

// releaseClaims hands each lane the request claimed to the requests queued in it meanwhile. It runs
// while the caller still holds a c.work count.
func (c *Conn) releaseClaims(r *Request) {
	c.flightMu.Lock()
	claims := r.claims
	r.claims = nil
	var start []claim
	var first []*Request
	for _, cl := range claims {
		if len(cl.l.waiting) == 0 {
			delete(c.lanes, cl.name)
			continue
		}
		next := cl.l.waiting[0]
		cl.l.waiting[0] = nil
		cl.l.waiting = cl.l.waiting[1:]
		start, first = append(start, cl), append(first, next)
	}
	c.flightMu.Unlock()
	for i, cl := range start {
		c.work.Add(1)
		go c.runLane(cl.name, cl.l, first[i])
	}
}

// finish runs once when the request's handler returned (or it was refused): a large request gives its
// token back, so the reader never waits for a function handed to Go, and its memory to the system.
func (r *Request) finish() {
	r.finished.Do(func() {
		if !r.large {
			return
		}
		if !r.handedOff.Load() {
			r.Params = nil // the handler returned: nothing reads it any more, and the stack still holds r
		}
		r.conn.giveBackMemory()
		<-r.conn.large
	})
}

// Conn returns the connection the request arrived on.
func (r *Request) Conn() *Conn { return r.conn }

// Go finishes the request on a goroutine of its own, so the handler (and its lane) can return at
// once: f's return values are the reply, and a panic in f answers -32603. The handler must return
// right after calling Go; its own return values are then ignored. The connection waits for f before
// it ends.
func (r *Request) Go(f func() (any, error)) {
	r.handedOff.Store(true)
	c := r.conn
	c.work.Add(1)
	go func() {
		defer c.work.Done()
		defer func() {
			if r.large {
				c.giveBackMemory()
			}
		}()
		defer func() {
			if p := recover(); p != nil {
				c.log.Error("panic while finishing a request", "method", r.Method, "panic", p, "stack", string(stack()))
				r.Reply(nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("internal error: %v", p)})
			}
		}()
		r.Reply(f())
	}()
}

// Reply answers the request once; later calls are ignored. A non-nil err that is not an *Error
// becomes -32603 with its text.
//
// The reply is always queued, never written by the caller (see write): a request counts as answered
// once its reply is queued, even while the client does not read.
func (r *Request) Reply(result any, err error) {
	if !r.replied.CompareAndSwap(false, true) {
		return
	}
	defer r.conn.settle(r)
	if v, ok := result.(streamed); ok && err == nil {
		_ = r.conn.queue(outLine{b: responseHead(r.ID), body: v.w})
		return
	}
	_ = r.conn.queue(outLine{b: encodeReply(r.ID, result, err)})
}

// JSONWriter is implemented by results that write their own compact JSON encoding, byte for byte what
// Marshal would produce, to w in pieces (see Streamed).
type JSONWriter interface {
	WriteJSON(w io.Writer) error
}

// streamed is the result Streamed returns.
type streamed struct{ w JSONWriter }

// Streamed wraps a result too large to hold encoded (a command's buffered output: NUL bytes take six
// times their size in JSON) for Request.Reply: the writer goroutine has it write its encoding straight
// to the output, so the reply line is never whole in memory. Other lines wait until it is written, as
// they would behind any line.
func Streamed(w JSONWriter) any { return streamed{w} }

func encodeReply(id json.RawMessage, result any, err error) []byte {
	if err != nil {
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			rpcErr = &Error{Code: CodeInternalError, Message: err.Error()}
		}
		return encodeError(id, rpcErr)
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
	case streamed:
		var buf bytes.Buffer
		if wErr := v.w.WriteJSON(&buf); wErr != nil {
			return encodeError(id, &Error{Code: CodeInternalError, Message: "encode result: " + wErr.Error()})
		}
		raw = buf.Bytes()
	case Appender:
		raw = v.AppendJSON(nil)
	default:
		b, mErr := Marshal(v)
		if mErr != nil {
			return encodeError(id, &Error{Code: CodeInternalError, Message: "encode result: " + mErr.Error()})
		}
		raw = b
	}
	return encodeResponse(id, raw)
}

// Replied reports whether Reply was called.
func (r *Request) Replied() bool { return r.replied.Load() }
