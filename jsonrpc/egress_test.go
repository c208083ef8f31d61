package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAppendStringMatchesMarshal(t *testing.T) {
	cases := []string{
		"", "plain", `quote " and \ backslash`, "<a&b>", "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
		"héllo wörld", "emoji 😀", "\u2028 and \u2029", "bad \xff utf8 \xc3", "\xe2\x82", "trailing \xf0\x9f\x98",
		strings.Repeat("x", 100) + "\n",
	}
	for _, s := range cases {
		want, err := Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendString(nil, s)), "%q", s)
		require.Equal(t, string(want), string(AppendBytesString([]byte("prefix"), []byte(s))[len("prefix"):]), "%q", s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\xff", "\u2028", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendString(nil, s)))
	})
}

// testDelta is an Appender with a payload big enough to be written directly.
type testDelta struct {
	Seq  int    `json:"seq"`
	Data string `json:"data"`
}

func (d testDelta) AppendJSON(b []byte) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, int64(d.Seq), 10)
	b = append(b, `,"data":`...)
	b = AppendString(b, d.Data)
	return append(b, '}')
}

func TestAppenderNotificationMatchesMarshalledOne(t *testing.T) {
	now := func() time.Time { return time.UnixMilli(1234) }
	c := NewConn(strings.NewReader(""), io.Discard, &funcHandler{}, Options{Now: now})
	d := testDelta{Seq: 7, Data: "x\n\"y\"\xff"}
	raw, err := Marshal(d)
	require.NoError(t, err)
	l := c.appendNotification("a/b", d)
	require.True(t, l.nl)
	require.Equal(t, string(encodeNotification("a/b", raw, 1234))+"\n", string(l.b))
	l.release()
}

// TestNotificationEncodedInPlaceMatchesMarshalledOne: Notify's params encoded straight into the line are the
// bytes Marshal gives (no HTML escaping, compacted json.RawMessage, maps sorted), also once a reused buffer
// has held a longer line; a value Marshal refuses is refused alike.
func TestNotificationEncodedInPlaceMatchesMarshalledOne(t *testing.T) {
	now := func() time.Time { return time.UnixMilli(1234) }
	c := NewConn(strings.NewReader(""), io.Discard, &funcHandler{}, Options{Now: now})
	for _, params := range []any{
		map[string]any{"z": nil, "a": "<&> é \u2028", "raw": json.RawMessage(" { \"k\" : [1, 2] } ")},
		testDelta{Seq: 1, Data: strings.Repeat("long \"line\"\n", 10000)},
		struct {
			A string `json:"a,omitempty"`
			B *int   `json:"b"`
		}{},
		[]int{1, 2},
	} {
		want, err := Marshal(params)
		require.NoError(t, err)
		l, err := c.marshalNotification("m/x", params)
		require.NoError(t, err)
		require.True(t, l.nl)
		require.Equal(t, string(encodeNotification("m/x", want, 1234))+"\n", string(l.b))
		l.release()
	}
	_, err := c.marshalNotification("m/x", map[string]any{"f": func() {}})
	require.Error(t, err)
	require.Error(t, c.Notify("m/x", map[string]any{"f": func() {}}))
}

// rawPeer drives a Conn whose output the test reads only when it wants to, over synchronous pipes:
// while it does not read, the connection's writer is blocked.
type rawPeer struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	conn *Conn
}

func newRawPeer(t *testing.T, h Handler) *rawPeer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &rawPeer{t: t, in: inW, out: bufio.NewReaderSize(outR, 512), conn: NewConn(inR, outW, h, Options{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.conn.Run(context.Background())
		_ = outW.Close()
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		<-done
	})
	return p
}

// send writes a line; over io.Pipe it returns once the connection has read it.
func (p *rawPeer) send(line string) {
	p.t.Helper()
	_, err := io.WriteString(p.in, line+"\n")
	require.NoError(p.t, err)
}

