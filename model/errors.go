package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Error is a failed model request, carrying what the turn engine needs for the
// `error {error:{message, codexErrorInfo, additionalDetails}}` notification.
// The Stream methods return it (or a context error) for every failure.
type Error struct {
	// Message is the user-facing text (error.message).
	Message string
	// CodexErrorInfo is the json-ready error.codexErrorInfo: a JSON string such as "other" or an
	// object such as {"httpConnectionFailed":{"httpStatusCode":401}}.
	CodexErrorInfo json.RawMessage
	// HTTPStatus is the response status that caused the error, 0 if none.
	HTTPStatus int
	// Retryable tells whether the stream layer retries this error.
	Retryable bool
	// RetryAfter is the server's delay hint (retry-after header, "try again in Xs"), 0 if none.
	RetryAfter time.Duration
	// Err is the underlying cause, if any.
	Err error

	network bool // a connection failure: retried without limit ("waiting for network")
}

// Error returns Message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// CodexErrorInfo values (the camelCase wire form of the protocol's enum).
const (
	InfoOther                 = "other"
	InfoInternalServerError   = "internalServerError"
	InfoContextWindowExceeded = "contextWindowExceeded"
	InfoUsageLimitExceeded    = "usageLimitExceeded"
	InfoRateLimitExceeded     = "rateLimitExceeded"
	InfoServerOverloaded      = "serverOverloaded"
	InfoUnauthorized          = "unauthorized"
	InfoBadRequest            = "badRequest"

	InfoHTTPConnectionFailed          = "httpConnectionFailed"
	InfoResponseStreamDisconnected    = "responseStreamDisconnected"
	InfoResponseStreamConnectionFail  = "responseStreamConnectionFailed"
	InfoResponseTooManyFailedAttempts = "responseTooManyFailedAttempts"
)

// InfoString returns a plain codexErrorInfo value such as "other".
func InfoString(kind string) json.RawMessage {
	b, _ := json.Marshal(kind)
	return b
}

// InfoWithStatus returns {kind:{"httpStatusCode":status}} (null when status is 0).
func InfoWithStatus(kind string, status int) json.RawMessage {
	var code any
	if status != 0 {
		code = status
	}
	b, _ := json.Marshal(map[string]any{kind: map[string]any{"httpStatusCode": code}})
	return b
}

// Messages the reference shows for specific failures.
const (
	msgHighDemand       = "We\u2019re currently experiencing high demand, which may cause temporary errors."
	msgStreamClosed     = "stream closed before response.completed"
	msgIdleTimeout      = "idle timeout waiting for SSE"
	msgStreamPrefix     = "stream disconnected before completion: "
	msgContextWindow    = "Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying."
	msgQuota            = "Quota exceeded. Check your plan and billing details."
	msgUsageNotIncluded = "To use Codex with your ChatGPT plan, upgrade to Plus: https://chatgpt.com/explore/plus."
	msgOverloaded       = "Selected model is at capacity. Please try a different model."
	msgConnectionFailed = "Connection failed: error sending request"
)

// statusError maps a non-2xx response (after HTTP-level retries) to an Error, as the reference does.
func statusError(status int, header http.Header, body []byte, url string) *Error {
	e := &Error{HTTPStatus: status, RetryAfter: retryAfter(header, body)}
	switch {
	case status == http.StatusBadRequest:
		e.Message, e.CodexErrorInfo = string(body), InfoString(InfoOther)
	case status == http.StatusTooManyRequests:
		e.Message = fmt.Sprintf("exceeded retry limit, last status: %d %s", status, http.StatusText(status))
		e.CodexErrorInfo = InfoWithStatus(InfoResponseTooManyFailedAttempts, status)
	case status == http.StatusInternalServerError:
		e.Message, e.CodexErrorInfo, e.Retryable = msgHighDemand, InfoString(InfoInternalServerError), true
	default:
		e.Message = fmt.Sprintf("unexpected status %d %s: %s, url: %s", status, http.StatusText(status), bodyMessage(body), url)
		e.CodexErrorInfo, e.Retryable = InfoWithStatus(InfoHTTPConnectionFailed, status), true
	}
	return e
}

// bodyMessage returns error.message of a JSON error body, else the body text.
func bodyMessage(body []byte) string {
	var v struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil && v.Error.Message != "" {
		return v.Error.Message
	}
	return strings.TrimSpace(string(body))
}

