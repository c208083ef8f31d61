// Package mockmodel is a scriptable mock of the OpenAI Responses API (POST /v1/responses over
// SSE) for tests: a Go port of the conformance harness's mockmodel.py, with the same response
// spec, item ids (msg_<n>_<k>, fc_<n>_<k>, rs_<n>_<k>, ...), captures and notes, so Go tests can
// mirror the shared golden transcripts.
package mockmodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// ModelName is the model name the mock reports in response.created / response.completed.
const ModelName = "mock-model"

// Request is one HTTP request the mock received.
type Request struct {
	Seq    int            // index among all requests (any method/path)
	Method string         // "POST", "GET", ...
	Path   string         // URL path, e.g. "/v1/responses"
	Query  string         // raw query string
	Header http.Header    // request headers, Authorization included
	Raw    []byte         // body bytes as received
	Body   map[string]any // Raw parsed as a JSON object (nil if it was not one)
}

// Note is something the mock observed while serving, e.g. "client_disconnected_during_hang".
type Note struct {
	What string  // "hang", "hang_released", "client_disconnected_during_hang", "client_disconnected_mid_stream", "capture_failed: ...", "exhausted"
	Seq  int     // index of the POST /responses request concerned
	At   float64 // seconds since the server started
}

// Server is a running mock; every method is safe for concurrent use.
type Server struct {
	t       testing.TB
	srv     *httptest.Server
	start   time.Time
	release chan struct{} // closed by Release
	stop    chan struct{} // closed at cleanup

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced whenever requests grow
	queue     []Response
	routed    []routed // responses for the requests a matcher picks, before the queue
	requests  []Request
	nResp     int // POST /responses seen
	parsed    int // requests[:parsed] have Body filled
	notes     []Note
	exhausted int
	models    any
	relOnce   sync.Once
}

// New starts a mock on 127.0.0.1 with an ephemeral port; it is closed via t.Cleanup (hung
// streams are released first).
func New(t testing.TB) *Server {
	s := &Server{
		t:       t,
		start:   time.Now(),
		release: make(chan struct{}),
		stop:    make(chan struct{}),
		changed: make(chan struct{}),
		models:  map[string]any{"models": []any{}},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(func() {
		close(s.stop)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// URL returns the base URL to configure as a provider's base_url, e.g. "http://127.0.0.1:PORT/v1".
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Enqueue appends response specs, served FIFO to POST /responses.
func (s *Server) Enqueue(resp ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, resp...)
}

// Pending returns how many enqueued responses were not served yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Exhausted returns how many times the queue was empty and the fallback message was served.
func (s *Server) Exhausted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exhausted
}

// SetModels sets the JSON value answered to GET {base}/models (default {"models": []}).
func (s *Server) SetModels(body any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = body
}

// Requests returns a copy of every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parseBodiesLocked()
	return append([]Request(nil), s.requests...)
}

// ResponseRequests returns the POST .../responses requests received so far.
func (s *Server) ResponseRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parseBodiesLocked()
	var out []Request
	for _, r := range s.requests {
		if isResponses(r.Method, r.Path) {
			out = append(out, r)
		}
	}
	return out
}

// WaitRequests blocks until at least n POST /responses requests arrived or ctx is done.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, ch := s.nResp, s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("mockmodel: %d of %d requests: %w", got, n, ctx.Err())
		}
	}
}

// Release ends every current and future hang (like the harness's model_release).
func (s *Server) Release() { s.relOnce.Do(func() { close(s.release) }) }

// Notes returns what the mock observed so far.
func (s *Server) Notes() []Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Note(nil), s.notes...)
}

// HasNote reports whether a note with exactly this What was recorded.
func (s *Server) HasNote(what string) bool {
	for _, n := range s.Notes() {
		if n.What == what {
			return true
		}
	}
	return false
}

func (s *Server) note(what string, seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, Note{What: what, Seq: seq, At: time.Since(s.start).Seconds()})
}

func isResponses(method, path string) bool {
	return method == http.MethodPost && strings.HasSuffix(strings.TrimRight(path, "/"), "/responses")
}

// record stores r and returns its index among POST /responses requests (or -1). The body is parsed
// only when asked for (Requests, captures): a long thread's history would otherwise cost the mock more
// CPU per request than the server under test spends, hiding the server in benchmarks.
func (s *Server) record(r *http.Request, raw []byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{
		Seq: len(s.requests), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: r.Header.Clone(), Raw: raw,
	})
	seq := -1
	if isResponses(r.Method, r.URL.Path) {
		seq = s.nResp
		s.nResp++
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return seq
}

// parseBodiesLocked fills Body of the recorded requests not parsed yet; s.mu is held.
func (s *Server) parseBodiesLocked() {
	for ; s.parsed < len(s.requests); s.parsed++ {
		s.requests[s.parsed].Body = parseBody(s.requests[s.parsed].Raw)
	}
}

// parseBody returns raw parsed as a JSON object (nil if it is not one).
func parseBody(raw []byte) map[string]any {
	var body map[string]any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &body)
	}
	return body
}

