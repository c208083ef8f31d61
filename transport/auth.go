package transport

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Auth modes accepted by --ws-auth.
const (
	AuthCapabilityToken   = "capability-token"
	AuthSignedBearerToken = "signed-bearer-token"
)

// DefaultClockSkew is the leeway applied to exp/nbf of signed bearer tokens when none is configured.
const DefaultClockSkew = 30 * time.Second

// minSecretBytes is the shortest shared secret accepted for HS256 tokens.
const minSecretBytes = 32

// AuthOptions are the --ws-* flags.
type AuthOptions struct {
	Mode             string
	TokenFile        string
	TokenSHA256      string
	SharedSecretFile string
	Issuer           string
	Audience         string
	// MaxClockSkew is the leeway for exp/nbf; nil selects DefaultClockSkew.
	MaxClockSkew *time.Duration
}

// configured reports whether any auth flag was given.
func (o AuthOptions) configured() bool {
	return o.Mode != "" || o.TokenFile != "" || o.TokenSHA256 != "" || o.SharedSecretFile != "" ||
		o.Issuer != "" || o.Audience != "" || o.MaxClockSkew != nil
}

// Authenticator checks the bearer token of an upgrade request; a nil Authenticator admits everyone.
type Authenticator interface {
	// Authenticate returns nil when the request may connect, or an error whose text is the 401 body.
	Authenticate(r *http.Request) error
}

// NewAuthenticator validates the flags and loads the token or secret; it returns nil when no auth is
// configured.
func NewAuthenticator(o AuthOptions) (Authenticator, error) {
	switch o.Mode {
	case "":
		if o.configured() {
			return nil, errors.New("websocket auth flags require `--ws-auth capability-token` or `--ws-auth signed-bearer-token`")
		}
		return nil, nil
	case AuthCapabilityToken:
		if o.SharedSecretFile != "" || o.Issuer != "" || o.Audience != "" || o.MaxClockSkew != nil {
			return nil, errors.New("`--ws-shared-secret-file`, `--ws-issuer`, `--ws-audience` and `--ws-max-clock-skew-seconds` require `--ws-auth signed-bearer-token`")
		}
		switch {
		case o.TokenFile != "" && o.TokenSHA256 != "":
			return nil, errors.New("`--ws-token-file` and `--ws-token-sha256` are mutually exclusive")
		case o.TokenFile != "":
			raw, err := os.ReadFile(o.TokenFile)
			if err != nil {
				return nil, fmt.Errorf("reading websocket token file %s: %w", o.TokenFile, err)
			}
			tok := strings.TrimSpace(string(raw))
			if tok == "" {
				return nil, fmt.Errorf("websocket token file %s is empty", o.TokenFile)
			}
			sum := sha256.Sum256([]byte(tok))
			return capabilityAuth{digest: sum}, nil
		case o.TokenSHA256 != "":
			d, err := hex.DecodeString(strings.TrimSpace(o.TokenSHA256))
			if err != nil || len(d) != sha256.Size {
				return nil, errors.New("`--ws-token-sha256` must be a hex-encoded SHA-256 digest (64 hex characters)")
			}
			var a capabilityAuth
			copy(a.digest[:], d)
			return a, nil
		}
		return nil, errors.New("`--ws-token-file` or `--ws-token-sha256` is required when `--ws-auth capability-token` is set")
	case AuthSignedBearerToken:
		if o.TokenFile != "" || o.TokenSHA256 != "" {
			return nil, errors.New("`--ws-token-file` and `--ws-token-sha256` require `--ws-auth capability-token`")
		}
		if o.SharedSecretFile == "" {
			return nil, errors.New("`--ws-shared-secret-file` is required when `--ws-auth signed-bearer-token` is set")
		}
		raw, err := os.ReadFile(o.SharedSecretFile)
		if err != nil {
			return nil, fmt.Errorf("reading websocket shared secret %s: %w", o.SharedSecretFile, err)
		}
		secret := []byte(strings.TrimSpace(string(raw)))
		if len(secret) < minSecretBytes {
			return nil, fmt.Errorf("signed websocket bearer secret %s must be at least %d bytes", o.SharedSecretFile, minSecretBytes)
		}
		skew := DefaultClockSkew
		if o.MaxClockSkew != nil {
			skew = *o.MaxClockSkew
		}
		return &jwtAuth{secret: secret, issuer: o.Issuer, audience: o.Audience, skew: skew, now: time.Now}, nil
	}
	return nil, fmt.Errorf("invalid value '%s' for '--ws-auth <MODE>' [possible values: capability-token, signed-bearer-token]", o.Mode)
}

// bearer extracts the token of an `Authorization: Bearer` header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

var (
	errMissingBearer = errors.New("missing websocket bearer token")
	errInvalidBearer = errors.New("invalid websocket bearer token")
	errInvalidJWT    = errors.New("invalid websocket jwt")
	errExpiredJWT    = errors.New("expired websocket jwt")
	errNotYetJWT     = errors.New("websocket jwt is not valid yet")
	errIssuerJWT     = errors.New("websocket jwt issuer mismatch")
	errAudienceJWT   = errors.New("websocket jwt audience mismatch")
)

// capabilityAuth compares the SHA-256 of the presented token with the configured digest in constant time.
type capabilityAuth struct{ digest [sha256.Size]byte }

func (a capabilityAuth) Authenticate(r *http.Request) error {
	tok, ok := bearer(r)
	if !ok {
		return errMissingBearer
	}
	sum := sha256.Sum256([]byte(tok))
	if subtle.ConstantTimeCompare(sum[:], a.digest[:]) != 1 {
		return errInvalidBearer
	}
	return nil
}

// jwtAuth verifies HS256 tokens: signature, exp (required) and nbf with leeway, then issuer and audience
// when configured.
type jwtAuth struct {
	secret           []byte
	issuer, audience string
	skew             time.Duration
	now              func() time.Time
}

func (a *jwtAuth) Authenticate(r *http.Request) error {
	tok, ok := bearer(r)
	if !ok {
		return errMissingBearer
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(a.skew),
		jwt.WithTimeFunc(a.now),
	}
	claims := jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(tok, &claims, func(*jwt.Token) (any, error) { return a.secret, nil }, opts...)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return errExpiredJWT
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return errNotYetJWT
	case err != nil:
		return errInvalidJWT
	case a.issuer != "" && claims.Issuer != a.issuer:
		return errIssuerJWT
	case a.audience != "" && !slices.Contains(claims.Audience, a.audience):
		return errAudienceJWT
	}
	return nil
}
