package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ErrNoSessionMeta is returned when a file has no readable session_meta record.
var ErrNoSessionMeta = errors.New("rollout: no session_meta record")

// SessionMetaError is the failure to read a thread whose rollout exists but has no readable session
// metadata (see ValidSource), worded as the reference's thread/read, thread/resume and thread/fork
// report it. It wraps ErrNoSessionMeta.
type SessionMetaError struct{ Path string }

func (e *SessionMetaError) Error() string {
	return fmt.Sprintf("failed to read thread: thread-store internal error: failed to read session metadata %[1]s: "+
		"thread-store internal error: failed to read session metadata %[1]s: rollout at %[1]s does not start with session metadata", e.Path)
}

func (e *SessionMetaError) Unwrap() error { return ErrNoSessionMeta }

// Turn status values (protocol TurnStatus).
const (
	TurnCompleted   = "completed"
	TurnInterrupted = "interrupted"
	TurnFailed      = "failed"
	TurnInProgress  = "inProgress"
)

// Turn is one turn rebuilt for the UI, shaped like the protocol's Turn (JSON-ready).
type Turn struct {
	ID          string           `json:"id"`
	RootTurnID  *string          `json:"rootTurnId"`
	Items       []map[string]any `json:"items"`
	ItemsView   string           `json:"itemsView"`
	Status      string           `json:"status"`
	Error       map[string]any   `json:"error"`
	StartedAt   *int64           `json:"startedAt"`
	CompletedAt *int64           `json:"completedAt"`
	DurationMs  *int64           `json:"durationMs"`
	// Ordinal is the rollout ordinal of the record that opened the turn and ItemOrdinals the ordinal of the
	// record that first produced each item (parallel to Items); both are set by ReadFile for the thread's own
	// file and feed the reference's history projection (package refstate).
	Ordinal      int64   `json:"-"`
	ItemOrdinals []int64 `json:"-"`
	// Inherited marks a turn read from a fork's parent (session_meta.history_base), not from the thread's own
	// file: the reference's history database holds it under the parent only.
	Inherited bool `json:"-"`
}

// Thread is a whole rollout read back.
type Thread struct {
	Meta SessionMeta
	Path string
	// Name is the last thread_name_updated event in the file; the reference keeps names in session_index.jsonl,
	// which Store applies on top.
	Name string
	// Preview is the first user message's text.
	Preview   string
	CreatedAt time.Time // session_meta timestamp
	UpdatedAt time.Time // last record's timestamp
	// Model and ReasoningEffort come from the last turn_context.
	Model           string
	ReasoningEffort string
	// LastTurnContext is the last turn_context payload, raw.
	LastTurnContext json.RawMessage
	// WorldState reports a world_state record: the reference's record of what the model was told, from
	// which it tells a resumed thread only what changed (without one it sends the whole context again).
	WorldState bool
	// Settings is the last thread_settings_applied event's settings (nil when there is none).
	Settings *ThreadSettings
	// TokenUsage is the info of the last token_count event.
	TokenUsage *TokenUsageInfo
	// ResponseItems is the model-visible history in order (after compactions), with the reference's internal
	// bookkeeping member internal_chat_message_metadata_passthrough removed, ready to send to the model.
	ResponseItems []json.RawMessage
	// Turns is the history rebuilt as thread/read returns it; a turn left open by a crash is "interrupted".
	Turns []Turn
	// NextOrdinal is one past the highest ordinal in the file.
	NextOrdinal int64
}

// ReadFile reads a rollout in a single streaming pass. Forks recorded by the reference (session_meta.history_base)
// are resolved by reading the parent's first bytes from the same CODEX_HOME. Unparseable lines are skipped with a
// warning.
func ReadFile(path string) (*Thread, error) {
	b := &builder{th: &Thread{Path: path}, turnIndex: map[string]int{}}
	if err := b.readFile(path, -1, 0, true); err != nil {
		return nil, err
	}
	b.finish()
	return b.th, nil
}

