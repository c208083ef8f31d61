package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// peer drives a Conn through real pipes, the way a client would over stdio.
type peer struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  chan map[string]any
	conn   *Conn
	runErr chan error
}

type funcHandler struct {
	req   func(ctx context.Context, r *Request) (any, error)
	notes chan string
}

func (h *funcHandler) HandleRequest(ctx context.Context, r *Request) (any, error) {
	return h.req(ctx, r)
}
func (h *funcHandler) HandleNotification(_ context.Context, method string, _ json.RawMessage) {
	if h.notes != nil {
		h.notes <- method
	}
}

func newPeer(t *testing.T, h Handler, opts Options) *peer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &peer{t: t, in: inW, lines: make(chan map[string]any, 1024), runErr: make(chan error, 1)}
	p.conn = NewConn(inR, outW, h, opts)
	go func() {
		p.runErr <- p.conn.Run(context.Background())
		_ = outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 128<<20)
		for sc.Scan() {
			var m map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "server wrote invalid JSON: %s", sc.Text())
			p.lines <- m
		}
		close(p.lines)
	}()
	t.Cleanup(func() { _ = inW.Close() })
	return p
}

func (p *peer) send(line string) {
	p.t.Helper()
	_, err := io.WriteString(p.in, line+"\n")
	require.NoError(p.t, err)
}

func (p *peer) next() map[string]any {
	p.t.Helper()
	return p.nextWithin(time.Minute)
}

func (p *peer) nextWithin(d time.Duration) map[string]any {
	p.t.Helper()
	select {
	case m, ok := <-p.lines:
		require.True(p.t, ok, "connection output closed")
		return m
	case <-time.After(d):
		p.t.Fatal("timed out waiting for a message")
		return nil
	}
}

func (p *peer) silence(d time.Duration) {
	p.t.Helper()
	select {
	case m := <-p.lines:
		p.t.Fatalf("expected silence, got %v", m)
	case <-time.After(d):
	}
}

func echoHandler() *funcHandler {
	return &funcHandler{req: func(_ context.Context, r *Request) (any, error) {
		switch r.Method {
		case "echo":
			return r.Params, nil
		case "fail":
			return nil, InvalidRequest("nope")
		case "plain-error":
			return nil, errors.New("boom")
		case "panic":
			panic("kaboom")
		}
		return nil, InvalidRequest("unknown " + r.Method)
	}}
}

func TestRequestsAnsweredWithEchoedIDs(t *testing.T) {
	p := newPeer(t, echoHandler(), Options{})
	p.send(`{"id":1,"method":"echo","params":{"a":1}}`)
	p.send(`{"jsonrpc":"2.0","id":"str-1","method":"echo","params":{"b":"<&>"}}`)
	got := map[any]map[string]any{}
	for range 2 {
		m := p.next()
		got[m["id"]] = m
	}
	m := got[float64(1)]
	require.Equal(t, map[string]any{"a": float64(1)}, m["result"])
	_, hasVersion := m["jsonrpc"]
	require.False(t, hasVersion, "the reference never writes a jsonrpc member")
	require.Equal(t, map[string]any{"b": "<&>"}, got["str-1"]["result"])
}

// byID collects n replies keyed by id (requests run concurrently, so replies come in any order).
func (p *peer) byID(n int) map[float64]map[string]any {
	p.t.Helper()
	got := map[float64]map[string]any{}
	for len(got) < n {
		m := p.next()
		id, ok := m["id"].(float64)
		require.True(p.t, ok, "expected a reply, got %v", m)
		_, dup := got[id]
		require.False(p.t, dup, "two replies to id %v", id)
		got[id] = m
	}
	return got
}

func TestErrorsAndPanics(t *testing.T) {
	p := newPeer(t, echoHandler(), Options{})
	p.send(`{"id":1,"method":"fail","params":{}}`)
	p.send(`{"id":2,"method":"plain-error","params":{}}`)
	p.send(`{"id":3,"method":"panic","params":{}}`)
	p.send(`{"id":4,"method":"echo","params":{"still":"alive"}}`)
	got := p.byID(4)
	require.Equal(t, map[string]any{"code": float64(-32600), "message": "nope"}, got[1]["error"])
	require.Equal(t, float64(-32603), got[2]["error"].(map[string]any)["code"])
	require.Equal(t, float64(-32603), got[3]["error"].(map[string]any)["code"])
	require.Equal(t, map[string]any{"still": "alive"}, got[4]["result"])
}

