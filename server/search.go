package server

import (
	"context"
	"errors"
	"fmt"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

// addSearchRoutes routes thread/search (the thread index's messages) and thread/searchOccurrences.
func (s *Server) addSearchRoutes(r map[string]route) {
	r[protocol.MethodThreadSearch] = handle(s.threadSearch)
	r[protocol.MethodThreadSearchOccurrences] = handle(s.threadSearchOccurrences)
}

func (s *Server) threadSearch(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadSearchParams) (any, error) {
	if p.SearchTerm == "" {
		return nil, jsonrpc.InvalidRequest("thread/search requires a non-empty searchTerm")
	}
	// currentAccountOnly and includeAttachedThreads change nothing locally: no thread belongs to a ChatGPT
	// account or is attached to another here.
	q := rollout.ListQuery{Cursor: deref(p.Cursor), SearchTerm: p.SearchTerm, InContent: true, ModelProviders: nil}
	if p.Limit != nil {
		q.Limit = int(*p.Limit)
	}
	if p.SortKey != nil {
		switch *p.SortKey {
		case protocol.ThreadSearchSortKeyCreatedAt:
			q.SortKey = rollout.SortCreatedAt
		case protocol.ThreadSearchSortKeyUpdatedAt, protocol.ThreadSearchSortKeyRecencyAt:
			q.SortKey = rollout.SortUpdatedAt
		default:
			return nil, jsonrpc.InvalidRequest(fmt.Sprintf("unsupported sortKey: %s", *p.SortKey))
		}
	}
	if p.SortDirection != nil {
		q.SortDirection = string(*p.SortDirection)
	}
	if p.Archived != nil {
		q.Archived = *p.Archived
	}
	for _, k := range p.SourceKinds {
		q.SourceKinds = append(q.SourceKinds, string(k))
	}
	data, pg, err := s.threads.ListPage(q)
	if errors.Is(err, rollout.ErrBadCursor) {
		return nil, jsonrpc.InvalidRequest(fmt.Sprintf("invalid cursor: %s", q.Cursor))
	}
	if err != nil {
		return nil, storeError(err)
	}
	resp := protocol.ThreadSearchResponse{Data: make([]protocol.ThreadSearchResult, 0, len(data))}
	for i, th := range data {
		resp.Data = append(resp.Data, protocol.ThreadSearchResult{Thread: th, Snippet: pg.Threads[i].Snippet})
	}
	if pg.Next != "" {
		resp.NextCursor = &pg.Next
	}
	if pg.Backwards != "" {
		resp.BackwardsCursor = &pg.Backwards
	}
	return resp, nil
}

func (s *Server) threadSearchOccurrences(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.ThreadSearchOccurrencesParams) (any, error) {
	// The reference does not implement it either, and says so with this error.
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "thread/searchOccurrences is not supported yet"}
}
