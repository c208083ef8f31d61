package thread

import (
	"context"
	"encoding/json"
	"errors"
)

// Subscriber is a client connection that receives a thread's notifications and answers its
// server→client requests (approvals, elicitations).
type Subscriber interface {
	// Notify delivers one notification; it must not block for long (it enqueues).
	Notify(method string, params any)
	// Call sends a server→client request and waits for the answer until ctx ends. onSent is called
	// with the request id once the request is written, before the wait. A Call that fails because the
	// connection ended returns an error wrapping ErrSubscriberGone.
	Call(ctx context.Context, method string, params any, onSent func(requestID any)) (json.RawMessage, error)
}

// ErrSubscriberGone reports that a subscriber's connection ended before it answered a request; the
// thread then asks another subscriber (or waits for one).
var ErrSubscriberGone = errors.New("subscriber connection closed")

// Disconnect removes a connection that ended from every loaded thread it was subscribed to; a thread left
// without subscribers is scheduled for unload as after thread/unsubscribe. A server request waiting on the
// connection moves to another subscriber.
func (m *Manager) Disconnect(s Subscriber) {
	for _, id := range m.Loaded() {
		t, ok := m.Get(id)
		if !ok {
			continue
		}
		if was, remaining := t.Unsubscribe(s); was && remaining == 0 {
			m.scheduleUnload(t, goneSubscriber{})
		}
	}
}

// goneSubscriber stands in for a departed connection as the "last subscriber" told about an unload.
type goneSubscriber struct{}

func (goneSubscriber) Notify(string, any) {}

func (goneSubscriber) Call(context.Context, string, any, func(any)) (json.RawMessage, error) {
	return nil, ErrSubscriberGone
}

// pickSubscriber returns one subscriber to route a server request to (nil when none) and the channel
// closed when the subscriber set next grows.
func (t *Thread) pickSubscriber(skip map[Subscriber]bool) (Subscriber, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for s := range t.subscribers {
		if !skip[s] {
			return s, t.subWait
		}
	}
	return nil, t.subWait
}
