package server

import (
	"context"
	"errors"
	"sync"

	"appserver/jsonrpc"
	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// addSamplingRoutes routes thread/sample, thread/sample/cancel and thread/prediction/request.
func (s *Server) addSamplingRoutes(r map[string]route) {
	r[protocol.MethodThreadSample] = handle(s.threadSample)
	r[protocol.MethodThreadSampleCancel] = handle(s.threadSampleCancel)
	r[protocol.MethodThreadPredictionRequest] = handle(s.threadPredictionRequest)
}

// sampleKey names an in-flight thread/sample by its connection and JSON-RPC request id.
type sampleKey struct {
	conn *connection
	id   string
}

// sampleTable holds the cancel functions of in-flight thread/sample requests.
type sampleTable struct {
	mu      sync.Mutex
	pending map[sampleKey]context.CancelFunc
}

func (t *sampleTable) add(k sampleKey, cancel context.CancelFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = map[sampleKey]context.CancelFunc{}
	}
	t.pending[k] = cancel
}

func (t *sampleTable) remove(k sampleKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pending, k)
}

func (t *sampleTable) cancel(k sampleKey) {
	t.mu.Lock()
	cancel := t.pending[k]
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (s *Server) threadSample(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.ThreadSampleParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(uuidError(p.ThreadID))
	}
	t, ok := s.threads.Get(p.ThreadID)
	if !ok {
		return nil, jsonrpc.InvalidRequest("thread/sample requires a loaded source")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := sampleKey{conn: c, id: string(req.ID)}
	s.samples.add(key, cancel)
	defer s.samples.remove(key)
	opts := thread.SampleOptions{
		ExpectedTurnID: p.ExpectedTurnID, Prompt: p.Prompt, Effort: p.Effort,
		AllowInProgressTurn: p.AllowInProgressTurn != nil && *p.AllowInProgressTurn,
		ClientMetadata:      p.ResponsesapiClientMetadata,
	}
	if p.ThreadSource != nil {
		opts.ThreadSource = *p.ThreadSource
	}
	if p.TurnTrigger != nil {
		opts.TurnTrigger = *p.TurnTrigger
	}
	res, err := t.Sample(ctx, opts)
	switch {
	case errors.Is(err, thread.ErrSampleNoHistory):
		return nil, jsonrpc.InvalidRequest("invalid thread-store request: " + err.Error())
	case errors.Is(err, thread.ErrSampleSource):
		return nil, jsonrpc.InvalidRequest(err.Error())
	case ctx.Err() != nil:
		return nil, jsonrpc.InvalidRequest("thread/sample was cancelled")
	case err != nil:
		var me *model.Error
		if errors.As(err, &me) {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "thread/sample failed: %s", me.Message)
		}
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "thread/sample failed: %v", err)
	}
	resp := protocol.ThreadSampleResponse{SourceTurnID: res.SourceTurnID, ResponseID: res.ResponseID, Text: res.Text}
	if res.Usage != nil {
		resp.InputTokens, resp.CachedInputTokens, resp.OutputTokens = ptr(res.Usage.InputTokens), ptr(res.Usage.CachedInputTokens), ptr(res.Usage.OutputTokens)
	}
	return resp, nil
}

// threadSampleCancel cancels this connection's in-flight thread/sample with that request id; an id that
// names no sample is not an error, as in the reference.
func (s *Server) threadSampleCancel(_ context.Context, c *connection, _ *jsonrpc.Request, p *protocol.ThreadSampleCancelParams) (any, error) {
	s.samples.cancel(sampleKey{conn: c, id: requestIDKey(p.RequestID)})
	return protocol.ThreadSampleCancelResponse{}, nil
}

// requestIDKey renders a RequestId as its JSON text, the form jsonrpc.Request.ID holds.
func requestIDKey(id protocol.RequestId) string {
	b, err := id.MarshalJSON()
	if err != nil {
		return ""
	}
	return string(b)
}

// threadPredictionRequest answers as the reference 0.169 does: the method exists in the schema but is
// not implemented there.
func (s *Server) threadPredictionRequest(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.ThreadPredictionRequestParams) (any, error) {
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: protocol.MethodThreadPredictionRequest + " is not implemented yet"}
}
