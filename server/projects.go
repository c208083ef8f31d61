package server

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"

	"appserver/jsonrpc"
	"appserver/projects"
	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/threadindex"
)

// addProjectRoutes routes project/*; projects and thread membership live in the projects store.
func (s *Server) addProjectRoutes(r map[string]route) {
	r[protocol.MethodProjectList] = handle(s.projectList)
	r[protocol.MethodProjectRead] = handle(s.projectRead)
	r[protocol.MethodProjectCreate] = handle(s.projectCreate)
	r[protocol.MethodProjectImport] = handle(s.projectImport)
	r[protocol.MethodProjectUpdate] = handle(s.projectUpdate)
	r[protocol.MethodProjectMove] = handle(s.projectMove)
	r[protocol.MethodProjectDelete] = handle(s.projectDelete)
}

// projectError maps a projects error: what the client caused is -32602 with the store's message.
func projectError(err error) error {
	if errors.Is(err, projects.ErrInvalid) || errors.Is(err, projects.ErrNotFound) {
		return paramsError(err.Error())
	}
	return internal(err)
}

func projectWire(p projects.Project) protocol.Project {
	roots := make([]protocol.ProjectRoot, 0, len(p.Roots))
	for _, r := range p.Roots {
		roots = append(roots, protocol.ProjectRoot{Path: r})
	}
	var rec *int64
	if p.RecencyMs != nil {
		rec = ptr(*p.RecencyMs / 1000)
	}
	return protocol.Project{ID: p.ID, Name: p.Name, Roots: roots, Metadata: p.Metadata, Position: p.Position,
		CreatedAt: p.CreatedMs / 1000, UpdatedAt: p.UpdatedMs / 1000, RecencyAt: rec}
}

// rootPaths checks that project roots are absolute, as the reference's path type does when decoding.
func rootPaths(roots []protocol.ProjectRoot) ([]string, error) {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if !filepath.IsAbs(r.Path) {
			return nil, jsonrpc.InvalidRequest("Invalid request: AbsolutePathBuf deserialized without a base path")
		}
		out = append(out, r.Path)
	}
	return out, nil
}

func (s *Server) projectList(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ProjectListParams) (any, error) {
	ps, err := s.projectStore(ctx)
	if err != nil {
		return nil, err
	}
	q := projects.ListQuery{Cursor: deref(p.Cursor), Limit: projects.DefaultLimit}
	if p.Limit != nil {
		q.Limit = int(*p.Limit)
	}
	if p.SortKey != nil {
		q.SortKey = string(*p.SortKey)
	}
	if p.SortDirection != nil {
		q.Desc = ptr(*p.SortDirection == protocol.SortDirectionDesc)
	}
	list, next, err := ps.List(ctx, q)
	if err != nil {
		return nil, projectError(err)
	}
	resp := protocol.ProjectListResponse{Data: make([]protocol.Project, 0, len(list))}
	for _, pr := range list {
		resp.Data = append(resp.Data, projectWire(pr))
	}
	if next != "" {
		resp.NextCursor = &next
	}
	return resp, nil
}

func (s *Server) projectRead(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ProjectReadParams) (any, error) {
	ps, err := s.projectStore(ctx)
	if err != nil {
		return nil, err
	}
	pr, err := ps.Get(ctx, p.ProjectID)
	if err != nil {
		return nil, projectError(err)
	}
	return protocol.ProjectReadResponse{Project: projectWire(pr)}, nil
}

// createProject serves project/create and project/import: a new project is announced (project/changed,
// then thread/project/updated for each thread it took in) before the answer; a retry with the same key is
// answered quietly with the existing project.
func (s *Server) createProject(ctx context.Context, o projects.CreateOptions, roots []protocol.ProjectRoot) (protocol.Project, error) {
	paths, err := rootPaths(roots)
	if err != nil {
		return protocol.Project{}, err
	}
	ps, err := s.projectStore(ctx)
	if err != nil {
		return protocol.Project{}, err
	}
	o.Roots = paths
	o.ThreadExists = s.storedThreadExists
	pr, created, moved, err := ps.Create(ctx, o)
	if err != nil {
		return protocol.Project{}, projectError(err)
	}
	if created {
		s.broadcast(protocol.NotifyProjectChanged, protocol.ProjectChangedNotification{ProjectID: pr.ID, ChangeType: protocol.ProjectChangeTypeCreated})
		for _, id := range moved {
			s.projectChanged(id, &pr.ID)
		}
	}
	return projectWire(pr), nil
}