func TestMalformedLinesAreDroppedSilently(t *testing.T) {
	p := newPeer(t, echoHandler(), Options{})
	for _, line := range []string{
		`{this is not json`,
		`[{"id":900,"method":"echo","params":{}}]`,
		`{}`,
		`{"id":902}`,
		`{"id":{"x":1},"method":"echo"}`,
		`{"id":true,"method":"echo"}`,
		`"just a string"`,
		`42`,
		`null`,
		``,
		`{"id":99999,"result":{}}`,
		`{"id":"nope","error":{"code":1,"message":"x"}}`,
	} {
		p.send(line)
	}
	p.silence(200 * time.Millisecond)
	p.send(`{"id":5,"method":"echo","params":[1]}`)
	require.Equal(t, float64(5), p.next()["id"])
}

func TestGoReplyAndReplyThenNotify(t *testing.T) {
	release := make(chan struct{})
	h := &funcHandler{req: func(_ context.Context, r *Request) (any, error) {
		switch r.Method {
		case "slow":
			r.Go(func() (any, error) {
				<-release
				return map[string]string{"slow": "done"}, nil
			})
			return "ignored", nil
		case "go-panic":
			r.Go(func() (any, error) { panic("late kaboom") })
			return nil, nil
		case "reply-then-notify":
			r.Reply(map[string]int{"x": 1}, nil)
			require.NoError(t, r.Conn().Notify("after/reply", map[string]int{"y": 2}))
			return "ignored", nil
		}
		return r.Params, nil
	}}
	p := newPeer(t, h, Options{})
	p.send(`{"id":1,"method":"slow","params":{}}`)
	p.send(`{"id":2,"method":"fast","params":{}}`)
	require.Equal(t, float64(2), p.next()["id"], "a request finished by Go must not block the next one")
	close(release)
	m := p.nextWithin(time.Minute)
	require.Equal(t, float64(1), m["id"])
	require.Equal(t, map[string]any{"slow": "done"}, m["result"])
	p.send(`{"id":3,"method":"reply-then-notify","params":{}}`)
	m = p.next()
	require.Equal(t, float64(3), m["id"])
	require.Equal(t, map[string]any{"x": float64(1)}, m["result"])
	m = p.next()
	require.Equal(t, "after/reply", m["method"])
	require.NotNil(t, m["emittedAtMs"])
	p.send(`{"id":4,"method":"go-panic","params":{}}`)
	m = p.next()
	require.Equal(t, float64(4), m["id"])
	require.Equal(t, float64(-32603), m["error"].(map[string]any)["code"], "a panic in the goroutine that owes the reply still answers")
	require.Eventually(t, func() bool { return p.conn.InFlight() == 0 }, time.Minute, time.Millisecond, "every answered request leaves the in-flight table")
}

// laneHandler puts each request in the lane named by its params' "lane" member; "block" waits for
// the channel named by its params' "gate".
type laneHandler struct {
	funcHandler
}

func (h *laneHandler) Order(method string, params json.RawMessage) Order {
	var p struct {
		Lane string `json:"lane"`
	}
	_ = json.Unmarshal(params, &p)
	return Order{Lane: p.Lane, Barrier: method == "barrier"}
}

func TestSlowRequestDelaysOnlyItsLane(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan string, 16)
	h := &laneHandler{funcHandler{req: func(_ context.Context, r *Request) (any, error) {
		started <- string(r.ID)
		if r.Method == "block" {
			<-gate
		}
		return r.Params, nil
	}}}
	p := newPeer(t, h, Options{})
	p.send(`{"id":1,"method":"block","params":{"lane":"a"}}`)
	require.Equal(t, "1", <-started)
	p.send(`{"id":2,"method":"x","params":{"lane":"a"}}`)
	p.send(`{"id":3,"method":"x","params":{"lane":"b"}}`)
	p.send(`{"id":4,"method":"x","params":{}}`)
	got := p.byID(2)
	require.Contains(t, got, float64(3), "another lane is not delayed")
	require.Contains(t, got, float64(4), "a request without a lane is not delayed")
	p.silence(50 * time.Millisecond)
	close(gate)
	got = p.byID(2)
	require.Contains(t, got, float64(1))
	require.Contains(t, got, float64(2))
}

func TestLaneKeepsArrivalOrder(t *testing.T) {
	var mu sync.Mutex
	var order []string
	h := &laneHandler{funcHandler{req: func(_ context.Context, r *Request) (any, error) {
		mu.Lock()
		order = append(order, string(r.ID))
		mu.Unlock()
		return nil, nil
	}}}
	p := newPeer(t, h, Options{})
	var want []string
	for i := range 200 {
		id := strconv.Itoa(i)
		want = append(want, id)
		p.send(`{"id":` + id + `,"method":"x","params":{"lane":"t"}}`)
	}
	p.byID(200)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, want, order)
}

