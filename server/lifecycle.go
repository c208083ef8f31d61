package server

// addLifecycleRoutes routes the persistence and lifecycle methods (thread/list, resume, fork, archive…).
func (s *Server) addLifecycleRoutes(_ map[string]route) {}
