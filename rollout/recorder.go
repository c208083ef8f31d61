package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrClosed is returned by appends on a closed Recorder.
var ErrClosed = errors.New("rollout: recorder closed")

// timestampLayout is the reference's record timestamp format (UTC, milliseconds).
const timestampLayout = "2006-01-02T15:04:05.000Z"

// FormatTimestamp renders t the way rollout records and session_meta carry it.
func FormatTimestamp(t time.Time) string { return t.UTC().Format(timestampLayout) }

// Event is an event_msg payload that knows its "type" tag.
type Event interface{ EventType() string }

// EventType returns "task_started".
func (TaskStarted) EventType() string { return "task_started" }

// EventType returns "task_complete".
func (TaskComplete) EventType() string { return "task_complete" }

// EventType returns "turn_aborted".
func (TurnAborted) EventType() string { return "turn_aborted" }

// EventType returns "token_count".
func (TokenCount) EventType() string { return "token_count" }

// EventType returns "item_completed".
func (ItemCompleted) EventType() string { return "item_completed" }

// EventType returns "user_message".
func (UserMessage) EventType() string { return "user_message" }

// EventType returns "agent_message".
func (AgentMessage) EventType() string { return "agent_message" }

// EventType returns "agent_reasoning".
func (AgentReasoning) EventType() string { return "agent_reasoning" }

// EventType returns "thread_name_updated".
func (ThreadNameUpdated) EventType() string { return "thread_name_updated" }

// TurnContext is the per-turn settings record (type turn_context). Policy members are kept as raw JSON values in
// the reference's shapes (e.g. sandbox_policy {"type":"read-only"}).
type TurnContext struct {
	TurnID            string `json:"turn_id,omitempty"`
	RootTurnID        string `json:"root_turn_id,omitempty"`
	Cwd               string `json:"cwd"`
	ApprovalPolicy    string `json:"approval_policy"`
	ApprovalsReviewer string `json:"approvals_reviewer,omitempty"`
	PermissionProfile any    `json:"permission_profile,omitempty"`
	SandboxPolicy     any    `json:"sandbox_policy"`
	Model             string `json:"model"`
	Effort            string `json:"effort,omitempty"`
	Summary           string `json:"summary,omitempty"`
	CollaborationMode any    `json:"collaboration_mode,omitempty"`
	MultiAgentVersion string `json:"multi_agent_version,omitempty"` // "v1" or "v2", fixed when the thread starts
	Personality       string `json:"personality,omitempty"`
}

// Recorder appends records to one rollout file. Every append is one write(2) of a whole line, so a crash leaves
// every completed line readable. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	f      *os.File
	path   string
	next   int64
	now    func() time.Time
	closed bool
	held   int     // open holds (Hold)
	pend   *[]byte // lines written while held, not on disk yet (a scratch buffer)
}

// RolloutFileName returns the reference's file name for a thread created at t (local time).
func RolloutFileName(threadID string, t time.Time) string {
	return "rollout-" + t.Local().Format("2006-01-02T15-04-05") + "-" + threadID + ".jsonl"
}

// Create makes $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl (local date of now) and writes the
// session_meta line. meta.Timestamp and meta.SessionID default to now and meta.ID; the first ordinal is 0, or
// meta.HistoryBase.EndOrdinalExclusive for a fork that references its parent.
func Create(codexHome string, meta SessionMeta, now time.Time) (*Recorder, error) {
	if meta.ID == "" {
		return nil, errors.New("rollout: session meta without id")
	}
	if meta.Timestamp == "" {
		meta.Timestamp = FormatTimestamp(now)
	}
	if meta.SessionID == "" {
		meta.SessionID = meta.ID
	}
	local := now.Local()
	dir := filepath.Join(codexHome, "sessions", local.Format("2006"), local.Format("01"), local.Format("02"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("rollout: create sessions dir: %w", err)
	}
	path := filepath.Join(dir, RolloutFileName(meta.ID, now))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("rollout: create %s: %w", path, err)
	}
	r := &Recorder{f: f, path: path, now: time.Now}
	if meta.HistoryBase != nil {
		r.next = meta.HistoryBase.EndOrdinalExclusive
	}
	if err := r.writeAt(TypeSessionMeta, meta, now); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, err
	}
	return r, nil
}

