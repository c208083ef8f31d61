package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"appserver/jsonrpc/jsonstr"
)

// The write path: one writer goroutine drains two queues. The ordinary queue (egress) holds replies,
// server requests and notifications in the order they were produced. The bulk queue holds the
// high-volume notifications of NotifyBulk (a process's streamed output), in their own order. The
// writer prefers the ordinary queue, taking at most maxEgressBurst ordinary lines in a row while
// bulk lines wait, so a long stream never holds up the rest of the connection and a busy
// connection never starves a stream.
const (
	// bulkQueueSize bounds the bulk queue: enough for the producer to encode the next lines while
	// the writer writes, small enough that an ordinary line never waits behind many of them.
	bulkQueueSize = 4
	// maxEgressBurst is how many ordinary lines may be written in a row while bulk lines wait.
	maxEgressBurst = 64
	// directWriteMin is the length from which a line bypasses the write buffer (no copy).
	directWriteMin = 32 << 10
	// maxPooledLine is the largest line buffer kept for reuse.
	maxPooledLine = 1 << 20
)

// Appender is implemented by params that append their own compact JSON encoding to a buffer, byte
// for byte what Marshal would produce. Notify and NotifyBulk then encode the whole line into a
// reused buffer, with no intermediate values or copies.
type Appender interface {
	AppendJSON(dst []byte) []byte
}

// outLine is one queued line, or a flush marker.
type outLine struct {
	b      []byte        // the line, without its newline unless nl
	nl     bool          // b ends with its '\n'
	body   JSONWriter    // a Streamed result: b is the line's head, body writes the rest before its '}'
	pooled *[]byte       // returned to linePool once written
	marker chan struct{} // flush marker: closed when the writer reaches it
	after  func()        // AfterWritten's callback: run (output flushed) when the writer reaches it
}

var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func (l outLine) release() {
	if l.pooled != nil && cap(*l.pooled) <= maxPooledLine {
		linePool.Put(l.pooled)
	}
}

// appendNotification encodes a notification line into a pooled buffer, newline included.
func (c *Conn) appendNotification(method string, params Appender) outLine {
	bp := linePool.Get().(*[]byte)
	b := append((*bp)[:0], `{"method":`...)
	b = AppendString(b, method)
	b = append(b, `,"params":`...)
	b = params.AppendJSON(b)
	b = append(b, `,"emittedAtMs":`...)
	b = strconv.AppendInt(b, c.now().UnixMilli(), 10)
	b = append(b, '}', '\n')
	*bp = b
	return outLine{b: b, nl: true, pooled: bp}
}

// marshalNotification encodes a notification line into a pooled buffer, newline included, with params
// encoded as Marshal encodes them but straight into the line: no intermediate buffer to grow and copy.
func (c *Conn) marshalNotification(method string, params any) (outLine, error) {
	bp := linePool.Get().(*[]byte)
	b := append((*bp)[:0], `{"method":`...)
	b = AppendString(b, method)
	b = append(b, `,"params":`...)
	b, err := appendMarshal(b, params)
	if err != nil {
		*bp = b[:0]
		linePool.Put(bp)
		return outLine{}, err
	}
	b = append(b, `,"emittedAtMs":`...)
	b = strconv.AppendInt(b, c.now().UnixMilli(), 10)
	b = append(b, '}', '\n')
	*bp = b
	return outLine{b: b, nl: true, pooled: bp}, nil
}

// sliceEncoder is a json.Encoder (no HTML escaping, as Marshal) that appends to a byte slice.
type sliceEncoder struct {
	b   []byte
	enc *json.Encoder
}

func (e *sliceEncoder) Write(p []byte) (int, error) {
	e.b = append(e.b, p...)
	return len(p), nil
}

var sliceEncoderPool = sync.Pool{New: func() any {
	e := &sliceEncoder{}
	e.enc = json.NewEncoder(e)
	e.enc.SetEscapeHTML(false)
	return e
}}

// appendMarshal appends Marshal(v) to dst. The encoder writes a value in one Write (and keeps no error
// of its own, since its writer never fails), so a pooled one serves any caller.
func appendMarshal(dst []byte, v any) ([]byte, error) {
	e := sliceEncoderPool.Get().(*sliceEncoder)
	e.b = dst
	err := e.enc.Encode(v)
	b := e.b
	e.b = nil
	sliceEncoderPool.Put(e)
	if err != nil {
		return dst, err
	}
	return b[:len(b)-1], nil // Encode ends the value with a newline
}