type builder struct {
	th        *Thread
	paginated bool
	turnIndex map[string]int
	cur       int // index of the open turn in th.Turns, -1 if none
	curOpen   bool
	implicit  bool // the open turn was opened by a legacy user_message, not task_started
	byItem    bool // the open turn was opened by an item of it, not task_started
	legacyN   int
	implicitN int
	haveMeta  bool
	inParent  bool  // reading a fork's parent
	ord       int64 // ordinal of the record being added
	// tcArena holds every turn_context payload read, tcEnds their [start, end) in it, oldest first.
	tcArena []byte
	tcEnds  [][2]int
	// arena is the block response items are being copied into (keep).
	arena []byte
	// refOnly builds turns only (the reference's history projection): no model history, turn contexts or
	// update time.
	refOnly bool
	// consumed is the top file's offset past its last newline-terminated line read; torn reports that the
	// last line read had no newline (a reader resuming at consumed would read it again).
	consumed int64
	torn     bool
}

// turnContexts sets the thread's model (the newest non-empty one), reasoning effort and last turn context from
// the turn_context records read, decoding them newest first only as far as needed; the result is that of
// applying every record in order.
func (b *builder) turnContexts() {
	n := len(b.tcEnds)
	if n == 0 {
		return
	}
	last := b.tcEnds[n-1]
	b.th.LastTurnContext = append(json.RawMessage(nil), b.tcArena[last[0]:last[1]]...)
	haveEffort := false
	for i := n - 1; i >= 0; i-- {
		e := b.tcEnds[i]
		model, effort, ok := turnContextSettings(b.tcArena[e[0]:e[1]])
		if !ok {
			continue
		}
		if !haveEffort {
			b.th.ReasoningEffort = effort
			haveEffort = true
		}
		if model != "" {
			b.th.Model = model
			return
		}
	}
}

// readFile feeds one file's records to the builder; limit < 0 reads everything.
func (b *builder) readFile(path string, limit int64, depth int, top bool) error {
	defer func(was bool) { b.inParent = was }(b.inParent)
	b.inParent = !top
	f, err := OpenRolloutFile(path)
	if err != nil {
		return fmt.Errorf("rollout: open: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit)
	}
	lr := newLineReader(r)
	defer lr.release()
	return b.readLines(lr, path, depth, top, true)
}

// readLines feeds the records of lr to the builder; first tells that lr starts at the file's first line. For the
// top file it keeps b.consumed (the offset just past the last newline-terminated line, from lr's start) and
// b.torn (the last line read had no newline).
func (b *builder) readLines(lr *lineReader, path string, depth int, top, first bool) error {
	lineNo := 0
	for {
		ln, truncated, complete, err := lr.next(maxLineBytes)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("rollout: read %s: %w", path, err)
		}
		lineNo++
		if top {
			b.torn = !complete
			if complete {
				b.consumed = lr.off
			}
		}
		if len(bytes.TrimSpace(ln)) == 0 {
			continue
		}
		if truncated {
			slog.Warn("rollout: skipping oversized line", "path", path, "line", lineNo)
			continue
		}
		rec, derr := decodeLine(ln)
		if derr != nil {
			if !complete {
				slog.Warn("rollout: skipping torn last line", "path", path, "line", lineNo, "err", derr)
			} else {
				slog.Warn("rollout: skipping unreadable line", "path", path, "line", lineNo, "err", derr)
			}
			continue
		}
		if rec.Type == TypeSessionMeta {
			var meta SessionMeta
			if err := unmarshal(rec.Payload, &meta); err != nil || !ValidSource(meta.Source) {
				slog.Warn("rollout: bad session_meta", "path", path, "line", lineNo, "err", err)
				continue
			}
			if first {
				b.paginated = meta.HistoryMode == HistoryModePaginated
				if top && !b.haveMeta {
					b.th.Meta = meta
					b.haveMeta = true
					b.th.CreatedAt = parseTime(meta.Timestamp)
					if b.th.CreatedAt.IsZero() {
						b.th.CreatedAt = parseTime(rec.Timestamp)
					}
				}
				if meta.HistoryBase != nil && meta.HistoryBase.ThreadID != "" {
					if err := b.readParent(path, meta.HistoryBase, depth); err != nil {
						slog.Warn("rollout: fork parent history unavailable", "path", path, "parent", meta.HistoryBase.ThreadID, "err", err)
					}
					b.paginated = meta.HistoryMode == HistoryModePaginated
				}
			}
			first = false
			b.bumpOrdinal(rec, top)
			continue
		}
		first = false
		b.ord = b.th.NextOrdinal
		if rec.Ordinal != nil {
			b.ord = *rec.Ordinal
		}
		b.bumpOrdinal(rec, top)
		if top && !b.refOnly {
			if t := parseTime(rec.Timestamp); !t.IsZero() {
				b.th.UpdatedAt = t
			}
		}
		b.add(rec)
	}
	if top && !b.haveMeta {
		return fmt.Errorf("%w: %s", ErrNoSessionMeta, path)
	}
	return nil
}

