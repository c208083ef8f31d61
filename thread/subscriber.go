package thread

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	protocol "appserver/protocol/v2"
)

// Subscriber is a client connection that receives a thread's notifications and answers its
// server→client requests (approvals, elicitations).
type Subscriber interface {
	// Notify delivers one notification; it must not block for long (it enqueues).
	Notify(method string, params any)
	// Call sends a server→client request and waits for the answer until ctx ends. onSent is called
	// with the request id before the request is written (so the id is known before any answer). A Call that fails because the
	// connection ended returns an error wrapping ErrSubscriberGone.
	Call(ctx context.Context, method string, params any, onSent func(requestID any)) (json.RawMessage, error)
}

// Holder is implemented by subscribers that can keep a burst of notifications back and deliver it in one
// write (jsonrpc.Conn.Hold): Hold starts holding, release (called once) ends it.
type Holder interface {
	Hold() (release func())
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

// subscriberSnapshot returns the current subscribers and the channel closed when the set next grows.
func (t *Thread) subscriberSnapshot() ([]Subscriber, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.subscribersLocked(), t.subWait
}

// errAnswered ends the waits of the other subscribers once one answered.
var errAnswered = errors.New("server request answered by another connection")

// askSubscribers sends a server→client request to every subscriber of the thread, as the reference does,
// and to each connection that subscribes while it is pending; the first answer wins and the other
// connections' requests are withdrawn. A connection that ends before answering is simply dropped from the
// audience; with nobody left the request waits for a subscriber, bounded by ctx. Each asked connection
// then receives serverRequest/resolved with the id it saw.
func (t *Thread) askSubscribers(ctx context.Context, method string, params any, announce bool, beforeResolved func(err error)) (json.RawMessage, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(errAnswered)
	type answer struct {
		res json.RawMessage
		err error
	}
	answers := make(chan answer)
	var mu sync.Mutex
	ids := map[Subscriber]any{} // asked subscribers → the request id they were sent (nil until sent)
	inflight := 0
	ask := func(s Subscriber) {
		mu.Lock()
		ids[s] = nil
		mu.Unlock()
		inflight++
		go func() {
			res, err := s.Call(ctx, method, params, func(id any) {
				mu.Lock()
				ids[s] = id
				mu.Unlock()
			})
			answers <- answer{res, err}
		}()
	}
	finish := func(a answer) (json.RawMessage, error) {
		cancel(errAnswered)
		go func(n int) { // collect the withdrawn requests' results
			for range n {
				<-answers
			}
		}(inflight)
		if beforeResolved != nil {
			beforeResolved(a.err)
		}
		mu.Lock()
		sent := make(map[Subscriber]any, len(ids))
		for s, id := range ids {
			if id != nil {
				sent[s] = id
			}
		}
		mu.Unlock()
		for s, id := range sent {
			if !announce {
				break
			}
			t.EmitTo(s, protocol.NotifyServerRequestResolved, protocol.ServerRequestResolvedNotification{ThreadID: t.ID, RequestID: requestID(id)})
		}
		return a.res, a.err
	}
	for {
		subs, grew := t.subscriberSnapshot()
		for _, s := range subs {
			mu.Lock()
			_, done := ids[s]
			mu.Unlock()
			if !done {
				ask(s)
			}
		}
		select {
		case a := <-answers:
			inflight--
			if errors.Is(a.err, ErrSubscriberGone) && ctx.Err() == nil {
				continue // that connection left: the others (or a later subscriber) answer
			}
			return finish(a)
		case <-grew:
		case <-ctx.Done():
			err := context.Cause(ctx)
			mu.Lock()
			anySent := false
			for _, id := range ids {
				anySent = anySent || id != nil
			}
			mu.Unlock()
			if !anySent {
				go func(n int) {
					for range n {
						<-answers
					}
				}(inflight)
				return nil, err
			}
			return finish(answer{err: err})
		}
	}
}