// write queues one ordinary line, blocking while the queue is full, as stdio does in the reference.
// When nothing waits in either queue, the caller writes the line itself instead: a turn's burst of
// notifications then costs no hand-off to the writer goroutine (and no thread wake-up) per line.
// Replies never come here (Request.Reply queues them).
func (c *Conn) write(l outLine) error {
	if c.tryDirect(l) {
		return nil
	}
	return c.queue(l)
}

// queue hands an ordinary line to the writer goroutine, blocking while the queue is full.
func (c *Conn) queue(l outLine) error { return c.enqueue(c.egress, &c.egressPending, l) }

// enqueue puts l on q, counting it in pending until the writer has written it (see tryDirect), and
// blocks while q is full; it fails once the writer has returned.
func (c *Conn) enqueue(q chan outLine, pending *atomic.Int64, l outLine) error {
	pending.Add(1)
	select {
	case <-c.writerDone:
	default:
		select {
		case q <- l:
			return nil
		case <-c.writerDone:
		}
	}
	pending.Add(-1)
	l.release()
	return ErrClosed
}

// tryDirect writes l at once when no line is queued or being written, the output is free and the
// reader is not running a handler itself (see readerInline), and reports whether it did. A queued line
// is counted in its pending count until written (under out.mu), so seeing both counts at zero under the
// lock means no earlier line of the caller's can still be waiting: writing now keeps the order.
func (c *Conn) tryDirect(l outLine) bool {
	if c.readerInline.Load() != 0 || c.bulkPending.Load() != 0 || c.egressPending.Load() != 0 || !c.out.mu.TryLock() {
		return false
	}
	defer c.out.mu.Unlock()
	if c.bulkPending.Load() != 0 || c.egressPending.Load() != 0 || c.out.bw == nil || c.out.closed {
		return false
	}
	c.put(l)
	return true
}

// Hold keeps the lines written from now on in the output buffer, unflushed, until the returned release is
// called (once): a burst of notifications produced in a row then reaches the client in one write instead
// of one each. The buffer still goes out when full. Holds nest; the caller must not wait for anything
// (the client, another goroutine) between Hold and release, since every line of the connection waits.
func (c *Conn) Hold() (release func()) {
	c.held.Add(1)
	var once sync.Once
	return func() { once.Do(c.unhold) }
}

// unhold ends one Hold, flushing what the holds kept once none is left.
func (c *Conn) unhold() {
	if c.held.Add(-1) != 0 {
		return
	}
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	if c.out.bw == nil || c.out.broken || c.out.closed || c.out.bw.Buffered() == 0 {
		return
	}
	if err := c.out.bw.Flush(); err != nil {
		c.out.broken = true
		c.log.Warn("output closed; dropping further messages", "error", err)
		c.cancel(ErrClosed)
	}
}

// NotifyBulk queues a notification (with a top-level emittedAtMs, as Notify) on the bulk queue,
// for high-volume output such as a process's streamed output. Bulk notifications are written in the
// order they were queued, but ordinary messages overtake the ones still waiting, so call FlushBulk
// before a message that must follow them. It blocks while the bulk queue is full.
//
// When nothing waits in either queue, the caller writes the line itself instead of handing it to
// the writer goroutine: a stream then costs no goroutine switch per line.
func (c *Conn) NotifyBulk(method string, params Appender) error {
	l := c.appendNotification(method, params)
	// egressPending also counts a line the writer has taken from its queue and waits to write: the
	// caller must not barge in front of it.
	if c.tryDirect(l) {
		return nil
	}
	return c.enqueueBulk(l)
}

// enqueueBulk queues a bulk line or marker, counting it in bulkPending until it is written.
func (c *Conn) enqueueBulk(l outLine) error { return c.enqueue(c.bulk, &c.bulkPending, l) }

// output is the connection's output side, shared by the writer goroutine and NotifyBulk's direct
// writes: mu serializes the lines, so each is written whole.
type output struct {
	mu     sync.Mutex
	bw     *bufio.Writer // set when the writer starts
	broken bool          // a write failed: further lines are dropped
	closed bool          // the writer has returned
}

// AfterWritten calls f once every line queued before the call (a reply in particular) has been written
// to the output, flushed: work that would compete with writing them (starting a process) waits for them
// without holding up the caller. f runs on the writer goroutine, so it must be quick and must not write to
// the connection; it runs at once when the output has ended, also when the output ends while the call is
// queuing it (it always runs, exactly once). AfterWritten blocks while the queue is full, as a notification
// does.
func (c *Conn) AfterWritten(f func()) {
	if err := c.queue(outLine{after: f}); err != nil {
		f()
	}
}

