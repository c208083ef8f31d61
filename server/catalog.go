package server

import (
	"context"
	"encoding/json"
	"os"

	"appserver/jsonrpc"
	"appserver/model"
	protocol "appserver/protocol/v2"
)

func (s *Server) modelList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ModelListParams) (any, error) {
	includeHidden := p.IncludeHidden != nil && *p.IncludeHidden
	var all []protocol.Model
	for _, m := range model.Catalog() {
		if m.Hidden && !includeHidden {
			continue
		}
		var pm protocol.Model
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &pm); err != nil {
			return nil, err
		}
		all = append(all, pm)
	}
	page, next := paginate(all, p.Cursor, p.Limit)
	return protocol.ModelListResponse{Data: page, NextCursor: next}, nil
}

func (s *Server) accountRead(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.GetAccountParams) (any, error) {
	resp := protocol.GetAccountResponse{}
	p, err := s.cfg.Provider()
	if err != nil || !p.RequiresOpenAIAuth {
		return resp, nil
	}
	resp.RequiresOpenaiAuth = true
	if os.Getenv("OPENAI_API_KEY") != "" {
		resp.Account = &protocol.Account{Value: protocol.AccountAPIKey{}}
	}
	return resp, nil
}

func (s *Server) configRead(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ConfigReadParams) (any, error) {
	cwd := ""
	if p.Cwd != nil {
		cwd = *p.Cwd
	}
	res, err := s.cfg.ReadResponse(p.IncludeLayers != nil && *p.IncludeLayers, cwd)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to read configuration layers: %v", err)
	}
	return res, nil
}
