package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadMetaMatchesSlow checks ReadMeta (canonical envelope heads, skipped events, turn contexts decoded
// newest first) against the straightforward reading it replaced, on the fixtures and on random rollouts mixing
// canonical and other envelope shapes, torn and garbage lines.
func TestReadMetaMatchesSlow(t *testing.T) {
	paths := []string{"testdata/paginated_three_turns.jsonl", "testdata/legacy_no_ordinal.jsonl"}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 17))
	models := []string{"", "m1", "m2"}
	efforts := []string{"", "low", "high"}
	for n := range 300 {
		var b strings.Builder
		ord := 0
		line := func(typ, payload string) {
			ts := fmt.Sprintf("2026-01-02T03:04:%02d.%03dZ", rng.IntN(60), rng.IntN(1000))
			if rng.IntN(20) == 0 {
				ts = "not a time"
			}
			switch rng.IntN(6) {
			case 0: // payload first
				fmt.Fprintf(&b, `{"payload":%s,"timestamp":%q,"type":%q}`+"\n", payload, ts, typ)
			case 1: // no ordinal
				fmt.Fprintf(&b, `{"timestamp":%q,"type":%q,"payload":%s}`+"\n", ts, typ, payload)
			case 2: // spaces
				fmt.Fprintf(&b, `{"timestamp": %q, "ordinal": %d, "type": %q, "payload": %s}`+"\n", ts, ord, typ, payload)
			default:
				fmt.Fprintf(&b, `{"timestamp":%q,"ordinal":%d,"type":%q,"payload":%s}`+"\n", ts, ord, typ, payload)
			}
			ord++
		}
		line("session_meta", `{"id":"01c00000-0000-7000-8000-000000000001","timestamp":"2026-01-02T03:04:05Z","cwd":"/w","history_mode":"paginated"}`)
		for range rng.IntN(30) {
			switch rng.IntN(13) {
			case 0:
				line("turn_context", fmt.Sprintf(`{"model":%q,"effort":%q,"collaboration_mode":{"settings":{"reasoning_effort":"xhigh"}}}`,
					models[rng.IntN(3)], efforts[rng.IntN(3)]))
			case 1:
				line("turn_context", `{"model":17}`)
			case 2:
				line("event_msg", fmt.Sprintf(`{"type":"user_message","message":"q%d"}`, rng.IntN(5)))
			case 3:
				line("event_msg", fmt.Sprintf(`{"type":"agent_message","message":"a%d"}`, rng.IntN(5)))
			case 4:
				line("event_msg", fmt.Sprintf(`{"type":"item_completed","item":{"type":"UserMessage","id":"u","content":[{"type":"text","text":"i%d"}]}}`, rng.IntN(5)))
			case 5:
				line("event_msg", fmt.Sprintf(`{"type":"thread_name_updated","thread_name":"n%d"}`, rng.IntN(5)))
			case 6:
				line("event_msg", `{"type":"token_count","info":null,"note":"user_message agent_message \"thread_name_updated\""}`)
			case 7:
				line("event_msg", `{"msg":"x","type":"agent_message","message":"late type"}`)
			case 8:
				b.WriteString("garbage {\n")
			case 9:
				line("event_msg", fmt.Sprintf(`{"type":"task_started","turn_id":"t","started_at":%d}`, rng.IntN(5)))
			case 10:
				line("event_msg", fmt.Sprintf(`{"type":"task_complete","turn_id":"t","started_at":1,"completed_at":%d,"last_agent_message":"user_message"}`, rng.IntN(5)))
			case 11:
				line("event_msg", `{"type":"user_message","message":"about \"task_complete\" and \"task_started\""}`)
			case 12: // a second "type" member: decoding takes the last
				line("event_msg", fmt.Sprintf(`{"type":"task_started","started_at":%d,"type":"task_complete","completed_at":%d}`, rng.IntN(5), rng.IntN(5)))
			}
		}
		if rng.IntN(3) == 0 {
			b.WriteString(`{"timestamp":"2026-01-02T09:09:09Z","ordinal":99,"type":"event_msg","payload":{"type":"user_mes`)
		}
		p := filepath.Join(dir, fmt.Sprintf("r%d.jsonl", n))
		require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
		paths = append(paths, p)
	}
	for _, p := range paths {
		want, werr := readMetaSlow(p, -1, 0)
		got, gerr := ReadMeta(p)
		require.Equal(t, werr == nil, gerr == nil, p)
		require.Equal(t, want, got, p)
	}
}

