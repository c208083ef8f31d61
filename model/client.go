// Package model is the client of the OpenAI Responses API (POST {base_url}/responses, streamed
// as server-sent events): request building, SSE parsing, the two retry layers (silent HTTP
// retries, announced stream retries), the idle timeout, error mapping to codexErrorInfo, the
// providers and the bundled model catalogue.
//
// It does not use the openai-go SDK: the conversation history is replayed verbatim on every
// request, so output items must be kept as the exact JSON the server sent (unknown fields such as
// encrypted_content included), and the retry/idle/error behaviour has to match the reference
// precisely; a small hand-written SSE reader over net/http gives both without fighting an SDK's
// typed models and built-in retries.
package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"appserver/stopwatch"
)

// Request is one model turn request. Input and Tools are sent verbatim.
type Request struct {
	Model        string
	Instructions string // optional; 0.169 sends none (the base prompt is an input item)
	// ServiceTier is the request's service_tier ("priority", "flex"…); "" omits it (standard speed).
	ServiceTier string
	Input       []json.RawMessage // the full history, items replayed byte-for-byte
	Tools       []json.RawMessage
	// NoTools omits the `tools` key (code mode: the tools travel in an input item).
	NoTools           bool
	ToolChoice        string // "" means "auto"
	ParallelToolCalls bool
	Reasoning         json.RawMessage   // e.g. {"effort":"medium","summary":"auto"}; omitted when nil
	Include           []string          // e.g. ["reasoning.encrypted_content"]
	PromptCacheKey    string            // the thread id
	Text              json.RawMessage   // e.g. {"verbosity":"low"}; omitted when nil
	ClientMetadata    map[string]string // omitted when empty
	// Headers are per-request headers: originator, user-agent, session-id, thread-id,
	// x-client-request-id, x-codex-window-id, x-codex-turn-metadata, x-codex-beta-features...
	Headers map[string]string
	// Refresh, if set, supplies the input of a retried stream attempt: like the reference, the
	// caller may keep output items of the failed attempt in its history and send them again.
	Refresh func() []json.RawMessage `json:"-"`
	// Hold, if set, is called before the first event decoded from what one read of the response
	// returned is delivered, and the release it returns before the stream reads again or ends: what
	// the caller sends for events that arrived together can then go out together (the events of a
	// short answer usually arrive in one read). The event callback must not wait for anything while
	// held.
	Hold func() (release func()) `json:"-"`
}

// body is the JSON body, fields in the order the reference sends them.
type body struct {
	Model             string             `json:"model"`
	Instructions      string             `json:"instructions,omitempty"`
	Stream            bool               `json:"stream"`
	ServiceTier       string             `json:"service_tier,omitempty"`
	Input             []json.RawMessage  `json:"input"`
	Tools             *[]json.RawMessage `json:"tools,omitempty"`
	ToolChoice        string             `json:"tool_choice"`
	ParallelToolCalls bool               `json:"parallel_tool_calls"`
	Reasoning         json.RawMessage    `json:"reasoning,omitempty"`
	Store             bool               `json:"store"`
	Include           []string           `json:"include"`
	PromptCacheKey    string             `json:"prompt_cache_key,omitempty"`
	Text              json.RawMessage    `json:"text,omitempty"`
	ClientMetadata    map[string]string  `json:"client_metadata,omitempty"`
}

// MarshalBody returns the JSON body Stream POSTs for r (HTML characters are not escaped, so
// replayed items keep their bytes).
func (r *Request) MarshalBody() ([]byte, error) { return r.marshalBody(nil) }

