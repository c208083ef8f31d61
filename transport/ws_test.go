package transport_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"appserver/transport"
)

func TestParseListen(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind transport.Kind
		path string
		err  string
	}{
		{in: "stdio://", kind: transport.KindStdio},
		{in: "stdio", kind: transport.KindStdio},
		{in: "off", kind: transport.KindOff},
		{in: "unix://", kind: transport.KindUnix},
		{in: "unix:///tmp/x.sock", kind: transport.KindUnix, path: "/tmp/x.sock"},
		{in: "ws://127.0.0.1:4500", kind: transport.KindWebSocket},
		{in: "ws://[::1]:4500", kind: transport.KindWebSocket},
		{in: "ws://localhost:4500", err: "expected `ws://IP:PORT`"},
		{in: "ws://127.0.0.1", err: "expected `ws://IP:PORT`"},
		{in: "tcp://127.0.0.1:1", err: "unsupported --listen URL"},
		{in: "", err: "unsupported --listen URL"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			ep, err := transport.ParseListen(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.kind, ep.Kind)
			require.Equal(t, tc.path, ep.Path)
		})
	}
}

func TestHandshakeTCP(t *testing.T) {
	ts := startServer(t, serverOpts{})
	c, resp, err := ts.dial(t, http.Header{"x-codex-app-server-compression": {"zstd-stream-v1"}, "Sec-WebSocket-Extensions": {"permessage-deflate"}})
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	require.Empty(t, resp.Header.Get("x-codex-app-server-compression"), "the compression offer is declined")
	require.Empty(t, resp.Header.Get("Sec-WebSocket-Extensions"), "no permessage-deflate either")
	require.Empty(t, resp.Header.Get("x-codex-websocket-max-unfragmented-message-bytes"), "the TCP endpoint does not announce it (as the reference)")
	go c.readLoop()
	c.initialize()
	// One message per frame, answered in kind; a malformed frame gets no answer and the connection lives.
	require.NoError(t, c.ws.Write(context.Background(), websocket.MessageText, []byte("{not json")))
	r := c.result("thread/loaded/list", map[string]any{})
	require.Contains(t, r, "data")
	// A pretty-printed request (newlines inside the frame) is still one message.
	require.NoError(t, c.ws.Write(context.Background(), websocket.MessageText, []byte("{\n \"id\": 99,\n \"method\": \"thread/loaded/list\",\n \"params\": {}\n}")))
	m := c.waitFor(func(m map[string]any) bool { return m["id"] == float64(99) })
	require.NotNil(t, m["result"])
}

func TestHandshakeUnix(t *testing.T) {
	ts := startServer(t, serverOpts{Unix: true})
	c, resp, err := ts.dial(t, http.Header{"x-codex-app-server-compression": {"zstd-stream-v1"}})
	require.NoError(t, err)
	require.Equal(t, "16777216", resp.Header.Get("x-codex-websocket-max-unfragmented-message-bytes"))
	require.Empty(t, resp.Header.Get("x-codex-app-server-compression"))
	go c.readLoop()
	c.initialize()
	require.Contains(t, c.result("thread/loaded/list", map[string]any{}), "data")
}

func TestHTTPEndpoints(t *testing.T) {
	ts := startServer(t, serverOpts{})
	hc := ts.httpClient()
	do := func(method, path string, hdr http.Header) (int, string) {
		req, err := http.NewRequest(method, ts.url(path), nil)
		require.NoError(t, err)
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, _ := do("GET", "/healthz", nil)
	require.Equal(t, 200, code)
	code, _ = do("GET", "/readyz", nil)
	require.Equal(t, 200, code)
	code, body := do("GET", "/", nil)
	require.Equal(t, 400, code)
	require.Contains(t, body, "Connection header did not include 'upgrade'")
	code, _ = do("GET", "/rpc", nil)
	require.Equal(t, 400, code)
	code, _ = do("POST", "/", nil)
	require.Equal(t, 405, code)
	code, _ = do("GET", "/healthz", http.Header{"Origin": {"http://evil.example"}})
	require.Equal(t, 403, code, "any request carrying an Origin header is refused")
	_, resp, err := ts.dial(t, http.Header{"Origin": {"http://" + ts.Addr}})
	require.Error(t, err)
	require.Equal(t, 403, resp.StatusCode, "a browser upgrade is refused")
}

func TestCapabilityTokenAuth(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokFile, []byte("s3cret-token\n"), 0o600))
	sum := sha256.Sum256([]byte("s3cret-token"))
	for name, opts := range map[string]transport.AuthOptions{
		"file":   {Mode: transport.AuthCapabilityToken, TokenFile: tokFile},
		"sha256": {Mode: transport.AuthCapabilityToken, TokenSHA256: hex.EncodeToString(sum[:])},
	} {
		t.Run(name, func(t *testing.T) {
			auth, err := transport.NewAuthenticator(opts)
			require.NoError(t, err)
			ts := startServer(t, serverOpts{Auth: auth})
			for _, tc := range []struct {
				header string
				status int
				body   string
			}{
				{"", 401, "missing websocket bearer token"},
				{"Bearer wrong", 401, "invalid websocket bearer token"},
				{"Basic s3cret-token", 401, "missing websocket bearer token"},
				{"Bearer s3cret-token", 101, ""},
			} {
				h := http.Header{}
				if tc.header != "" {
					h.Set("Authorization", tc.header)
				}
				c, resp, err := ts.dial(t, h)
				require.Equal(t, tc.status, resp.StatusCode, tc.header)
				if tc.status != 101 {
					require.Error(t, err)
					require.Contains(t, err.Error(), "401")
					continue
				}
				require.NoError(t, err)
				go c.readLoop()
				c.initialize()
			}
		})
	}
}