func (b *builder) bumpOrdinal(rec line, top bool) {
	if !top {
		return
	}
	if rec.Ordinal != nil {
		if *rec.Ordinal+1 > b.th.NextOrdinal {
			b.th.NextOrdinal = *rec.Ordinal + 1
		}
	} else {
		b.th.NextOrdinal++
	}
}

func (b *builder) readParent(childPath string, hb *HistoryBase, depth int) error {
	if depth >= 16 {
		return errors.New("fork chain too deep")
	}
	home := codexHomeOf(childPath)
	if home == "" {
		return errors.New("cannot locate CODEX_HOME from path")
	}
	parent, err := findSegment(home, hb.ThreadID)
	if err != nil {
		return err
	}
	limit := hb.EndByteOffset
	if limit <= 0 {
		limit = -1
	}
	return b.readFile(parent, limit, depth+1, false)
}

// codexHomeOf returns CODEX_HOME for a path under sessions/YYYY/MM/DD or archived_sessions.
func codexHomeOf(path string) string {
	dir := filepath.Dir(path)
	if filepath.Base(dir) == "archived_sessions" {
		return filepath.Dir(dir)
	}
	d := dir
	for i := 0; i < 3; i++ {
		d = filepath.Dir(d)
	}
	if filepath.Base(d) == "sessions" {
		return filepath.Dir(d)
	}
	return ""
}

// findRolloutByID globs sessions/*/*/*/ and archived_sessions/ for the thread's file, plain before compressed.
func findRolloutByID(home, id string) (string, error) {
	if !validThreadID(id) {
		return "", fmt.Errorf("rollout: invalid thread id %q", id)
	}
	p := findFirstFile(home, id)
	if p == "" {
		p = findSegmentOnly(home, id)
	}
	if p == "" {
		return "", fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return newestSegment(home, id, p), nil
}

// findSegmentOnly finds any segment file of a thread whose first file is gone ("" when none).
func findSegmentOnly(home, id string) string {
	best := ""
	for _, pat := range []string{
		filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+id+"_*.jsonl"),
		filepath.Join(home, "archived_sessions", "rollout-*-"+id+"_*.jsonl"),
	} {
		m, _ := filepath.Glob(pat)
		for _, p := range m {
			if best == "" || laterSegment(p, best) {
				best = p
			}
		}
	}
	return best
}

