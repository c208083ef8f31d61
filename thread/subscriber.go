package thread

import (
	"context"
	"encoding/json"
)

// Subscriber is a client connection that receives a thread's notifications and answers its
// server→client requests (approvals, elicitations).
type Subscriber interface {
	// Notify delivers one notification; it must not block for long (it enqueues).
	Notify(method string, params any)
	// Call sends a server→client request and waits for the answer until ctx ends. onSent is called
	// with the request id once the request is written, before the wait.
	Call(ctx context.Context, method string, params any, onSent func(requestID any)) (json.RawMessage, error)
}
