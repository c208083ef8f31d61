package model

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, stream string) ([]Event, *Completed, error) {
	t.Helper()
	var evs []Event
	comp, err := readStream(strings.NewReader(stream), nil, func(ev Event) { evs = append(evs, ev) }, slog.New(slog.DiscardHandler))
	return evs, comp, err
}

func TestSSEFraming(t *testing.T) {
	stream := ": keep-alive comment\r\n" +
		"event: response.created\r\n" +
		"data: {\"type\":\"response.created\",\r\n" + // data split over two lines
		"data: \"response\":{\"id\":\"r1\"}}\r\n\r\n" +
		"event: response.something_new\ndata: {\"type\":\"response.something_new\"}\n\n" + // unknown: ignored
		"data: {not json}\n\n" + // undecodable: skipped
		"\n\n" + // empty events
		"data:{\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":2,\"content_index\":1,\"delta\":\"é\"}\n\n" +
		"data: {\"type\":\"response.reasoning_text.delta\",\"item_id\":\"rs\",\"content_index\":3,\"delta\":\"r\"}\n\n" +
		"data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\"}}\n\n" +
		"data: {\"type\":\"response.output_text.delta\",\"delta\":\"after completed: never read\"}\n\n"
	evs, comp, err := parse(t, stream)
	require.NoError(t, err)
	require.Equal(t, []Event{
		CreatedEvent{ResponseID: "r1"},
		TextDeltaEvent{ItemID: "m", OutputIndex: 2, ContentIndex: 1, Delta: "é"},
		ReasoningTextDeltaEvent{ItemID: "rs", ContentIndex: 3, Delta: "r"},
	}, evs)
	require.Equal(t, "r1", comp.ResponseID)
	require.Nil(t, comp.Usage)
}

func TestSSEHugeLineAndVerbatimItem(t *testing.T) {
	big := strings.Repeat("x", 5<<20)
	item := `{"type":"message","id":"m1","content":[{"type":"output_text","text":"` + big + `"}],"x_unknown":{"k": [1, 2]}}`
	stream := `data: {"type":"response.output_item.done","output_index":0,"item":` + item + "}\n\n" +
		`data: {"type":"response.completed","response":{"id":"r"}}` + "\n\n"
	evs, comp, err := parse(t, stream)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	done := evs[0].(ItemDoneEvent)
	require.Equal(t, item, string(done.Item), "kept byte-for-byte")
	require.Equal(t, "m1", done.ID)
	require.Equal(t, []json.RawMessage{done.Item}, comp.Items)
}

func TestSSEEOFBeforeCompleted(t *testing.T) {
	for _, stream := range []string{"", "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n", "data: {\"type\":\"response.comp"} {
		_, _, err := parse(t, stream)
		var me *Error
		require.ErrorAs(t, err, &me)
		require.Equal(t, "stream disconnected before completion: stream closed before response.completed", me.Message)
		require.True(t, me.Retryable)
	}
}

func TestSSEReadError(t *testing.T) {
	r := io.MultiReader(strings.NewReader("data: {\"type\":\"response.created\"}\n\n"), errReader{})
	_, err := readStream(r, nil, func(Event) {}, slog.New(slog.DiscardHandler))
	var me *Error
	require.ErrorAs(t, err, &me)
	require.ErrorIs(t, err, io.ErrClosedPipe)
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestSSEFailedWithoutError(t *testing.T) {
	_, _, err := parse(t, "data: {\"type\":\"response.failed\",\"response\":{}}\n\n")
	require.EqualError(t, err, "stream disconnected before completion: response.failed event received")
	_, _, err = parse(t, "data: {\"type\":\"response.incomplete\",\"response\":{}}\n\n")
	require.EqualError(t, err, "Incomplete response returned, reason: unknown")
	_, _, err = parse(t, "data: {\"type\":\"response.completed\",\"response\":7}\n\n")
	require.ErrorContains(t, err, "failed to parse response.completed")
}

func TestTryAgainIn(t *testing.T) {
	for in, want := range map[string]string{
		"Please try again in 1.5s.":   "1.5s",
		"please TRY AGAIN IN 250ms":   "250ms",
		"try again in 2 seconds":      "2s",
		"no hint here":                "0s",
		"try again in soon":           "0s",
		"Rate limit. Try again in 3s": "3s",
	} {
		require.Equal(t, want, tryAgainIn(in).String(), in)
	}
}

func TestBackoffGrowsWithJitter(t *testing.T) {
	for n := 1; n <= 4; n++ {
		d := backoff(200e6, n)
		nominal := float64(int64(200e6) << (n - 1))
		require.InDelta(t, nominal, float64(d), nominal*0.1+1, "attempt %d", n)
	}
	require.Positive(t, backoff(200e6, 500), "no overflow")
}

// chunkReader returns one chunk per Read, logging each read.
type chunkReader struct {
	chunks []string
	log    *[]string
}

func (c *chunkReader) Read(p []byte) (int, error) {
	*c.log = append(*c.log, "read")
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// The events decoded from one read are delivered under one hold, released before the next read and when
// the stream ends.
func TestHoldSpansTheEventsOfOneRead(t *testing.T) {
	delta := func(d string) string {
		return `data: {"type":"response.output_text.delta","item_id":"m","delta":"` + d + `"}` + "\n\n"
	}
	var log []string
	r := &chunkReader{log: &log, chunks: []string{
		delta("a") + delta("b"),
		delta("c") + `data: {"type":"response.completed","response":{"id":"r"}}` + "\n\n",
	}}
	hold := func() func() {
		log = append(log, "hold")
		return func() { log = append(log, "release") }
	}
	comp, err := readStream(r, hold, func(ev Event) { log = append(log, "ev "+ev.(TextDeltaEvent).Delta) }, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Equal(t, "r", comp.ResponseID)
	require.Equal(t, []string{"read", "hold", "ev a", "ev b", "release", "read", "hold", "ev c", "release"}, log)
}
