package mcpconn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Out-of-band elicitation state extension: servers advertising the experimental capability are
// told when the thread's timeouts are frozen.
const (
	PauseCapability = "codex/out-of-band-elicitation-state"
	pauseMethod     = "codex/out-of-band-elicitation-state/update"
	pauseTimeout    = 10 * time.Second
)

type pausedParams struct {
	mcp.ParamsBase
	Paused bool `json:"paused"`
}

type emptyResult struct {
	mcp.ResultBase
}

// SetPaused sends {"paused": paused} to every ready server that advertises the experimental
// capability "codex/out-of-band-elicitation-state"; other servers are skipped. It returns the
// joined errors of the servers that failed (the caller rolls its counter back).
func (m *Manager) SetPaused(ctx context.Context, paused bool) error {
	var targets []*server
	for _, s := range m.servers {
		s.mu.Lock()
		if s.status == StatusReady && s.alive && s.initRes != nil && s.initRes.Capabilities != nil {
			if _, ok := s.initRes.Capabilities.Experimental[PauseCapability]; ok {
				targets = append(targets, s)
			}
		}
		s.mu.Unlock()
	}
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, s := range targets {
		wg.Go(func() {
			s.mu.Lock()
			sess := s.session
			s.mu.Unlock()
			cctx, cancel := context.WithTimeout(ctx, pauseTimeout)
			defer cancel()
			if _, err := mcp.CallCustomMethod[*pausedParams, *emptyResult](cctx, sess, pauseMethod, &pausedParams{Paused: paused}); err != nil {
				errs[i] = fmt.Errorf("MCP server `%s` rejected %s: %w", s.cfg.Name, pauseMethod, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
