package server

import (
	"context"
	"os"
	"strconv"
	"strings"

	"appserver/feedback"
	"appserver/internal/oserr"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// addWorkspaceMiscRoutes registers the small local methods: server/diagnostics, feedback/save, the
// memory methods (no memory store: empty answers as the reference gives without one).
func (s *Server) addWorkspaceMiscRoutes(r map[string]route) {
	r[protocol.MethodServerDiagnostics] = handle(s.serverDiagnostics)
	r[protocol.MethodFeedbackSave] = handle(s.feedbackSave)
	r[protocol.MethodMemoryStatus] = handle(func(context.Context, *connection, *jsonrpc.Request, *protocol.MemoryStatusParams) (any, error) {
		return protocol.MemoryStatusResponse{V2ConsolidatedThreads: 0, V2Ready: true}, nil
	})
	r[protocol.MethodMemoryReset] = handle(func(context.Context, *connection, *jsonrpc.Request, *struct{}) (any, error) {
		return protocol.MemoryResetResponse{}, nil
	})
	r[protocol.MethodThreadMemoryRead] = handle(func(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadMemoryReadParams) (any, error) {
		if _, err := s.loadedThread(p.ThreadID); err != nil {
			return nil, err
		}
		return protocol.ThreadMemoryReadResponse{}, nil
	})
	r[protocol.MethodThreadMemoryModeSet] = handle(func(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadMemoryModeSetParams) (any, error) {
		if _, err := s.loadedThread(p.ThreadID); err != nil {
			return nil, err
		}
		return protocol.ThreadMemoryModeSetResponse{}, nil
	})
}

func (s *Server) serverDiagnostics(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.ServerDiagnosticsParams) (any, error) {
	return protocol.ServerDiagnosticsResponse{
		Process: protocol.ServerDiagnosticsProcess{ID: uint32(os.Getpid()), ResidentMemoryBytes: ptr(residentBytes())},
		Gauges: []protocol.ServerDiagnosticsGauge{
			{Name: "app.requests.in_flight", Value: 1},
			{Name: "core.threads.live", Value: uint64(len(s.threads.Loaded()))},
		},
	}, nil
}

// residentBytes is this process's resident set size.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

func (s *Server) feedbackSave(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.FeedbackSaveParams) (any, error) {
	tid := feedback.NoThreadID()
	if p.ThreadID != nil && *p.ThreadID != "" {
		tid = *p.ThreadID
	}
	err := feedback.Save(string(p.SavePath), feedback.Report{Classification: p.Classification, Reason: p.Reason, Tags: p.Tags,
		ThreadID: tid, CLIVersion: CompatVersion, SessionSource: "vscode"})
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", oserr.Text(err))
	}
	return protocol.FeedbackSaveResponse{SavedPath: p.SavePath, ThreadID: tid}, nil
}
