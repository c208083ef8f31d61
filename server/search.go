package server

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"appserver/jsonrpc"
	"appserver/occurrence"
	protocol "appserver/protocol/v2"
	"appserver/rollout"
	"appserver/thread"
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
		if err := k.Validate(); err != nil {
			return nil, invalidParams("%v", err)
		}
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

// errSearchOccurrencesUnsupported is the reference's answer for a thread without a rollout (unknown,
// ephemeral, or loaded with no turn yet).
var errSearchOccurrencesUnsupported = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
	Message: protocol.MethodThreadSearchOccurrences + " is not supported yet"}

// threadSearchOccurrences pages through a thread's user and agent messages for searchTerm (package
// occurrence); each hit's turnCursor is the thread/turns/list cursor that starts at its turn.
func (s *Server) threadSearchOccurrences(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadSearchOccurrencesParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if p.SearchTerm == "" {
		return nil, jsonrpc.InvalidRequest(protocol.MethodThreadSearchOccurrences + " requires a non-empty searchTerm")
	}
	if t, ok := s.threads.Get(p.ThreadID); ok {
		info := t.Info()
		if nTurns, _ := t.HistoryCounts(); info.Ephemeral || (nTurns == 0 && info.ForkedFromID == nil) {
			return nil, errSearchOccurrencesUnsupported
		}
	}
	turns, err := s.threads.Turns(p.ThreadID)
	if errors.Is(err, thread.ErrNoRollout) {
		return nil, errSearchOccurrencesUnsupported
	}
	if err != nil {
		return nil, storeError(err)
	}
	// Cursors carry rollout ordinals, as the reference's: the turn's (turnCursor) and the next item's.
	ho := s.threads.HistoryOrdinals(p.ThreadID)
	turnOrds := turnOrdinals(turns, ho)
	var entries []protocol.ThreadItemEntry
	for _, tu := range turns {
		for _, it := range tu.Items {
			entries = append(entries, protocol.ThreadItemEntry{Item: it, TurnID: tu.ID})
		}
	}
	itemOrds := itemOrdinals(entries, ho)
	var from occurrence.Position
	if p.Cursor != nil {
		if from, err = occurrence.DecodeCursor(*p.Cursor, p.ThreadID, p.SearchTerm); err != nil {
			return nil, jsonrpc.InvalidRequest("invalid cursor: " + *p.Cursor)
		}
		// the first item at or after the ordinal
		from.Item = sort.Search(len(itemOrds), func(i int) bool { return itemOrds[i] >= int64(from.Item) })
	}
	hits, next := occurrence.Search(turns, p.SearchTerm, from, occurrence.Limit(p.Limit))
	resp := protocol.ThreadSearchOccurrencesResponse{Data: make([]protocol.ThreadSearchOccurrence, 0, len(hits))}
	for _, h := range hits {
		resp.Data = append(resp.Data, protocol.ThreadSearchOccurrence{ItemID: h.ItemID, TurnID: h.TurnID, Snippet: h.Snippet,
			SnippetMatchRange: protocol.ThreadSearchTextRange{Start: uint32(h.Start), End: uint32(h.End)},
			TurnCursor:        historyCursor(p.ThreadID, scopeTurns, int(turnOrds[h.TurnIndex]), true)})
	}
	if next != nil {
		at := *next
		at.Item = int(itemOrds[at.Item])
		c := occurrence.EncodeCursor(p.ThreadID, p.SearchTerm, at)
		resp.NextCursor = &c
	}
	return resp, nil
}
