package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Meta is what listing needs from one rollout, read by ReadMeta without decoding the history.
type Meta struct {
	Session SessionMeta
	Path    string
	// Preview is the first user message's text; a fork's is its parent's when the inherited history has one.
	Preview string
	// Name is the last thread_name_updated event in the file, if any.
	Name         string
	CreatedAt    time.Time
	LastRecordAt time.Time
	// Model and ReasoningEffort come from the last turn_context.
	Model           string
	ReasoningEffort string
	// FirstTurnStartedAt and LastTurnCompletedAt (unix seconds, 0 when none) are the first task_started's
	// started_at and the last task_complete's completed_at.
	FirstTurnStartedAt  int64
	LastTurnCompletedAt int64
	// Texts are the user and agent messages in order (thread/search), at most MaxSearchText bytes in all.
	Texts []string
}

// MaxSearchText bounds Meta.Texts.
const MaxSearchText = 32 << 10

const (
	metaLineLimit    = 64 << 10
	previewLineLimit = 4 << 20
)

var (
	userMessageMarker  = []byte(`"user_message"`)
	userItemMarker     = []byte(`"UserMessage"`)
	agentMessageMarker = []byte(`"agent_message"`)
	agentItemMarker    = []byte(`"AgentMessage"`)
	nameMarker         = []byte(`"thread_name_updated"`)
	taskStartedMarker  = []byte(`"task_started"`)
	taskCompleteMarker = []byte(`"task_complete"`)
)

// ReadMeta streams a rollout once, decoding only session_meta, turn_context, the first user message and name
// events; other lines are only looked at through their first bytes.
func ReadMeta(path string) (*Meta, error) {
	return readMeta(path, -1, 0, nil)
}

// openMetaFile opens the rollouts readMeta reads (a variable: tests count the reads).
var openMetaFile = OpenRolloutFile

// maxParents bounds a parentCache: the parents of one build's forks, far fewer than its threads in practice.
const maxParents = 1024

// inherited is what a fork takes from the part of its parent's rollout it inherits.
type inherited struct {
	ok                     bool // the parent was read
	preview, model, effort string
}

type parentKey struct {
	home, id string
	limit    int64
}

// parentCache remembers, for one index build, what forks inherit from their parents: many forks of one
// thread read it once, not once each (quadratic I/O); build workers that miss at the same moment each read
// it. A nil cache remembers nothing.
type parentCache struct {
	mu sync.Mutex
	m  map[parentKey]inherited
}

func newParentCache() *parentCache { return &parentCache{m: map[parentKey]inherited{}} }

// inherit reads (or recalls) what a fork of codexHome whose history starts with hb inherits.
func (pc *parentCache) inherit(home string, hb *HistoryBase, depth int) inherited {
	limit := hb.EndByteOffset
	if limit <= 0 {
		limit = -1
	}
	key := parentKey{home, hb.ThreadID, limit}
	if pc != nil {
		pc.mu.Lock()
		v, ok := pc.m[key]
		pc.mu.Unlock()
		if ok {
			return v
		}
	}
	var v inherited
	if pp, err := findSegment(home, hb.ThreadID); err == nil {
		if pm, err := readMeta(pp, limit, depth+1, pc); err == nil {
			v = inherited{ok: true, preview: pm.Preview, model: pm.Model, effort: pm.ReasoningEffort}
		}
	}
	if pc != nil {
		pc.mu.Lock()
		if len(pc.m) < maxParents {
			pc.m[key] = v
		}
		pc.mu.Unlock()
	}
	return v
}

