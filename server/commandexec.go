package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"

	"appserver/execmgr"
	"appserver/internal/oserr"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/tools"

	fastb64 "github.com/segmentio/asm/base64"
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
		return invalidParams("%s", protocol.DescribeDecodeErrorIn(req.Params, err))
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
		if !filepath.IsAbs(cwd) { // the server's working directory's, as in the reference
			cwd = filepath.Join(wd, cwd)
		}
		if _, err := os.Stat(cwd); err != nil {
			// the reference cannot spawn in it; the sandbox helper would only report it as exit code 126
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to spawn command: %s", oserr.Text(err))
		}
	}
	wrap, err := tools.SandboxWrapper("", policy, cwd, cwd)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
	}
	reg := c.execRegistry()
	req.Go(func() (any, error) {
		id := ""
		if p.ProcessID != nil {
			id = *p.ProcessID
		}
		pid := jsonrpc.AppendString(nil, id)
		var streamed atomic.Bool
		resp, err := reg.Exec(c.rpc.Context(), execmgr.CommandExecRequest{
			Params: p, Cwd: wd, WrapArgv: wrap,
			OnOutputDelta: func(_ string, stream execmgr.Stream, chunk []byte, capReached bool) {
				streamed.Store(true)
				c.notifyBulk(protocol.NotifyCommandExecOutputDelta, execOutputDelta{
					processID: pid, stream: stream, chunk: chunk, capReached: capReached})
			},
		})
		if streamed.Load() { // the reply follows every delta of the command (they wait in the bulk queue)
			_ = c.rpc.FlushBulk(context.Background()) // bounded by the writer, which outlives this request
		}
		if err != nil {
			return nil, requestError(err)
		}
		if resp.Large() { // encoded piece by piece straight to the output, never whole in memory
			return jsonrpc.Streamed(resp), nil
		}
		return resp, nil
	})
	return nil, nil
}

// notifyBulk sends a high-volume notification (streamed output) through the connection's bulk
// queue, so that other replies and notifications are not held up behind it; like notify, it
// honours the opt-outs and the initialize gate.
func (c *connection) notifyBulk(method string, params jsonrpc.Appender) {
	c.mu.Lock()
	skip := c.optOut[method] || !c.initialized
	c.mu.Unlock()
	if skip {
		return
	}
	if err := c.rpc.NotifyBulk(method, params); err != nil {
		c.log.Debug("notification dropped", "method", method, "error", err)
	}
}

// execOutputDelta is a command/exec/outputDelta's params, encoded straight from the read buffer
// into the outgoing line: the same bytes as protocol.CommandExecOutputDeltaNotification marshals to.
type execOutputDelta struct {
	processID  []byte // JSON-encoded
	stream     execmgr.Stream
	chunk      []byte
	capReached bool
}

// AppendJSON implements jsonrpc.Appender.
func (d execOutputDelta) AppendJSON(b []byte) []byte {
	b = append(b, `{"capReached":`...)
	b = strconv.AppendBool(b, d.capReached)
	b = append(b, `,"deltaBase64":"`...)
	b = appendBase64(b, d.chunk)
	b = append(b, `","processId":`...)
	b = append(b, d.processID...)
	b = append(b, `,"stream":"`...)
	b = append(b, d.stream.String()...)
	return append(b, `"}`...)
}

// appendBase64 appends the padded standard base64 of src, with the SIMD encoder where the CPU has one.
func appendBase64(b, src []byte) []byte {
	n := fastb64.StdEncoding.EncodedLen(len(src))
	b = slices.Grow(b, n)
	fastb64.StdEncoding.Encode(b[len(b):len(b)+n], src)
	return b[:len(b)+n]
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
