package server

import (
	"context"
	"errors"
	"net/url"
	"os"
	"time"

	"appserver/environments"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// addEnvironmentRoutes routes environment/add|status|info over the server's environment registry.
func (s *Server) addEnvironmentRoutes(r map[string]route) {
	cwd, _ := os.Getwd()
	s.envs = environments.New(cwd)
	r[protocol.MethodEnvironmentAdd] = handle(s.environmentAdd)
	r[protocol.MethodEnvironmentStatus] = handle(s.environmentStatus)
	r[protocol.MethodEnvironmentInfo] = handle(s.environmentInfo)
}

func (s *Server) environmentAdd(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.EnvironmentAddParams) (any, error) {
	spec := environments.Remote{URL: p.ExecServerURL}
	if p.ConnectTimeoutMs != nil {
		spec.ConnectTimeout = time.Duration(*p.ConnectTimeoutMs) * time.Millisecond
	}
	if p.AuthBearerToken != nil {
		spec.BearerToken = *p.AuthBearerToken
	}
	if p.WebsocketRequestID != nil {
		spec.RequestID = *p.WebsocketRequestID
	}
	if p.Skills != nil {
		spec.RequiredSkills = p.Skills.Required
	}
	if err := s.envs.Add(p.EnvironmentID, spec); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	return protocol.EnvironmentAddResponse{}, nil
}

func (s *Server) environmentStatus(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.EnvironmentStatusParams) (any, error) {
	st := s.envs.Status(p.EnvironmentID)
	resp := protocol.EnvironmentStatusResponse{Status: protocol.EnvironmentStatusKind(st.Kind)}
	if st.Error != "" {
		resp.Error = ptr(st.Error)
	}
	return resp, nil
}

func (s *Server) environmentInfo(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.EnvironmentInfoParams) (any, error) {
	info, err := s.envs.Info(p.EnvironmentID)
	if errors.Is(err, environments.ErrUnknown) {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to get info for environment `%s`: %v", p.EnvironmentID, err)
	}
	resp := protocol.EnvironmentInfoResponse{Shell: protocol.EnvironmentShellInfo{Name: info.ShellName, Path: info.ShellPath}}
	if info.Cwd != "" {
		u := (&url.URL{Scheme: "file", Path: info.Cwd}).String()
		resp.Cwd = &u
	}
	return resp, nil
}