// OpenAppend reopens an existing rollout (a resumed thread) for appending; ordinals continue after the highest one
// in the file, and a torn last line is terminated first so new records start on their own line.
func OpenAppend(path string) (*Recorder, error) {
	next, endsWithNewline, err := scanNextOrdinal(path)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("rollout: open %s: %w", path, err)
	}
	if !endsWithNewline {
		if _, err := f.Write([]byte("\n")); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("rollout: terminate torn line: %w", err)
		}
	}
	return &Recorder{f: f, path: path, next: next, now: time.Now}, nil
}

// scanNextOrdinal returns 1 + the highest ordinal of the file (or its line count when ordinals are missing) and
// whether the file ends with a newline (or is empty).
func scanNextOrdinal(path string) (int64, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, fmt.Errorf("rollout: open %s: %w", path, err)
	}
	defer f.Close()
	lr := newLineReader(f)
	defer lr.release()
	var next, lines int64
	endsWithNewline := true
	for {
		ln, _, complete, err := lr.next(256)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, false, fmt.Errorf("rollout: read %s: %w", path, err)
		}
		endsWithNewline = complete
		if len(bytes.TrimSpace(ln)) == 0 || (!complete && !json.Valid(ln)) {
			continue // a torn last line is dropped by readers; its ordinal is reused
		}
		lines++
		if o, ok := prefixOrdinal(ln); ok && o+1 > next {
			next = o + 1
		}
	}
	if lines > next {
		next = lines
	}
	return next, endsWithNewline, nil
}

// Path returns the rollout file's path.
func (r *Recorder) Path() string { return r.path }

// AppendResponseItem records one Responses API item exactly as given (type response_item).
func (r *Recorder) AppendResponseItem(raw json.RawMessage) error {
	if !json.Valid(raw) {
		return errors.New("rollout: response item is not valid JSON")
	}
	return r.Append(TypeResponseItem, raw)
}

// AppendTurnContext records the settings of a starting turn (type turn_context).
func (r *Recorder) AppendTurnContext(tc TurnContext) error { return r.Append(TypeTurnContext, tc) }

// AppendEvent records an event_msg. payload is an Event (its tag is added as the first member "type") or any value
// that already marshals to an object with a "type" member.
func (r *Recorder) AppendEvent(payload any) error {
	ev, ok := payload.(Event)
	if !ok {
		return r.Append(TypeEventMsg, payload)
	}
	bodyBuf := getScratch()
	defer putScratch(bodyBuf)
	body, err := appendNoEscape((*bodyBuf)[:0], payload)
	*bodyBuf = body
	if err != nil {
		return fmt.Errorf("rollout: marshal event: %w", err)
	}
	if len(body) < 2 || body[0] != '{' {
		return errors.New("rollout: event payload is not an object")
	}
	outBuf := getScratch()
	defer putScratch(outBuf)
	out := append((*outBuf)[:0], `{"type":`...)
	out = appendTag(out, ev.EventType())
	if len(body) > 2 {
		out = append(out, ',')
	}
	out = append(out, body[1:]...)
	*outBuf = out
	// out is compact (encoding/json's output around a compact tag), so it goes in as it is: what
	// marshalling it as a json.RawMessage would write.
	return r.writeCompact(TypeEventMsg, out, time.Time{})
}

