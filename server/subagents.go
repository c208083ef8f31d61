package server

import (
	"appserver/subagent"
	"appserver/thread"
)

// multiAgentTools offers a turn the multi_agent_v1 tools that start and drive sub-agent threads (nil when
// the thread's model or configuration does not get them);
// features.multi_agent_v2 offers the collaboration namespace in their place.
func (s *Server) multiAgentTools(t *thread.Thread, st thread.Settings) thread.ToolSet {
	o := subagent.Options{Manager: s.threads, Clock: s.opts.Clock}
	if c := subagent.CollabTools(o, false)(t, st); c != nil {
		return c
	}
	return subagent.Tools(o)(t, st)
}

// collaborationTools offers a code-mode turn of a multi-agent v2 model the `collaboration` namespace.
func (s *Server) collaborationTools(t *thread.Thread, st thread.Settings) thread.ToolSet {
	return subagent.CollabTools(subagent.Options{Manager: s.threads, Clock: s.opts.Clock}, true)(t, st)
}
