package server

import (
	"context"
	"errors"

	"appserver/attachments"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/threadindex"
)

// addAttachmentRoutes routes thread/attachment/* and thread/attachmentOwner/list; attachments live in the
// attachments store.
func (s *Server) addAttachmentRoutes(r map[string]route) {
	r[protocol.MethodThreadAttachmentAdd] = handle(s.threadAttachmentAdd)
	r[protocol.MethodThreadAttachmentList] = handle(s.threadAttachmentList)
	r[protocol.MethodThreadAttachmentRemove] = handle(s.threadAttachmentRemove)
	r[protocol.MethodThreadAttachmentOwnerList] = handle(s.threadAttachmentOwnerList)
}

// defaultAttachmentLimit is the page size of the attachment lists without a limit.
const defaultAttachmentLimit = 100

func attachmentError(err error) error {
	if errors.Is(err, attachments.ErrInvalid) {
		return paramsError(err.Error())
	}
	return internal(err)
}

func attachmentWire(a attachments.Attachment) protocol.ThreadAttachment {
	return protocol.ThreadAttachment{ID: a.ID, AttachmentType: a.Type, IdentityKey: a.IdentityKey, Payload: a.Payload, CreatedAt: a.CreatedMs / 1000}
}

// attachmentThread checks an attachment's thread: a valid id (-32602 otherwise, unlike most thread methods)
// of a thread with a rollout.
func (s *Server) attachmentThread(id string, mustExist bool) error {
	if err := validateThreadID(id); err != nil {
		return paramsError(err.Error())
	}
	if mustExist && !s.storedThreadExists(id) {
		return paramsError("thread not found: " + id)
	}
	return nil
}

func pageLimit(limit *uint32, def int) int {
	if limit == nil {
		return def
	}
	return int(*limit)
}

func (s *Server) threadAttachmentAdd(ctx context.Context, _ *connection, req *jsonrpc.Request, p *protocol.ThreadAttachmentAddParams) (any, error) {
	if err := s.attachmentThread(p.ThreadID, false); err != nil {
		return nil, err
	}
	if err := attachments.ValidateIdentity(p.AttachmentType, p.IdentityKey); err != nil {
		return nil, attachmentError(err)
	}
	if err := s.attachmentThread(p.ThreadID, true); err != nil {
		return nil, err
	}
	as, err := s.attachmentStore(ctx)
	if err != nil {
		return nil, err
	}
	a, created, err := as.Add(ctx, p.ThreadID, p.AttachmentType, p.IdentityKey, p.Payload)
	if err != nil {
		return nil, attachmentError(err)
	}
	outcome := protocol.ThreadAttachmentAddOutcomeExisting
	if created {
		outcome = protocol.ThreadAttachmentAddOutcomeCreated
	}
	req.Reply(protocol.ThreadAttachmentAddResponse{Attachment: attachmentWire(a), Outcome: outcome}, nil)
	if created {
		s.broadcast(protocol.NotifyThreadAttachmentUpdated, protocol.ThreadAttachmentUpdatedNotification{ThreadID: a.ThreadID,
			AttachmentType: a.Type, IdentityKey: a.IdentityKey, AttachmentID: a.ID, Operation: protocol.ThreadAttachmentOperationCreated})
	}
	return nil, nil
}

func (s *Server) threadAttachmentList(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadAttachmentListParams) (any, error) {
	if err := s.attachmentThread(p.ThreadID, false); err != nil {
		return nil, err
	}
	resp := protocol.ThreadAttachmentListResponse{Data: []protocol.ThreadAttachment{}}
	if !s.stateExists() && p.Cursor == nil {
		return resp, nil
	}
	as, err := s.attachmentStore(ctx)
	if err != nil {
		return nil, err
	}
	list, next, err := as.List(ctx, p.ThreadID, deref(p.Cursor), pageLimit(p.Limit, defaultAttachmentLimit))
	if err != nil {
		return nil, attachmentError(err)
	}
	for _, a := range list {
		resp.Data = append(resp.Data, attachmentWire(a))
	}
	if next != "" {
		resp.NextCursor = &next
	}
	return resp, nil
}

func (s *Server) threadAttachmentRemove(ctx context.Context, _ *connection, req *jsonrpc.Request, p *protocol.ThreadAttachmentRemoveParams) (any, error) {
	if err := s.attachmentThread(p.ThreadID, false); err != nil {
		return nil, err
	}
	if err := attachments.ValidateIdentity(p.AttachmentType, p.IdentityKey); err != nil {
		return nil, attachmentError(err)
	}
	if err := s.attachmentThread(p.ThreadID, true); err != nil {
		return nil, err
	}
	as, err := s.attachmentStore(ctx)
	if err != nil {
		return nil, err
	}
	a, removed, err := as.Remove(ctx, p.ThreadID, p.AttachmentType, p.IdentityKey)
	if err != nil {
		return nil, attachmentError(err)
	}
	req.Reply(protocol.ThreadAttachmentRemoveResponse{}, nil)
	if removed {
		s.broadcast(protocol.NotifyThreadAttachmentUpdated, protocol.ThreadAttachmentUpdatedNotification{ThreadID: a.ThreadID,
			AttachmentType: a.Type, IdentityKey: a.IdentityKey, AttachmentID: a.ID, Operation: protocol.ThreadAttachmentOperationDeleted})
	}
	return nil, nil
}

func (s *Server) threadAttachmentOwnerList(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadAttachmentOwnerListParams) (any, error) {
	resp := protocol.ThreadAttachmentOwnerListResponse{Data: []protocol.ThreadAttachmentOwner{}}
	if err := attachments.ValidateIdentity(p.AttachmentType, p.IdentityKey); err != nil {
		return nil, attachmentError(err)
	}
	if !s.stateExists() && p.Cursor == nil {
		return resp, nil
	}
	as, err := s.attachmentStore(ctx)
	if err != nil {
		return nil, err
	}
	owners, next, err := as.Owners(ctx, p.AttachmentType, p.IdentityKey, p.Archived, deref(p.Cursor),
		pageLimit(p.Limit, defaultAttachmentLimit), s.threadArchived)
	if err != nil {
		return nil, attachmentError(err)
	}
	for _, o := range owners {
		resp.Data = append(resp.Data, protocol.ThreadAttachmentOwner{ThreadID: o.ThreadID, Archived: o.Archived})
	}
	if next != "" {
		resp.NextCursor = &next
	}
	return resp, nil
}

// threadArchived tells, for each listed thread the index knows, whether it is archived.
func (s *Server) threadArchived(ctx context.Context, ids []string) (map[string]bool, error) {
	st, err := s.threads.Store()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, id := range ids {
		row, err := st.Index().Row(ctx, id)
		if errors.Is(err, threadindex.ErrNoRow) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = row.Archived
	}
	return out, nil
}
