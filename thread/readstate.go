package thread

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/google/uuid"

	protocol "appserver/protocol/v2"
)

// ReadStateFileName is the file under CODEX_HOME that keeps every thread's read state (the reference keeps it
// in an SQLite sidecar).
const ReadStateFileName = "appserver_read_states.json"

// ErrReadStateConflict reports a thread/readState/update whose expectedRevision is not the current one.
var ErrReadStateConflict = errors.New("read state changed")

// readStateStore holds the read states of one CODEX_HOME, persisted to ReadStateFileName.
type readStateStore struct {
	mu     sync.Mutex
	path   string
	loaded bool
	states map[string]protocol.ThreadReadState
}

// readStores maps a CODEX_HOME to its store, shared by every Manager on that home.
var readStores sync.Map

func (m *Manager) readStates() *readStateStore {
	home := ""
	if m.Config() != nil {
		home = m.Config().CodexHome
	}
	v, _ := readStores.LoadOrStore(home, &readStateStore{path: filepath.Join(home, ReadStateFileName)})
	return v.(*readStateStore)
}

// loadLocked reads the file once (s.mu held); a missing or unreadable file starts empty.
func (s *readStateStore) loadLocked() {
	if s.loaded {
		return
	}
	s.loaded = true
	s.states = map[string]protocol.ThreadReadState{}
	b, err := os.ReadFile(s.path)
	if err != nil {
		return
	}
	if err := json.Unmarshal(b, &s.states); err != nil {
		slog.Warn("read states unreadable; starting over", "path", s.path, "error", err)
		s.states = map[string]protocol.ThreadReadState{}
	}
}

// saveLocked writes the file atomically (s.mu held).
func (s *readStateStore) saveLocked() error {
	b, err := json.Marshal(s.states)
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

func initialReadState(id string) protocol.ThreadReadState {
	return protocol.ThreadReadState{Revision: "initial:" + id}
}

// ReadState returns a thread's read state for thread/read and thread/list: the recorded one, else the initial
// state (nothing unread) when the thread has history of its own or is a fork, else nil (a thread that has
// never run a turn has no read state yet).
func (m *Manager) ReadState(id string, hasHistory bool) *protocol.ThreadReadState {
	s := m.readStates()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loadLocked()
	if st, ok := s.states[id]; ok {
		return &st
	}
	if !hasHistory {
		return nil
	}
	st := initialReadState(id)
	return &st
}

// UpdateReadState marks a thread read (firstUnread null) or unread from its start, provided expectedRevision
// is the current revision; the new state is announced to the experimental subscribers of a loaded thread. On a conflict
// it returns the current state with ErrReadStateConflict.
func (m *Manager) UpdateReadState(id, expectedRevision string, read bool) (protocol.ThreadReadState, error) {
	s := m.readStates()
	s.mu.Lock()
	s.loadLocked()
	cur, ok := s.states[id]
	if !ok {
		cur = initialReadState(id)
	}
	if cur.Revision != expectedRevision {
		s.mu.Unlock()
		return cur, ErrReadStateConflict
	}
	next := protocol.ThreadReadState{Revision: uuid.NewString()}
	if !read {
		next.FirstUnread = &protocol.ThreadUnreadPosition{Value: protocol.ThreadUnreadPositionThreadStart{}}
	}
	s.states[id] = next
	err := s.saveLocked()
	s.mu.Unlock()
	if err != nil {
		return protocol.ThreadReadState{}, fmt.Errorf("save read state: %w", err)
	}
	if t, ok := m.Get(id); ok {
		t.emitReadState(next)
	}
	return next, nil
}

// ExperimentalSubscriber is implemented by subscribers that opted into the experimental API; only they are
// told thread/readState/changed, as in the reference.
type ExperimentalSubscriber interface {
	Subscriber
	ExperimentalAPI() bool
}

// emitReadState sends thread/readState/changed to the thread's experimental subscribers, in the thread's order.
func (t *Thread) emitReadState(st protocol.ThreadReadState) {
	t.emitMu.Lock()
	defer t.emitMu.Unlock()
	t.mu.Lock()
	subs := t.subscribersLocked()
	t.mu.Unlock()
	n := protocol.ThreadReadStateChangedNotification{ThreadID: t.ID, ReadState: st}
	for _, s := range subs {
		if es, ok := s.(ExperimentalSubscriber); ok && es.ExperimentalAPI() {
			s.Notify(protocol.NotifyThreadReadStateChanged, n)
		}
	}
}

// noteTurnEnd updates the read state when a turn of a persisted thread completes: the first unread position
// stays (or becomes this turn) and the revision changes; experimental subscribers are told
// thread/readState/changed.
// Interrupted and failed turns change nothing.
func (t *Thread) noteTurnEnd(turnID string, status protocol.TurnStatus) {
	t.mu.Lock()
	persisted := t.recorder != nil
	t.mu.Unlock()
	if status != protocol.TurnStatusCompleted || !persisted {
		return
	}
	s := t.mgr.readStates()
	s.mu.Lock()
	s.loadLocked()
	st, ok := s.states[t.ID]
	if !ok {
		st = initialReadState(t.ID)
	}
	if st.FirstUnread == nil {
		st.FirstUnread = &protocol.ThreadUnreadPosition{Value: protocol.ThreadUnreadPositionTurn{TurnID: turnID}}
	}
	st.Revision = uuid.NewString()
	s.states[t.ID] = st
	if err := s.saveLocked(); err != nil {
		t.mgr.log.Warn("save read state", "thread", t.ID, "error", err)
	}
	s.mu.Unlock()
	t.emitReadState(st)
}

// forgetReadState drops a deleted thread's read state.
func (m *Manager) forgetReadState(id string) {
	s := m.readStates()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loadLocked()
	if _, ok := s.states[id]; !ok {
		return
	}
	delete(s.states, id)
	if err := s.saveLocked(); err != nil {
		m.log.Warn("save read state", "thread", id, "error", err)
	}
}