// routed is a response waiting for a request its matcher accepts.
type routed struct {
	match func(r Request) bool
	resp  Response
}

// EnqueueFor queues responses for the requests match accepts (each answers one, in order); requests no
// matcher accepts take the plain queue's (e.g. a sub-agent's requests, told by their headers).
func (s *Server) EnqueueFor(match func(r Request) bool, resp ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range resp {
		s.routed = append(s.routed, routed{match: match, resp: r})
	}
}

// SubAgentRequest reports whether a request is a spawned sub-agent's (it names its parent thread).
func SubAgentRequest(r Request) bool { return r.Header.Get("x-codex-parent-thread-id") != "" }

// nextSpec pops the next scripted response for req (a routed one first); ok is false when the fallback is
// served.
func (s *Server) nextSpec(req Request) (spec Response, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.routed {
		if r.match(req) {
			s.routed = append(s.routed[:i:i], s.routed[i+1:]...)
			return r.resp, true
		}
	}
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return r, true
	}
	s.exhausted++
	return fallback, false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	seq := s.record(r, raw)
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(strings.TrimRight(r.URL.Path, "/"), "/models"):
		s.mu.Lock()
		models := s.models
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, models)
	case seq >= 0:
		spec, ok := s.nextSpec(Request{Method: r.Method, Path: r.URL.Path, Header: r.Header, Raw: raw})
		if !ok {
			s.note("exhausted", seq)
		}
		if sub, err := applyCaptures(spec, raw); err != nil {
			s.note("capture_failed: "+err.Error(), seq)
		} else {
			spec = sub
		}
		s.serve(w, r, spec, seq)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"message": "mockmodel: unknown path " + r.URL.Path}})
	}
}

// errClientGone aborts serving when the client went away.
var errClientGone = errors.New("client gone")

type streamer struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	seq   int
	delay time.Duration
}

func (st *streamer) event(ev map[string]any) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(st.w, "event: %v\ndata: %s\n\n", ev["type"], data); err != nil {
		return errClientGone
	}
	if err := http.NewResponseController(st.w).Flush(); err != nil {
		return errClientGone
	}
	if st.delay > 0 {
		return st.sleep(st.delay)
	}
	return nil
}

func (st *streamer) sleep(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-st.r.Context().Done():
		return errClientGone
	case <-st.s.stop:
		return errClientGone
	}
}

