package thread

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

func reloadReadStates(t *testing.T, path string) map[string]protocol.ThreadReadState {
	t.Helper()
	s := &readStateStore{path: path}
	s.loadLocked()
	return s.states
}

func turnUnread(id, rev string) protocol.ThreadReadState {
	return protocol.ThreadReadState{Revision: rev, FirstUnread: &protocol.ThreadUnreadPosition{Value: protocol.ThreadUnreadPositionTurn{TurnID: id}}}
}

// A change appends one log line and leaves the snapshot alone; a fresh store sees every change, deletions
// included.
func TestReadStateChangesAppendToTheLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ReadStateFileName)
	s := &readStateStore{path: path}
	s.loadLocked()
	require.NoError(t, s.putLocked("a", turnUnread("t1", "r1")))
	require.NoError(t, s.putLocked("b", protocol.ThreadReadState{Revision: "r2"}))
	require.NoError(t, s.putLocked("a", turnUnread("t1", "r3")))
	require.NoError(t, s.deleteLocked("b"))
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "a change must not rewrite the snapshot")
	require.Equal(t, map[string]protocol.ThreadReadState{"a": turnUnread("t1", "r3")}, reloadReadStates(t, path))
}

// A torn last line (a crash mid-write) is dropped, and the next change starts on a line of its own.
func TestReadStateTornLogLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ReadStateFileName)
	s := &readStateStore{path: path}
	s.loadLocked()
	require.NoError(t, s.putLocked("a", turnUnread("t1", "r1")))
	f, err := os.OpenFile(filepath.Join(dir, ReadStateLogName), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"id":"a","state":{"revis`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s2 := &readStateStore{path: path}
	s2.loadLocked()
	require.Equal(t, map[string]protocol.ThreadReadState{"a": turnUnread("t1", "r1")}, s2.states)
	require.NoError(t, s2.putLocked("c", protocol.ThreadReadState{Revision: "r9"}))
	require.Equal(t, map[string]protocol.ThreadReadState{"a": turnUnread("t1", "r1"), "c": {Revision: "r9"}}, reloadReadStates(t, path))
}

// Once the log is long, a change rewrites the snapshot and empties the log; a log left over from a crash
// after the snapshot's rename replays to the same states.
func TestReadStateCompaction(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ReadStateFileName)
	s := &readStateStore{path: path}
	s.loadLocked()
	want := map[string]protocol.ThreadReadState{}
	for i := 0; i <= readStateCompactAt; i++ {
		id := "th" + strconv.Itoa(i%10)
		st := turnUnread("t", "r"+strconv.Itoa(i))
		want[id] = st
		require.NoError(t, s.putLocked(id, st))
	}
	info, err := os.Stat(filepath.Join(dir, ReadStateLogName))
	require.NoError(t, err)
	require.Zero(t, info.Size(), "the compaction empties the log")
	require.Equal(t, want, reloadReadStates(t, path))

	// Old log lines replayed over the new snapshot (a crash before the truncation) change nothing that a
	// later line does not set again.
	require.NoError(t, s.putLocked("th1", turnUnread("t", "late")))
	want["th1"] = turnUnread("t", "late")
	require.Equal(t, want, reloadReadStates(t, path))
}

// closeLog gives the descriptor back; the next change opens the log again and is kept.
func TestReadStateCloseLogReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), ReadStateFileName)
	s := &readStateStore{path: path}
	s.loadLocked()
	require.NoError(t, s.putLocked("a", turnUnread("t1", "r1")))
	require.NotNil(t, s.logFile)
	s.closeLog()
	require.Nil(t, s.logFile)
	require.NoError(t, s.putLocked("a", turnUnread("t1", "r2")))
	require.Equal(t, map[string]protocol.ThreadReadState{"a": turnUnread("t1", "r2")}, reloadReadStates(t, path))
}
