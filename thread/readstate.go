package thread

import (
	"bytes"
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

// ReadStateFileName is the file under CODEX_HOME that keeps a snapshot of every thread's read state (the
// reference keeps them in an SQLite sidecar); ReadStateLogName holds the changes made since the snapshot.
const (
	ReadStateFileName = "appserver_read_states.json"
	ReadStateLogName  = "appserver_read_states.log"
)

// ErrReadStateConflict reports a thread/readState/update whose expectedRevision is not the current one.
var ErrReadStateConflict = errors.New("read state changed")

// readStateCompactAt is how many log lines make the next change rewrite the snapshot (and empty the log),
// at least; a log also compacts once it holds four lines per thread.
const readStateCompactAt = 256

// readStateStore holds the read states of one CODEX_HOME. Every change is one appended line of the log
// (one write(2), so a crash leaves every completed line readable and a torn last line is dropped), which
// is what every turn's end pays; replacing the snapshot (a write and a rename, which ext4 follows with a
// data flush) happens once per readStateCompactAt changes. Replaying the log over the snapshot is
// idempotent, so a crash between the snapshot's rename and the log's truncation loses nothing.
type readStateStore struct {
	mu      sync.Mutex
	path    string // the snapshot; the log is beside it
	loaded  bool
	states  map[string]protocol.ThreadReadState
	logged  int  // lines in the log
	torn    bool // the log ends inside a line: the next append starts a new one
	logFile *os.File
}

// readStateLine is one line of the log: a thread's new state, or its removal.
type readStateLine struct {
	ID      string                    `json:"id"`
	State   *protocol.ThreadReadState `json:"state,omitempty"`
	Deleted bool                      `json:"deleted,omitempty"`
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

func (s *readStateStore) logPath() string {
	return filepath.Join(filepath.Dir(s.path), ReadStateLogName)
}

// loadLocked reads the snapshot and replays the log once (s.mu held); a missing or unreadable snapshot
// starts empty, undecodable log lines are skipped.
func (s *readStateStore) loadLocked() {
	if s.loaded {
		return
	}
	s.loaded = true
	s.states = map[string]protocol.ThreadReadState{}
	if b, err := os.ReadFile(s.path); err == nil {
		if err := json.Unmarshal(b, &s.states); err != nil {
			slog.Warn("read states unreadable; starting over", "path", s.path, "error", err)
			s.states = map[string]protocol.ThreadReadState{}
		}
	}
	b, err := os.ReadFile(s.logPath())
	if err != nil || len(b) == 0 {
		return
	}
	s.torn = b[len(b)-1] != '\n'
	for len(b) > 0 {
		ln, rest, _ := bytes.Cut(b, []byte{'\n'})
		b = rest
		var l readStateLine
		if len(bytes.TrimSpace(ln)) == 0 || json.Unmarshal(ln, &l) != nil || l.ID == "" {
			continue
		}
		s.logged++
		switch {
		case l.Deleted:
			delete(s.states, l.ID)
		case l.State != nil:
			s.states[l.ID] = *l.State
		}
	}
}

// putLocked records a thread's new state (s.mu held).
func (s *readStateStore) putLocked(id string, st protocol.ThreadReadState) error {
	s.states[id] = st
	return s.appendLocked(readStateLine{ID: id, State: &st})
}

// deleteLocked removes a thread's state (s.mu held).
func (s *readStateStore) deleteLocked(id string) error {
	delete(s.states, id)
	return s.appendLocked(readStateLine{ID: id, Deleted: true})
}

// appendLocked writes one log line, or the whole snapshot when the log has grown long enough.
func (s *readStateStore) appendLocked(l readStateLine) error {
	if s.logged >= max(readStateCompactAt, 4*len(s.states)) {
		return s.compactLocked()
	}
	line, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if s.torn {
		line = append([]byte{'\n'}, line...)
	}
	line = append(line, '\n')
	if s.logFile == nil {
		f, err := os.OpenFile(s.logPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		s.logFile = f
	}
	if _, err := s.logFile.Write(line); err != nil {
		// A short write may have torn the line; the next append starts afresh on a reopened file.
		_ = s.logFile.Close()
		s.logFile, s.torn = nil, true
		return err
	}
	s.torn = false
	s.logged++
	return nil
}

// closeLog closes the log's file; the next append opens it again. A Manager closing calls it, so a
// home's store holds no descriptor while no server uses it.
func (s *readStateStore) closeLog() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logFile != nil {
		_ = s.logFile.Close()
		s.logFile = nil
	}
}

// compactLocked replaces the snapshot atomically with every state, then empties the log (s.mu held).
func (s *readStateStore) compactLocked() error {
	b, err := json.Marshal(s.states)
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return err
	}
	if s.logFile != nil {
		_ = s.logFile.Close()
		s.logFile = nil
	}
	if err := os.Truncate(s.logPath(), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err // the snapshot holds everything: replaying the old log over it changes nothing
	}
	s.logged, s.torn = 0, false
	return nil
}

// ReadStateTracked reports whether a thread has a read state: as in the reference, only threads without a
// threadSource or with threadSource "user" do, and no sub-agent session (source subAgent) does; for the
// others thread/read shows none, turns change nothing and thread/readState/update is refused.
func ReadStateTracked(th *protocol.Thread) bool {
	if th.Source.SubAgent != nil {
		return false
	}
	return th.ThreadSource == nil || *th.ThreadSource == "user"
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
	err := s.putLocked(id, next)
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

// noteTurnEnd updates the read state when a turn of a persisted, tracked thread completes: the first unread position
// stays (or becomes this turn) and the revision changes; experimental subscribers are told
// thread/readState/changed.
// Interrupted and failed turns change nothing.
func (t *Thread) noteTurnEnd(turnID string, status protocol.TurnStatus) {
	t.mu.Lock()
	persisted := t.recorder != nil
	tracked := ReadStateTracked(&t.meta)
	t.mu.Unlock()
	if status != protocol.TurnStatusCompleted || !persisted || !tracked {
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
	if err := s.putLocked(t.ID, st); err != nil {
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
	if err := s.deleteLocked(id); err != nil {
		m.log.Warn("save read state", "thread", id, "error", err)
	}
}