// streamError is a retryable failure of an open stream ("stream disconnected before completion").
func streamError(msg string, cause error) *Error {
	return &Error{Message: msgStreamPrefix + msg, CodexErrorInfo: InfoString(InfoOther), Retryable: true, Err: cause}
}

// connectError is a failure to reach the provider (no connection): retried as "waiting for network".
func connectError(cause error) *Error {
	return &Error{Message: msgConnectionFailed, CodexErrorInfo: InfoString(InfoOther), Retryable: true, Err: cause, network: true}
}

// transportError maps a transport failure before the response headers: a failed connect waits for
// the network; a connection that was made and then reset or closed is a stream disconnect, retried
// within stream_max_retries like the reference.
func transportError(cause error) *Error {
	var oe *net.OpError
	if errors.As(cause, &oe) && oe.Op == "dial" {
		return connectError(cause)
	}
	var de *net.DNSError
	if errors.As(cause, &de) {
		return connectError(cause)
	}
	return &Error{Message: msgStreamPrefix + "error sending request", CodexErrorInfo: InfoString(InfoOther), Retryable: true, Err: cause}
}

// failedError maps the error object of a response.failed event.
func failedError(code, message string) *Error {
	switch code {
	case "context_length_exceeded":
		return &Error{Message: msgContextWindow, CodexErrorInfo: InfoString(InfoContextWindowExceeded)}
	case "insufficient_quota":
		return &Error{Message: msgQuota, CodexErrorInfo: InfoString(InfoUsageLimitExceeded)}
	case "usage_not_included":
		return &Error{Message: msgUsageNotIncluded, CodexErrorInfo: InfoString(InfoUsageLimitExceeded)}
	case "server_is_overloaded", "slow_down":
		return &Error{Message: msgOverloaded, CodexErrorInfo: InfoString(InfoServerOverloaded)}
	case "rate_limit_exceeded":
		return &Error{Message: "rate limit exceeded: " + message, CodexErrorInfo: InfoString(InfoOther),
			Retryable: true, RetryAfter: tryAgainIn(message)}
	}
	if message == "" {
		message = "response.failed event received"
	}
	return &Error{Message: msgStreamPrefix + message, CodexErrorInfo: InfoString(InfoOther),
		Retryable: true, RetryAfter: tryAgainIn(message)}
}

// incompleteError maps a response.incomplete event.
func incompleteError(reason string) *Error {
	if reason == "" {
		reason = "unknown"
	}
	return &Error{Message: "Incomplete response returned, reason: " + reason, CodexErrorInfo: InfoString(InfoOther)}
}

// missingEnvKeyError reports an unset provider env_key.
func missingEnvKeyError(name, instructions string) *Error {
	msg := fmt.Sprintf("Missing environment variable: `%s`.", name)
	if instructions != "" {
		msg += " " + instructions
	}
	return &Error{Message: msg, CodexErrorInfo: InfoString(InfoOther)}
}

// retryNotice returns the codexErrorInfo the reference sends with a "Reconnecting..." error:
// responseStreamDisconnected carrying the HTTP status (null for 500 and stream failures).
func (e *Error) retryNotice() json.RawMessage {
	status := e.HTTPStatus
	if status == http.StatusInternalServerError {
		status = 0
	}
	return InfoWithStatus(InfoResponseStreamDisconnected, status)
}

var tryAgainRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)try again in\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|sec|secs|seconds?)\b`)
})

// tryAgainIn parses a "try again in 1.5s" / "try again in 200ms" hint; 0 if absent.
func tryAgainIn(msg string) time.Duration {
	m := tryAgainRE().FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	if strings.EqualFold(m[2], "ms") {
		return time.Duration(v * float64(time.Millisecond))
	}
	return time.Duration(v * float64(time.Second))
}

// retryAfter reads a retry-after header (seconds) or a "try again in" hint in the body.
func retryAfter(h http.Header, body []byte) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
			return time.Duration(secs * float64(time.Second))
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(time.Until(t), 0)
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	return tryAgainIn(bodyMessage(body))
}

// IsContextWindowExceeded reports whether err is a model Error for an overflowing context.
func IsContextWindowExceeded(err error) bool {
	var e *Error
	return errors.As(err, &e) && string(e.CodexErrorInfo) == `"`+InfoContextWindowExceeded+`"`
}
