package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/threadindex"
)

// addSectionRoutes routes thread sections (threadSection/*, thread/section/move); they live in the thread index.
func (s *Server) addSectionRoutes(r map[string]route) {
	r[protocol.MethodThreadSectionList] = handle(s.threadSectionList)
	r[protocol.MethodThreadSectionCreate] = handle(s.threadSectionCreate)
	r[protocol.MethodThreadSectionUpdate] = handle(s.threadSectionUpdate)
	r[protocol.MethodThreadSectionDelete] = handle(s.threadSectionDelete)
	r[protocol.MethodThreadSectionMove] = handle(s.threadSectionMove)
}

// defaultSectionLimit is the page size of threadSection/list without a limit.
const defaultSectionLimit = 100

func (s *Server) sectionIndex() (*threadindex.Index, error) {
	st, err := s.threads.Store()
	if err != nil {
		return nil, storeError(err)
	}
	return st.Index(), nil
}

// saveSections keeps the durable copy of the sections (threadindex.State) current after a change, so a rebuilt
// index gets them back; a failure is logged (the change itself is made).
func (s *Server) saveSections(ctx context.Context, ix *threadindex.Index) {
	st, err := s.stateStore()
	if err == nil {
		err = ix.SaveSections(ctx, st)
	}
	if err != nil {
		s.log.Warn("saving thread sections", "error", err)
	}
}

func sectionError(err error, id string) error {
	switch {
	case errors.Is(err, threadindex.ErrNoSection):
		return paramsError("thread section not found: " + id)
	case err != nil:
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
	}
	return nil
}

func appearanceJSON(a *protocol.ThreadSectionAppearance) string {
	if a == nil {
		return ""
	}
	b, _ := json.Marshal(a)
	return string(b)
}

func (s *Server) threadSectionList(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadSectionListParams) (any, error) {
	ix, err := s.sectionIndex()
	if err != nil {
		return nil, err
	}
	limit := defaultSectionLimit
	if p.Limit != nil {
		limit = max(1, int(*p.Limit))
	}
	secs, more, err := ix.Sections(ctx, deref(p.Cursor), limit)
	if err != nil {
		return nil, sectionError(err, "")
	}
	resp := protocol.ThreadSectionListResponse{Data: make([]protocol.ThreadSection, 0, len(secs))}
	for _, sec := range secs {
		resp.Data = append(resp.Data, *thread.SectionOf(sec))
	}
	if more {
		resp.NextCursor = &secs[len(secs)-1].ID
	}
	return resp, nil
}

func (s *Server) threadSectionCreate(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadSectionCreateParams) (any, error) {
	if p.Name == "" {
		return nil, paramsError("section name must not be empty")
	}
	ix, err := s.sectionIndex()
	if err != nil {
		return nil, err
	}
	sec, err := ix.CreateSection(ctx, p.Name, appearanceJSON(p.Appearance))
	if err != nil {
		return nil, sectionError(err, "")
	}
	s.saveSections(ctx, ix)
	return protocol.ThreadSectionCreateResponse{Section: *thread.SectionOf(sec)}, nil
}

func (s *Server) threadSectionUpdate(ctx context.Context, _ *connection, req *jsonrpc.Request, p *protocol.ThreadSectionUpdateParams) (any, error) {
	if p.SectionID == threadindex.PinnedSectionID {
		return nil, paramsError("the built-in pinned section cannot be renamed")
	}
	if p.Name == "" {
		return nil, paramsError("section name must not be empty")
	}
	ix, err := s.sectionIndex()
	if err != nil {
		return nil, err
	}
	// Omitted appearance keeps it, null clears it: only the raw params tell the two apart.
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(req.Params, &raw)
	_, setAppearance := raw["appearance"]
	sec, err := ix.UpdateSection(ctx, p.SectionID, p.Name, setAppearance, appearanceJSON(p.Appearance))
	if err != nil {
		return nil, sectionError(err, p.SectionID)
	}
	s.saveSections(ctx, ix)
	return protocol.ThreadSectionUpdateResponse{Section: *thread.SectionOf(sec)}, nil
}

func (s *Server) threadSectionDelete(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadSectionDeleteParams) (any, error) {
	if p.SectionID == threadindex.PinnedSectionID {
		return nil, paramsError("the built-in pinned section cannot be deleted")
	}
	ix, err := s.sectionIndex()
	if err != nil {
		return nil, err
	}
	if err := ix.DeleteSection(ctx, p.SectionID); err != nil {
		return nil, sectionError(err, p.SectionID)
	}
	s.saveSections(ctx, ix)
	return protocol.ThreadSectionDeleteResponse{}, nil
}

func (s *Server) threadSectionMove(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadSectionMoveParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	st, err := s.threads.Store()
	if err != nil {
		return nil, storeError(err)
	}
	if _, err := st.Get(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest("thread not found: " + p.ThreadID)
	}
	section, before := deref(p.SectionID), deref(p.BeforeThreadID)
	err = st.Index().MoveThread(ctx, p.ThreadID, section, before, time.Now().UnixMilli())
	switch {
	case errors.Is(err, threadindex.ErrNoSection):
		return nil, jsonrpc.InvalidRequest(fmt.Sprintf("section %s does not exist", section))
	case errors.Is(err, threadindex.ErrNoBefore):
		return nil, jsonrpc.InvalidRequest(fmt.Sprintf("before thread %s is not in section %s", before, section))
	case err != nil:
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
	}
	s.saveSections(ctx, st.Index())
	s.broadcast(protocol.NotifyThreadSectionChanged, protocol.ThreadSectionChangedNotification{ThreadID: p.ThreadID, SectionID: p.SectionID})
	return protocol.ThreadSectionMoveResponse{}, nil
}