func signJWT(t *testing.T, secret []byte, claims jwt.MapClaims, method jwt.SigningMethod) string {
	s, err := jwt.NewWithClaims(method, claims).SignedString(secret)
	require.NoError(t, err)
	return s
}

func TestSignedBearerTokenAuth(t *testing.T) {
	dir := t.TempDir()
	secret := []byte("0123456789abcdef0123456789abcdef")
	secretFile := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secretFile, append(secret, '\n'), 0o600))
	skew := 30 * time.Second
	auth, err := transport.NewAuthenticator(transport.AuthOptions{Mode: transport.AuthSignedBearerToken, SharedSecretFile: secretFile, Issuer: "issuer-a", Audience: "aud-a", MaxClockSkew: &skew})
	require.NoError(t, err)
	ts := startServer(t, serverOpts{Auth: auth})
	now := time.Now()
	good := jwt.MapClaims{"iss": "issuer-a", "aud": "aud-a", "exp": now.Add(time.Hour).Unix()}
	with := func(k string, v any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for key, val := range good {
			c[key] = val
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		token  string
		status int
		body   string
	}{
		{"good", signJWT(t, secret, good, jwt.SigningMethodHS256), 101, ""},
		{"audience list", signJWT(t, secret, with("aud", []string{"x", "aud-a"}), jwt.SigningMethodHS256), 101, ""},
		{"expired within skew", signJWT(t, secret, with("exp", now.Add(-10*time.Second).Unix()), jwt.SigningMethodHS256), 101, ""},
		{"expired", signJWT(t, secret, with("exp", now.Add(-5*time.Minute).Unix()), jwt.SigningMethodHS256), 401, "expired websocket jwt"},
		{"no exp", signJWT(t, secret, with("exp", nil), jwt.SigningMethodHS256), 401, "invalid websocket jwt"},
		{"not yet valid", signJWT(t, secret, with("nbf", now.Add(5*time.Minute).Unix()), jwt.SigningMethodHS256), 401, "websocket jwt is not valid yet"},
		{"wrong audience", signJWT(t, secret, with("aud", "other"), jwt.SigningMethodHS256), 401, "websocket jwt audience mismatch"},
		{"no audience", signJWT(t, secret, with("aud", nil), jwt.SigningMethodHS256), 401, "websocket jwt audience mismatch"},
		{"wrong issuer", signJWT(t, secret, with("iss", "other"), jwt.SigningMethodHS256), 401, "websocket jwt issuer mismatch"},
		{"bad signature", signJWT(t, []byte("another-secret-another-secret-xx"), good, jwt.SigningMethodHS256), 401, "invalid websocket jwt"},
		{"HS512", signJWT(t, secret, good, jwt.SigningMethodHS512), 401, "invalid websocket jwt"},
		{"garbage", "not.a.jwt", 401, "invalid websocket jwt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", ts.url("/"), nil)
			require.NoError(t, err)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Sec-WebSocket-Version", "13")
			req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			req.Header.Set("Authorization", "Bearer "+tc.token)
			if tc.status == 101 {
				c, resp, err := ts.dial(t, http.Header{"Authorization": {"Bearer " + tc.token}})
				require.NoError(t, err)
				require.Equal(t, 101, resp.StatusCode)
				go c.readLoop()
				c.initialize()
				return
			}
			resp, err := ts.httpClient().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			require.Equal(t, tc.status, resp.StatusCode)
			require.Equal(t, tc.body, strings.TrimSpace(string(body)))
		})
	}
}

func TestAuthenticatorFlagErrors(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("short"), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	skew := time.Second
	for _, tc := range []struct {
		name string
		opts transport.AuthOptions
		err  string
	}{
		{"none", transport.AuthOptions{}, ""},
		{"flags without mode", transport.AuthOptions{TokenFile: "/x"}, "websocket auth flags require `--ws-auth capability-token` or `--ws-auth signed-bearer-token`"},
		{"unknown mode", transport.AuthOptions{Mode: "password"}, "invalid value 'password'"},
		{"capability without token", transport.AuthOptions{Mode: transport.AuthCapabilityToken}, "`--ws-token-file` or `--ws-token-sha256` is required"},
		{"capability with both", transport.AuthOptions{Mode: transport.AuthCapabilityToken, TokenFile: "/x", TokenSHA256: "ab"}, "mutually exclusive"},
		{"capability with jwt flags", transport.AuthOptions{Mode: transport.AuthCapabilityToken, TokenFile: "/x", MaxClockSkew: &skew}, "require `--ws-auth signed-bearer-token`"},
		{"capability missing file", transport.AuthOptions{Mode: transport.AuthCapabilityToken, TokenFile: filepath.Join(dir, "nope")}, "reading websocket token file"},
		{"capability empty file", transport.AuthOptions{Mode: transport.AuthCapabilityToken, TokenFile: empty}, "is empty"},
		{"capability bad hex", transport.AuthOptions{Mode: transport.AuthCapabilityToken, TokenSHA256: "xyz"}, "hex-encoded SHA-256"},
		{"jwt without secret", transport.AuthOptions{Mode: transport.AuthSignedBearerToken}, "`--ws-shared-secret-file` is required"},
		{"jwt short secret", transport.AuthOptions{Mode: transport.AuthSignedBearerToken, SharedSecretFile: short}, "must be at least 32 bytes"},
		{"jwt with token flags", transport.AuthOptions{Mode: transport.AuthSignedBearerToken, SharedSecretFile: short, TokenFile: "/x"}, "require `--ws-auth capability-token`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := transport.NewAuthenticator(tc.opts)
			if tc.err == "" {
				require.NoError(t, err)
				require.Nil(t, a)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}