// appendTag appends an event's type tag as json.Marshal encodes it.
func appendTag(dst []byte, tag string) []byte {
	for i := 0; i < len(tag); i++ {
		if c := tag[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == '/') {
			b, _ := json.Marshal(tag)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, tag...)
	return append(dst, '"')
}

// Append records any payload under the given record type (compacted, world_state, token_usage_record, …).
func (r *Recorder) Append(recordType string, payload any) error {
	return r.writeAt(recordType, payload, time.Time{})
}

func (r *Recorder) writeAt(recordType string, payload any, at time.Time) error {
	bodyBuf := getScratch()
	defer putScratch(bodyBuf)
	body, err := appendNoEscape((*bodyBuf)[:0], payload)
	*bodyBuf = body
	if err != nil {
		return fmt.Errorf("rollout: marshal %s: %w", recordType, err)
	}
	return r.writeCompact(recordType, body, at)
}

// writeCompact writes one line whose payload is body, compact JSON as marshalNoEscape writes it.
func (r *Recorder) writeCompact(recordType string, body []byte, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if at.IsZero() {
		at = r.now()
	}
	if r.held > 0 {
		if r.pend == nil {
			r.pend = getScratch()
			*r.pend = (*r.pend)[:0]
		}
		buf, err := appendLine(*r.pend, FormatTimestamp(at), r.next, recordType, body)
		if err != nil {
			return fmt.Errorf("rollout: marshal record: %w", err)
		}
		*r.pend = buf
		r.next++
		return nil
	}
	lineBuf := getScratch()
	defer putScratch(lineBuf)
	buf, err := appendLine((*lineBuf)[:0], FormatTimestamp(at), r.next, recordType, body)
	if err != nil {
		return fmt.Errorf("rollout: marshal record: %w", err)
	}
	*lineBuf = buf
	if _, err := r.f.Write(buf); err != nil {
		return fmt.Errorf("rollout: write %s: %w", r.path, err)
	}
	r.next++
	return nil
}

// Hold keeps the lines appended from now on in memory until the returned release is called (once): the
// records of a burst then reach the file in one write. Holds nest; the last release writes the lines
// and returns the write's error. The holder must not wait for anything while it holds (Flush, Sync and
// Close write the held lines at once).
func (r *Recorder) Hold() (release func() error) {
	r.mu.Lock()
	r.held++
	r.mu.Unlock()
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.held--; r.held == 0 {
				err = r.flushLocked()
			}
		})
		return err
	}
}

// Flush writes the lines held back by open holds (see Hold); later lines are still held.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flushLocked()
}

func (r *Recorder) flushLocked() error {
	if r.pend == nil {
		return nil
	}
	buf := r.pend
	r.pend = nil
	defer putScratch(buf)
	if r.closed || len(*buf) == 0 {
		return nil
	}
	if _, err := r.f.Write(*buf); err != nil {
		return fmt.Errorf("rollout: write %s: %w", r.path, err)
	}
	return nil
}

// maxScratch is the largest scratch buffer kept for reuse.
const maxScratch = 256 << 10

// scratchPool holds the buffers a line is encoded in before it is written (nothing keeps them after).
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

func getScratch() *[]byte { return scratchPool.Get().(*[]byte) }

func putScratch(b *[]byte) {
	if cap(*b) <= maxScratch {
		scratchPool.Put(b)
	}
}

// appendLine appends one rollout line (newline included): what marshalNoEscape(line{…}) writes, without
// encoding/json's reflection and without compacting payload once more (marshalNoEscape's output is
// compact already).
func appendLine(dst []byte, timestamp string, ordinal int64, recordType string, payload []byte) ([]byte, error) {
	var err error
	dst = append(dst, `{"timestamp":`...)
	if dst, err = appendJSONString(dst, timestamp); err != nil {
		return nil, err
	}
	dst = append(dst, `,"ordinal":`...)
	dst = strconv.AppendInt(dst, ordinal, 10)
	dst = append(dst, `,"type":`...)
	if dst, err = appendJSONString(dst, recordType); err != nil {
		return nil, err
	}
	dst = append(dst, `,"payload":`...)
	dst = append(dst, payload...)
	return append(dst, '}', '\n'), nil
}

// appendJSONString appends s as marshalNoEscape encodes it.
func appendJSONString(dst []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			b, err := marshalNoEscape(s)
			return append(dst, b...), err
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"'), nil
}

// marshalNoEscape is json.Marshal without HTML escaping ("<environment_context>" stays readable, as the
// reference writes it).
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// sliceEncoder is a json.Encoder without HTML escaping that appends to a byte slice.
type sliceEncoder struct {
	b   []byte
	enc *json.Encoder
}

func (e *sliceEncoder) Write(p []byte) (int, error) {
	e.b = append(e.b, p...)
	return len(p), nil
}

var sliceEncoderPool = sync.Pool{New: func() any {
	e := &sliceEncoder{}
	e.enc = json.NewEncoder(e)
	e.enc.SetEscapeHTML(false)
	return e
}}

// appendNoEscape appends marshalNoEscape(v) to dst. The encoder writes a value in one Write and keeps no
// error of its own (its writer never fails), so pooled encoders serve any caller.
func appendNoEscape(dst []byte, v any) ([]byte, error) {
	e := sliceEncoderPool.Get().(*sliceEncoder)
	e.b = dst
	err := e.enc.Encode(v)
	b := e.b
	e.b = nil
	sliceEncoderPool.Put(e)
	if err != nil {
		return dst, err
	}
	return b[:len(b)-1], nil // Encode ends the value with a newline
}

