package server

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"appserver/execmgr"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/tools"
)

// addTerminalRoutes routes thread/backgroundTerminals/*: a loaded thread's live unified-exec sessions.
func (s *Server) addTerminalRoutes(r map[string]route) {
	r[protocol.MethodThreadBackgroundTerminalsList] = handle(s.backgroundTerminalsList)
	r[protocol.MethodThreadBackgroundTerminalsClean] = handle(s.backgroundTerminalsClean)
	r[protocol.MethodThreadBackgroundTerminalsTerminate] = handle(s.backgroundTerminalsTerminate)
}

// defaultTerminalLimit is the page size of thread/backgroundTerminals/list without a limit.
const defaultTerminalLimit = 100

func (s *Server) loadedThreadTerminals(threadID string) (*execmgr.Sessions, error) {
	if err := validateThreadID(threadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	t, ok := s.threads.Get(threadID)
	if !ok {
		return nil, jsonrpc.InvalidRequest("thread not found: " + threadID)
	}
	return tools.BackgroundTerminals(t), nil
}

func (s *Server) backgroundTerminalsList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadBackgroundTerminalsListParams) (any, error) {
	sessions, err := s.loadedThreadTerminals(p.ThreadID)
	if err != nil {
		return nil, err
	}
	after := -1
	if p.Cursor != nil {
		n, err := strconv.Atoi(*p.Cursor)
		if err != nil {
			return nil, jsonrpc.InvalidRequest("invalid cursor: invalid digit found in string")
		}
		after = n
	}
	limit := defaultTerminalLimit
	if p.Limit != nil {
		limit = max(1, int(*p.Limit))
	}
	resp := protocol.ThreadBackgroundTerminalsListResponse{Data: []protocol.ThreadBackgroundTerminal{}}
	if sessions == nil {
		return resp, nil
	}
	for _, term := range sessions.Terminals() {
		if term.ID <= after {
			continue
		}
		if len(resp.Data) == limit {
			c := resp.Data[len(resp.Data)-1].ProcessID
			resp.NextCursor = &c
			break
		}
		bt := protocol.ThreadBackgroundTerminal{Command: term.Command, Cwd: protocol.LegacyAppPathString(term.Cwd),
			ItemID: term.ItemID, ProcessID: strconv.Itoa(term.ID)}
		if term.Pid > 0 {
			pid := uint32(term.Pid)
			bt.OsPid = &pid
			if kb, ok := rssKB(term.Pid); ok {
				bt.RssKb = &kb
			}
		}
		resp.Data = append(resp.Data, bt)
	}
	return resp, nil
}

func (s *Server) backgroundTerminalsClean(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadBackgroundTerminalsCleanParams) (any, error) {
	sessions, err := s.loadedThreadTerminals(p.ThreadID)
	if err != nil {
		return nil, err
	}
	if sessions != nil {
		sessions.TerminateAll()
	}
	return protocol.ThreadBackgroundTerminalsCleanResponse{}, nil
}

// backgroundTerminalsTerminate ends one unified-exec session of a loaded thread: the process id is the
// session number (parsed before the thread is looked up, as the reference does); an unknown session is
// {terminated: false}.
func (s *Server) backgroundTerminalsTerminate(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadBackgroundTerminalsTerminateParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	id, err := execmgr.ParseSessionID(p.ProcessID)
	if err != nil {
		return nil, jsonrpc.InvalidRequest("invalid background terminal process id: " + err.Error())
	}
	sessions, err := s.loadedThreadTerminals(p.ThreadID)
	if err != nil {
		return nil, err
	}
	return protocol.ThreadBackgroundTerminalsTerminateResponse{Terminated: sessions != nil && sessions.Terminate(id)}, nil
}

// rssKB reads a process's resident set size from /proc.
func rssKB(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, ln := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(ln, "VmRSS:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
