package rollout

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// envelopeSeeds are lines the quick envelope parser must read exactly as json.Unmarshal does, or leave to it.
var envelopeSeeds = []string{
	`{"timestamp":"2026-01-02T03:04:05.000Z","ordinal":3,"type":"event_msg","payload":{"type":"agent_message","message":"hi"}}`,
	`{"timestamp":"2026-01-02T03:04:05.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[]}}`,
	`{"type":"compacted","timestamp":"t","payload":{"message":"x"}}`,
	`{"timestamp":"t","type":"event_msg","payload":null}`,
	`{"timestamp":"t","type":"event_msg","payload":{"a":1},"extra":2}`,
	`{"timestamp":"t","type":"event_msg","payload":{"a":1} }`,
	`{"timestamp":"t","type":"event_msg","payload": {"a":1}}`,
	`{"timestamp":"t","type":"event_msg","payload":{"a":1}`,
	`{"timestamp":"t","type":"event_msg","payload":{"a":}}`,
	`{"timestamp":"t","type":"event_msg","payload":{"a":1}}}`,
	`{"timestamp":"t","type":"","payload":{}}`,
	`{"timestamp":"t","payload":{}}`,
	`{"timestamp":"t","type":"a","type":"b","payload":{}}`,
	`{"timestamp":"t\u0041","type":"event_msg","payload":{}}`,
	`{"timestamp":"t","type":"ev\"x","payload":{}}`,
	`{"timestamp":"t","ordinal":01,"type":"x","payload":{}}`,
	`{"timestamp":"t","ordinal":-1,"type":"x","payload":{}}`,
	`{"timestamp":"t","ordinal":1.5,"type":"x","payload":{}}`,
	`{"timestamp":"t","ordinal":99999999999999999999,"type":"x","payload":{}}`,
	`{"timestamp":"t","ordinal":null,"type":"x","payload":{}}`,
	`{"Type":"x","payload":{}}`,
	`{"timestamp":"é","type":"x","payload":{}}`,
	`{"timestamp":"t","type":"x","payload":"\xff"}`,
	`{"timestamp":"t","type":"x","payload":[1,2]}`,
	`{}`,
	`[]`,
	`{"type":"x","payload":{}}` + "\r",
}

// FuzzQuickEnvelope checks that whenever quickEnvelope accepts a line, json.Unmarshal accepts it too and reads
// the same envelope (the seeds run with every `go test`).
func FuzzQuickEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, ln []byte) {
		got, ok := quickEnvelope(ln)
		if !ok {
			return
		}
		var want line
		require.NoError(t, json.Unmarshal(ln, &want), "%q", ln)
		require.NotEmpty(t, want.Type)
		require.Equal(t, want.Timestamp, got.Timestamp)
		require.Equal(t, want.Type, got.Type)
		require.Equal(t, want.Ordinal, got.Ordinal)
		require.Equal(t, string(want.Payload), string(got.Payload))
	})
}

func TestQuickEnvelopeTakesOurLines(t *testing.T) {
	for _, s := range envelopeSeeds[:4] {
		_, ok := quickEnvelope([]byte(s))
		require.True(t, ok, s)
	}
	for _, s := range envelopeSeeds[4:] {
		if _, ok := quickEnvelope([]byte(s)); ok {
			var rec line
			require.NoError(t, json.Unmarshal([]byte(s), &rec), s)
		}
	}
}