// hang keeps the stream open; it returns errClientGone if the client disconnected.
func (st *streamer) hang(maxS float64) error {
	if maxS <= 0 {
		maxS = 120
	}
	st.s.note("hang", st.seq)
	t := time.NewTimer(time.Duration(maxS * float64(time.Second)))
	defer t.Stop()
	select {
	case <-st.r.Context().Done():
		st.s.note("client_disconnected_during_hang", st.seq)
		return errClientGone
	case <-t.C:
	case <-st.s.release:
	case <-st.s.stop:
	}
	st.s.note("hang_released", st.seq)
	return nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, spec Response, seq int) {
	rid := spec.ID
	if rid == "" {
		rid = fmt.Sprintf("resp-%d", seq+1)
	}
	st := &streamer{s: s, w: w, r: r, seq: seq, delay: 5 * time.Millisecond}
	if spec.EventDelayMs != nil {
		st.delay = time.Duration(*spec.EventDelayMs) * time.Millisecond
	}
	if spec.DelayMs > 0 {
		if st.sleep(time.Duration(spec.DelayMs)*time.Millisecond) != nil {
			return
		}
	}
	for k, v := range spec.Headers {
		w.Header().Set(k, v)
	}
	if spec.HTTPStatus != 0 && spec.HTTPStatus != http.StatusOK {
		eb := spec.ErrorBody
		if eb == nil {
			eb = map[string]any{"error": map[string]any{"type": "server_error",
				"message": fmt.Sprintf("mockmodel scripted HTTP %d", spec.HTTPStatus)}}
		}
		writeJSON(w, spec.HTTPStatus, eb)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	err := st.items(spec, rid)
	if errors.Is(err, errClientGone) {
		if r.Context().Err() != nil && !s.HasNoteFor("client_disconnected_during_hang", seq) {
			s.note("client_disconnected_mid_stream", seq)
		}
		return
	}
	if err != nil {
		s.t.Errorf("mockmodel: %v", err)
		return
	}
	if spec.Truncate {
		// Abort the connection without the terminating chunk: the client sees an unexpected EOF.
		panic(http.ErrAbortHandler)
	}
}

// HasNoteFor reports whether a note with this What was recorded for request seq.
func (s *Server) HasNoteFor(what string, seq int) bool {
	for _, n := range s.Notes() {
		if n.What == what && n.Seq == seq {
			return true
		}
	}
	return false
}

func (st *streamer) items(spec Response, rid string) error {
	if err := st.event(map[string]any{"type": "response.created", "response": map[string]any{
		"id": rid, "object": "response", "status": "in_progress", "model": ModelName, "output": []any{}}}); err != nil {
		return err
	}
	n := st.seq + 1
	out := 0
	for i, it := range spec.Items {
		var err error
		switch it.Type {
		case "message":
			err = st.message(it, fmt.Sprintf("msg_%d_%d", n, i), out)
			out++
		case "function_call":
			err = st.functionCall(it, n, i, out)
			out++
		case "custom_tool_call":
			err = st.customToolCall(it, n, i, out)
			out++
		case "reasoning":
			err = st.reasoning(it, fmt.Sprintf("rs_%d_%d", n, i), out)
			out++
		case "sleep":
			ms := it.Ms
			if ms == 0 {
				ms = 100
			}
			err = st.sleep(time.Duration(ms) * time.Millisecond)
		case "hang":
			err = st.hang(it.MaxS)
		case "raw_event":
			if _, ok := it.Event["type"]; !ok {
				return fmt.Errorf("raw_event item %d has no type", i)
			}
			err = st.event(it.Event)
		default:
			return fmt.Errorf("unknown item type %q", it.Type)
		}
		if err != nil {
			return err
		}
	}
	if spec.Truncate {
		return nil
	}
	if spec.Completed == nil || *spec.Completed {
		usage := map[string]any{}
		for k, v := range defaultUsage {
			usage[k] = v
		}
		for k, v := range spec.Usage {
			usage[k] = v
		}
		return st.event(map[string]any{"type": "response.completed", "response": map[string]any{
			"id": rid, "object": "response", "status": "completed", "model": ModelName, "usage": usage}})
	}
	return nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func (st *streamer) message(it Item, defID string, out int) error {
	id := orDefault(it.ID, defID)
	if err := st.event(map[string]any{"type": "response.output_item.added", "output_index": out,
		"item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}}); err != nil {
		return err
	}
	chunks := it.Chunks
	if chunks == 0 {
		chunks = 3
	}
	for ci, part := range split(it.Text, chunks) {
		if it.HangAfterChunks != nil && ci == *it.HangAfterChunks {
			if err := st.hang(it.MaxS); err != nil {
				return err
			}
		}
		if err := st.event(map[string]any{"type": "response.output_text.delta", "item_id": id,
			"output_index": out, "content_index": 0, "delta": part}); err != nil {
			return err
		}
	}
	item := map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": it.Text, "annotations": []any{}}}}
	if it.Phase != "" {
		item["phase"] = it.Phase
	}
	return st.event(map[string]any{"type": "response.output_item.done", "output_index": out, "item": item})
}

func (st *streamer) functionCall(it Item, n, i, out int) error {
	args, ok := it.Arguments.(string)
	if !ok {
		a := it.Arguments
		if a == nil {
			a = map[string]any{}
		}
		b, err := json.Marshal(a)
		if err != nil {
			return err
		}
		args = string(b)
	}
	base := func(arguments, status string) map[string]any {
		m := map[string]any{"type": "function_call", "id": orDefault(it.ID, fmt.Sprintf("fc_%d_%d", n, i)),
			"call_id": orDefault(it.CallID, fmt.Sprintf("call_%d_%d", n, i)), "name": it.Name,
			"arguments": arguments, "status": status}
		if it.Namespace != "" {
			m["namespace"] = it.Namespace
		}
		return m
	}
	if err := st.event(map[string]any{"type": "response.output_item.added", "output_index": out, "item": base("", "in_progress")}); err != nil {
		return err
	}
	return st.event(map[string]any{"type": "response.output_item.done", "output_index": out, "item": base(args, "completed")})
}

func (st *streamer) customToolCall(it Item, n, i, out int) error {
	item := func(input, status string) map[string]any {
		return map[string]any{"type": "custom_tool_call", "id": orDefault(it.ID, fmt.Sprintf("ctc_%d_%d", n, i)),
			"call_id": orDefault(it.CallID, fmt.Sprintf("call_%d_%d", n, i)), "name": it.Name,
			"input": input, "status": status}
	}
	if err := st.event(map[string]any{"type": "response.output_item.added", "output_index": out, "item": item("", "in_progress")}); err != nil {
		return err
	}
	return st.event(map[string]any{"type": "response.output_item.done", "output_index": out, "item": item(it.Input, "completed")})
}

func (st *streamer) reasoning(it Item, defID string, out int) error {
	id := orDefault(it.ID, defID)
	if err := st.event(map[string]any{"type": "response.output_item.added", "output_index": out,
		"item": map[string]any{"type": "reasoning", "id": id, "summary": []any{}}}); err != nil {
		return err
	}
	summ := []any{}
	for si, s := range it.Summary {
		summ = append(summ, map[string]any{"type": "summary_text", "text": s})
		if err := st.event(map[string]any{"type": "response.reasoning_summary_part.added", "item_id": id,
			"output_index": out, "summary_index": si}); err != nil {
			return err
		}
		if err := st.event(map[string]any{"type": "response.reasoning_summary_text.delta", "item_id": id,
			"output_index": out, "summary_index": si, "delta": s}); err != nil {
			return err
		}
	}
	return st.event(map[string]any{"type": "response.output_item.done", "output_index": out,
		"item": map[string]any{"type": "reasoning", "id": id, "summary": summ}})
}
