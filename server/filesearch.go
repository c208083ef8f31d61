package server

import (
	"context"
	"sync"

	"appserver/filesearch"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// fileSearchState holds the server's in-flight one-shot searches (by cancellation token) and each
// connection's search sessions.
type fileSearchState struct {
	mu       sync.Mutex
	tokens   map[string]context.CancelFunc
	sessions map[*connection]map[string]*filesearch.Session
}

func (s *Server) addFileSearchRoutes(r map[string]route) {
	s.search = &fileSearchState{tokens: map[string]context.CancelFunc{}, sessions: map[*connection]map[string]*filesearch.Session{}}
	r[protocol.MethodFuzzyFileSearch] = handle(s.fuzzyFileSearch)
	r[protocol.MethodFuzzyFileSearchSessionStart] = handle(s.fuzzyFileSearchSessionStart)
	r[protocol.MethodFuzzyFileSearchSessionUpdate] = handle(s.fuzzyFileSearchSessionUpdate)
	r[protocol.MethodFuzzyFileSearchSessionStop] = handle(s.fuzzyFileSearchSessionStop)
}

func searchResults(roots []string, ms []filesearch.Match) []protocol.FuzzyFileSearchResult {
	out := make([]protocol.FuzzyFileSearchResult, 0, len(ms))
	for _, m := range ms {
		t := protocol.FuzzyFileSearchMatchTypeFile
		if m.IsDir {
			t = protocol.FuzzyFileSearchMatchTypeDirectory
		}
		idx := m.Indices
		if idx == nil {
			idx = []uint32{}
		}
		out = append(out, protocol.FuzzyFileSearchResult{Root: roots[m.Root], Path: m.Path, FileName: m.FileName,
			MatchType: t, Score: m.Score, Indices: idx})
	}
	return out
}

// fuzzyFileSearch runs one search off the dispatch path; a later search with the same cancellation
// token cancels this one, which then answers with no files.
func (s *Server) fuzzyFileSearch(_ context.Context, c *connection, req *jsonrpc.Request, p *protocol.FuzzyFileSearchParams) (any, error) {
	ctx, cancel := context.WithCancel(c.rpc.Context())
	st := s.search
	token := ""
	if p.CancellationToken != nil {
		token = *p.CancellationToken
		st.mu.Lock()
		if prev := st.tokens[token]; prev != nil {
			prev()
		}
		st.tokens[token] = cancel
		st.mu.Unlock()
	}
	roots, query := append([]string(nil), p.Roots...), p.Query
	req.Go(func() (any, error) {
		defer cancel()
		ms, err := filesearch.Search(ctx, roots, query, filesearch.DefaultLimit)
		if token != "" {
			st.mu.Lock()
			// only drop our own registration: a newer search may have taken the token
			if ctx.Err() == nil {
				delete(st.tokens, token)
			}
			st.mu.Unlock()
		}
		if err != nil {
			ms = nil
		}
		return protocol.FuzzyFileSearchResponse{Files: searchResults(roots, ms)}, nil
	})
	return nil, nil
}

func (s *Server) fuzzyFileSearchSessionStart(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.FuzzyFileSearchSessionStartParams) (any, error) {
	if len(p.Roots) == 0 {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to start fuzzy file search session: at least one search directory is required")
	}
	st := s.search
	id, roots := p.SessionID, append([]string(nil), p.Roots...)
	sess := filesearch.StartSession(c.rpc.Context(), roots, filesearch.DefaultLimit, func(u filesearch.Update) {
		if u.Complete {
			c.notify(protocol.NotifyFuzzyFileSearchSessionCompleted, protocol.FuzzyFileSearchSessionCompletedNotification{SessionID: id})
			return
		}
		c.notify(protocol.NotifyFuzzyFileSearchSessionUpdated, protocol.FuzzyFileSearchSessionUpdatedNotification{
			SessionID: id, Query: u.Query, Files: searchResults(roots, u.Matches)})
	})
	st.mu.Lock()
	conn := st.sessions[c]
	if conn == nil {
		conn = map[string]*filesearch.Session{}
		st.sessions[c] = conn
		c.onClose(func() { s.closeSearchSessions(c) })
	}
	prev := conn[id]
	conn[id] = sess
	st.mu.Unlock()
	if prev != nil {
		prev.Close()
	}
	return protocol.FuzzyFileSearchSessionStartResponse{}, nil
}

func (s *Server) fuzzyFileSearchSessionUpdate(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.FuzzyFileSearchSessionUpdateParams) (any, error) {
	st := s.search
	st.mu.Lock()
	sess := st.sessions[c][p.SessionID]
	st.mu.Unlock()
	if sess == nil {
		return nil, jsonrpc.InvalidRequest("fuzzy file search session not found: " + p.SessionID)
	}
	sess.SetQuery(p.Query)
	return protocol.FuzzyFileSearchSessionUpdateResponse{}, nil
}

func (s *Server) fuzzyFileSearchSessionStop(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.FuzzyFileSearchSessionStopParams) (any, error) {
	st := s.search
	st.mu.Lock()
	sess := st.sessions[c][p.SessionID]
	delete(st.sessions[c], p.SessionID)
	st.mu.Unlock()
	if sess != nil {
		sess.Close()
	}
	return protocol.FuzzyFileSearchSessionStopResponse{}, nil
}

// closeSearchSessions ends a closed connection's sessions.
func (s *Server) closeSearchSessions(c *connection) {
	st := s.search
	st.mu.Lock()
	sessions := st.sessions[c]
	delete(st.sessions, c)
	st.mu.Unlock()
	for _, sess := range sessions {
		sess.Close()
	}
}