// Sync flushes the file to stable storage (fsync).
func (r *Recorder) Sync() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if err := r.flushLocked(); err != nil {
		return err
	}
	return r.f.Sync()
}

// Close syncs and closes the file; later appends fail with ErrClosed. Closing twice is a no-op.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	ferr := r.flushLocked()
	r.closed = true
	serr := r.f.Sync()
	cerr := r.f.Close()
	return errors.Join(ferr, serr, cerr)
}

// Item MarshalJSON methods force the reference's "type" tags.

// MarshalJSON encodes the item with type "UserMessage".
func (i UserMessageItem) MarshalJSON() ([]byte, error) {
	type plain UserMessageItem
	i.Type = "UserMessage"
	if i.Content == nil {
		i.Content = []any{}
	}
	return marshalNoEscape(plain(i))
}

// MarshalJSON encodes the item with type "AgentMessage".
func (i AgentMessageItem) MarshalJSON() ([]byte, error) {
	type plain AgentMessageItem
	i.Type = "AgentMessage"
	for k := range i.Content {
		if i.Content[k].Type == "" {
			i.Content[k].Type = "Text"
		}
	}
	return marshalNoEscape(plain(i))
}

// MarshalJSON encodes the item with type "Reasoning".
func (i ReasoningItem) MarshalJSON() ([]byte, error) {
	type plain ReasoningItem
	i.Type = "Reasoning"
	if i.SummaryText == nil {
		i.SummaryText = []string{}
	}
	if i.RawContent == nil {
		i.RawContent = []string{}
	}
	return marshalNoEscape(plain(i))
}

// MarshalJSON encodes the item with type "CommandExecution".
func (i CommandExecutionItem) MarshalJSON() ([]byte, error) {
	type plain CommandExecutionItem
	i.Type = "CommandExecution"
	if i.ParsedCmd == nil {
		i.ParsedCmd = []ParsedCommand{}
	}
	if strings.HasPrefix(i.Cwd, "/") {
		// The reference records the cwd as a file:// URL and rejects plain paths.
		i.Cwd = (&url.URL{Scheme: "file", Path: i.Cwd}).String()
	}
	return marshalNoEscape(plain(i))
}

// MarshalJSON encodes the members each parsed_cmd variant carries in the reference (path/query as null when
// unknown).
func (p ParsedCommand) MarshalJSON() ([]byte, error) {
	m := map[string]any{"type": p.Type, "cmd": p.Cmd}
	switch p.Type {
	case "read":
		m["name"] = p.Name
		m["path"] = p.Path
	case "list_files":
		m["path"] = p.Path
	case "search":
		m["query"] = p.Query
		m["path"] = p.Path
	case "":
		m["type"] = "unknown"
	}
	return marshalNoEscape(m)
}

// MarshalJSON encodes the item with type "McpToolCall".
func (i McpToolCallItem) MarshalJSON() ([]byte, error) {
	type plain McpToolCallItem
	i.Type = "McpToolCall"
	return marshalNoEscape(plain(i))
}

// MarshalJSON encodes the item with type "FileChange".
func (i FileChangeItem) MarshalJSON() ([]byte, error) {
	type plain FileChangeItem
	i.Type = "FileChange"
	if i.Changes == nil {
		i.Changes = []FileChange{}
	}
	return marshalNoEscape(plain(i))
}

// AppendCopies records each record line of data (a rollout's bytes) again, restamped now: a fork of a legacy
// thread starts with its parent's history copied, as the reference writes it. Lines that are not records are
// skipped.
func (r *Recorder) AppendCopies(data []byte) error {
	var body bytes.Buffer
	for len(data) > 0 {
		ln := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			ln, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		var rec struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(ln, &rec) != nil || rec.Type == "" || len(rec.Payload) == 0 {
			continue
		}
		body.Reset()
		if json.Compact(&body, rec.Payload) != nil {
			continue
		}
		if err := r.writeCompact(rec.Type, body.Bytes(), time.Time{}); err != nil {
			return err
		}
	}
	return nil
}