// put writes one line (or reaches a marker); c.out.mu must be held.
func (c *Conn) put(l outLine) {
	if l.marker != nil {
		close(l.marker)
		return
	}
	if l.after != nil {
		if !c.out.broken && c.held.Load() == 0 && c.out.bw.Buffered() > 0 {
			if err := c.out.bw.Flush(); err != nil {
				c.out.broken = true
				c.log.Warn("output closed; dropping further messages", "error", err)
				c.cancel(ErrClosed)
			}
		}
		l.after()
		return
	}
	defer l.release()
	if c.out.broken {
		return
	}
	bw := c.out.bw
	var err error
	if l.body != nil { // pieces of at least the buffer's size go straight to the output (bufio.Writer)
		_, err = bw.Write(l.b)
		if err == nil {
			err = l.body.WriteJSON(bw)
		}
		if err == nil {
			err = bw.WriteByte('}')
		}
	} else if len(l.b) >= directWriteMin {
		if bw.Buffered() > 0 {
			err = bw.Flush()
		}
		if err == nil {
			_, err = c.w.Write(l.b)
		}
	} else {
		_, err = bw.Write(l.b)
	}
	if err == nil && !l.nl {
		err = bw.WriteByte('\n')
	}
	if err == nil && len(c.egress) == 0 && len(c.bulk) == 0 && c.held.Load() == 0 {
		err = bw.Flush()
	}
	if err != nil {
		c.out.broken = true
		c.log.Warn("output closed; dropping further messages", "error", err)
		c.cancel(ErrClosed)
	}
}

// FlushBulk waits until every bulk notification queued before the call has been handed to the
// output (so a message written afterwards follows them), the connection's output ends, or ctx ends.
func (c *Conn) FlushBulk(ctx context.Context) error {
	m := make(chan struct{})
	if err := c.enqueueBulk(outLine{marker: m}); err != nil {
		return err
	}
	select {
	case <-m:
		return nil
	case <-c.writerDone:
		return ErrClosed
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (c *Conn) writeLoop() {
	defer close(c.writerExited)
	c.out.mu.Lock()
	c.out.bw = bufio.NewWriterSize(c.w, 64<<10)
	c.out.mu.Unlock()
	put := func(l outLine, bulk bool) {
		pending := &c.egressPending
		if bulk {
			pending = &c.bulkPending
		}
		c.out.mu.Lock()
		c.put(l)
		pending.Add(-1)
		c.out.mu.Unlock()
	}
	burst := 0
	for {
		if burst < maxEgressBurst {
			select {
			case l := <-c.egress:
				put(l, false)
				burst++
				continue
			default:
			}
		}
		select {
		case l := <-c.bulk:
			put(l, true)
			burst = 0
			continue
		default:
		}
		burst = 0
		select {
		case l := <-c.egress:
			put(l, false)
			burst++
		case l := <-c.bulk:
			put(l, true)
		case <-c.stopWriter:
			for {
				select {
				case l := <-c.egress:
					put(l, false)
				case l := <-c.bulk:
					put(l, true)
				default:
					if c.beforeWriterExit != nil {
						c.beforeWriterExit()
					}
					c.out.mu.Lock()
					if !c.out.broken {
						_ = c.out.bw.Flush()
					}
					c.out.closed = true
					c.out.mu.Unlock()
					close(c.writerDone)
					c.settleQueued()
					return
				}
			}
		}
	}
}

// settleQueued settles the lines that entered a queue after the writer's last drain, once writerDone
// is closed (no line enters after that, see enqueue): a producer that saw the writer still running
// may have queued its line meanwhile. The lines are dropped, markers closed and AfterWritten
// callbacks run, so that nobody waits for them forever. It returns once no producer is between
// counting its line and queuing it (each is a few instructions away from either).
func (c *Conn) settleQueued() {
	for c.egressPending.Load() != 0 || c.bulkPending.Load() != 0 {
		var l outLine
		var pending *atomic.Int64
		select {
		case l = <-c.egress:
			pending = &c.egressPending
		case l = <-c.bulk:
			pending = &c.bulkPending
		default:
			runtime.Gosched()
			continue
		}
		switch {
		case l.marker != nil:
			close(l.marker)
		case l.after != nil:
			l.after()
		default:
			l.release()
		}
		pending.Add(-1)
	}
}

// AppendString appends s as a JSON string, byte for byte as Marshal encodes it (no HTML escaping;
// invalid UTF-8 becomes \ufffd; U+2028 and U+2029 are escaped).
func AppendString(dst []byte, s string) []byte { return jsonstr.Append(dst, s) }

// AppendBytesString is AppendString for a byte slice, without converting it to a string first.
func AppendBytesString(dst []byte, s []byte) []byte { return jsonstr.Append(dst, s) }