// sendAndSettle sends a request and waits until its reply is queued: the connection dispatches each
// line before reading the next, so once the notification after it was read, the request is in
// flight or answered.
func (p *rawPeer) sendAndSettle(line string, inFlightAfter int) {
	p.t.Helper()
	p.send(line)
	p.send(`{"method":"sync"}`)
	require.Eventually(p.t, func() bool { return p.conn.InFlight() == inFlightAfter }, 30*time.Second, time.Millisecond,
		"%s was never answered into the queue", line)
}

type rawMsg struct {
	ID     *int            `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

func (p *rawPeer) next() rawMsg {
	p.t.Helper()
	line, err := p.out.ReadBytes('\n')
	require.NoError(p.t, err)
	var m rawMsg
	require.NoError(p.t, json.Unmarshal(line, &m), "%.200s", line)
	return m
}

// streamHandler streams n bulk notifications of size bytes on "stream", flushes them and replies;
// "ping" answers at once, and "noisy" sends an ordinary notification first.
func streamHandler(n, size int) *funcHandler {
	return &funcHandler{req: func(ctx context.Context, r *Request) (any, error) {
		switch r.Method {
		case "stream":
			data := strings.Repeat("z", size)
			for i := range n {
				if err := r.Conn().NotifyBulk("delta", testDelta{Seq: i, Data: data}); err != nil {
					return nil, err
				}
			}
			if err := r.Conn().FlushBulk(ctx); err != nil {
				return nil, err
			}
			return map[string]int{"sent": n}, nil
		case "noisy":
			if err := r.Conn().Notify("other/thread", map[string]string{"x": "y"}); err != nil {
				return nil, err
			}
		}
		return map[string]string{"pong": r.Method}, nil
	}}
}

// A reply queued while a long stream is waiting to be written overtakes the stream: with the
// reader paused, the reply is queued (the request has settled), and when reading resumes at most the
// one delta the writer was already writing comes first. With a single FIFO it would follow every
// delta queued before it.
func TestReplyOvertakesQueuedBulkStream(t *testing.T) {
	const n, size = 200, 40 << 10
	p := newRawPeer(t, streamHandler(n, size))
	p.send(`{"id":1,"method":"stream"}`)
	first := p.next()
	require.Equal(t, "delta", first.Method)

	// Output is not read now: the writer blocks on the pipe and the bulk queue fills up.
	p.sendAndSettle(`{"id":2,"method":"noisy"}`, 1)

	var before int
	var sawOther bool
	seq := 1
	for {
		m := p.next()
		if m.Method == "delta" {
			var d testDelta
			require.NoError(t, json.Unmarshal(m.Params, &d))
			require.Equal(t, seq, d.Seq, "deltas stay in order")
			seq++
			before++
			continue
		}
		if m.Method == "other/thread" {
			sawOther = true
			continue
		}
		require.NotNil(t, m.ID)
		require.Equal(t, 2, *m.ID)
		break
	}
	require.True(t, sawOther, "the other notification comes before its reply")
	require.LessOrEqual(t, before, 1, "the reply waited behind %d queued deltas", before)

	// The stream then completes, in order, and its reply follows its last delta.
	for {
		m := p.next()
		if m.Method == "delta" {
			var d testDelta
			require.NoError(t, json.Unmarshal(m.Params, &d))
			require.Equal(t, seq, d.Seq)
			seq++
			continue
		}
		require.NotNil(t, m.ID)
		require.Equal(t, 1, *m.ID)
		require.Equal(t, n, seq, "the stream's reply came before all its deltas")
		require.JSONEq(t, fmt.Sprintf(`{"sent":%d}`, n), string(m.Result))
		break
	}
}

// A flood of ordinary notifications does not starve a bulk stream: a waiting bulk line gets a turn at
// least every maxEgressBurst ordinary lines. The output is held busy (its lock taken) until both queues
// are full, so every delta counted below was waiting from the first ordinary line on; otherwise a
// delta its producer had not queued yet (a loaded machine) would let the writer start a new burst.
func TestBulkStreamIsNotStarvedByOrdinaryTraffic(t *testing.T) {
	const n = bulkQueueSize + 2 // queued, waiting to be queued, one more
	data := strings.Repeat("d", directWriteMin)
	h := &funcHandler{req: func(ctx context.Context, r *Request) (any, error) {
		switch r.Method {
		case "flood":
			for i := range 1000 {
				if err := r.Conn().Notify("flood", map[string]int{"i": i}); err != nil {
					return nil, err
				}
			}
		case "stream":
			for i := range n {
				if err := r.Conn().NotifyBulk("delta", testDelta{Seq: i, Data: data}); err != nil {
					return nil, err
				}
			}
			return nil, r.Conn().FlushBulk(ctx)
		}
		return nil, nil
	}}
	p := newRawPeer(t, h)
	p.conn.out.mu.Lock()
	var once sync.Once
	unlock := func() { once.Do(p.conn.out.mu.Unlock) }
	t.Cleanup(unlock)
	p.send(`{"id":1,"method":"stream"}`)
	require.Eventually(t, func() bool { return len(p.conn.bulk) == cap(p.conn.bulk) }, 30*time.Second, time.Millisecond)
	p.send(`{"id":2,"method":"flood"}`)
	require.Eventually(t, func() bool { return len(p.conn.egress) == cap(p.conn.egress) }, 30*time.Second, time.Millisecond)
	unlock()
	run, deltas := 0, 0
	for deltas < bulkQueueSize {
		switch m := p.next(); m.Method {
		case "delta":
			deltas++
			run = 0
		case "flood":
			run++
			require.LessOrEqual(t, run, maxEgressBurst, "ordinary lines starved the stream")
		default:
			t.Fatalf("unexpected message %+v", m)
		}
	}
}

func TestFlushBulkAfterCloseFails(t *testing.T) {
	c := NewConn(strings.NewReader(""), io.Discard, &funcHandler{}, Options{})
	require.NoError(t, c.Run(context.Background()))
	require.ErrorIs(t, c.FlushBulk(context.Background()), ErrClosed)
	require.ErrorIs(t, c.NotifyBulk("x", testDelta{}), ErrClosed)
}

type appenderResult struct{ calls *int }

func (a appenderResult) AppendJSON(b []byte) []byte { *a.calls++; return append(b, `{"fast":true}`...) }

// TestReplyUsesAppender: a result that encodes itself is written with its own encoding.
func TestReplyUsesAppender(t *testing.T) {
	calls := 0
	line := encodeReply(json.RawMessage(`7`), appenderResult{&calls}, nil)
	require.Equal(t, `{"id":7,"result":{"fast":true}}`, strings.TrimSpace(string(line)))
	require.Equal(t, 1, calls)
}

// TestAppendStringMatchesEncodingJSONRandom: random strings weighted towards control bytes, quotes,
// invalid UTF-8 and U+2028 encode as encoding/json (without HTML escaping) encodes them.
func TestAppendStringMatchesEncodingJSONRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"\x00", "\x01", "\x1f", "\n", "\t", "\b", "\"", "\\", "a", "é", "\u2028", "\xff", "\xc3", "<", "😀", "\x7f"}
	for range 2000 {
		var sb strings.Builder
		for range rng.IntN(64) {
			p := pieces[rng.IntN(len(pieces))]
			for range 1 + rng.IntN(8) {
				sb.WriteString(p)
			}
		}
		s := sb.String()
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		require.Equal(t, strings.TrimSuffix(want.String(), "\n"), string(AppendString(nil, s)), "%q", s)
	}
}

// BenchmarkAppendStringNUL encodes 1 MiB of NUL bytes (binary command output in a buffered reply).
func BenchmarkAppendStringNUL(b *testing.B) {
	s := make([]byte, 1<<20)
	dst := make([]byte, 0, 6<<20+2)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		dst = AppendBytesString(dst[:0], s)
	}
}

// callWriter records, for each line written, whether the test goroutine was inside a Notify call then.
type callWriter struct {
	inCall atomic.Bool
	mu     sync.Mutex
	during []bool
	buf    bytes.Buffer
}

func (w *callWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for range bytes.Count(p, []byte("\n")) {
		w.during = append(w.during, w.inCall.Load())
	}
	return w.buf.Write(p)
}

func TestNotifyWritesItselfWhenNothingIsQueued(t *testing.T) {
	w := &callWriter{}
	inR, inW := io.Pipe()
	c := NewConn(inR, w, &funcHandler{}, Options{})
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(context.Background()) }()
	require.Eventually(t, func() bool { // the writer goroutine has set up the output
		c.out.mu.Lock()
		defer c.out.mu.Unlock()
		return c.out.bw != nil
	}, 30*time.Second, time.Millisecond)
	for i := range 3 {
		w.inCall.Store(true)
		require.NoError(t, c.Notify("n", map[string]int{"i": i}))
		w.inCall.Store(false)
	}
	require.NoError(t, inW.Close())
	require.NoError(t, <-runErr)
	w.mu.Lock()
	defer w.mu.Unlock()
	// Written (and flushed) by the caller, before Notify returned: no hand-off to the writer goroutine.
	require.Equal(t, []bool{true, true, true}, w.during)
	require.Equal(t, 3, strings.Count(w.buf.String(), `"method":"n"`))
}

// TestLinesKeepTheirOrderAcrossDirectAndQueuedWrites has producers write while the output stalls now and
// then, so some lines are written by their producer and others queue: each producer's lines stay in order.
func TestLinesKeepTheirOrderAcrossDirectAndQueuedWrites(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := NewConn(inR, outW, &funcHandler{}, Options{QueueSize: 4})
	runErr := make(chan error, 1)
	go func() {
		runErr <- c.Run(context.Background())
		_ = outW.Close()
	}()
	const producers, n = 3, 300
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				if err := c.Notify("n", map[string]int{"p": p, "i": i}); err != nil {
					t.Errorf("notify: %v", err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); _ = inW.Close() }()
	next := make([]int, producers)
	r := bufio.NewReader(outR)
	for k := 0; ; k++ {
		if k%7 == 0 {
			runtime.Gosched() // stall the output now and then, so lines queue behind it
		}
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		var m struct {
			Params struct{ P, I int } `json:"params"`
		}
		require.NoError(t, json.Unmarshal(line, &m))
		require.Equal(t, next[m.Params.P], m.Params.I, "producer %d out of order", m.Params.P)
		next[m.Params.P]++
	}
	require.NoError(t, <-runErr)
	require.Equal(t, []int{n, n, n}, next)
}

// A barrier request runs on the reader: what its handler writes is queued, so a client that sends its
// next line before reading the answer (over a pipe where every write waits for the reader) is not wedged.
func TestBarrierOutputDoesNotBlockTheReader(t *testing.T) {
	h := &laneHandler{funcHandler{req: func(_ context.Context, r *Request) (any, error) {
		if r.Method == "barrier" {
			r.Reply(map[string]bool{"ok": true}, nil)
			return nil, r.Conn().Notify("after", map[string]bool{"ok": true})
		}
		return nil, nil
	}}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := NewConn(inR, outW, h, Options{})
	runErr := make(chan error, 1)
	go func() {
		runErr <- c.Run(context.Background())
		_ = outW.Close()
	}()
	// Nothing reads the output until every line is sent: each write returns once the reader took it.
	for _, line := range []string{`{"id":1,"method":"barrier","params":{}}`, `{"method":"note"}`, `{"id":2,"method":"x","params":{}}`} {
		_, err := io.WriteString(inW, line+"\n")
		require.NoError(t, err)
	}
	require.NoError(t, inW.Close())
	out, err := io.ReadAll(outR)
	require.NoError(t, err)
	require.NoError(t, <-runErr)
	require.Contains(t, string(out), `"method":"after"`)
	require.Contains(t, string(out), `"id":2`)
}

// countWriter counts the writes it receives.
type countWriter struct {
	mu     sync.Mutex
	writes int
	buf    bytes.Buffer
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.buf.Write(p)
}

func (w *countWriter) state() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.buf.String()
}

func TestHoldSendsABurstInOneWrite(t *testing.T) {
	w := &countWriter{}
	inR, inW := io.Pipe()
	c := NewConn(inR, w, &funcHandler{}, Options{})
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(context.Background()) }()
	require.Eventually(t, func() bool {
		c.out.mu.Lock()
		defer c.out.mu.Unlock()
		return c.out.bw != nil
	}, 30*time.Second, time.Millisecond)

	release := c.Hold()
	inner := c.Hold() // holds nest
	for i := range 3 {
		require.NoError(t, c.Notify("n", map[string]int{"i": i}))
	}
	inner()
	inner() // a second call of a release does nothing
	n, out := w.state()
	require.Zero(t, n, "written while held: %q", out)
	release()
	n, out = w.state()
	require.Equal(t, 1, n)
	require.Equal(t, 3, strings.Count(out, `"method":"n"`))

	require.NoError(t, c.Notify("after", nil)) // no hold: written at once
	n, _ = w.state()
	require.Equal(t, 2, n)
	require.NoError(t, inW.Close())
	require.NoError(t, <-runErr)
}

// AfterWritten's callback runs once the reply queued before it is out (flushed, though no line follows it to
// flush it), and at once on a connection whose output has ended.
func TestAfterWrittenRunsOnceTheReplyIsWritten(t *testing.T) {
	w := &countWriter{}
	seen := make(chan string, 1)
	h := &funcHandler{req: func(_ context.Context, r *Request) (any, error) {
		r.Reply(map[string]bool{"ok": true}, nil)
		r.Conn().AfterWritten(func() { _, out := w.state(); seen <- out })
		return nil, nil
	}}
	inR, inW := io.Pipe()
	c := NewConn(inR, w, h, Options{})
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(context.Background()) }()
	_, err := io.WriteString(inW, `{"id":1,"method":"x","params":{}}`+"\n")
	require.NoError(t, err)
	select {
	case out := <-seen:
		require.Contains(t, out, `"id":1`)
	case <-time.After(30 * time.Second):
		t.Fatal("AfterWritten's callback did not run")
	}
	require.NoError(t, inW.Close())
	require.NoError(t, <-runErr)
	ran := false
	c.AfterWritten(func() { ran = true })
	require.True(t, ran)
}

// TestAfterWrittenQueuedDuringTheWritersExit: a callback that enters the queue after the writer's
// last drain (its producer saw the writer still running) still runs before Run returns, and a line
// queued then is dropped, not left counted as pending.
func TestAfterWrittenQueuedDuringTheWritersExit(t *testing.T) {
	w := &countWriter{}
	c := NewConn(strings.NewReader(""), w, &funcHandler{}, Options{})
	ran := make(chan struct{})
	var queued error
	c.beforeWriterExit = func() {
		// The writer found both queues empty and is about to stop: queue a callback and a line now.
		c.AfterWritten(func() { close(ran) })
		queued = c.queue(outLine{b: []byte(`{"method":"late"}`)})
	}
	require.NoError(t, c.Run(context.Background()))
	require.NoError(t, queued, "the line entered the queue (the race this test stages)")
	select {
	case <-ran:
	default:
		t.Fatal("AfterWritten's callback was lost")
	}
	require.Zero(t, c.egressPending.Load(), "every queued line was settled")
	_, out := w.state()
	require.NotContains(t, out, "late", "nothing is written once the output ended")
}
