package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// OAuth constants of the ChatGPT sign-in (the public client of the Codex CLI).
const (
	Issuer       = "https://auth.openai.com"
	ClientID     = "app_EMoamEEZ73f0CkXaXp7hrann"
	CallbackPort = 1455
	scopes       = "openid profile email offline_access api.connectors.read api.connectors.invoke"
	// DeviceCodeURL is where a device-code login starts.
	DeviceCodeURL = Issuer + "/api/accounts/deviceauth/usercode"
)

// ErrNotCompleted is the outcome of a login replaced or cancelled before it finished.
var ErrNotCompleted = errors.New("Login server error: Login was not completed")

// Outcome is how a login attempt ended.
type Outcome struct {
	LoginID string
	Err     error // nil = success
}

// Logins runs at most one pending browser login at a time.
type Logins struct {
	// Done is told each finished attempt (success, failure or cancellation); it must not block long.
	Done func(Outcome)
	// HTTPClient is used for token and device-code requests (nil: a client with a 30 s timeout).
	HTTPClient *http.Client
	// Addr is the callback listener's address (default 127.0.0.1:1455).
	Addr string

	mu      sync.Mutex
	pending *pendingLogin
}

type pendingLogin struct {
	id       string
	srv      *http.Server
	verifier string
	state    string
	once     sync.Once
}

// StartBrowser starts the local callback server and returns the login id and the URL the user opens.
// A login already pending is ended as not completed.
func (l *Logins) StartBrowser(originator string) (string, string, error) {
	l.cancelPending()
	addr := l.Addr
	if addr == "" {
		addr = fmt.Sprintf("127.0.0.1:%d", CallbackPort)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", "", fmt.Errorf("failed to start login server: %w", err)
	}
	verifier := randomToken(64)
	sum := sha256.Sum256([]byte(verifier))
	p := &pendingLogin{id: uuid.NewString(), verifier: verifier, state: randomToken(32)}
	port := ln.Addr().(*net.TCPAddr).Port
	redirect := fmt.Sprintf("http://localhost:%d/auth/callback", port)
	q := url.Values{}
	q.Set("response_type", "code")
	q.Set("client_id", ClientID)
	q.Set("redirect_uri", redirect)
	q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
	q.Set("code_challenge_method", "S256")
	q.Set("state", p.state)
	q.Set("scope", scopes)
	q.Set("id_token_add_organizations", "true")
	q.Set("codex_cli_simplified_flow", "true")
	q.Set("originator", originator)
	authURL := Issuer + "/oauth/authorize?" + strings.ReplaceAll(q.Encode(), "%20", "+")

	mux := http.NewServeMux()
	mux.HandleFunc("/auth/callback", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("state") != p.state {
			http.Error(w, "State mismatch", http.StatusBadRequest)
			return
		}
		code := r.URL.Query().Get("code")
		if code == "" {
			http.Error(w, "Missing authorization code", http.StatusBadRequest)
			l.finish(p, errors.New("Login server error: missing authorization code"))
			return
		}
		err := l.exchange(r.Context(), code, redirect, p.verifier)
		if err != nil {
			http.Error(w, "Sign-in failed", http.StatusBadGateway)
			l.finish(p, fmt.Errorf("Login server error: %w", err))
			return
		}
		_, _ = w.Write([]byte("Signed in. You can close this window."))
		l.finish(p, nil)
	})
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	l.mu.Lock()
	l.pending = p
	l.mu.Unlock()
	go func() { _ = p.srv.Serve(ln) }()
	return p.id, authURL, nil
}

// exchange trades the authorization code for tokens. Storing ChatGPT tokens is not implemented, so a
// successful exchange still fails the login with a clear message.
func (l *Logins) exchange(ctx context.Context, code, redirect, verifier string) error {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "client_id": {ClientID}, "code_verifier": {verifier}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, Issuer+"/oauth/token", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := l.client().Do(req)
	if err != nil {
		return fmt.Errorf("token exchange failed: %w", err)
	}
	_ = resp.Body.Close()
	return errors.New("ChatGPT sign-in is not supported by appserver; use an API key")
}

// Cancel ends the pending login with id; it reports whether there was one.
func (l *Logins) Cancel(id string) bool {
	l.mu.Lock()
	p := l.pending
	l.mu.Unlock()
	if p == nil || p.id != id {
		return false
	}
	l.finish(p, ErrNotCompleted)
	return true
}

// Close ends any pending login.
func (l *Logins) Close() { l.cancelPending() }

func (l *Logins) cancelPending() {
	l.mu.Lock()
	p := l.pending
	l.mu.Unlock()
	if p != nil {
		l.finish(p, ErrNotCompleted)
	}
}

func (l *Logins) finish(p *pendingLogin, err error) {
	p.once.Do(func() {
		l.mu.Lock()
		if l.pending == p {
			l.pending = nil
		}
		l.mu.Unlock()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = p.srv.Shutdown(ctx)
		}()
		if l.Done != nil {
			l.Done(Outcome{LoginID: p.id, Err: err})
		}
	})
}

// RequestDeviceCode asks the issuer for a device code. Without the network this fails with the
// reference's wording; a code, when one is granted, is not used yet (ChatGPT sign-in is not supported).
func (l *Logins) RequestDeviceCode(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, DeviceCodeURL, strings.NewReader(`{"client_id":"`+ClientID+`"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client().Do(req)
	if err != nil {
		return fmt.Errorf("failed to request device code: error sending request for url (%s)", DeviceCodeURL)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("failed to request device code: status %d", resp.StatusCode)
	}
	return errors.New("ChatGPT device-code sign-in is not supported by appserver; use an API key")
}

func (l *Logins) client() *http.Client {
	if l.HTTPClient != nil {
		return l.HTTPClient
	}
	return &http.Client{Timeout: 30 * time.Second}
}

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}
