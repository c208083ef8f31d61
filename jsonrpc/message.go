// Package jsonrpc is a small JSON-RPC 2.0 engine over newline-delimited JSON, shaped for the Codex
// app-server wire: the "jsonrpc" member is accepted on input and never written, request ids are echoed
// with their JSON type, lines that are not a message are logged and dropped without a response, and
// server→client requests carry integer ids counted from 0 per connection.
//
// It knows nothing about Codex: a Conn reads lines, runs each request's handler on a goroutine of its own
// (in the lane an optional Orderer chooses), stops reading while too many requests are in flight, writes
// through one bounded queue, and tracks the server's own outbound requests.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Standard and app-server specific error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	CodeOverloaded     = -32001
)

// OverloadedMessage is the reference's exact text for a request refused because the ingress queue is full.
const OverloadedMessage = "Server overloaded; retry later."

// Error is a JSON-RPC error object; handlers return it to choose the code and message a client sees.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidRequest returns a -32600 error with the message verbatim.
func InvalidRequest(msg string) *Error { return &Error{Code: CodeInvalidRequest, Message: msg} }

// Kind says what sort of message a decoded line is.
type Kind int

// The kinds of message a line may hold.
const (
	KindInvalid Kind = iota
	KindRequest
	KindNotification
	KindResponse
	KindError
)

// Message is one decoded line. Params/Result keep their raw bytes; ID keeps the raw JSON (number or string).
type Message struct {
	Kind   Kind
	ID     json.RawMessage
	Method string
	// Params is nil when the member is absent or null.
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
}

type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params rawRef          `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// rawRef keeps a member's raw bytes without copying them: it aliases the line being decoded, which
// Decode's caller hands over and never modifies, so a huge params member is not held twice.
type rawRef []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawRef) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// ErrNotMessage is wrapped by Decode for a line that is valid JSON but no JSON-RPC message.
var ErrNotMessage = errors.New("not a JSON-RPC message")

// Decode parses one line; the message's Params alias line, which must not be modified afterwards. Batches (arrays), objects without method/result/error and ids that are neither
// a number nor a string are rejected, as the reference rejects them.
func Decode(line []byte) (*Message, error) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if len(trimmed) > 0 && trimmed[0] == '[' {
			return nil, fmt.Errorf("%w: batches are not supported", ErrNotMessage)
		}
		var v any
		if err := json.Unmarshal(trimmed, &v); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: not an object", ErrNotMessage)
	}
	var w wireMessage
	if err := json.Unmarshal(trimmed, &w); err != nil {
		return nil, err
	}
	m := &Message{}
	if isNull(w.ID) {
		w.ID = nil
	}
	if w.ID != nil && !validID(w.ID) {
		return nil, fmt.Errorf("%w: id must be a number or a string", ErrNotMessage)
	}
	m.ID = w.ID
	if !isNull(json.RawMessage(w.Params)) {
		m.Params = json.RawMessage(w.Params)
	}
	switch {
	case w.Method != nil && w.ID != nil:
		m.Kind, m.Method = KindRequest, *w.Method
	case w.Method != nil:
		m.Kind, m.Method = KindNotification, *w.Method
	case w.ID != nil && w.Error != nil:
		m.Kind, m.Error = KindError, w.Error
	case w.ID != nil && w.Result != nil:
		m.Kind, m.Result = KindResponse, w.Result
	default:
		return nil, fmt.Errorf("%w: no method, result or error", ErrNotMessage)
	}
	return m, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// validID accepts what the reference's RequestId accepts: a string or an integer that fits in i64.
func validID(raw json.RawMessage) bool {
	if raw[0] == '"' {
		return true
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// Marshal encodes v as compact JSON without HTML escaping (serde does not escape <, > and &).
func Marshal(v any) ([]byte, error) {
	b, err := appendMarshal(nil, v)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// responseHead is the start of a response line up to its result: `{"id":<id>,"result":`.
func responseHead(id json.RawMessage) []byte {
	b := make([]byte, 0, len(id)+16)
	b = append(b, `{"id":`...)
	b = append(b, id...)
	return append(b, `,"result":`...)
}

func encodeResponse(id json.RawMessage, result json.RawMessage) []byte {
	b := make([]byte, 0, len(id)+len(result)+20)
	b = append(b, `{"id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	b = append(b, '}')
	return b
}

func encodeError(id json.RawMessage, e *Error) []byte {
	body, err := Marshal(e)
	if err != nil {
		body = []byte(`{"code":-32603,"message":"internal error"}`)
	}
	b := make([]byte, 0, len(id)+len(body)+20)
	b = append(b, `{"error":`...)
	b = append(b, body...)
	b = append(b, `,"id":`...)
	b = append(b, id...)
	b = append(b, '}')
	return b
}

func encodeNotification(method string, params json.RawMessage, emittedAtMs int64) []byte {
	m, _ := Marshal(method)
	b := make([]byte, 0, len(params)+len(m)+48)
	b = append(b, `{"method":`...)
	b = append(b, m...)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	b = append(b, `,"emittedAtMs":`...)
	b = fmt.Appendf(b, "%d", emittedAtMs)
	b = append(b, '}')
	return b
}

func encodeRequest(id int64, method string, params json.RawMessage) []byte {
	m, _ := Marshal(method)
	b := make([]byte, 0, len(params)+len(m)+40)
	b = fmt.Appendf(b, `{"id":%d,"method":`, id)
	b = append(b, m...)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	b = append(b, '}')
	return b
}

// EncodeResult is the line (without its newline) that answers the request with this id with result,
// the same bytes Request.Reply writes.
func EncodeResult(id json.RawMessage, result any) []byte { return encodeReply(id, result, nil) }