// marshalBody is MarshalBody into get's buffer (nil: a new one) when the history is spliced in; get
// returns an empty buffer with room for at least n bytes.
func (r *Request) marshalBody(get func(n int) []byte) ([]byte, error) {
	b := body{
		Model: r.Model, Instructions: r.Instructions, Stream: true, ServiceTier: r.ServiceTier,
		Input: r.Input, ToolChoice: r.ToolChoice, ParallelToolCalls: r.ParallelToolCalls,
		Reasoning: r.Reasoning, Include: r.Include, PromptCacheKey: r.PromptCacheKey, Text: r.Text,
		ClientMetadata: r.ClientMetadata,
	}
	tools := r.Tools
	if tools == nil {
		tools = []json.RawMessage{}
	}
	if !r.NoTools {
		b.Tools = &tools
	} else {
		tools = nil
	}
	if b.Input == nil {
		b.Input = []json.RawMessage{}
	}
	if b.ToolChoice == "" {
		b.ToolChoice = "auto"
	}
	if b.Include == nil {
		b.Include = []string{}
	}
	// The history (and the tool list) is most of the body and already compact JSON: splice it in as is
	// rather than have encoding/json re-scan every item on every request (falling back to it for any
	// item that is not).
	if len(b.Input)+len(tools) > 0 && allCompactValid(b.Input) && allCompactValid(tools) {
		items := b.Input
		b.Input = []json.RawMessage{}
		empty := []json.RawMessage{}
		marker := `,"input":[]`
		if b.Tools != nil {
			b.Tools = &empty
			marker = `,"input":[],"tools":[]`
		}
		out, err := encodeBody(b)
		if err != nil {
			return nil, err
		}
		// The marker cannot occur inside an encoded string (its quotes would be escaped), and the
		// fields before input are model, instructions, stream and service_tier.
		at := bytes.Index(out, []byte(marker))
		if at < 0 {
			return nil, fmt.Errorf("model request: input field not found")
		}
		n := len(out) + len(items) + len(tools)
		for _, it := range items {
			n += len(it)
		}
		for _, it := range tools {
			n += len(it)
		}
		var spliced []byte
		if get != nil {
			spliced = get(n)
		} else {
			spliced = make([]byte, 0, n)
		}
		spliced = append(spliced, out[:at]...)
		spliced = appendArray(append(spliced, `,"input":`...), items)
		if b.Tools != nil {
			spliced = appendArray(append(spliced, `,"tools":`...), tools)
		}
		return append(spliced, out[at+len(marker):]...), nil
	}
	return encodeBody(b)
}

func appendArray(dst []byte, items []json.RawMessage) []byte {
	dst = append(dst, '[')
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, it...)
	}
	return append(dst, ']')
}

// bodyBufs holds request body buffers between requests: a body holds the whole history, so a fresh one
// per request is a large allocation (and garbage) on every turn, growing with the thread.
var bodyBufs sync.Pool // *[]byte

// pooledBody is an encoded request body whose buffer goes back to bodyBufs once nothing can read it any
// more: its Stream is over and every write of it that net/http began has ended. net/http begins a write
// only after reporting a connection (httptrace GotConn) and reports its end (WroteRequest), also for the
// attempts it retries on its own; a write that never reports its end keeps the buffer out of the pool.
type pooledBody struct {
	b     []byte
	buf   *[]byte // the pooled buffer b was written into (nil: not pooled)
	refs  atomic.Int64
	trace *httptrace.ClientTrace
}

// newPooledBody encodes r's body; its caller holds one reference, dropped with unref.
func newPooledBody(r *Request) (*pooledBody, error) {
	p := &pooledBody{}
	b, err := r.marshalBody(func(n int) []byte {
		bp, _ := bodyBufs.Get().(*[]byte)
		if bp == nil || cap(*bp) < n {
			// Room for the thread to grow: the next turn's body is the same history and a little more.
			nb := make([]byte, 0, n+n/4+4096)
			bp = &nb
		}
		p.buf = bp
		return (*bp)[:0]
	})
	if err != nil {
		return nil, err
	}
	p.b = b
	if p.buf != nil && cap(b) != cap(*p.buf) {
		p.buf = nil // outgrew the buffer (n is the exact size: not expected)
	}
	p.refs.Store(1)
	p.trace = &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { p.refs.Add(1) },
		WroteRequest: func(httptrace.WroteRequestInfo) { p.unref() },
	}
	return p, nil
}

