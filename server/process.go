package server

import (
	"context"
	"encoding/base64"
	"os"
	"time"

	"appserver/execmgr"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

func (s *Server) addProcessRoutes(r map[string]route) {
	r[protocol.MethodProcessSpawn] = handle(s.processSpawn)
	r[protocol.MethodProcessWriteStdin] = handle(s.processWriteStdin)
	r[protocol.MethodProcessResizePty] = handle(s.processResizePty)
	r[protocol.MethodProcessKill] = handle(s.processKill)
}

// processHandles is the connection's process/* registry; its children die with the connection.
func (c *connection) processHandles() *execmgr.HandleRegistry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.procs == nil {
		c.procs = execmgr.NewHandleRegistry(c.srv.exec)
		c.closeHooks = append(c.closeHooks, c.procs.Close)
	}
	return c.procs
}

func (s *Server) processSpawn(ctx context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ProcessSpawnParams) (any, error) {
	if err := absPaths(p.Cwd); err != nil {
		return nil, err
	}
	env := os.Environ()
	for k, v := range p.Env {
		if v == nil {
			env = dropEnv(env, k)
			continue
		}
		env = execmgr.MergeEnv(env, k+"="+*v)
	}
	req := execmgr.SpawnRequest{Argv: p.Command, Cwd: p.Cwd, Env: env, TTY: p.Tty != nil && *p.Tty, Stdin: p.StreamStdin != nil && *p.StreamStdin}
	if p.Size != nil {
		req.Size = execmgr.Size{Rows: p.Size.Rows, Cols: p.Size.Cols}
	}
	// a terminal's output is always streamed, as the reference does
	hs := execmgr.HandleSpawn{Handle: p.ProcessHandle, Req: req, Stream: req.TTY || (p.StreamStdoutStderr != nil && *p.StreamStdoutStderr)}
	if p.OutputBytesCap != nil {
		hs.Cap = int(*p.OutputBytesCap)
	}
	if p.TimeoutMs != nil && *p.TimeoutMs > 0 {
		hs.Timeout = time.Duration(*p.TimeoutMs) * time.Millisecond
	}
	handleID := p.ProcessHandle
	hs.OnDelta = func(st execmgr.Stream, chunk []byte, capReached bool) {
		c.notify(protocol.NotifyProcessOutputDelta, protocol.ProcessOutputDeltaNotification{ProcessHandle: handleID,
			Stream: protocol.ProcessOutputStream(st.String()), DeltaBase64: base64.StdEncoding.EncodeToString(chunk), CapReached: capReached})
	}
	hs.OnExit = func(ex execmgr.HandleExit) {
		c.notify(protocol.NotifyProcessExited, protocol.ProcessExitedNotification{ProcessHandle: handleID, ExitCode: int32(ex.ExitCode),
			OutputDrainTimedOut: ptr(false), Stdout: ex.Stdout, Stderr: ex.Stderr, StdoutCapReached: ex.StdoutCapReached, StderrCapReached: ex.StderrCapReached})
	}
	if err := c.processHandles().Spawn(ctx, hs); err != nil {
		return nil, requestError(err)
	}
	return protocol.ProcessSpawnResponse{}, nil
}

func dropEnv(env []string, key string) []string {
	out := env[:0]
	for _, kv := range env {
		if len(kv) > len(key) && kv[:len(key)+1] == key+"=" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (s *Server) processWriteStdin(ctx context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ProcessWriteStdinParams) (any, error) {
	proc, err := c.processHandles().Get(p.ProcessHandle)
	if err != nil {
		return nil, requestError(err)
	}
	if p.DeltaBase64 != nil && *p.DeltaBase64 != "" {
		data, err := base64.StdEncoding.DecodeString(*p.DeltaBase64)
		if err != nil {
			return nil, invalidParams("%v", err)
		}
		if err := proc.WriteStdin(ctx, data); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
		}
	}
	if p.CloseStdin != nil && *p.CloseStdin {
		if err := proc.CloseStdin(); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
		}
	}
	return protocol.ProcessWriteStdinResponse{}, nil
}

func (s *Server) processResizePty(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ProcessResizePtyParams) (any, error) {
	proc, err := c.processHandles().Get(p.ProcessHandle)
	if err != nil {
		return nil, requestError(err)
	}
	if err := proc.Resize(execmgr.Size{Rows: p.Size.Rows, Cols: p.Size.Cols}); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
	}
	return protocol.ProcessResizePtyResponse{}, nil
}

func (s *Server) processKill(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ProcessKillParams) (any, error) {
	proc, err := c.processHandles().Get(p.ProcessHandle)
	if err != nil {
		return nil, requestError(err)
	}
	proc.KillNow() // SIGKILL to the group: exit code 137, as the reference reports
	return protocol.ProcessKillResponse{}, nil
}
