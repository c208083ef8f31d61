package server

import (
	"context"
	"os"

	"github.com/google/uuid"

	"appserver/externalagent"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

// memoryImportFeature gates the detection and import of the other agent's memories, as in the reference.
const memoryImportFeature = "external_agent_memory_import"

// addExternalAgentRoutes registers externalAgentConfig/*: detection and import of another agent's
// configuration (package externalagent) and the import history.
func (s *Server) addExternalAgentRoutes(r map[string]route) {
	r[protocol.MethodExternalAgentConfigDetect] = handle(s.externalAgentDetect)
	r[protocol.MethodExternalAgentConfigImport] = handle(s.externalAgentImport)
	r[protocol.MethodExternalAgentConfigImportReadHistories] = handle(s.externalAgentReadHistories)
	r[protocol.MethodExternalAgentConfigImportRecordHistory] = handle(s.externalAgentRecordHistory)
}

// externalAgent is the migration service for this server's CODEX_HOME and the user's home.
// Sessions it imports become threads whose originator is the importing client's.
func (s *Server) externalAgent(c *connection) *externalagent.Service {
	home, _ := os.UserHomeDir()
	svc := externalagent.New(s.cfg.CodexHome, home)
	f := s.userConfigFile()
	svc.ValidateHomeConfig = f.Validate
	originator := ""
	if c != nil {
		originator = c.originator()
	}
	svc.CreateThread = func(cwd, name, preview string, write func(*rollout.Recorder) error) (string, error) {
		return s.threads.CreateImported(cwd, name, preview, originator, write)
	}
	return svc
}

func (s *Server) externalAgentHistory() *externalagent.History {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.importHistory == nil {
		s.importHistory = externalagent.NewHistory(s.cfg.CodexHome)
	}
	return s.importHistory
}

func (s *Server) externalAgentDetect(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ExternalAgentConfigDetectParams) (any, error) {
	svc := s.externalAgent(c)
	svc.UseSource(deref(p.MigrationSource))
	items, err := svc.Detect(externalagent.DetectOptions{IncludeHome: p.IncludeHome != nil && *p.IncludeHome, Cwds: p.Cwds,
		MaxSessions: p.MaxSessions, MaxSessionAgeDays: p.MaxSessionAgeDays,
		IncludeMemory: s.features.Effective(memoryImportFeature, s.currentConfig().Features, false)})
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
	}
	return protocol.ExternalAgentConfigDetectResponse{Items: items, Connectors: []protocol.ExternalAgentDetectedConnectorCandidate{}}, nil
}

func (s *Server) externalAgentImport(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.ExternalAgentConfigImportParams) (any, error) {
	for _, it := range p.MigrationItems {
		if err := externalagent.CheckItemType(it.ItemType); err != nil {
			return nil, invalidParams("%v", err)
		}
	}
	for _, it := range p.MigrationItems {
		if it.ItemType != protocol.ExternalAgentConfigMigrationItemTypeMEMORY {
			continue
		}
		if !s.features.Effective(memoryImportFeature, s.currentConfig().Features, false) {
			return nil, jsonrpc.InvalidRequest("external agent memory import is disabled")
		}
		if it.Details == nil || len(it.Details.Memory) == 0 {
			return nil, jsonrpc.InvalidRequest("memory import requires at least one selected memory")
		}
	}
	svc := s.externalAgent(c)
	svc.UseSource(deref(p.MigrationSource))
	immediate, finish := svc.Start(p.MigrationItems)
	reload := externalagent.NeedsReload(p.MigrationItems)
	if reload {
		s.reloadAfterWrite()
	}
	importID := uuid.NewString()
	req.Reply(protocol.ExternalAgentConfigImportResponse{ImportID: importID}, nil)
	// Session imports and remote marketplaces run after the answer, as the reference's do.
	later := finish(ctx)
	if len(later) > 0 && reload {
		s.reloadAfterWrite()
	}
	if len(p.MigrationItems) == 0 {
		return nil, nil
	}
	results := append(immediate, later...)
	for _, r := range results {
		s.broadcast(protocol.NotifyExternalAgentConfigImportProgress, protocol.ExternalAgentConfigImportProgressNotification{
			ImportID: importID, ItemTypeResults: []protocol.ExternalAgentConfigImportTypeResult{r.TypeResult()}})
	}
	grouped := externalagent.Group(results)
	var succ []protocol.ExternalAgentConfigImportItemTypeSuccess
	var fail []protocol.ExternalAgentConfigImportItemTypeFailure
	for _, g := range grouped {
		succ = append(succ, g.Successes...)
		fail = append(fail, g.Failures...)
	}
	if _, err := s.externalAgentHistory().Record(importID, nil, succ, fail); err != nil {
		s.log.Warn("recording external agent import", "import", importID, "error", err)
	}
	s.broadcast(protocol.NotifyExternalAgentConfigImportCompleted, protocol.ExternalAgentConfigImportCompletedNotification{ImportID: importID, ItemTypeResults: grouped})
	return nil, nil
}

func (s *Server) externalAgentReadHistories(ctx context.Context, _ *connection, _ *jsonrpc.Request, _ *struct{}) (any, error) {
	data, err := s.externalAgentHistory().List(ctx)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to read import histories: %v", err)
	}
	return protocol.ExternalAgentConfigImportHistoriesReadResponse{Data: data, Connectors: []protocol.ExternalAgentImportedConnectorCandidate{}}, nil
}

func (s *Server) externalAgentRecordHistory(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ExternalAgentConfigImportHistoryRecordParams) (any, error) {
	var succ []protocol.ExternalAgentConfigImportItemTypeSuccess
	var fail []protocol.ExternalAgentConfigImportItemTypeFailure
	for _, g := range p.ItemTypeResults {
		types := []protocol.ExternalAgentConfigMigrationItemType{g.ItemType}
		for _, x := range g.Successes {
			types = append(types, x.ItemType)
		}
		for _, x := range g.Failures {
			types = append(types, x.ItemType)
		}
		for _, t := range types {
			if err := externalagent.CheckItemType(t); err != nil {
				return nil, invalidParams("%v", err)
			}
		}
	}
	for _, g := range p.ItemTypeResults {
		for _, x := range g.Successes {
			succ = append(succ, protocol.ExternalAgentConfigImportItemTypeSuccess(x))
		}
		fail = append(fail, g.Failures...)
	}
	provider := p.ProviderID
	h, err := s.externalAgentHistory().Record(uuid.NewString(), &provider, succ, fail)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to record import history: %v", err)
	}
	return protocol.ExternalAgentConfigImportHistoryRecordResponse{ImportID: h.ImportID}, nil
}