// unref drops a reference; the last one gives the buffer back.
func (p *pooledBody) unref() {
	if p.refs.Add(-1) == 0 && p.buf != nil {
		bp := p.buf
		p.buf, p.b = nil, nil
		*bp = (*bp)[:0]
		bodyBufs.Put(bp)
	}
}

func allCompactValid(items []json.RawMessage) bool {
	for _, it := range items {
		if !compactValid(it) {
			return false
		}
	}
	return true
}

// encodeBody encodes b without HTML escaping and without the trailing newline.
func encodeBody(b body) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Options tunes a Client; the zero value is the production setting.
type Options struct {
	HTTPClient     *http.Client        // nil: a client without overall timeout (streams are long)
	Getenv         func(string) string // nil: os.Getenv (env_key, env_http_headers)
	Logger         *slog.Logger        // nil: slog.Default()
	BaseBackoff    time.Duration       // first retry delay, doubled per retry (default 200 ms)
	NetworkBackoff time.Duration       // first delay while waiting for the network (default 5 s)
	// OnResponseHeaders, when set, is given the headers of every model response (rate-limit headers).
	OnResponseHeaders func(http.Header)
	// Clock times the stream idle timeout (nil: the wall clock); tests pass a fake one.
	Clock stopwatch.Clock
}

// Client talks to one provider; it is reusable and safe for concurrent use.
type Client struct {
	p    Provider
	hc   *http.Client
	env  func(string) string
	log  *slog.Logger
	base time.Duration
	net  time.Duration
	// onHeaders is Options.OnResponseHeaders.
	onHeaders func(http.Header)
	clock     stopwatch.Clock // Options.Clock
}

// streamTransport is the transport of clients made without Options.HTTPClient: http.DefaultTransport's
// settings (proxy from the environment, pooling) with a write buffer that holds a typical request whole.
// With the default 4 KiB buffer a request body goes out in several writes, and past the first 4 KiB
// through a fresh 32 KiB copy buffer on every request. One transport for every client, so their
// connections are pooled together as before.
var streamTransport = sync.OnceValue(func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.WriteBufferSize = 64 << 10
	return t
})

