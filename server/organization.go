package server

import (
	"context"
	"errors"
	"sync"

	"os"
	"path/filepath"

	"appserver/attachments"
	"appserver/jsonrpc"
	"appserver/projects"
	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/threadindex"
	"appserver/turnqueue"
)

// orgStores are the stores behind project/*, thread/attachment/* and thread/queue/*: tables of the state
// database ($CODEX_HOME/appserver_state.sqlite), opened together on first use.
type orgStores struct {
	once     sync.Once
	projects *projects.Store
	attach   *attachments.Store
	queue    *turnqueue.Store
	err      error
	// drainMu serialises taking from a queue and starting the turn, so two drains never race.
	drainMu sync.Mutex
}

// addOrganizationRoutes routes projects, thread attachments and thread queues, and lets finished turns drain
// their thread's queue (and arm the idle memory release).
func (s *Server) addOrganizationRoutes(r map[string]route) {
	s.addProjectRoutes(r)
	s.addAttachmentRoutes(r)
	s.addQueueRoutes(r)
	s.threads.SetTurnEndListener(func(t *thread.Thread, status protocol.TurnStatus) {
		s.idle.Touch()
		s.drainAfterTurn(t, status)
	})
}

func (s *Server) openOrg(ctx context.Context) error {
	s.org.once.Do(func() {
		st, err := s.stateStore()
		if err != nil {
			s.org.err = err
			return
		}
		if s.org.projects, err = projects.Open(ctx, st, s.threadRecency); err != nil {
			s.org.err = err
			return
		}
		if s.org.attach, err = attachments.Open(ctx, st); err != nil {
			s.org.err = err
			return
		}
		s.org.queue, s.org.err = turnqueue.Open(ctx, st)
	})
	if s.org.err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(s.org.err, &rpcErr) {
			return rpcErr
		}
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to open thread state: %v", s.org.err)
	}
	return nil
}

func (s *Server) projectStore(ctx context.Context) (*projects.Store, error) {
	if err := s.openOrg(ctx); err != nil {
		return nil, err
	}
	return s.org.projects, nil
}

func (s *Server) attachmentStore(ctx context.Context) (*attachments.Store, error) {
	if err := s.openOrg(ctx); err != nil {
		return nil, err
	}
	return s.org.attach, nil
}

func (s *Server) queueStore(ctx context.Context) (*turnqueue.Store, error) {
	if err := s.openOrg(ctx); err != nil {
		return nil, err
	}
	return s.org.queue, nil
}

// threadRecency is the recency of stored, unarchived threads: their updated time in the thread index.
func (s *Server) threadRecency(ctx context.Context, ids []string) (map[string]int64, error) {
	st, err := s.threads.Store()
	if err != nil {
		return nil, err
	}
	return st.Index().Recency(ctx, ids)
}

// storedThreadExists reports whether a thread has a rollout.
func (s *Server) storedThreadExists(id string) bool {
	_, err := s.threads.ReadStored(id, false)
	return err == nil
}

// forgetThreadOrg drops a deleted thread's project membership, attachments and queue.
func (s *Server) forgetThreadOrg(ctx context.Context, id string) {
	if !s.stateExists() {
		return
	}
	if err := s.openOrg(ctx); err != nil {
		return
	}
	for _, err := range []error{s.org.projects.ForgetThread(ctx, id), s.org.attach.ForgetThread(ctx, id), s.org.queue.ForgetThread(ctx, id)} {
		if err != nil {
			s.log.Warn("forgetting a deleted thread's state", "thread", id, "error", err)
		}
	}
}

// internal wraps a store failure that no client caused.
func internal(err error) error { return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err) }

// loadedOrStored checks that a thread is loaded or has a rollout, with the reference's error otherwise.
func (s *Server) loadedOrStored(id string) (*thread.Thread, error) {
	if err := validateThreadID(id); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if t, ok := s.threads.Get(id); ok {
		return t, nil
	}
	if !s.storedThreadExists(id) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to read thread: invalid thread-store request: no rollout found for thread id %s", id)
	}
	return nil, nil
}

// emitIfLoaded sends a thread notification to the thread's subscribers when it is loaded.
func (s *Server) emitIfLoaded(threadID, method string, params any) {
	if t, ok := s.threads.Get(threadID); ok {
		t.Emit(method, params)
	}
}

// stateExists reports whether the state database exists (reads never create it).
func (s *Server) stateExists() bool {
	_, err := os.Stat(filepath.Join(s.cfg.CodexHome, threadindex.StateFile))
	return err == nil
}