// findFirstFile finds a thread's first rollout file (named by the thread id alone), plain before
// compressed; "" when there is none.
func findFirstFile(home, id string) string {
	if p := findInCreationDays(home, id); p != "" {
		return p
	}
	pats := []string{
		filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"),
		filepath.Join(home, "archived_sessions", "rollout-*-"+id+".jsonl"),
		filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"+CompressedSuffix),
		filepath.Join(home, "archived_sessions", "rollout-*-"+id+".jsonl"+CompressedSuffix),
	}
	for _, p := range pats {
		m, _ := filepath.Glob(p)
		if len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

// findInCreationDays looks for a time-ordered (UUIDv7) id's rollout in the day folders around the time
// its id carries, so that finding it does not list every day folder of the home; "" when it is not
// there (another clock or time zone wrote it: the caller's full search decides).
func findInCreationDays(home, id string) string {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 {
		return ""
	}
	sec, nsec := u.Time().UnixTime()
	created := time.Unix(sec, nsec).Local()
	for _, day := range []time.Time{created, created.AddDate(0, 0, -1), created.AddDate(0, 0, 1)} {
		dir := filepath.Join(home, "sessions", day.Format("2006"), day.Format("01"), day.Format("02"))
		for _, suffix := range []string{".jsonl", ".jsonl" + CompressedSuffix} {
			if m, _ := filepath.Glob(filepath.Join(dir, "rollout-*-"+id+suffix)); len(m) > 0 {
				return m[0]
			}
		}
	}
	return ""
}

// validThreadID accepts ids safe to embed in a glob and a file name.
func validThreadID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	if t, ok := parseUTCStamp(s); ok {
		return t
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// parseUTCStamp parses the timestamps rollouts carry, YYYY-MM-DDThh:mm:ss[.f{1,9}]Z, as time.Parse with
// time.RFC3339Nano would (same value, same range checks); ok is false for anything else, which is left to
// time.Parse. Reading a rollout parses one per record.
func parseUTCStamp(s string) (time.Time, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(a, b int) (int, bool) {
		n := 0
		for i := a; i < b; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 7)
	day, ok3 := num(8, 10)
	hour, ok4 := num(11, 13)
	minute, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(time.Month(month), year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if rest := s[19 : len(s)-1]; rest != "" {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
			return time.Time{}, false
		}
		f, ok := num(20, len(s)-1)
		if !ok {
			return time.Time{}, false
		}
		for i := len(rest) - 1; i < 9; i++ {
			f *= 10
		}
		nsec = f
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

func daysIn(m time.Month, year int) int {
	if m == time.February {
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	}
	return 31 - int((m-1)%7%2)
}

type eventHead struct {
	Type   string `json:"type"`
	TurnID string `json:"turn_id"`
}

// turnContextSettings decodes the model and reasoning effort of a turn_context payload; the effort falls back to
// the collaboration mode's when the record has none. ok is false when the payload does not decode.
func turnContextSettings(payload json.RawMessage) (model, effort string, ok bool) {
	var tc struct {
		Model             string `json:"model"`
		Effort            string `json:"effort"`
		CollaborationMode struct {
			Settings struct {
				ReasoningEffort string `json:"reasoning_effort"`
			} `json:"settings"`
		} `json:"collaboration_mode"`
	}
	if unmarshal(payload, &tc) != nil {
		return "", "", false
	}
	effort = tc.Effort
	if effort == "" {
		effort = tc.CollaborationMode.Settings.ReasoningEffort
	}
	return tc.Model, effort, true
}

func (b *builder) add(rec line) {
	if b.refOnly && rec.Type != TypeEventMsg {
		return
	}
	switch rec.Type {
	case TypeResponseItem:
		if bytes.Contains(rec.Payload, internalKey) {
			b.th.ResponseItems = append(b.th.ResponseItems, stripInternal(rec.Payload))
		} else {
			b.th.ResponseItems = append(b.th.ResponseItems, b.keep(rec.Payload))
		}
	case TypeCompacted:
		b.compacted(rec.Payload)
	case TypeWorldState:
		b.th.WorldState = true
	case TypeTurnContext:
		// Decoded at the end, newest first: usually only the last one is.
		start := len(b.tcArena)
		b.tcArena = append(b.tcArena, rec.Payload...)
		b.tcEnds = append(b.tcEnds, [2]int{start, len(b.tcArena)})
	case TypeEventMsg:
		b.event(rec.Payload)
	}
}

// arenaChunk is the size of the blocks keep copies response items into.
const arenaChunk = 256 << 10

// keep returns a copy of raw, carved from a shared block (one allocation for many items, not one each); its
// capacity ends with it, so appending to it cannot overwrite the next one.
func (b *builder) keep(raw []byte) json.RawMessage {
	if len(raw) > arenaChunk/4 {
		return append(json.RawMessage(nil), raw...)
	}
	if len(b.arena)+len(raw) > cap(b.arena) {
		b.arena = make([]byte, 0, arenaChunk)
	}
	start := len(b.arena)
	b.arena = append(b.arena, raw...)
	return json.RawMessage(b.arena[start:len(b.arena):len(b.arena)])
}

var internalKey = []byte(`"internal_chat_message_metadata_passthrough"`)

// stripInternal removes the reference's bookkeeping member from a response item.
func stripInternal(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, internalKey) {
		return append(json.RawMessage(nil), raw...)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return append(json.RawMessage(nil), raw...)
	}
	delete(m, "internal_chat_message_metadata_passthrough")
	out, err := json.Marshal(m)
	if err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return out
}

// compacted replaces the model history: with replacement_history when recorded, else with the summary as a user
// message (older files).
func (b *builder) compacted(payload json.RawMessage) {
	var c struct {
		Message            string            `json:"message"`
		ReplacementHistory []json.RawMessage `json:"replacement_history"`
	}
	if unmarshal(payload, &c) != nil {
		return
	}
	if c.ReplacementHistory != nil {
		b.th.ResponseItems = b.th.ResponseItems[:0:0]
		for _, it := range c.ReplacementHistory {
			b.th.ResponseItems = append(b.th.ResponseItems, stripInternal(it))
		}
		return
	}
	msg, _ := json.Marshal(map[string]any{
		"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": c.Message}},
	})
	b.th.ResponseItems = []json.RawMessage{msg}
}

func (b *builder) openTurn(id string, implicit bool) *Turn {
	b.closeOpen(TurnInterrupted)
	if id == "" {
		b.implicitN++
		id = fmt.Sprintf("turn-%d", b.implicitN)
	}
	b.th.Turns = append(b.th.Turns, Turn{ID: id, Items: []map[string]any{}, ItemsView: "full", Status: TurnInProgress,
		Ordinal: b.ord, Inherited: b.inParent})
	b.cur = len(b.th.Turns) - 1
	b.curOpen = true
	b.implicit = implicit
	b.byItem = false
	b.turnIndex[id] = b.cur
	return &b.th.Turns[b.cur]
}

// closeOpen ends the open turn, if any, with the given status.
func (b *builder) closeOpen(status string) {
	if b.curOpen {
		b.th.Turns[b.cur].Status = status
	}
	b.curOpen = false
	b.implicit = false
}

// turnFor returns the turn an event belongs to, opening one if needed.
func (b *builder) turnFor(turnID string) *Turn {
	if turnID != "" {
		if b.curOpen && b.th.Turns[b.cur].ID == turnID {
			return &b.th.Turns[b.cur]
		}
		if i, ok := b.turnIndex[turnID]; ok {
			return &b.th.Turns[i]
		}
		t := b.openTurn(turnID, false)
		b.byItem = true
		return t
	}
	if b.curOpen {
		return &b.th.Turns[b.cur]
	}
	return b.openTurn("", true)
}

func (b *builder) event(payload json.RawMessage) {
	typ, ok := leadingType(payload)
	if !ok {
		var h eventHead
		if unmarshal(payload, &h) != nil {
			return
		}
		typ = h.Type
	}
	switch typ {
	case "task_started":
		var ev TaskStarted
		_ = unmarshal(payload, &ev)
		if b.subTurnStart(ev) {
			return
		}
		t := b.openTurn(ev.TurnID, false)
		if ev.RootTurnID != "" {
			root := ev.RootTurnID
			t.RootTurnID = &root
		}
		if ev.StartedAt > 0 {
			s := ev.StartedAt
			t.StartedAt = &s
		}
	case "task_complete":
		// The fields of TaskComplete read here; the error's codex_error_info stays raw so that the fast decoder
		// applies (it holds any JSON, decoded apart by the standard library, see unmarshal).
		var ev struct {
			TurnID      string `json:"turn_id"`
			RootTurnID  string `json:"root_turn_id"`
			StartedAt   int64  `json:"started_at,omitempty"`
			CompletedAt int64  `json:"completed_at,omitempty"`
			DurationMs  *int64 `json:"duration_ms,omitempty"`
			Error       *struct {
				Message           string          `json:"message"`
				CodexErrorInfo    json.RawMessage `json:"codex_error_info"`
				AdditionalDetails *string         `json:"additional_details"`
			} `json:"error"`
		}
		_ = unmarshal(payload, &ev)
		t := b.turnFor(ev.TurnID)
		b.finishTurn(t, ev.StartedAt, ev.CompletedAt, ev.DurationMs)
		if t.RootTurnID == nil && ev.RootTurnID != "" { // a turn its items opened (a review)
			root := ev.RootTurnID
			t.RootTurnID = &root
		}
		t.Status = TurnCompleted
		if ev.Error != nil {
			var info any
			if len(ev.Error.CodexErrorInfo) > 0 {
				_ = json.Unmarshal(ev.Error.CodexErrorInfo, &info)
			}
			t.Status = TurnFailed
			t.Error = map[string]any{
				"message":           ev.Error.Message,
				"codexErrorInfo":    camelizeValue(info),
				"additionalDetails": ev.Error.AdditionalDetails,
				"misalignment":      nil,
			}
		}
		b.endTurn(t)
	case "turn_aborted":
		var ev TurnAborted
		_ = unmarshal(payload, &ev)
		var t *Turn
		if ev.TurnID == "" && !b.curOpen {
			return
		}
		t = b.turnFor(ev.TurnID)
		b.finishTurn(t, ev.StartedAt, ev.CompletedAt, ev.DurationMs)
		if t.RootTurnID == nil && ev.RootTurnID != "" {
			root := ev.RootTurnID
			t.RootTurnID = &root
		}
		t.Status = TurnInterrupted
		b.endTurn(t)
	case "item_completed":
		if !b.paginated {
			return
		}
		var ev struct {
			TurnID        string          `json:"turn_id"`
			Item          json.RawMessage `json:"item"`
			StartedAtMs   *int64          `json:"started_at_ms"`
			CompletedAtMs *int64          `json:"completed_at_ms"`
		}
		if unmarshal(payload, &ev) != nil {
			return
		}
		item := convertCoreItem(ev.Item)
		if item == nil {
			return
		}
		item["startedAtMs"] = optInt(ev.StartedAtMs)
		item["completedAtMs"] = optInt(ev.CompletedAtMs)
		b.putItem(b.turnFor(ev.TurnID), item)
	case "thread_settings_applied":
		var ev ThreadSettingsApplied
		if unmarshal(payload, &ev) == nil {
			b.th.Settings = &ev.Settings
		}
	case "thread_name_updated":
		var ev ThreadNameUpdated
		if unmarshal(payload, &ev) == nil {
			b.th.Name = ev.ThreadName
		}
	case "token_count":
		var ev TokenCount
		if unmarshal(payload, &ev) == nil && ev.Info != nil {
			b.th.TokenUsage = ev.Info
		}
	case "thread_rolled_back":
		var ev struct {
			NumTurns int `json:"num_turns"`
		}
		if unmarshal(payload, &ev) == nil && ev.NumTurns > 0 {
			b.closeOpen(TurnInterrupted)
			n := len(b.th.Turns) - ev.NumTurns
			if n < 0 {
				n = 0
			}
			for _, t := range b.th.Turns[n:] {
				delete(b.turnIndex, t.ID)
			}
			b.th.Turns = b.th.Turns[:n]
		}
	default:
		if !b.paginated {
			b.legacyEvent(typ, payload)
		}
	}
}

// subTurnStart places a sub-agent turn started inside the open turn, which only its items opened so far
// (the reference's review: enteredReviewMode, then its reviewer's task_started naming the review as the
// root): the sub-agent's turn reads before it and becomes the open one, and the review stays open until
// its own end. It reports whether it did.
func (b *builder) subTurnStart(ev TaskStarted) bool {
	if !b.curOpen || !b.byItem || ev.RootTurnID == "" || ev.RootTurnID == ev.TurnID || b.th.Turns[b.cur].ID != ev.RootTurnID {
		return false
	}
	if _, dup := b.turnIndex[ev.TurnID]; dup || ev.TurnID == "" {
		return false
	}
	root := ev.RootTurnID
	sub := Turn{ID: ev.TurnID, RootTurnID: &root, Items: []map[string]any{}, ItemsView: "full", Status: TurnInProgress,
		Ordinal: b.ord, Inherited: b.inParent}
	if ev.StartedAt > 0 {
		st := ev.StartedAt
		sub.StartedAt = &st
	}
	i := b.cur
	b.th.Turns = append(b.th.Turns, Turn{})
	copy(b.th.Turns[i+1:], b.th.Turns[i:])
	b.th.Turns[i] = sub
	for id, j := range b.turnIndex {
		if j >= i {
			b.turnIndex[id] = j + 1
		}
	}
	b.turnIndex[sub.ID] = i
	b.byItem = false
	return true
}

func (b *builder) finishTurn(t *Turn, started, completed int64, dur *int64) {
	if started > 0 && t.StartedAt == nil {
		t.StartedAt = &started
	}
	if completed > 0 {
		t.CompletedAt = &completed
	}
	if dur != nil {
		d := *dur
		t.DurationMs = &d
	}
}

func (b *builder) endTurn(t *Turn) {
	if b.curOpen && &b.th.Turns[b.cur] == t {
		b.curOpen = false
		b.implicit = false
	}
}

// putItem appends an item or replaces an earlier one with the same id in the turn.
func (b *builder) putItem(t *Turn, item map[string]any) {
	if id, ok := item["id"].(string); ok && id != "" {
		for i, it := range t.Items {
			if it["id"] == id {
				t.Items[i] = item
				return
			}
		}
	}
	if cap(t.Items) == 0 {
		// Most turns hold a user and an agent message: one allocation, not two.
		t.Items = make([]map[string]any, 0, 2)
		t.ItemOrdinals = make([]int64, 0, 2)
	}
	t.Items = append(t.Items, item)
	t.ItemOrdinals = append(t.ItemOrdinals, b.ord)
}

func (b *builder) legacyID() string {
	b.legacyN++
	return fmt.Sprintf("item-%d", b.legacyN)
}

// legacyEvent rebuilds items from pre-paginated event_msg records.
func (b *builder) legacyEvent(typ string, payload json.RawMessage) {
	switch typ {
	case "user_message":
		var ev struct {
			Message     string   `json:"message"`
			Images      []string `json:"images"`
			LocalImages []string `json:"local_images"`
			// Decoded apart, by the standard library (it holds maps): see unmarshal.
			TextElements json.RawMessage `json:"text_elements"`
		}
		if unmarshal(payload, &ev) != nil {
			return
		}
		var textElements []any
		if len(ev.TextElements) > 0 && json.Unmarshal(ev.TextElements, &textElements) != nil {
			return
		}
		if b.curOpen && b.implicit && len(b.th.Turns[b.cur].Items) > 0 {
			b.closeOpen(TurnCompleted)
		}
		t := b.turnFor("")
		content := []any{}
		if ev.Message != "" || (len(ev.Images) == 0 && len(ev.LocalImages) == 0) {
			te := textElements
			if te == nil {
				te = []any{}
			}
			content = append(content, map[string]any{"type": "text", "text": ev.Message, "text_elements": te})
		}
		for _, u := range ev.Images {
			content = append(content, map[string]any{"type": "image", "url": u})
		}
		for _, p := range ev.LocalImages {
			content = append(content, map[string]any{"type": "localImage", "path": p})
		}
		b.putItem(t, map[string]any{"type": "userMessage", "id": b.legacyID(), "clientId": nil, "content": content,
			"startedAtMs": nil, "completedAtMs": nil})
	case "agent_message":
		var ev AgentMessage
		if unmarshal(payload, &ev) != nil {
			return
		}
		var phase any
		if ev.Phase != "" {
			phase = ev.Phase
		}
		b.putItem(b.turnFor(""), map[string]any{"type": "agentMessage", "moderation": nil, "id": b.legacyID(),
			"text": ev.Message, "phase": phase, "memoryCitation": nil, "delivery": nil, "questions": nil,
			"startedAtMs": nil, "completedAtMs": nil})
	case "agent_reasoning", "agent_reasoning_raw_content":
		var ev AgentReasoning
		if unmarshal(payload, &ev) != nil {
			return
		}
		t := b.turnFor("")
		key := "summary"
		if typ == "agent_reasoning_raw_content" {
			key = "content"
		}
		if n := len(t.Items); n > 0 && t.Items[n-1]["type"] == "reasoning" {
			last := t.Items[n-1]
			last[key] = append(last[key].([]any), ev.Text)
			return
		}
		it := map[string]any{"type": "reasoning", "id": b.legacyID(), "summary": []any{}, "content": []any{},
			"startedAtMs": nil, "completedAtMs": nil}
		it[key] = []any{ev.Text}
		b.putItem(t, it)
	case "exec_command_end":
		var ev struct {
			CallID           string          `json:"call_id"`
			TurnID           string          `json:"turn_id"`
			ProcessID        *string         `json:"process_id"`
			Command          []string        `json:"command"`
			Cwd              string          `json:"cwd"`
			ParsedCmd        []ParsedCommand `json:"parsed_cmd"`
			Source           string          `json:"source"`
			AggregatedOutput *string         `json:"aggregated_output"`
			ExitCode         *int            `json:"exit_code"`
			Duration         *Duration       `json:"duration"`
			Status           string          `json:"status"`
		}
		if unmarshal(payload, &ev) != nil || ev.CallID == "" {
			return
		}
		status := ev.Status
		if status == "" {
			status = "completed"
			if ev.ExitCode != nil && *ev.ExitCode != 0 {
				status = "failed"
			}
		}
		b.putItem(b.turnFor(""), commandItem(ev.CallID, ev.ProcessID, ev.Command, ev.Cwd, ev.ParsedCmd, ev.Source,
			status, ev.AggregatedOutput, ev.ExitCode, ev.Duration))
	case "patch_apply_end":
		var ev struct {
			CallID  string          `json:"call_id"`
			Success bool            `json:"success"`
			Status  string          `json:"status"`
			Changes json.RawMessage `json:"changes"`
		}
		if unmarshal(payload, &ev) != nil || ev.CallID == "" {
			return
		}
		status := ev.Status
		if status == "" {
			status = "failed"
			if ev.Success {
				status = "completed"
			}
		}
		b.putItem(b.turnFor(""), map[string]any{"type": "fileChange", "id": ev.CallID,
			"changes": convertChanges(ev.Changes), "status": snakeToCamel(status), "startedAtMs": nil, "completedAtMs": nil})
	case "mcp_tool_call_end":
		var ev struct {
			CallID     string `json:"call_id"`
			Invocation struct {
				Server    string `json:"server"`
				Tool      string `json:"tool"`
				Arguments any    `json:"arguments"`
			} `json:"invocation"`
			Duration *Duration                  `json:"duration"`
			Result   map[string]json.RawMessage `json:"result"`
		}
		if json.Unmarshal(payload, &ev) != nil || ev.CallID == "" {
			return
		}
		it := map[string]any{"type": "mcpToolCall", "id": ev.CallID, "server": ev.Invocation.Server,
			"tool": ev.Invocation.Tool, "status": "completed", "arguments": ev.Invocation.Arguments,
			"appContext": nil, "mcpAppUi": nil, "pluginId": nil, "readOnlyHint": false, "result": nil, "error": nil,
			"durationMs": durationMs(ev.Duration), "startedAtMs": nil, "completedAtMs": nil}
		if ok, has := ev.Result["Ok"]; has {
			var res map[string]any
			_ = json.Unmarshal(ok, &res)
			it["result"] = mcpResult(res)
			if isErr, _ := res["isError"].(bool); isErr {
				it["status"] = "failed"
			}
		} else if e, has := ev.Result["Err"]; has {
			var msg string
			_ = unmarshal(e, &msg)
			it["status"] = "failed"
			it["error"] = map[string]any{"message": msg}
		}
		b.putItem(b.turnFor(""), it)
	}
}

func (b *builder) finish() {
	b.turnContexts()
	if b.curOpen && b.implicit {
		// Files without task events (very old versions) never mark turns complete.
		b.closeOpen(TurnCompleted)
	}
	b.closeOpen(TurnInterrupted)
	for i := range b.th.Turns {
		if b.th.Turns[i].Status == TurnInProgress {
			b.th.Turns[i].Status = TurnInterrupted
		}
	}
	b.th.Preview = previewFromTurns(b.th.Turns)
	if b.th.Preview == "" {
		b.th.Preview = PreviewFromResponseItems(b.th.ResponseItems)
	}
	if b.th.UpdatedAt.IsZero() {
		b.th.UpdatedAt = b.th.CreatedAt
	}
}

func previewFromTurns(turns []Turn) string {
	for _, t := range turns {
		for _, it := range t.Items {
			if it["type"] == "userMessage" {
				return userText(it["content"])
			}
		}
	}
	return ""
}

// userText joins the text elements of a user message's content.
func userText(content any) string {
	var parts []string
	switch c := content.(type) {
	case []any:
		for _, e := range c {
			if m, ok := e.(map[string]any); ok && m["type"] == "text" {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
	}
	return strings.Join(parts, "\n")
}

// PreviewFromResponseItems returns a thread's preview from Responses items: the first non-empty user text
// that is not harness context (environment context, instructions, interruption notices).
func PreviewFromResponseItems(items []json.RawMessage) string {
	for _, raw := range items {
		var m struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		if unmarshal(raw, &m) != nil || m.Type != "message" || m.Role != "user" {
			continue
		}
		for _, c := range m.Content {
			if c.Type == "input_text" && c.Text != "" && !isHarnessText(c.Text) {
				return c.Text
			}
		}
	}
	return ""
}

func isHarnessText(s string) bool {
	t := strings.TrimSpace(s)
	// tagged harness blocks (<environment_context>, <user_instructions>, <turn_aborted>, …) and AGENTS.md
	return strings.HasPrefix(t, "<") || strings.HasPrefix(t, "# AGENTS.md")
}

// optInt turns an optional number into an int64 or an untyped nil.
func optInt(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// ImportedSpan is the first turn's start and the last turn's end (unix seconds) of a thread whose turns are
// older than the thread itself, created at created: a session imported from another agent keeps its
// transcript's times. ok is false for any other thread.
func ImportedSpan(created int64, turns []Turn) (first, last int64, ok bool) {
	if len(turns) == 0 || turns[0].StartedAt == nil || *turns[0].StartedAt >= created {
		return 0, 0, false
	}
	end := turns[len(turns)-1].CompletedAt
	if end == nil {
		return 0, 0, false
	}
	return *turns[0].StartedAt, *end, true
}
