package server

import (
	"appserver/shellsnapshot"
	"appserver/tools"
)

// InFlightForTest returns how many requests the server's connections have read and not yet
// answered (a reply counts as answered once it is queued for writing).
func (s *Server) InFlightForTest() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		n += c.rpc.InFlight()
	}
	return n
}

// ShellSnapshotForTest returns the shell snapshot of loaded thread id (nil when it has none).
func (s *Server) ShellSnapshotForTest(id string) *shellsnapshot.Snapshot {
	t, ok := s.threads.Get(id)
	if !ok {
		return nil
	}
	return tools.ShellSnapshot(t)
}
