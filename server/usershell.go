package server

import (
	"context"
	"errors"
	"strings"
	"time"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/tools"
	"appserver/usershell"
)

func (s *Server) addUserShellRoutes(r map[string]route) {
	r[protocol.MethodThreadShellCommand] = handle(s.threadShellCommand)
}

// threadShellCommand runs the user's `!command` as a turn of the thread (unsandboxed, in its cwd).
func (s *Server) threadShellCommand(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ThreadShellCommandParams) (any, error) {
	if strings.TrimSpace(p.Command) == "" {
		return nil, jsonrpc.InvalidRequest("command must not be empty")
	}
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	t.Subscribe(c)
	tn, err := t.BeginTask()
	if errors.Is(err, thread.ErrTurnInProgress) {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	var timeout time.Duration
	if p.TimeoutMs != nil && *p.TimeoutMs > 0 {
		timeout = time.Duration(*p.TimeoutMs) * time.Millisecond
	}
	tn.RunTask(usershell.Run(s.exec, p.Command, timeout, tools.ShellWrap(t)))
	return protocol.ThreadShellCommandResponse{}, nil
}
