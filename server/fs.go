package server

import (
	"context"
	"encoding/base64"
	"errors"
	"sync"

	"appserver/fsapi"
	"appserver/internal/oserr"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

func (s *Server) addFSRoutes(r map[string]route) {
	r[protocol.MethodFsReadFile] = handle(s.fsReadFile)
	r[protocol.MethodFsWriteFile] = handle(s.fsWriteFile)
	r[protocol.MethodFsCreateDirectory] = handle(s.fsCreateDirectory)
	r[protocol.MethodFsGetMetadata] = handle(s.fsGetMetadata)
	r[protocol.MethodFsReadDirectory] = handle(s.fsReadDirectory)
	r[protocol.MethodFsRemove] = handle(s.fsRemove)
	r[protocol.MethodFsCopy] = handle(s.fsCopy)
	r[protocol.MethodFsWatch] = handle(s.fsWatch)
	r[protocol.MethodFsUnwatch] = handle(s.fsUnwatch)
}

// fsError maps fsapi failures: refused requests are -32600, system errors -32603 in Rust's io wording.
func fsError(err error) error {
	var re *fsapi.RequestError
	if errors.As(err, &re) {
		return jsonrpc.InvalidRequest(re.Message)
	}
	return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", oserr.Text(err))
}

func absPaths(ps ...string) error {
	for _, p := range ps {
		if err := fsapi.CheckAbsolute(p); err != nil {
			return fsError(err)
		}
	}
	return nil
}

func (s *Server) fsReadFile(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.FsReadFileParams) (any, error) {
	if err := absPaths(p.Path); err != nil {
		return nil, err
	}
	b, err := fsapi.ReadFile(p.Path)
	if err != nil {
		return nil, fsError(err)
	}
	return protocol.FsReadFileResponse{DataBase64: base64.StdEncoding.EncodeToString(b)}, nil
}

func (s *Server) fsWriteFile(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.FsWriteFileParams) (any, error) {
	if err := absPaths(p.Path); err != nil {
		return nil, err
	}
	b, err := fsapi.DecodeBase64(protocol.MethodFsWriteFile, p.DataBase64)
	if err != nil {
		return nil, fsError(err)
	}
	if err := fsapi.WriteFile(p.Path, b); err != nil {
		return nil, fsError(err)
	}
	return protocol.FsWriteFileResponse{}, nil
}

func (s *Server) fsCreateDirectory(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.FsCreateDirectoryParams) (any, error) {
	if err := absPaths(p.Path); err != nil {
		return nil, err
	}
	if err := fsapi.CreateDirectory(p.Path, p.Recursive); err != nil {
		return nil, fsError(err)
	}
	return protocol.FsCreateDirectoryResponse{}, nil
}

func (s *Server) fsGetMetadata(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.FsGetMetadataParams) (any, error) {
	if err := absPaths(p.Path); err != nil {
		return nil, err
	}
	m, err := fsapi.GetMetadata(p.Path)
	if err != nil {
		return nil, fsError(err)
	}
	return protocol.FsGetMetadataResponse{IsDirectory: m.IsDirectory, IsFile: m.IsFile, IsSymlink: m.IsSymlink,
		CreatedAtMs: m.CreatedAtMs, ModifiedAtMs: m.ModifiedAtMs}, nil
}

func (s *Server) fsReadDirectory(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.FsReadDirectoryParams) (any, error) {
	if err := absPaths(p.Path); err != nil {
		return nil, err
	}
	ents, err := fsapi.ReadDirectory(p.Path)
	if err != nil {
		return nil, fsError(err)
	}
	out := make([]protocol.FsReadDirectoryEntry, 0, len(ents))
	for _, e := range ents {
		out = append(out, protocol.FsReadDirectoryEntry{FileName: e.Name, IsDirectory: e.IsDirectory, IsFile: e.IsFile})
	}
	return protocol.FsReadDirectoryResponse{Entries: out}, nil
}

func (s *Server) fsRemove(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.FsRemoveParams) (any, error) {
	if err := absPaths(p.Path); err != nil {
		return nil, err
	}
	if err := fsapi.Remove(p.Path, p.Recursive, p.Force); err != nil {
		return nil, fsError(err)
	}
	return protocol.FsRemoveResponse{}, nil
}

func (s *Server) fsCopy(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.FsCopyParams) (any, error) {
	if err := absPaths(p.SourcePath, p.DestinationPath); err != nil {
		return nil, err
	}
	if err := fsapi.Copy(p.SourcePath, p.DestinationPath, p.Recursive); err != nil {
		return nil, fsError(err)
	}
	return protocol.FsCopyResponse{}, nil
}

// fsWatchState holds each connection's fs/watch set.
type fsWatchState struct {
	mu    sync.Mutex
	byCon map[*connection]*fsapi.Watches
}

// connWatches is the connection's watch set, created on first use and closed with the connection.
func (s *Server) connWatches(c *connection) *fsapi.Watches {
	st := &s.watches
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.byCon == nil {
		st.byCon = map[*connection]*fsapi.Watches{}
	}
	ws := st.byCon[c]
	if ws == nil {
		ws = fsapi.NewWatches(s.log)
		st.byCon[c] = ws
		c.onClose(func() {
			st.mu.Lock()
			delete(st.byCon, c)
			st.mu.Unlock()
			ws.Close()
		})
	}
	return ws
}

func (s *Server) fsWatch(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.FsWatchParams) (any, error) {
	if err := absPaths(p.Path); err != nil {
		return nil, err
	}
	id := p.WatchID
	err := s.connWatches(c).Add(id, p.Path, func(paths []string) {
		c.notify(protocol.NotifyFsChanged, protocol.FsChangedNotification{WatchID: id, ChangedPaths: paths})
	})
	if err != nil {
		return nil, fsError(err)
	}
	return protocol.FsWatchResponse{Path: p.Path}, nil
}

func (s *Server) fsUnwatch(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.FsUnwatchParams) (any, error) {
	s.connWatches(c).Remove(p.WatchID)
	return protocol.FsUnwatchResponse{}, nil
}