// projectChanged records a thread's new project on the loaded thread and announces it.
func (s *Server) projectChanged(threadID string, projectID *string) {
	if t, ok := s.threads.Get(threadID); ok {
		t.SetProject(projectID)
	}
	s.broadcast(protocol.NotifyThreadProjectUpdated, protocol.ThreadProjectUpdatedNotification{ThreadID: threadID, ProjectID: projectID})
}

func (s *Server) projectCreate(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ProjectCreateParams) (any, error) {
	pr, err := s.createProject(ctx, projects.CreateOptions{Key: p.IdempotencyKey, Name: p.Name, Metadata: p.Metadata}, p.Roots)
	if err != nil {
		return nil, err
	}
	return protocol.ProjectCreateResponse{Project: pr}, nil
}

func (s *Server) projectImport(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ProjectImportParams) (any, error) {
	pr, err := s.createProject(ctx, projects.CreateOptions{Key: p.IdempotencyKey, Name: p.Name, Metadata: p.Metadata, Threads: p.Threads}, p.Roots)
	if err != nil {
		return nil, err
	}
	return protocol.ProjectImportResponse{Project: pr}, nil
}

func (s *Server) projectUpdate(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ProjectUpdateParams) (any, error) {
	o := projects.UpdateOptions{Name: p.Name, Metadata: p.Metadata} // {} decodes to an empty map: it replaces
	if p.Roots != nil {
		paths, err := rootPaths(p.Roots)
		if err != nil {
			return nil, err
		}
		o.Roots = &paths
	}
	ps, err := s.projectStore(ctx)
	if err != nil {
		return nil, err
	}
	pr, changed, err := ps.Update(ctx, p.ProjectID, o)
	if err != nil {
		return nil, projectError(err)
	}
	if changed {
		s.broadcast(protocol.NotifyProjectChanged, protocol.ProjectChangedNotification{ProjectID: pr.ID, ChangeType: protocol.ProjectChangeTypeUpdated})
	}
	return protocol.ProjectUpdateResponse{Project: projectWire(pr)}, nil
}

func (s *Server) projectMove(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ProjectMoveParams) (any, error) {
	ps, err := s.projectStore(ctx)
	if err != nil {
		return nil, err
	}
	changed, err := ps.Move(ctx, p.ProjectID, deref(p.BeforeProjectID))
	if err != nil {
		return nil, projectError(err)
	}
	if changed {
		s.broadcast(protocol.NotifyProjectChanged, protocol.ProjectChangedNotification{ProjectID: p.ProjectID, ChangeType: protocol.ProjectChangeTypeUpdated})
	}
	return protocol.ProjectMoveResponse{}, nil
}

func (s *Server) projectDelete(ctx context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ProjectDeleteParams) (any, error) {
	ps, err := s.projectStore(ctx)
	if err != nil {
		return nil, err
	}
	members, err := ps.Delete(ctx, p.ProjectID)
	if err != nil {
		return nil, projectError(err)
	}
	s.broadcast(protocol.NotifyProjectChanged, protocol.ProjectChangedNotification{ProjectID: p.ProjectID, ChangeType: protocol.ProjectChangeTypeDeleted})
	for _, id := range members {
		s.projectChanged(id, nil)
	}
	return protocol.ProjectDeleteResponse{}, nil
}

// overlayProject sets a stored thread's project from the store (no database is created for it).
func (s *Server) overlayProject(ctx context.Context, th *protocol.Thread) {
	if !s.stateExists() {
		return
	}
	ps, err := s.projectStore(ctx)
	if err != nil {
		return
	}
	id, err := ps.ProjectOf(ctx, th.ID)
	if err != nil {
		s.log.Warn("reading a thread's project", "thread", th.ID, "error", err)
		return
	}
	th.ProjectID = nil
	if id != "" {
		th.ProjectID = &id
	}
}

