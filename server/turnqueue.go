package server

import (
	"context"
	"errors"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/turnqueue"
)

// addQueueRoutes routes thread/queue/*: each thread's queue of pending user messages lives in the turnqueue
// store; a loaded idle thread starts a turn from its queue's head when something is queued, and after every
// turn that completes (not one interrupted or failed) until the queue is empty.
func (s *Server) addQueueRoutes(r map[string]route) {
	r[protocol.MethodThreadQueueAdd] = handle(s.threadQueueAdd)
	r[protocol.MethodThreadQueueList] = handle(s.threadQueueList)
	r[protocol.MethodThreadQueueUpdate] = handle(s.threadQueueUpdate)
	r[protocol.MethodThreadQueueDelete] = handle(s.threadQueueDelete)
	r[protocol.MethodThreadQueueReorder] = handle(s.threadQueueReorder)
	r[protocol.MethodThreadQueueStart] = handle(s.threadQueueStart)
}

// defaultQueueLimit is the page size of thread/queue/list without a limit.
const defaultQueueLimit = 100

func queueError(err error) error {
	if errors.Is(err, turnqueue.ErrInvalid) {
		return jsonrpc.InvalidRequest(err.Error())
	}
	return internal(err)
}

// queueThread checks the thread and opens the store; t is nil when the thread is stored but not loaded.
func (s *Server) queueThread(ctx context.Context, id string) (*thread.Thread, *turnqueue.Store, error) {
	t, err := s.loadedOrStored(id)
	if err != nil {
		return nil, nil, err
	}
	q, err := s.queueStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	return t, q, nil
}

func (s *Server) queueChanged(threadID string) {
	s.emitIfLoaded(threadID, protocol.NotifyThreadQueueChanged, protocol.ThreadQueueChangedNotification{ThreadID: threadID})
}

// startQueued begins a turn from a queued item on an idle thread; nil when a turn is running.
func startQueued(t *thread.Thread, it turnqueue.Item) *thread.Turn {
	id := it.ClientID
	return t.BeginIdleTurn(it.Input, thread.TurnOptions{ClientUserMessageID: &id})
}

