// Package environments holds the execution environments a server knows: the built-in "local" one and
// remote exec-servers registered by clients with environment/add, with the connection state of each.
package environments

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// LocalID is the id of the environment the server itself runs commands in.
const LocalID = "local"

// defaultConnectTimeout bounds a connection attempt when environment/add gives none.
const defaultConnectTimeout = 10 * time.Second

// Status is what environment/status reports: ready, pending, disconnected or unknown, with a reason for
// the last two.
type Status struct {
	Kind  string
	Error string
}

// Info is the shell and default working directory of an environment.
type Info struct {
	ShellName string
	ShellPath string
	Cwd       string // absolute path, "" when unknown
}

// ErrProtocol is wrapped by every registration error, matching the reference's "exec-server protocol
// error" family.
var ErrProtocol = errors.New("exec-server protocol error")

// Remote describes a remote exec-server to register: its WebSocket URL, the connection timeout (0: the
// default), the optional Authorization bearer token and X-Request-ID sent with the upgrade, and the
// skills it must supply.
type Remote struct {
	URL            string
	ConnectTimeout time.Duration
	BearerToken    string
	RequestID      string
	RequiredSkills []string
}

type remote struct {
	Remote
	state  string // pending, disconnected
	err    string
	cancel context.CancelFunc
}

// Registry is the set of environments of one server. The zero value is not usable; use New.
type Registry struct {
	cwd string

	mu      sync.Mutex
	remotes map[string]*remote
	wg      sync.WaitGroup
	closed  bool
}

// New returns a registry whose local environment reports cwd as its working directory.
func New(cwd string) *Registry {
	return &Registry{cwd: cwd, remotes: map[string]*remote{}}
}

// Add registers (or replaces) a remote exec-server and starts connecting to it in the background.
// Headers (a bearer token or a request id) are only sent over wss:// or to a loopback host.
func (r *Registry) Add(id string, spec Remote) error {
	switch id {
	case "":
		return fmt.Errorf("%w: environment id cannot be empty", ErrProtocol)
	case LocalID:
		return fmt.Errorf("%w: environment id `%s` is reserved for EnvironmentManager", ErrProtocol, id)
	}
	if (spec.BearerToken != "" || spec.RequestID != "") && !secureOrLoopback(spec.URL) {
		return fmt.Errorf("%w: exec-server WebSocket headers require wss:// or a loopback destination", ErrProtocol)
	}
	if spec.ConnectTimeout <= 0 {
		spec.ConnectTimeout = defaultConnectTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	rm := &remote{Remote: spec, state: "pending", cancel: cancel}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		cancel()
		return fmt.Errorf("%w: registry closed", ErrProtocol)
	}
	if old := r.remotes[id]; old != nil {
		old.cancel()
	}
	r.remotes[id] = rm
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		err := connect(ctx, rm.Remote)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.remotes[id] != rm {
			return
		}
		rm.state = "disconnected"
		rm.err = "exec-server connection attempt failed: " + err.Error()
	}()
	return nil
}

// secureOrLoopback reports whether headers may be sent to rawURL: wss://, or a loopback host.
func secureOrLoopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	if u.Scheme == "wss" {
		return true
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// connect opens the exec-server WebSocket. appserver does not speak the exec-server protocol, so even a
// successful upgrade ends disconnected with a reason that says so.
func connect(ctx context.Context, spec Remote) error {
	rawURL := spec.URL
	prefix := fmt.Sprintf("failed to connect to exec-server websocket `%s`: ", rawURL)
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return errors.New(prefix + "IO error: invalid WebSocket URL")
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return errors.New(prefix + "URL error: URL scheme not supported")
	}
	h := http.Header{}
	if spec.BearerToken != "" {
		h.Set("Authorization", "Bearer "+spec.BearerToken)
	}
	if spec.RequestID != "" {
		h.Set("X-Request-ID", spec.RequestID)
	}
	ctx, cancel := context.WithTimeout(ctx, spec.ConnectTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, rawURL, &websocket.DialOptions{HTTPHeader: h})
	switch {
	case err == nil:
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New(prefix + "IO error: Connection refused (os error 111)")
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%stimed out after %dms", prefix, spec.ConnectTimeout.Milliseconds())
	default:
		return fmt.Errorf("%sIO error: %v", prefix, err)
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
	return fmt.Errorf("exec-server at `%s` is not supported by appserver (remote execution is not implemented)", rawURL)
}

// Status reports an environment's state without starting or recovering it.
func (r *Registry) Status(id string) Status {
	if id == LocalID {
		return Status{Kind: "ready"}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rm := r.remotes[id]
	if rm == nil {
		return Status{Kind: "unknown", Error: fmt.Sprintf("unknown environment id `%s`", id)}
	}
	return Status{Kind: rm.state, Error: rm.err}
}

// ErrUnknown is returned by Info for an id that is not registered.
var ErrUnknown = errors.New("unknown environment id")

// Info describes an environment's shell and cwd. A remote one must be connected to answer; appserver
// never connects, so remote environments report their connection failure.
func (r *Registry) Info(id string) (Info, error) {
	if id == LocalID {
		sh := os.Getenv("SHELL")
		if sh == "" {
			sh = "/bin/sh"
		}
		return Info{ShellName: filepath.Base(sh), ShellPath: sh, Cwd: r.cwd}, nil
	}
	st := r.Status(id)
	switch st.Kind {
	case "unknown":
		return Info{}, fmt.Errorf("%w `%s`", ErrUnknown, id)
	case "pending":
		return Info{}, errors.New("exec-server connection attempt has not finished")
	}
	return Info{}, errors.New(st.Error)
}

// Close stops every connection attempt and waits for them to end.
func (r *Registry) Close() {
	r.mu.Lock()
	r.closed = true
	for _, rm := range r.remotes {
		rm.cancel()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
