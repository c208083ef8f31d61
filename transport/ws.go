package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// MaxUnfragmentedMessageBytes is announced on the Unix control socket in
// x-codex-websocket-max-unfragmented-message-bytes, as the reference does.
const MaxUnfragmentedMessageBytes = 16 << 20

// maxMessageBytes bounds one incoming message (the stdio transport's line limit).
const maxMessageBytes = 256 << 20

// DefaultQueueSize bounds each connection's outgoing frames; a peer that lets it fill is disconnected.
const DefaultQueueSize = 1024

// ConnServer serves one client over a line-oriented reader/writer pair (server.Server implements it).
type ConnServer interface {
	ServeConn(ctx context.Context, r io.Reader, w io.Writer) error
}

// WSOptions configure a WebSocket endpoint.
type WSOptions struct {
	// Auth checks upgrade requests (nil: no auth).
	Auth Authenticator
	// Health serves GET /healthz and /readyz and refuses requests with an Origin header (the TCP endpoint).
	Health bool
	// AnnounceMaxMessage adds x-codex-websocket-max-unfragmented-message-bytes to the 101 response.
	AnnounceMaxMessage bool
	// QueueSize bounds the outgoing frames of one connection (DefaultQueueSize when zero).
	QueueSize int
	Logger    *slog.Logger
}

// WSHandler is the HTTP side of a WebSocket endpoint: it upgrades requests and serves each connection
// with a ConnServer until the peer leaves or ctx ends.
type WSHandler struct {
	srv  ConnServer
	opts WSOptions
	ctx  context.Context
	wg   sync.WaitGroup
	// wrap, when set (tests), wraps each connection's socket.
	wrap func(frameSocket) frameSocket
}

// frameSocket is the part of *websocket.Conn a connection uses.
type frameSocket interface {
	Read(ctx context.Context) (websocket.MessageType, []byte, error)
	Write(ctx context.Context, typ websocket.MessageType, p []byte) error
	Close(code websocket.StatusCode, reason string) error
	CloseNow() error
}

// NewWSHandler builds a handler whose connections live at most as long as ctx.
func NewWSHandler(ctx context.Context, srv ConnServer, opts WSOptions) *WSHandler {
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &WSHandler{srv: srv, opts: opts, ctx: ctx}
}

// Wait blocks until every connection served by h has ended.
func (h *WSHandler) Wait() { h.wg.Wait() }

func headerHasToken(hv, token string) bool {
	for _, t := range strings.Split(hv, ",") {
		if strings.EqualFold(strings.TrimSpace(t), token) {
			return true
		}
	}
	return false
}

// ServeHTTP answers health checks, refuses browser origins and unauthenticated peers, and upgrades.
func (h *WSHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.opts.Health {
		if r.Header.Get("Origin") != "" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if r.Method == http.MethodGet && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz") {
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	if r.Method != http.MethodGet {
		http.Error(w, "Request method must be `GET`", http.StatusMethodNotAllowed)
		return
	}
	if !headerHasToken(r.Header.Get("Connection"), "upgrade") {
		http.Error(w, "Connection header did not include 'upgrade'", http.StatusBadRequest)
		return
	}
	if !headerHasToken(r.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "`Upgrade` header did not include 'websocket'", http.StatusBadRequest)
		return
	}
	if h.opts.Auth != nil {
		if err := h.opts.Auth.Authenticate(r); err != nil {
			h.opts.Logger.Info("websocket upgrade refused", "remote", r.RemoteAddr, "reason", err.Error())
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
	}
	if h.opts.AnnounceMaxMessage {
		w.Header()["x-codex-websocket-max-unfragmented-message-bytes"] = []string{"16777216"}
	}
	// The x-codex-app-server-compression offer is declined by not answering it; permessage-deflate too.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		h.opts.Logger.Info("websocket upgrade failed", "remote", r.RemoteAddr, "error", err)
		return
	}
	ws.SetReadLimit(maxMessageBytes)
	h.wg.Add(1)
	defer h.wg.Done()
	h.serve(ws, r.RemoteAddr)
}