func TestLeadingType(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{`{"type":"task_started","turn_id":"t"}`, "task_started", true},
		{`{"turn_id":"t","type":"task_started"}`, "", false},
		{`{"type":"a\"b"}`, "", false},
		{`{"type": "x"}`, "", false},
		{`{"type":1}`, "", false},
	} {
		got, ok := leadingType([]byte(tc.in))
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestValidJSONMatchesStandardLibrary(t *testing.T) {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	ok := strings.Repeat("[", 9999) + strings.Repeat("]", 9999)
	for _, s := range []string{`{"a":[1,{"b":null}]}`, `{"a":"\xff"}`, `{"a":1,}`, `[1e999]`, `{"a":01}`, `nul`, deep, ok,
		`{"a":"x` + "\x01" + `"}`, `"\ud800"`, `{"a":1}x`} {
		require.Equal(t, json.Valid([]byte(s)), validJSON([]byte(s)), "%.40q", s)
	}
}

// TestUnmarshalMatchesStandardLibrary checks the decoder used for rollout records against encoding/json, also
// where decoding fails part-way (the standard library keeps what it decoded, which callers read).
func TestUnmarshalMatchesStandardLibrary(t *testing.T) {
	type rec struct {
		Type      string          `json:"type"`
		TurnID    string          `json:"turn_id"`
		StartedAt int64           `json:"started_at"`
		Item      json.RawMessage `json:"item"`
		Ms        *int64          `json:"started_at_ms"`
		Images    []string        `json:"images"`
	}
	for _, s := range []string{
		`{"type":"task_started","turn_id":"t","started_at":5,"item":{"a":[1]},"started_at_ms":null,"images":["x"]}`,
		`{"type":"task_started","started_at":"x","turn_id":"t"}`,
		`{"turn_id":5,"type":"x","started_at":3}`,
		`{"TYPE":"x","Turn_Id":"y"}`,
		`{"type":"a","type":"b"}`,
		`{"type":"bad \xff"}`,
		`[1]`,
	} {
		var want, got rec
		wantErr := json.Unmarshal([]byte(s), &want)
		gotErr := unmarshal([]byte(s), &got)
		require.Equal(t, wantErr == nil, gotErr == nil, s)
		require.Equal(t, want, got, s)
	}
}

// keep copies items into shared blocks; appending to one must not overwrite the next, and big items and the
// block's end are handled.
func TestKeepCopiesWithoutOverlap(t *testing.T) {
	var b builder
	src := []byte(`{"type":"message"}`)
	first := b.keep(src)
	second := b.keep([]byte(`{"b":2}`))
	src[0] = 'x' // a copy, not the caller's bytes
	require.Equal(t, `{"type":"message"}`, string(first))
	_ = append(first, "garbage"...)
	require.Equal(t, `{"b":2}`, string(second))
	big := make([]byte, arenaChunk)
	require.Equal(t, big, []byte(b.keep(big)))
	var kept []json.RawMessage
	for i := range 3 * arenaChunk / 1000 {
		kept = append(kept, b.keep([]byte(fmt.Sprintf("%0999d", i))))
	}
	for i, k := range kept {
		require.Equal(t, fmt.Sprintf("%0999d", i), string(k))
	}
}

func TestAppendLineMatchesMarshalledLine(t *testing.T) {
	for _, c := range []struct{ ts, typ, payload string }{
		{"2026-01-02T03:04:05.678Z", "response_item", `{"type":"message","text":"<a&b> \"q\" é"}`},
		{"ts \"quoted\" \\ and\ncontrol", "event_msg", `{}`},
		{"é ü \u2028", "t\x01", `[1,2]`},
		{"bad \xff utf8", "x", `"s"`},
	} {
		ord := int64(42)
		want, err := marshalNoEscape(line{Timestamp: c.ts, Ordinal: &ord, Type: c.typ, Payload: json.RawMessage(c.payload)})
		require.NoError(t, err)
		got, err := appendLine([]byte("prefix"), c.ts, ord, c.typ, []byte(c.payload))
		require.NoError(t, err)
		require.Equal(t, "prefix"+string(want)+"\n", string(got))
	}
}

// oddEvent is an event whose tag and payload need escaping.
type oddEvent struct {
	Text string `json:"text"`
	tag  string
}

func (e oddEvent) EventType() string { return e.tag }

// TestRecorderLinesMatchMarshalledLines: what the recorder writes (payloads encoded into reused buffers,
// event tags spliced in) is byte for byte the line marshalNoEscape makes of the same record.
func TestRecorderLinesMatchMarshalledLines(t *testing.T) {
	r, err := Create(t.TempDir(), SessionMeta{ID: "019a0000-0000-7000-8000-000000000001"}, time.Unix(1700000000, 0))
	require.NoError(t, err)
	defer r.Close()
	at := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	r.now = func() time.Time { return at }
	long := strings.Repeat("<&> é \u2028 \"q\"\n", 40000) // outgrows the reused buffers
	events := []Event{
		TokenCount{},
		TaskStarted{TurnID: "t1", StartedAt: 5},
		oddEvent{Text: long, tag: "odd"},
		oddEvent{Text: "x", tag: "<tag> \"q\" é"},
	}
	var want []string
	for _, ev := range events {
		require.NoError(t, r.AppendEvent(ev))
		body, err := marshalNoEscape(ev)
		require.NoError(t, err)
		tag, _ := json.Marshal(ev.EventType())
		payload := `{"type":` + string(tag)
		if len(body) > 2 {
			payload += ","
		}
		payload += string(body[1:])
		want = append(want, payload)
	}
	items := []json.RawMessage{
		json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"<hi> & é"}]}`),
		json.RawMessage(" { \"type\" : \"message\",\n \"x\": [1, 2] } "),
	}
	for _, it := range items {
		require.NoError(t, r.AppendResponseItem(it))
		c, err := marshalNoEscape(it)
		require.NoError(t, err)
		want = append(want, string(c))
	}
	require.NoError(t, r.Append("compacted", map[string]any{"message": long, "b": []int{1}}))
	c, err := marshalNoEscape(map[string]any{"message": long, "b": []int{1}})
	require.NoError(t, err)
	want = append(want, string(c))

	data, err := os.ReadFile(r.Path())
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 1+len(want))
	for i, p := range want {
		ord := int64(i + 1)
		types := TypeEventMsg
		switch {
		case i >= len(events)+len(items):
			types = "compacted"
		case i >= len(events):
			types = TypeResponseItem
		}
		w, err := marshalNoEscape(line{Timestamp: FormatTimestamp(at), Ordinal: &ord, Type: types, Payload: json.RawMessage(p)})
		require.NoError(t, err)
		require.Equal(t, string(w), lines[i+1], "line %d", i+1)
	}
}

// TestHeldLinesAreWrittenTogether: lines appended under Hold reach the file at the last release (or a
// Flush, Sync or Close), with the ordinals and bytes they would have had unheld.
func TestHeldLinesAreWrittenTogether(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	write := func(r *Recorder, held bool) []string {
		r.now = func() time.Time { return at }
		size := func() int64 {
			fi, err := os.Stat(r.Path())
			require.NoError(t, err)
			return fi.Size()
		}
		start := size()
		var outer, inner func() error
		if held {
			outer = r.Hold()
		}
		require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "t1", StartedAt: 5}))
		if held {
			inner = r.Hold()
		}
		require.NoError(t, r.AppendResponseItem(json.RawMessage(`{"type":"message","role":"user","content":[]}`)))
		if held {
			require.NoError(t, inner())
			require.NoError(t, inner()) // a release counts once
			require.Equal(t, start, size(), "held lines are written by the last release")
			require.NoError(t, outer())
		}
		require.NoError(t, r.AppendEvent(TokenCount{}))
		if held {
			release := r.Hold()
			require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "t2"}))
			require.NoError(t, r.Flush())
			require.Greater(t, size(), start)
			require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "t3"}))
			require.NoError(t, r.Close()) // writes what is still held
			require.NoError(t, release())
		} else {
			require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "t2"}))
			require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "t3"}))
			require.NoError(t, r.Close())
		}
		data, err := os.ReadFile(r.Path())
		require.NoError(t, err)
		return strings.Split(string(data), "\n")
	}
	meta := SessionMeta{ID: "019a0000-0000-7000-8000-000000000002", Timestamp: "x"}
	r1, err := Create(t.TempDir(), meta, at)
	require.NoError(t, err)
	r2, err := Create(t.TempDir(), meta, at)
	require.NoError(t, err)
	plain, held := write(r1, false), write(r2, true)
	require.Len(t, plain, 7)
	require.Equal(t, plain, held)
}
