package server

import (
	"context"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// buildRoutes is the method table: every implemented client request and its handler. Methods of the
// schema missing here are answered "<method> is not supported by appserver".
func (s *Server) buildRoutes() map[string]route {
	r := map[string]route{
		protocol.MethodMockExperimentalMethod: handle(func(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.MockExperimentalMethodParams) (any, error) {
			return protocol.MockExperimentalMethodResponse{Echoed: p.Value}, nil
		}),
	}
	s.addThreadRoutes(r)
	s.addCommandExecRoutes(r)
	s.addMCPRoutes(r)
	s.addLifecycleRoutes(r)
	s.addSectionRoutes(r)
	s.addTerminalRoutes(r)
	s.addSearchRoutes(r)
	s.addExtraRoutes(r)
	s.addGoalRoutes(r)
	s.addSettingsRoutes(r)
	s.addSkillsRoutes(r)
	s.addConfigWriteRoutes(r)
	s.addHooksRoutes(r)
	s.addAccountRoutes(r)
	s.addPluginRoutes(r)
	s.addEnvironmentRoutes(r)
	s.addSamplingRoutes(r)
	s.addThreadExtraRoutes(r)
	s.addMaintenanceRoutes(r)
	s.addMCPExtraRoutes(r)
	s.addFileSearchRoutes(r)
	s.addFSRoutes(r)
	s.addUserShellRoutes(r)
	s.addCompactionRoutes(r)
	s.addWorkspaceMiscRoutes(r)
	s.addExternalAgentRoutes(r)
	s.addProcessRoutes(r)
	s.addReviewRoutes(r)
	s.addRevertRoutes(r)
	s.addThreadSettingsRoutes(r)
	s.addMetadataRoutes(r)
	s.addItemRoutes(r)
	s.addOrganizationRoutes(r)
	return r
}