func TestBarrierRunsBeforeLaterRequests(t *testing.T) {
	var done atomic.Bool
	h := &laneHandler{funcHandler{req: func(_ context.Context, r *Request) (any, error) {
		if r.Method == "barrier" {
			time.Sleep(20 * time.Millisecond) // a later request would overtake a non-barrier here
			done.Store(true)
			return nil, nil
		}
		return done.Load(), nil
	}}}
	p := newPeer(t, h, Options{})
	p.send(`{"id":1,"method":"barrier","params":{}}`)
	p.send(`{"id":2,"method":"x","params":{}}`)
	got := p.byID(2)
	require.Equal(t, true, got[2]["result"])
}

func TestLaneOverflowIsRefusedWithMinus32001(t *testing.T) {
	gate := make(chan struct{})
	h := &laneHandler{funcHandler{req: func(_ context.Context, r *Request) (any, error) {
		if r.Method == "block" {
			<-gate
		}
		return r.Params, nil
	}}}
	p := newPeer(t, h, Options{LaneLimit: 2})
	p.send(`{"id":0,"method":"block","params":{"lane":"a"}}`)
	for i := 1; i <= 3; i++ {
		p.send(`{"id":` + strconv.Itoa(i) + `,"method":"x","params":{"lane":"a"}}`)
	}
	m := p.next()
	require.Equal(t, float64(3), m["id"])
	require.Equal(t, map[string]any{"code": float64(-32001), "message": "Server overloaded; retry later."}, m["error"])
	close(gate)
	got := p.byID(3)
	for i := range 3 {
		require.Contains(t, got, float64(i))
		require.Nil(t, got[float64(i)]["error"])
	}
}