func readMeta(path string, limitBytes int64, depth int, pc *parentCache) (*Meta, error) {
	f, err := openMetaFile(path)
	if err != nil {
		return nil, fmt.Errorf("rollout: open: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if limitBytes >= 0 {
		r = io.LimitReader(f, limitBytes)
	}
	m := &Meta{Path: path}
	lr := newLineReader(r)
	defer lr.release()
	haveMeta := false
	havePreview := false
	textBytes := 0
	addText := func(t string) {
		if t == "" || textBytes >= MaxSearchText || (len(m.Texts) > 0 && m.Texts[len(m.Texts)-1] == t) {
			return // the reference records a message as an event and as an item
		}
		if len(t) > MaxSearchText-textBytes {
			t = strings.ToValidUTF8(t[:MaxSearchText-textBytes], "")
		}
		m.Texts = append(m.Texts, t)
		textBytes += len(t)
	}
	// turn_context payloads, oldest first: the newest decodable one gives the effort, the newest with a model
	// the model (the result of applying each in order).
	var tcArena []byte
	var tcEnds [][2]int
	for {
		limit := metaLineLimit
		if !havePreview {
			limit = previewLineLimit
		}
		ln, truncated, complete, err := lr.next(limit)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("rollout: read %s: %w", path, err)
		}
		if len(bytes.TrimSpace(ln)) == 0 {
			continue
		}
		tsB, typB, payloadAt, canonical := canonicalHead(ln)
		typ, ok := string(typB), canonical
		if !ok {
			typ, ok = prefixType(ln)
		}
		if !ok {
			if truncated {
				continue
			}
			rec, err := decodeLine(ln)
			if err != nil {
				continue
			}
			typ = rec.Type
		}
		if !complete && (truncated || !json.Valid(ln)) {
			continue // torn last line
		}
		if canonical {
			if t := parseTime(string(tsB)); !t.IsZero() {
				m.LastRecordAt = t
			}
		} else if ts, ok := prefixTimestamp(ln); ok {
			if t := parseTime(ts); !t.IsZero() {
				m.LastRecordAt = t
			}
		}
		if truncated {
			continue
		}
		switch typ {
		case TypeSessionMeta:
			if haveMeta {
				continue
			}
			rec, err := decodeLine(ln)
			if err != nil || json.Unmarshal(rec.Payload, &m.Session) != nil || !ValidSource(m.Session.Source) {
				m.Session = SessionMeta{}
				continue
			}
			haveMeta = true
			m.CreatedAt = parseTime(m.Session.Timestamp)
			if m.CreatedAt.IsZero() {
				m.CreatedAt = parseTime(rec.Timestamp)
			}
		case TypeTurnContext:
			rec, err := decodeLine(ln)
			if err != nil {
				continue
			}
			// Decoded at the end, newest first: usually only the last one is.
			start := len(tcArena)
			tcArena = append(tcArena, rec.Payload...)
			tcEnds = append(tcEnds, [2]int{start, len(tcArena)})
		case TypeEventMsg:
			if canonical {
				et, ok := leadingType(ln[payloadAt:])
				if ok && (et == "task_started" || et == "task_complete") {
					// Only the first start with a time counts: later ones need no decoding (unless a second
					// "type" member, which decoding would take, may make it another event).
					if et == "task_complete" || m.FirstTurnStartedAt == 0 || bytes.Count(ln[payloadAt:], typeKey) > 1 {
						m.readTurnTime(ln)
					}
					continue
				}
				if ok && et != "user_message" && et != "agent_message" &&
					et != "item_completed" && et != "thread_name_updated" {
					continue // an event that holds nothing read here
				}
			} else if bytes.Contains(ln, taskStartedMarker) || bytes.Contains(ln, taskCompleteMarker) {
				if m.readTurnTime(ln) {
					continue
				}
			}
			room := textBytes < MaxSearchText
			isUser := (!havePreview || room) && (bytes.Contains(ln, userMessageMarker) || bytes.Contains(ln, userItemMarker))
			isAgent := room && (bytes.Contains(ln, agentMessageMarker) || bytes.Contains(ln, agentItemMarker))
			isName := bytes.Contains(ln, nameMarker)
			if !isUser && !isAgent && !isName {
				continue
			}
			rec, err := decodeLine(ln)
			if err != nil {
				continue
			}
			var ev struct {
				Type       string          `json:"type"`
				Message    string          `json:"message"`
				ThreadName string          `json:"thread_name"`
				Item       json.RawMessage `json:"item"`
			}
			if json.Unmarshal(rec.Payload, &ev) != nil {
				continue
			}
			switch ev.Type {
			case "user_message":
				if !havePreview {
					m.Preview, havePreview = ev.Message, true
				}
				addText(ev.Message)
			case "agent_message":
				addText(ev.Message)
			case "item_completed":
				if it := convertCoreItem(ev.Item); it != nil {
					switch it["type"] {
					case "userMessage":
						txt := userText(it["content"])
						if !havePreview {
							m.Preview, havePreview = txt, true
						}
						addText(txt)
					case "agentMessage":
						txt, _ := it["text"].(string)
						addText(txt)
					}
				}
			case "thread_name_updated":
				m.Name = ev.ThreadName
			}
		}
	}
	if !haveMeta {
		return nil, fmt.Errorf("%w: %s", ErrNoSessionMeta, path)
	}
	haveEffort := false
	for i := len(tcEnds) - 1; i >= 0; i-- {
		model, effort, ok := turnContextSettings(tcArena[tcEnds[i][0]:tcEnds[i][1]])
		if !ok {
			continue
		}
		if !haveEffort {
			m.ReasoningEffort, haveEffort = effort, true
		}
		if model != "" {
			m.Model = model
			break
		}
	}
	// A fork's history starts with its parent's, so the parent's first message is its preview, as the
	// reference lists it; its own first message counts only when the inherited part has none.
	if hb := m.Session.HistoryBase; hb != nil && depth < 16 {
		if home := codexHomeOf(path); home != "" {
			if in := pc.inherit(home, hb, depth); in.ok {
				if in.preview != "" {
					m.Preview = in.preview
				}
				if m.Model == "" {
					m.Model, m.ReasoningEffort = in.model, in.effort
				}
			}
		}
	}
	return m, nil
}

// ImportedRecency is the last turn's end when the turns are older than the thread, created at created (a
// session imported from another agent keeps its transcript's times; see ImportedSpan), else 0.
func (m *Meta) ImportedRecency(created int64) int64 {
	if m.FirstTurnStartedAt > 0 && m.FirstTurnStartedAt < created && m.LastTurnCompletedAt > 0 {
		return m.LastTurnCompletedAt
	}
	return 0
}

// readTurnTime records a task_started's or task_complete's time (the first start, the last end); it reports
// whether ln was one of them.
func (m *Meta) readTurnTime(ln []byte) bool {
	rec, err := decodeLine(ln)
	if err != nil {
		return false
	}
	var ev struct {
		Type        string `json:"type"`
		StartedAt   int64  `json:"started_at"`
		CompletedAt int64  `json:"completed_at"`
	}
	if unmarshal(rec.Payload, &ev) != nil {
		return false
	}
	switch ev.Type {
	case "task_started":
		if m.FirstTurnStartedAt == 0 {
			m.FirstTurnStartedAt = ev.StartedAt
		}
	case "task_complete":
		if ev.CompletedAt > 0 {
			m.LastTurnCompletedAt = ev.CompletedAt
		}
	default:
		return false
	}
	return true
}
