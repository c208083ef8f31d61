package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// addItemRoutes routes thread/items/read and thread/inject_items.
func (s *Server) addItemRoutes(r map[string]route) {
	r[protocol.MethodThreadItemsRead] = handle(s.threadItemsRead)
	r[protocol.MethodThreadInjectItems] = handle(s.threadInjectItems)
}

// maxItemIDs is the most ids one thread/items/read may ask for, as the reference.
const maxItemIDs = 100

// threadItemsRead returns the items of one turn whose ids were asked for, in the turn's order; unknown ids
// (and an unknown turn) are left out, as the reference does.
func (s *Server) threadItemsRead(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadItemsReadParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if len(p.ItemIds) == 0 || len(p.ItemIds) > maxItemIDs {
		return nil, jsonrpc.InvalidRequest(fmt.Sprintf("itemIds must contain 1 to %d IDs", maxItemIDs))
	}
	var turns []protocol.Turn
	if t, ok := s.threads.Get(p.ThreadID); ok {
		turns = t.TurnsSnapshot()
	} else {
		th, err := s.threads.ReadStored(p.ThreadID, true)
		if errors.Is(err, thread.ErrNoRollout) {
			return nil, jsonrpc.InvalidRequest("thread not found: " + p.ThreadID)
		}
		if err != nil {
			return nil, storeError(err)
		}
		turns = th.Turns
	}
	want := make(map[string]bool, len(p.ItemIds))
	for _, id := range p.ItemIds {
		want[id] = true
	}
	resp := protocol.ThreadItemsReadResponse{Data: []protocol.ThreadItemEntry{}}
	for _, tn := range turns {
		if tn.ID != p.TurnID {
			continue
		}
		for _, it := range tn.Items {
			b, err := json.Marshal(it)
			if err != nil {
				continue
			}
			var head struct {
				ID            string `json:"id"`
				StartedAtMs   *int64 `json:"startedAtMs"`
				CompletedAtMs *int64 `json:"completedAtMs"`
			}
			if json.Unmarshal(b, &head) != nil || !want[head.ID] {
				continue
			}
			resp.Data = append(resp.Data, protocol.ThreadItemEntry{TurnID: tn.ID, Item: it, StartedAtMs: head.StartedAtMs, CompletedAtMs: head.CompletedAtMs})
		}
	}
	return resp, nil
}

// threadInjectItems appends Responses items to a loaded thread's model history without a turn.
func (s *Server) threadInjectItems(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadInjectItemsParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	for i, raw := range p.Items {
		var head struct {
			Type *string `json:"type"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, jsonrpc.InvalidRequest(fmt.Sprintf("items[%d] is not a valid response item: %v", i, err))
		}
		if head.Type == nil {
			return nil, jsonrpc.InvalidRequest(fmt.Sprintf("items[%d] is not a valid response item: missing field `type`", i))
		}
	}
	t.InjectItems(p.Items)
	return protocol.ThreadInjectItemsResponse{}, nil
}