// loadProject gives a loaded thread its stored project (thread/resume).
func (s *Server) loadProject(ctx context.Context, t *thread.Thread) {
	info := protocol.Thread{ID: t.ID}
	s.overlayProject(ctx, &info)
	t.SetProject(info.ProjectID)
}

// checkProject checks thread/start's projectId before the thread exists (-32600 when unknown).
func (s *Server) checkProject(ctx context.Context, projectID *string) error {
	if projectID == nil {
		return nil
	}
	ps, err := s.projectStore(ctx)
	if err != nil {
		return err
	}
	ok, err := ps.Exists(ctx, *projectID)
	if err != nil {
		return internal(err)
	}
	if !ok {
		return jsonrpc.InvalidRequest("project not found: " + *projectID)
	}
	return nil
}

// joinProject puts a new thread into a project: persistently unless it is ephemeral, and on its wire object.
func (s *Server) joinProject(ctx context.Context, t *thread.Thread, projectID *string) {
	if projectID == nil || *projectID == "" {
		return
	}
	if !t.Info().Ephemeral {
		ps, err := s.projectStore(ctx)
		if err == nil {
			_, err = ps.Assign(ctx, t.ID, *projectID)
		}
		if err != nil {
			s.log.Warn("assigning a new thread's project", "thread", t.ID, "error", err)
		}
	}
	t.SetProject(projectID)
}

// inheritProject puts a fork into its source thread's project, as the reference does.
func (s *Server) inheritProject(ctx context.Context, sourceID string, fork *thread.Thread) {
	src := protocol.Thread{ID: sourceID}
	s.overlayProject(ctx, &src)
	s.joinProject(ctx, fork, src.ProjectID)
}

// checkThreadProject checks thread/metadata/update's projectId ("" clears, so it is always valid).
func (s *Server) checkThreadProject(ctx context.Context, projectID *string) error {
	if projectID == nil || *projectID == "" {
		return nil
	}
	return s.checkProject(ctx, projectID)
}

// setThreadProject applies thread/metadata/update's projectId, announcing it (thread/project/updated) when
// it changes something, and returns the thread's project.
func (s *Server) setThreadProject(ctx context.Context, threadID string, projectID *string) (*string, error) {
	ps, err := s.projectStore(ctx)
	if err != nil {
		return nil, err
	}
	changed, err := ps.Assign(ctx, threadID, *projectID)
	if errors.Is(err, projects.ErrNotFound) {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if err != nil {
		return nil, internal(err)
	}
	var now *string
	if *projectID != "" {
		now = projectID
	}
	if changed {
		s.projectChanged(threadID, now)
	}
	return now, nil
}

// projectFilter is thread/list's projectId: absent lists every thread, null the threads without a project,
// an id that project's threads (-32602 when it does not exist).
func (s *Server) projectFilter(ctx context.Context, req *jsonrpc.Request, projectID *string) (*threadindex.Members, error) {
	if projectID == nil {
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(req.Params, &raw)
		if v, present := raw["projectId"]; !present || string(v) != "null" {
			return nil, nil
		}
		if !s.stateExists() {
			return &threadindex.Members{Outside: true}, nil
		}
	}
	ps, err := s.projectStore(ctx)
	if err != nil {
		return nil, err
	}
	if projectID == nil {
		all, err := ps.Members(ctx, "")
		if err != nil {
			return nil, internal(err)
		}
		return &threadindex.Members{IDs: all, Outside: true}, nil
	}
	ok, err := ps.Exists(ctx, *projectID)
	if err != nil {
		return nil, internal(err)
	}
	if !ok {
		return nil, paramsError("project not found: " + *projectID)
	}
	members, err := ps.Members(ctx, *projectID)
	if err != nil {
		return nil, internal(err)
	}
	return &threadindex.Members{IDs: members}, nil
}
