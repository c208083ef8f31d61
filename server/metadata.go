package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/threadindex"
)

// addMetadataRoutes routes thread/metadata/update; its state lives in threadindex.State, which index rebuilds
// leave alone.
func (s *Server) addMetadataRoutes(r map[string]route) {
	r[protocol.MethodThreadMetadataUpdate] = handle(s.threadMetadataUpdate)
}

// stateDB opens $CODEX_HOME's durable state database on first use and closes it with the server.
type stateDB struct {
	once sync.Once
	st   *threadindex.State
	err  error
}

func (s *Server) stateStore() (*threadindex.State, error) {
	s.state.once.Do(func() {
		s.state.st, s.state.err = threadindex.OpenState(filepath.Join(s.cfg.CodexHome, threadindex.StateFile))
		if s.state.err == nil {
			st := s.state.st
			go func() { <-s.ctx.Done(); _ = st.Close() }()
		}
	})
	if s.state.err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to open thread state: %v", s.state.err)
	}
	return s.state.st, nil
}

// overlayThreadMeta applies the client-set metadata of thread/metadata/update to a thread object.
// Until a client sets some, the database does not exist and reads never create it.
func (s *Server) overlayThreadMeta(ctx context.Context, th *protocol.Thread) {
	if _, err := os.Stat(filepath.Join(s.cfg.CodexHome, threadindex.StateFile)); err != nil {
		return
	}
	st, err := s.stateStore()
	if err != nil {
		return
	}
	m, err := st.ThreadMeta(ctx, th.ID)
	if err != nil {
		s.log.Warn("reading thread metadata", "thread", th.ID, "error", err)
		return
	}
	if m.GitInfo != nil {
		var gi protocol.GitInfo
		if json.Unmarshal([]byte(*m.GitInfo), &gi) == nil {
			th.GitInfo = &gi
		}
	}
	if m.Daybreak != nil {
		th.DaybreakEnabled = m.Daybreak
	}
	s.overlayProject(ctx, th)
}

func (s *Server) threadMetadataUpdate(ctx context.Context, _ *connection, req *jsonrpc.Request, p *protocol.ThreadMetadataUpdateParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	// gitInfo's fields: absent keeps, null clears, a string sets; the typed params cannot tell absent from null.
	var raw struct {
		GitInfo map[string]json.RawMessage `json:"gitInfo"`
	}
	_ = json.Unmarshal(req.Params, &raw)
	if p.GitInfo == nil && p.DaybreakEnabled == nil && p.ProjectID == nil {
		return nil, jsonrpc.InvalidRequest("thread metadata update must include at least one field")
	}
	if err := s.checkThreadProject(ctx, p.ProjectID); err != nil {
		return nil, err
	}
	var info protocol.Thread
	t, loaded := s.threads.Get(p.ThreadID)
	if loaded {
		info = t.Info()
	} else {
		th, err := s.threads.ReadStored(p.ThreadID, false)
		if errors.Is(err, thread.ErrNoRollout) {
			return nil, jsonrpc.InvalidRequest("no rollout found for thread id " + p.ThreadID)
		}
		if err != nil {
			return nil, storeError(err)
		}
		info = th
	}
	st, err := s.stateStore()
	if err != nil {
		return nil, err
	}
	s.overlayThreadMeta(ctx, &info)
	if p.GitInfo != nil {
		gi := protocol.GitInfo{}
		if info.GitInfo != nil {
			gi = *info.GitInfo
		}
		for key, field := range map[string]**string{"sha": &gi.Sha, "branch": &gi.Branch, "originUrl": &gi.OriginURL} {
			v, present := raw.GitInfo[key]
			if !present {
				continue
			}
			var val *string
			if err := json.Unmarshal(v, &val); err != nil {
				return nil, paramsError("invalid gitInfo." + key + ": " + err.Error())
			}
			*field = val
		}
		info.GitInfo = &gi
	}
	if p.DaybreakEnabled != nil {
		info.DaybreakEnabled = p.DaybreakEnabled
	}
	m := threadindex.ThreadMeta{Daybreak: info.DaybreakEnabled}
	if info.GitInfo != nil {
		b, _ := json.Marshal(info.GitInfo)
		js := string(b)
		m.GitInfo = &js
	}
	if err := st.SetThreadMeta(ctx, p.ThreadID, m); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to update thread metadata: %v", err)
	}
	if p.ProjectID != nil {
		if info.ProjectID, err = s.setThreadProject(ctx, p.ThreadID, p.ProjectID); err != nil {
			return nil, err
		}
	}
	if loaded {
		t.SetMetadata(info.GitInfo, info.DaybreakEnabled)
		info = t.Info()
	}
	// Like the reference, the answer carries the thread without turns and without canAcceptDirectInput.
	info.Turns = []protocol.Turn{}
	info.CanAcceptDirectInput = nil
	return protocol.ThreadMetadataUpdateResponse{Thread: info}, nil
}