func (s *Server) threadQueueAdd(ctx context.Context, _ *connection, req *jsonrpc.Request, p *protocol.ThreadQueueAddParams) (any, error) {
	t, q, err := s.queueThread(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	s.org.drainMu.Lock()
	defer s.org.drainMu.Unlock()
	it, err := q.Add(ctx, p.ThreadID, p.Input, p.ClientUserMessageID, p.ResponsesapiClientMetadata)
	if err != nil {
		return nil, queueError(err)
	}
	resp := protocol.ThreadQueueAddResponse{QueuedSubmission: it.Submission()}
	if t == nil || t.ActiveTurn() != nil {
		req.Reply(resp, nil)
		s.queueChanged(p.ThreadID)
		return nil, nil
	}
	// An idle loaded thread starts on its queue at once: announced (added, then taken) before the answer.
	s.queueChanged(p.ThreadID)
	tn := s.takeAndBegin(ctx, t, q, "")
	req.Reply(resp, nil)
	if tn != nil {
		tn.Run()
	}
	return nil, nil
}

// takeAndBegin takes a queued item (the head when id is "") and begins its turn, announcing the change; the
// caller holds drainMu and runs the turn. Nothing is taken when the thread is busy or the queue empty.
func (s *Server) takeAndBegin(ctx context.Context, t *thread.Thread, q *turnqueue.Store, id string) *thread.Turn {
	if t.ActiveTurn() != nil {
		return nil
	}
	it, err := q.Take(ctx, t.ID, id)
	if err != nil {
		if !errors.Is(err, turnqueue.ErrInvalid) {
			s.log.Warn("taking from a thread's queue", "thread", t.ID, "error", err)
		}
		return nil
	}
	s.queueChanged(t.ID)
	tn := startQueued(t, it)
	if tn == nil {
		// A turn started meanwhile: the item goes back (at the end of the queue).
		if _, err := q.Add(ctx, t.ID, it.Input, it.ClientID, it.Metadata); err != nil {
			s.log.Warn("requeueing a queued message", "thread", t.ID, "error", err)
		}
	}
	return tn
}

// drainAfterTurn starts the next queued message after a turn that completed (thread.TurnEndListener).
func (s *Server) drainAfterTurn(t *thread.Thread, status protocol.TurnStatus) {
	if status != protocol.TurnStatusCompleted || !s.stateExists() {
		return
	}
	if _, loaded := s.threads.Get(t.ID); !loaded {
		return
	}
	q, err := s.queueStore(s.ctx)
	if err != nil {
		return
	}
	s.org.drainMu.Lock()
	tn := s.takeAndBegin(s.ctx, t, q, "")
	s.org.drainMu.Unlock()
	if tn != nil {
		tn.Run()
	}
}

func (s *Server) threadQueueList(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadQueueListParams) (any, error) {
	_, q, err := s.queueThread(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	items, next, err := q.List(ctx, p.ThreadID, deref(p.Cursor), pageLimit(p.Limit, defaultQueueLimit))
	if err != nil {
		return nil, queueError(err)
	}
	resp := protocol.ThreadQueueListResponse{Data: make([]protocol.QueuedSubmission, 0, len(items))}
	for _, it := range items {
		resp.Data = append(resp.Data, it.Submission())
	}
	if next != "" {
		resp.NextCursor = &next
	}
	return resp, nil
}

func (s *Server) threadQueueUpdate(ctx context.Context, _ *connection, req *jsonrpc.Request, p *protocol.ThreadQueueUpdateParams) (any, error) {
	_, q, err := s.queueThread(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	it, err := q.Update(ctx, p.ThreadID, p.QueuedSubmissionID, p.Input, p.ResponsesapiClientMetadata)
	if err != nil {
		return nil, queueError(err)
	}
	req.Reply(protocol.ThreadQueueUpdateResponse{QueuedSubmission: it.Submission()}, nil)
	s.queueChanged(p.ThreadID)
	return nil, nil
}

func (s *Server) threadQueueDelete(ctx context.Context, _ *connection, req *jsonrpc.Request, p *protocol.ThreadQueueDeleteParams) (any, error) {
	_, q, err := s.queueThread(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	deleted, err := q.Delete(ctx, p.ThreadID, p.QueuedSubmissionID)
	if err != nil {
		return nil, queueError(err)
	}
	req.Reply(protocol.ThreadQueueDeleteResponse{Deleted: deleted}, nil)
	if deleted {
		s.queueChanged(p.ThreadID)
	}
	return nil, nil
}

func (s *Server) threadQueueReorder(ctx context.Context, _ *connection, req *jsonrpc.Request, p *protocol.ThreadQueueReorderParams) (any, error) {
	_, q, err := s.queueThread(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	if err := q.Reorder(ctx, p.ThreadID, p.QueuedSubmissionIds); err != nil {
		return nil, queueError(err)
	}
	req.Reply(protocol.ThreadQueueReorderResponse{}, nil)
	s.queueChanged(p.ThreadID)
	return nil, nil
}

func (s *Server) threadQueueStart(ctx context.Context, _ *connection, req *jsonrpc.Request, p *protocol.ThreadQueueStartParams) (any, error) {
	t, q, err := s.queueThread(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, jsonrpc.InvalidRequest("resume the thread before starting a queued message")
	}
	s.org.drainMu.Lock()
	defer s.org.drainMu.Unlock()
	if t.ActiveTurn() != nil {
		return nil, jsonrpc.InvalidRequest("thread already has an active or pending turn")
	}
	it, err := q.Take(ctx, p.ThreadID, deref(p.QueuedSubmissionID))
	if err != nil {
		return nil, queueError(err)
	}
	tn := startQueued(t, it)
	if tn == nil {
		if _, err := q.Add(ctx, t.ID, it.Input, it.ClientID, it.Metadata); err != nil {
			s.log.Warn("requeueing a queued message", "thread", t.ID, "error", err)
		}
		return nil, jsonrpc.InvalidRequest("thread already has an active or pending turn")
	}
	// The reference answers first, then announces the taken item, then the turn starts.
	req.Reply(protocol.ThreadQueueStartResponse{Turn: tn.PendingTurn()}, nil)
	s.queueChanged(p.ThreadID)
	tn.Run()
	return nil, nil
}
