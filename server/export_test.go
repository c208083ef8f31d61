package server

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