// serve runs one upgraded connection to its end.
func (h *WSHandler) serve(ws *websocket.Conn, remote string) {
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	var sock frameSocket = ws
	if h.wrap != nil {
		sock = h.wrap(sock)
	}
	fc := newFrameConn(ctx, sock, h.opts.QueueSize, h.opts.Logger.With("remote", remote))
	h.opts.Logger.Info("websocket client connected", "remote", remote)
	err := h.srv.ServeConn(ctx, fc, fc)
	fc.finish()
	h.opts.Logger.Info("websocket client disconnected", "remote", remote, "error", err)
}

// frameConn adapts a WebSocket to the newline-delimited stream jsonrpc.Conn reads and writes: each text
// (or binary) message becomes one line, each written line one text message.
type frameConn struct {
	ws     frameSocket
	ctx    context.Context
	cancel context.CancelFunc
	log    *slog.Logger

	rbuf []byte

	wmu  sync.Mutex
	wbuf []byte
	out  chan []byte
	dead bool

	writerDone chan struct{}
}

var errSlowPeer = errors.New("websocket peer too slow: outgoing queue full; connection dropped")

func newFrameConn(ctx context.Context, ws frameSocket, queue int, log *slog.Logger) *frameConn {
	ctx, cancel := context.WithCancel(ctx)
	fc := &frameConn{ws: ws, ctx: ctx, cancel: cancel, log: log, out: make(chan []byte, queue), writerDone: make(chan struct{})}
	go fc.writeLoop()
	return fc
}

// Read returns the next message followed by a newline; it reports io.EOF once the peer is gone.
func (f *frameConn) Read(p []byte) (int, error) {
	for len(f.rbuf) == 0 {
		_, msg, err := f.ws.Read(f.ctx)
		if err != nil {
			f.cancel()
			return 0, io.EOF
		}
		if bytes.IndexByte(msg, '\n') >= 0 { // a pretty-printed message must stay one line
			var buf bytes.Buffer
			if json.Compact(&buf, msg) == nil {
				msg = buf.Bytes()
			} else {
				msg = bytes.ReplaceAll(msg, []byte("\n"), []byte(" "))
			}
		}
		f.rbuf = append(msg, '\n')
	}
	n := copy(p, f.rbuf)
	f.rbuf = f.rbuf[n:]
	return n, nil
}

// Write queues every complete line as one message without blocking; when the queue is full the peer
// is disconnected.
func (f *frameConn) Write(p []byte) (int, error) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.dead {
		return 0, errSlowPeer
	}
	f.wbuf = append(f.wbuf, p...)
	for {
		i := bytes.IndexByte(f.wbuf, '\n')
		if i < 0 {
			break
		}
		frame := bytes.Clone(f.wbuf[:i])
		f.wbuf = f.wbuf[i+1:]
		select {
		case f.out <- frame:
		default:
			f.dead = true
			f.log.Warn("dropping websocket connection: the client is not reading", "queued", cap(f.out))
			f.cancel()
			_ = f.ws.CloseNow()
			return 0, errSlowPeer
		}
	}
	return len(p), nil
}

func (f *frameConn) writeLoop() {
	defer close(f.writerDone)
	for frame := range f.out {
		if err := f.ws.Write(f.ctx, websocket.MessageText, frame); err != nil {
			f.cancel()
			for range f.out { // discard the rest until finish closes the queue
			}
			return
		}
	}
}

// finish lets the writer send what is queued (bounded by flushTimeout) and closes the WebSocket.
func (f *frameConn) finish() {
	f.wmu.Lock()
	f.dead = true
	close(f.out)
	f.wmu.Unlock()
	t := time.AfterFunc(flushTimeout, f.cancel)
	<-f.writerDone
	t.Stop()
	_ = f.ws.Close(websocket.StatusNormalClosure, "")
	f.cancel()
	_ = f.ws.CloseNow()
}

// flushTimeout bounds how long a closing connection may take to send its last queued messages.
const flushTimeout = 2 * time.Second

// Serve accepts connections on ln and serves them over HTTP/WebSocket until ctx ends; it then closes the
// listener and waits for the connections to finish.
func Serve(ctx context.Context, ln net.Listener, h *WSHandler) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx) // hijacked connections are not tracked; h.Wait covers them
	h.Wait()
	return nil
}
