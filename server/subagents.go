package server

import (
	"appserver/subagent"
	"appserver/thread"
)

// multiAgentTools offers a turn the multi_agent_v1 tools that start and drive sub-agent threads (nil when
// the thread's model or configuration does not get them).
func (s *Server) multiAgentTools(t *thread.Thread, st thread.Settings) thread.ToolSet {
	return subagent.Tools(subagent.Options{Manager: s.threads, Clock: s.opts.Clock})(t, st)
}