// NewClient returns a client for provider p.
func NewClient(p Provider, opts Options) *Client {
	c := &Client{p: p, hc: opts.HTTPClient, env: opts.Getenv, log: opts.Logger, base: opts.BaseBackoff, net: opts.NetworkBackoff, onHeaders: opts.OnResponseHeaders,
		clock: opts.Clock}
	if c.hc == nil {
		c.hc = &http.Client{Transport: streamTransport()}
	}
	if c.env == nil {
		c.env = os.Getenv
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.base <= 0 {
		c.base = 200 * time.Millisecond
	}
	if c.net <= 0 {
		c.net = 5 * time.Second
	}
	return c
}

// Provider returns the provider the client was made for.
func (c *Client) Provider() Provider { return c.p }

// endpoint returns {base_url}/{path} plus the provider's query params.
func (c *Client) endpoint(path string) string {
	u := strings.TrimRight(c.p.BaseURL, "/") + "/" + path
	if len(c.p.QueryParams) > 0 {
		q := url.Values{}
		for k, v := range c.p.QueryParams {
			q.Set(k, v)
		}
		u += "?" + q.Encode()
	}
	return u
}

// authToken returns the bearer token ("" for none) or the missing-env-key error.
func (c *Client) authToken() (string, error) {
	if c.p.ExperimentalBearerToken != "" {
		return c.p.ExperimentalBearerToken, nil
	}
	if c.p.EnvKey == "" {
		return "", nil
	}
	if v := strings.TrimSpace(c.env(c.p.EnvKey)); v != "" {
		return v, nil
	}
	return "", missingEnvKeyError(c.p.EnvKey, c.p.EnvKeyInstructions)
}

// headers returns the provider headers followed by the caller's, the token and content headers.
func (c *Client) headers(token string, extra map[string]string) http.Header {
	h := http.Header{}
	for k, v := range c.p.HTTPHeaders {
		h.Set(k, v)
	}
	for k, env := range c.p.EnvHTTPHeaders {
		if v := c.env(env); strings.TrimSpace(v) != "" {
			h.Set(k, v)
		}
	}
	for k, v := range extra {
		h.Set(k, v)
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return h
}

// Stream POSTs req and streams the response, calling on (synchronously, in order) for each
// event, including RetryEvent/ResetEvent before stream retries. It returns the completed
// response, a *Error, or ctx's error once ctx is done (the HTTP stream is closed at once).
func (c *Client) Stream(ctx context.Context, req *Request, on func(Event)) (*Completed, error) {
	if on == nil {
		on = func(Event) {}
	}
	if req == nil {
		return nil, &Error{Message: "model request is nil", CodexErrorInfo: InfoString(InfoOther)}
	}
	token, err := c.authToken()
	if err != nil {
		return nil, err
	}
	payload, err := newPooledBody(req)
	if err != nil {
		return nil, &Error{Message: "cannot encode model request: " + err.Error(), CodexErrorInfo: InfoString(InfoOther), Err: err}
	}
	defer func() { payload.unref() }()
	h := c.headers(token, req.Headers)
	h.Set("Accept", "text/event-stream")
	h.Set("Content-Type", "application/json")
	u := c.endpoint("responses")
	maxRetries := c.p.EffectiveStreamMaxRetries()
	retries, netWaits := 0, 0
	for {
		delivered := 0
		comp, err := c.attempt(ctx, u, h, payload, req.Hold, func(ev Event) { delivered++; on(ev) })
		if err == nil {
			return comp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var me *Error
		if !errors.As(err, &me) || !me.Retryable {
			return nil, err
		}
		var ev RetryEvent
		if me.network {
			netWaits++
			if netWaits > c.p.EffectiveNetworkWaitMaxRetries() {
				return nil, me
			}
			ev = RetryEvent{Attempt: netWaits, Max: 0, Err: me, Delay: min(c.net<<min(netWaits-1, 10), 5*time.Minute)}
		} else {
			retries++
			if retries > maxRetries {
				return nil, me
			}
			d := me.RetryAfter
			if d <= 0 {
				d = backoff(c.base, retries)
			}
			ev = RetryEvent{Attempt: retries, Max: maxRetries, Err: me, Delay: d}
		}
		c.log.Debug("model stream retry", "provider", c.p.ID, "attempt", ev.Attempt, "max", ev.Max, "delay", ev.Delay, "err", me.Message)
		on(ev)
		if delivered > 0 {
			on(ResetEvent{Attempt: ev.Attempt})
		}
		if err := sleep(ctx, ev.Delay); err != nil {
			return nil, err
		}
		if req.Refresh != nil {
			next := *req
			next.Input = req.Refresh()
			prev := payload
			payload, err = newPooledBody(&next)
			prev.unref()
			if err != nil {
				payload = &pooledBody{} // for the deferred unref
				return nil, &Error{Message: "cannot encode model request: " + err.Error(), CodexErrorInfo: InfoString(InfoOther), Err: err}
			}
		}
	}
}

// backoff returns base·2^(n-1) with ±10 % jitter.
func backoff(base time.Duration, n int) time.Duration {
	d := base << min(max(n-1, 0), 20)
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watchdog cancels a stream attempt after a period without progress.
type watchdog struct {
	t     *time.Timer // on the wall clock
	d     time.Duration
	fired atomic.Bool
	// With Options.Clock (tests), the timer is re-armed on that clock instead.
	clock stopwatch.Clock
	fire  func()
	mu    sync.Mutex
	ct    stopwatch.Timer
}

func newWatchdog(d time.Duration, cancel context.CancelFunc, clock stopwatch.Clock) *watchdog {
	w := &watchdog{d: d, clock: clock}
	w.fire = func() { w.fired.Store(true); cancel() }
	if clock == nil {
		w.t = time.AfterFunc(d, w.fire)
	} else {
		w.ct = clock.AfterFunc(d, w.fire)
	}
	return w
}

func (w *watchdog) kick() {
	if w.clock == nil {
		w.t.Reset(w.d)
		return
	}
	w.mu.Lock()
	w.ct.Stop()
	w.ct = w.clock.AfterFunc(w.d, w.fire)
	w.mu.Unlock()
}

func (w *watchdog) stop() {
	if w.clock == nil {
		w.t.Stop()
		return
	}
	w.mu.Lock()
	w.ct.Stop()
	w.mu.Unlock()
}

// kickReader kicks the watchdog whenever bytes arrive.
type kickReader struct {
	r io.Reader
	w *watchdog
}

func (k kickReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	if n > 0 {
		k.w.kick()
	}
	return n, err
}

// attempt runs one stream attempt: the HTTP request with its silent retries, then the SSE body.
func (c *Client) attempt(ctx context.Context, u string, h http.Header, payload *pooledBody, hold func() func(), on func(Event)) (*Completed, error) {
	// The request follows ctx until the stream completes, and no longer: a turn ends (cancelling ctx)
	// right after response.completed, and the transport closes a connection whose request is cancelled
	// before the body's end was read, so the drain below would lose it and the next request dial.
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unlink := context.AfterFunc(ctx, cancel)
	defer func() { cancel() }()
	wd := newWatchdog(c.p.EffectiveStreamIdleTimeout(), cancel, c.clock)
	defer wd.stop()

	resp, err := c.post(actx, u, h, payload, wd)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if wd.fired.Load() {
			return nil, streamError(msgIdleTimeout, err)
		}
		return nil, err
	}
	comp, err := readStream(kickReader{resp.Body, wd}, hold, on, c.log)
	if err == nil {
		// What follows response.completed (normally only the chunked body's end) is read in the background,
		// so the connection goes back to the pool instead of being closed: the next request of the turn
		// or thread skips a TCP (and TLS) handshake.
		unlink()
		release := cancel
		cancel = func() {}
		go drainBody(resp.Body, release)
		return comp, nil
	}
	resp.Body.Close()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if wd.fired.Load() {
		return nil, streamError(msgIdleTimeout, err)
	}
	return comp, err
}

// drainLimit bounds drainBody: how long and how much it reads after response.completed.
const (
	drainLimit = 2 * time.Second
	drainBytes = 64 << 10
)

// drainBody reads what remains of a completed stream's body (at most drainBytes, for at most drainLimit),
// then closes it and cancels its request; a server that keeps the stream open only loses the connection.
func drainBody(body io.ReadCloser, cancel context.CancelFunc) {
	t := time.AfterFunc(drainLimit, cancel)
	_, _ = io.CopyN(io.Discard, body, drainBytes)
	t.Stop()
	_ = body.Close()
	cancel()
}

// post sends the request, retrying transport errors and 5xx silently up to request_max_retries.
// It returns a 2xx response with an open body, or an error.
func (c *Client) post(ctx context.Context, u string, h http.Header, payload *pooledBody, wd *watchdog) (*http.Response, error) {
	maxRetries := c.p.EffectiveRequestMaxRetries()
	for try := 0; ; try++ {
		wd.kick()
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, payload.trace), http.MethodPost, u, bytes.NewReader(payload.b))
		if err != nil {
			return nil, &Error{Message: "invalid model request: " + err.Error(), CodexErrorInfo: InfoString(InfoOther), Err: err}
		}
		req.Header = h.Clone()
		resp, err := c.hc.Do(req)
		if err == nil && c.onHeaders != nil {
			c.onHeaders(resp.Header)
		}
		var delay time.Duration
		var last error
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			last = transportError(err)
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return resp, nil
		default:
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			se := statusError(resp.StatusCode, resp.Header, b, u)
			if resp.StatusCode < 500 {
				return nil, se
			}
			last, delay = se, se.RetryAfter
		}
		if try >= maxRetries {
			return nil, last
		}
		if delay <= 0 {
			delay = backoff(c.base, try+1)
		}
		c.log.Debug("model request retry", "provider", c.p.ID, "try", try+1, "delay", delay, "err", last)
		wd.stop()
		if err := sleep(ctx, delay); err != nil {
			return nil, err
		}
	}
}

