package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"

	"appserver/execmgr"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/tools"
)

func (s *Server) addCommandExecRoutes(r map[string]route) {
	r[protocol.MethodCommandExec] = s.commandExec
	r[protocol.MethodCommandExecWrite] = s.commandExecWrite
	r[protocol.MethodCommandExecResize] = s.commandExecResize
	r[protocol.MethodCommandExecTerminate] = s.commandExecTerminate
}

// execRegistry returns the connection's command/exec registry; its processes die with the connection.
func (c *connection) execRegistry() *execmgr.CommandExecRegistry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.execs == nil {
		c.execs = execmgr.NewCommandExecRegistry(c.srv.exec)
		reg := c.execs
		c.closeHooks = append(c.closeHooks, reg.Close)
	}
	return c.execs
}

// rawParams re-decodes the request params into execmgr's mirror types.
func rawParams(req *jsonrpc.Request, out any) error {
	if req.Params == nil {
		return invalidParams("missing field `params`")
	}
	if err := json.Unmarshal(req.Params, out); err != nil {
		return invalidParams("%s", describeDecodeError(err))
	}
	return nil
}

func requestError(err error) error {
	var re *execmgr.RequestError
	if errors.As(err, &re) {
		return &jsonrpc.Error{Code: re.Code, Message: re.Message}
	}
	return err
}

func (s *Server) commandExec(ctx context.Context, c *connection, req *jsonrpc.Request, _ any) (any, error) {
	var p execmgr.CommandExecParams
	if err := rawParams(req, &p); err != nil {
		return nil, err
	}
	if err := execmgr.ValidateCommandExec(p); err != nil {
		return nil, requestError(err)
	}
	policy := thread.SandboxFromMode(s.currentConfig().SandboxMode, s.currentConfig().SandboxWorkspaceWrite)
	if len(p.SandboxPolicy) > 0 && string(p.SandboxPolicy) != "null" {
		if err := json.Unmarshal(p.SandboxPolicy, &policy); err != nil {
			return nil, invalidParams("%v", err)
		}
	}
	wd, _ := os.Getwd()
	cwd := wd
	if p.Cwd != nil && *p.Cwd != "" {
		cwd = *p.Cwd
	}
	wrap, err := tools.SandboxWrapper("", policy, cwd, cwd)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
	}
	reg := c.execRegistry()
	req.Go(func() (any, error) {
		resp, err := reg.Exec(c.rpc.Context(), execmgr.CommandExecRequest{
			Params: p, Cwd: wd, WrapArgv: wrap,
			OnOutputDelta: func(processID string, stream execmgr.Stream, chunk []byte, capReached bool) {
				c.notify(protocol.NotifyCommandExecOutputDelta, protocol.CommandExecOutputDeltaNotification{
					ProcessID: processID, Stream: protocol.CommandExecOutputStream(stream.String()),
					DeltaBase64: base64.StdEncoding.EncodeToString(chunk), CapReached: capReached,
				})
			},
		})
		if err != nil {
			return nil, requestError(err)
		}
		return resp, nil
	})
	return nil, nil
}

func (s *Server) commandExecWrite(ctx context.Context, c *connection, req *jsonrpc.Request, _ any) (any, error) {
	var p execmgr.CommandExecWriteParams
	if err := rawParams(req, &p); err != nil {
		return nil, err
	}
	if err := c.execRegistry().Write(ctx, p); err != nil {
		return nil, requestError(err)
	}
	return struct{}{}, nil
}

func (s *Server) commandExecResize(_ context.Context, c *connection, req *jsonrpc.Request, _ any) (any, error) {
	var p execmgr.CommandExecResizeParams
	if err := rawParams(req, &p); err != nil {
		return nil, err
	}
	if err := c.execRegistry().Resize(p); err != nil {
		return nil, requestError(err)
	}
	return struct{}{}, nil
}

func (s *Server) commandExecTerminate(_ context.Context, c *connection, req *jsonrpc.Request, _ any) (any, error) {
	var p execmgr.CommandExecTerminateParams
	if err := rawParams(req, &p); err != nil {
		return nil, err
	}
	if err := c.execRegistry().Terminate(p); err != nil {
		return nil, requestError(err)
	}
	return struct{}{}, nil
}