// readMetaSlow is ReadMeta as it was before canonicalHead: every line's head searched with prefixType and
// prefixTimestamp, every turn_context decoded in order.
func readMetaSlow(path string, limitBytes int64, depth int) (*Meta, error) {
	f, err := OpenRolloutFile(path)
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
		typ, ok := prefixType(ln)
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
		if ts, ok := prefixTimestamp(ln); ok {
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
			if model, effort, ok := turnContextSettings(rec.Payload); ok {
				if model != "" {
					m.Model = model
				}
				m.ReasoningEffort = effort
			}
		case TypeEventMsg:
			if rec, err := decodeLine(ln); err == nil {
				var ev struct {
					Type        string `json:"type"`
					StartedAt   int64  `json:"started_at"`
					CompletedAt int64  `json:"completed_at"`
				}
				if json.Unmarshal(rec.Payload, &ev) == nil {
					switch ev.Type {
					case "task_started":
						if m.FirstTurnStartedAt == 0 {
							m.FirstTurnStartedAt = ev.StartedAt
						}
						continue
					case "task_complete":
						if ev.CompletedAt > 0 {
							m.LastTurnCompletedAt = ev.CompletedAt
						}
						continue
					}
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
	if hb := m.Session.HistoryBase; hb != nil && depth < 16 && (!havePreview || m.Model == "") {
		if home := codexHomeOf(path); home != "" {
			if pp, err := findRolloutByID(home, hb.ThreadID); err == nil {
				limit := hb.EndByteOffset
				if limit <= 0 {
					limit = -1
				}
				if pm, err := readMetaSlow(pp, limit, depth+1); err == nil {
					if !havePreview {
						m.Preview = pm.Preview
					}
					if m.Model == "" {
						m.Model, m.ReasoningEffort = pm.Model, pm.ReasoningEffort
					}
				}
			}
		}
	}
	return m, nil
}

// TestParseUTCStampMatchesTimeParse checks the fast timestamp parser against time.Parse.
func TestParseUTCStampMatchesTimeParse(t *testing.T) {
	cases := []string{"2026-01-02T03:04:05Z", "2026-01-02T03:04:05.1Z", "2026-01-02T03:04:05.123456789Z",
		"2026-01-02T03:04:05.1234567891Z", "2026-01-02T03:04:05.Z", "2024-02-29T23:59:59.999Z", "2023-02-29T00:00:00Z",
		"2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z",
		"2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z", "2026-01-01T23:59:60Z", "2026-01-01t00:00:00Z",
		"2026-01-01T00:00:00+01:00", "2026-01-01T00:00:00.5+00:00", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z",
		"2026-1-01T00:00:00Z", "2026-01-01T00:00:0xZ", "2026-01-01T00:00:00.12a4Z", "2100-02-29T00:00:00Z",
		"2000-02-29T00:00:00Z", "2026-12-31T00:00:00Z", "2026-11-31T00:00:00Z", "2026-07-31T00:00:00Z"}
	for _, c := range cases {
		want, err := time.Parse(time.RFC3339Nano, c)
		if err != nil {
			want = time.Time{}
		}
		require.Equal(t, want, parseTime(c), c)
		if got, ok := parseUTCStamp(c); ok {
			require.NoError(t, err, c)
			require.True(t, want.Equal(got) && got.Location() == want.Location(), c)
		}
	}
}

// TestPrefixOrdinalMatchesSearch checks prefixOrdinal's canonical shortcut against the search it skips.
func TestPrefixOrdinalMatchesSearch(t *testing.T) {
	lines := []string{
		`{"timestamp":"2026-01-02T03:04:05Z","ordinal":7,"type":"event_msg","payload":{"ordinal":9}}`,
		`{"timestamp":"2026-01-02T03:04:05Z","ordinal":007,"type":"event_msg","payload":{}}`,
		`{"timestamp":"2026-01-02T03:04:05Z","ordinal":99999999999999999999,"type":"event_msg","payload":{}}`,
		`{"timestamp":"2026-01-02T03:04:05Z","type":"event_msg","payload":{"ordinal":9}}`,
		`{"timestamp":"2026-01-02T03:04:05Z","type":"event_msg","payload":{},"ordinal":3}`,
		`{"timestamp":"2026-01-02T03:04:05Z","ordinal":,"type":"event_msg","payload":{}}`,
		`{"ordinal":4,"timestamp":"2026-01-02T03:04:05Z","type":"event_msg","payload":{}}`,
		`{"timestamp":"` + strings.Repeat("x", 300) + `","ordinal":5,"type":"t","payload":{}}`,
		`{"timestamp":"2026","ordinal":5,"type":"` + strings.Repeat("y", 240) + `","payload":{}}`,
		`{"timestamp": "2026", "ordinal": 5, "type": "t", "payload": {}}`,
		`garbage`, ``,
	}
	ents, err := os.ReadDir("testdata")
	require.NoError(t, err)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".jsonl") {
			b, err := os.ReadFile(filepath.Join("testdata", e.Name()))
			require.NoError(t, err)
			lines = append(lines, strings.Split(string(b), "\n")...)
		}
	}
	for _, ln := range lines {
		wn, wok := prefixOrdinalSlow([]byte(ln))
		gn, gok := prefixOrdinal([]byte(ln))
		require.Equal(t, wok, gok, ln)
		require.Equal(t, wn, gn, ln)
	}
}

func prefixOrdinalSlow(ln []byte) (int64, bool) {
	head := ln
	if len(head) > 256 {
		head = head[:256]
	}
	i := bytes.Index(head, ordinalKey)
	if i < 0 {
		return 0, false
	}
	if pi := bytes.Index(head, payloadKey); pi >= 0 && pi < i {
		return 0, false
	}
	rest := bytes.TrimLeft(head[i+len(ordinalKey):], " \t")
	if len(rest) == 0 || rest[0] != ':' {
		return 0, false
	}
	rest = bytes.TrimLeft(rest[1:], " \t")
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return n, err == nil
}