// sseData is the union of the fields of the SSE events we consume.
type sseData struct {
	Type         string          `json:"type"`
	Response     json.RawMessage `json:"response"`
	Item         json.RawMessage `json:"item"`
	ItemID       string          `json:"item_id"`
	OutputIndex  int             `json:"output_index"`
	ContentIndex int             `json:"content_index"`
	SummaryIndex int             `json:"summary_index"`
	Delta        string          `json:"delta"`
}

type itemHead struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

type responseObj struct {
	ID    string `json:"id"`
	Usage *struct {
		InputTokens        int64 `json:"input_tokens"`
		InputTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int64 `json:"output_tokens"`
		OutputTokensDetails *struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int64 `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Code    string `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

// maxSSELine bounds one SSE line (a data line holds a whole output item).
const maxSSELine = 64 << 20

// sseBufPool holds the scanners' initial 64 KiB line buffers: one per stream would be most of what a
// short turn allocates. A buffer the scanner outgrew is not returned (it keeps its own).
var sseBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// burstReader releases the caller's hold (Request.Hold) before each read of the stream.
type burstReader struct {
	r       io.Reader
	release func() // the hold taken for the events of the previous read, nil when none
}

func (b *burstReader) Read(p []byte) (int, error) {
	b.flush()
	return b.r.Read(p)
}

func (b *burstReader) flush() {
	if b.release != nil {
		b.release()
		b.release = nil
	}
}

// readStream parses SSE from r until response.completed (success), a terminal event or EOF. With hold
// set, the events decoded from one read are delivered under one hold (see Request.Hold).
func readStream(r io.Reader, hold func() func(), on func(Event), log *slog.Logger) (*Completed, error) {
	buf := sseBufPool.Get().(*[]byte)
	defer sseBufPool.Put(buf) // nothing keeps the scanner's bytes: events copy what they hold
	if hold != nil {
		br := &burstReader{r: r}
		defer br.flush()
		r = br
		inner := on
		on = func(ev Event) {
			if br.release == nil {
				br.release = hold()
			}
			inner(ev)
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer((*buf)[:0], maxSSELine)
	var data []byte
	var items []json.RawMessage
	hasData := false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) > 0 {
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			if string(field) == "data" {
				if hasData {
					data = append(data, '\n')
				}
				data = append(data, value...)
				hasData = true
			}
			continue // "event:", "id:", "retry:", comments: the JSON "type" decides
		}
		if !hasData {
			continue
		}
		raw := data
		data, hasData = nil, false
		var ev sseData
		if err := json.Unmarshal(raw, &ev); err != nil {
			log.Debug("model: skipping undecodable SSE event", "err", err)
			continue
		}
		comp, err := dispatch(&ev, on, &items)
		if comp != nil || err != nil {
			return comp, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, streamError(msgStreamClosed, err)
	}
	return nil, streamError(msgStreamClosed, io.ErrUnexpectedEOF)
}

// dispatch handles one decoded event; it returns a result when the stream is over.
func dispatch(ev *sseData, on func(Event), items *[]json.RawMessage) (*Completed, error) {
	switch ev.Type {
	case "response.created":
		var r responseObj
		_ = json.Unmarshal(ev.Response, &r)
		on(CreatedEvent{ResponseID: r.ID})
	case "response.output_item.added", "response.output_item.done":
		if len(ev.Item) == 0 {
			return nil, nil
		}
		var head itemHead
		_ = json.Unmarshal(ev.Item, &head)
		item := append(json.RawMessage(nil), ev.Item...)
		if ev.Type == "response.output_item.added" {
			on(ItemAddedEvent{OutputIndex: ev.OutputIndex, Type: head.Type, ID: head.ID, Item: item})
		} else {
			*items = append(*items, item)
			on(ItemDoneEvent{OutputIndex: ev.OutputIndex, Type: head.Type, ID: head.ID, Item: item})
		}
	case "response.output_text.delta":
		on(TextDeltaEvent{ItemID: ev.ItemID, OutputIndex: ev.OutputIndex, ContentIndex: ev.ContentIndex, Delta: ev.Delta})
	case "response.reasoning_summary_part.added":
		on(ReasoningSummaryPartAddedEvent{ItemID: ev.ItemID, OutputIndex: ev.OutputIndex, SummaryIndex: ev.SummaryIndex})
	case "response.reasoning_summary_text.delta":
		on(ReasoningSummaryDeltaEvent{ItemID: ev.ItemID, OutputIndex: ev.OutputIndex, SummaryIndex: ev.SummaryIndex, Delta: ev.Delta})
	case "response.reasoning_text.delta":
		on(ReasoningTextDeltaEvent{ItemID: ev.ItemID, OutputIndex: ev.OutputIndex, ContentIndex: ev.ContentIndex, Delta: ev.Delta})
	case "response.completed":
		var r responseObj
		if err := json.Unmarshal(ev.Response, &r); err != nil {
			return nil, streamError("failed to parse response.completed: "+err.Error(), err)
		}
		comp := &Completed{ResponseID: r.ID, Items: *items}
		if u := r.Usage; u != nil {
			comp.Usage = &Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
			if u.InputTokensDetails != nil {
				comp.Usage.CachedInputTokens = u.InputTokensDetails.CachedTokens
			}
			if u.OutputTokensDetails != nil {
				comp.Usage.ReasoningOutputTokens = u.OutputTokensDetails.ReasoningTokens
			}
		}
		return comp, nil
	case "response.failed":
		var r responseObj
		_ = json.Unmarshal(ev.Response, &r)
		if r.Error == nil {
			return nil, failedError("", "")
		}
		return nil, failedError(r.Error.Code, r.Error.Message)
	case "response.incomplete":
		var r responseObj
		_ = json.Unmarshal(ev.Response, &r)
		reason := ""
		if r.IncompleteDetails != nil {
			reason = r.IncompleteDetails.Reason
		}
		return nil, incompleteError(reason)
	}
	return nil, nil
}

// ListModels GETs {base_url}/models (1 s timeout) and returns the model ids it lists; it
// understands the OpenAI shape {"data":[{"id"}]} and {"models":[{"slug"|"id"|"name"}]}.
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	token, _ := c.authToken() // listing is best effort: without a key, try anonymously
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint("models"), nil)
	if err != nil {
		return nil, err
	}
	req.Header = c.headers(token, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("list models: unexpected status %d: %s", resp.StatusCode, bodyMessage(b))
	}
	var v struct {
		Data   []map[string]any `json:"data"`
		Models []any            `json:"models"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	out := []string{}
	pick := func(m map[string]any, keys ...string) {
		for _, k := range keys {
			if s, ok := m[k].(string); ok && s != "" {
				out = append(out, s)
				return
			}
		}
	}
	for _, m := range v.Data {
		pick(m, "id")
	}
	for _, e := range v.Models {
		switch x := e.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			pick(x, "slug", "id", "name", "model")
		}
	}
	return out, nil
}