// TestPipelinedFloodWithUnreadOutputAnswersEveryRequest pipelines 10 000 requests while nobody reads
// the output: the server stops reading instead of dropping or refusing, and once the output is read
// every request has exactly one successful reply.
func TestPipelinedFloodWithUnreadOutputAnswersEveryRequest(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := NewConn(inR, outW, echoHandler(), Options{})
	runErr := make(chan error, 1)
	go func() {
		runErr <- conn.Run(context.Background())
		_ = outW.Close()
	}()
	const n = 10000
	sent := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := io.WriteString(inW, `{"id":`+strconv.Itoa(i)+`,"method":"echo","params":{"i":`+strconv.Itoa(i)+`}}`+"\n"); err != nil {
				sent <- err
				return
			}
		}
		sent <- inW.Close()
	}()
	// Nobody reads: the server must stop reading (the writer is stuck) rather than refuse.
	require.Eventually(t, func() bool { return conn.InFlight() == DefaultMaxInFlight }, 30*time.Second, time.Millisecond)
	select {
	case err := <-sent:
		t.Fatalf("all input was consumed while output was unread: %v", err)
	default:
	}
	seen := make(map[int]bool, n)
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *Error          `json:"error"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		require.Nil(t, m.Error, "request %d refused", m.ID)
		require.JSONEq(t, `{"i":`+strconv.Itoa(m.ID)+`}`, string(m.Result))
		require.False(t, seen[m.ID], "two replies to %d", m.ID)
		seen[m.ID] = true
	}
	require.NoError(t, <-sent)
	require.NoError(t, <-runErr)
	require.Len(t, seen, n)
}

func TestServerRequests(t *testing.T) {
	p := newPeer(t, echoHandler(), Options{})
	type answer struct {
		res json.RawMessage
		err error
	}
	results := make(chan answer, 3)
	for i := 0; i < 3; i++ {
		go func() {
			res, err := p.conn.Call(context.Background(), "item/ask", map[string]int{"n": 1})
			results <- answer{res, err}
		}()
	}
	ids := map[float64]bool{}
	for i := 0; i < 3; i++ {
		m := p.next()
		require.Equal(t, "item/ask", m["method"])
		ids[m["id"].(float64)] = true
	}
	require.Equal(t, map[float64]bool{0: true, 1: true, 2: true}, ids, "server request ids count from 0")
	p.send(`{"id":0,"result":{"decision":"accept"}}`)
	p.send(`{"id":1,"error":{"code":-32601,"message":"no"}}`)
	var got []answer
	got = append(got, <-results, <-results)
	var okCount, errCount int
	for _, a := range got {
		if a.err != nil {
			var rpcErr *Error
			require.True(t, errors.As(a.err, &rpcErr))
			require.Equal(t, -32601, rpcErr.Code)
			errCount++
		} else {
			require.JSONEq(t, `{"decision":"accept"}`, string(a.res))
			okCount++
		}
	}
	require.Equal(t, 1, okCount)
	require.Equal(t, 1, errCount)
	// The third waits for an answer that never comes: the disconnect must release it.
	require.NoError(t, p.in.Close())
	a := <-results
	require.ErrorIs(t, a.err, ErrClosed)
	require.NoError(t, <-p.runErr)
}

func TestCallHonoursDeadline(t *testing.T) {
	p := newPeer(t, echoHandler(), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := p.conn.Call(ctx, "never/answered", nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	m := p.next()
	require.Equal(t, "never/answered", m["method"])
	_, hasParams := m["params"]
	require.False(t, hasParams)
}

// A line longer than the reader's buffer (64 KiB) and past the connection's large-line size is
// gathered whole and answered; "\r\n" ends it like "\n". The limits are the connection's own, small
// here so the test does not depend on the speed of a loaded machine (the defaults are 256 MiB/8 MiB).
func TestLongLineAndCRLF(t *testing.T) {
	p := newPeer(t, echoHandler(), Options{MaxLineBytes: 1 << 20, LargeLineBytes: 128 << 10})
	big := strings.Repeat("x", 512<<10)
	go p.send(`{"id":1,"method":"echo","params":{"s":"` + big + `"}}` + "\r")
	m := p.nextWithin(time.Minute)
	require.Equal(t, float64(1), m["id"])
	require.Len(t, m["result"].(map[string]any)["s"], len(big))
}

// A line past the connection's limit is discarded whole and the connection reads on.
func TestOverlongLineIsDiscarded(t *testing.T) {
	p := newPeer(t, echoHandler(), Options{MaxLineBytes: 256 << 10, LargeLineBytes: 128 << 10})
	big := strings.Repeat("x", 512<<10)
	go func() {
		p.send(`{"id":1,"method":"echo","params":{"s":"` + big + `"}}`)
		p.send(`{"id":2,"method":"echo","params":{"s":"small"}}`)
	}()
	m := p.nextWithin(time.Minute)
	require.Equal(t, float64(2), m["id"], "the over-long request is dropped, the next one answered")
	require.Equal(t, "small", m["result"].(map[string]any)["s"])
}

func TestNotificationsReachHandler(t *testing.T) {
	h := echoHandler()
	h.notes = make(chan string, 4)
	p := newPeer(t, h, Options{})
	p.send(`{"method":"initialized"}`)
	p.send(`{"method":"x","params":{"a":1}}`)
	require.Equal(t, "initialized", <-h.notes)
	require.Equal(t, "x", <-h.notes)
}

func TestEOFEndsRunCleanly(t *testing.T) {
	p := newPeer(t, echoHandler(), Options{})
	p.send(`{"id":1,"method":"echo","params":{}}`)
	require.NoError(t, p.in.Close())
	require.Equal(t, float64(1), p.next()["id"], "queued work is answered before the connection ends")
	require.NoError(t, <-p.runErr)
	<-p.conn.Done()
	require.ErrorIs(t, p.conn.Notify("late", nil), ErrClosed)
}

// A request that claims a lane keeps later requests of that lane behind its handler, even after it
// replied: its own notifications come first.
func TestClaimedLaneWaitsForTheClaimingHandler(t *testing.T) {
	gate := make(chan struct{})
	h := &laneHandler{funcHandler{req: func(_ context.Context, r *Request) (any, error) {
		if r.Method == "create" {
			require.True(t, r.Claim("a"))
			require.False(t, r.Claim("a"), "a busy lane cannot be claimed")
			r.Reply("created", nil)
			<-gate
			require.NoError(t, r.Conn().Notify("a/started", nil))
			return nil, nil
		}
		return r.Method, nil
	}}}
	p := newPeer(t, h, Options{})
	p.send(`{"id":1,"method":"create","params":{}}`)
	require.Equal(t, "created", p.next()["result"])
	p.send(`{"id":2,"method":"use-a","params":{"lane":"a"}}`)
	p.send(`{"id":3,"method":"use-b","params":{"lane":"b"}}`)
	require.Equal(t, float64(3), p.next()["id"], "another lane is not held")
	p.silence(50 * time.Millisecond)
	close(gate)
	require.Equal(t, "a/started", p.next()["method"])
	m := p.nextWithin(time.Minute)
	require.Equal(t, float64(2), m["id"])
	require.Equal(t, "use-a", m["result"])
}

// TestSendReportingGivesTheIDBeforeWriting: the id reaches onID before the request is on the wire, so
// a tracker can never see an answer (or a peer's reaction) to a request whose id it does not know yet.
func TestSendReportingGivesTheIDBeforeWriting(t *testing.T) {
	p := newPeer(t, &funcHandler{}, Options{})
	for range 20 {
		linesBefore := len(p.lines)
		var seen int64 = -1
		id, ch, err := p.conn.SendReporting("item/tool/call", map[string]any{"x": 1}, func(id int64) {
			seen = id
			require.Equal(t, linesBefore, len(p.lines), "the request was written before its id was reported")
		})
		require.NoError(t, err)
		require.Equal(t, id, seen)
		m := p.next()
		require.Equal(t, float64(id), m["id"])
		p.send(fmt.Sprintf(`{"id":%d,"result":{}}`, id))
		res, err := p.conn.Wait(context.Background(), id, ch)
		require.NoError(t, err)
		require.JSONEq(t, `{}`, string(res))
	}
}
