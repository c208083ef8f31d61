package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// mapEvents are the five events of a text response as the mock first built them, from maps.
func mapEvents(seq int64, text string) []map[string]any {
	rid, mid := "resp-"+itoa(seq), "msg_"+itoa(seq)+"_0"
	return []map[string]any{
		{"type": "response.created", "response": map[string]any{
			"id": rid, "object": "response", "status": "in_progress", "model": mockModelName, "output": []any{}}},
		{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{
			"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []any{}}},
		{"type": "response.output_text.delta", "item_id": mid, "output_index": 0, "content_index": 0, "delta": text},
		{"type": "response.output_item.done", "output_index": 0, "item": map[string]any{
			"type": "message", "id": mid, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}},
		{"type": "response.completed", "response": map[string]any{
			"id": rid, "object": "response", "status": "completed", "model": mockModelName, "usage": mockUsage}},
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// The hand-written text response carries the same events, with the same JSON values, as the map-built one.
func TestMockTextStreamMatchesMapEvents(t *testing.T) {
	for _, text := range []string{"ok", `ok: say "hi" <b>&` + "\n\u2028é"} {
		rec := httptest.NewRecorder()
		require.NoError(t, (&mockResponses{}).stream(rec, 7, text))
		require.Equal(t, "text/event-stream", rec.Header().Get("Content-Type"))
		blocks := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n\n"), "\n\n")
		want := mapEvents(7, text)
		require.Len(t, blocks, len(want))
		for i, blk := range blocks {
			name, data, ok := strings.Cut(blk, "\n")
			require.True(t, ok, blk)
			require.Equal(t, "event: "+want[i]["type"].(string), name)
			require.True(t, strings.HasPrefix(data, "data: "), data)
			var got, exp any
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &got))
			wb, err := json.Marshal(want[i])
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(wb, &exp))
			require.Equal(t, exp, got, "event %d", i)
		}
	}
}

// BenchmarkMockTurnRequest is the mock answering one turn's request of a thread 100 turns long (the
// history the turn subcommand's last requests carry), as the turn subcommand configures it.
func BenchmarkMockTurnRequest(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"model":"mock-model","input":[`)
	for i := 0; i < 200; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"type":"message","role":"user","id":"msg_0192","content":[{"type":"input_text","text":"bench turn 12","text_elements":[]}]},{"type":"message","role":"assistant","id":"msg_1_0","content":[{"type":"output_text","text":"ok","annotations":[]}]}`)
	}
	sb.WriteString(`]}`)
	body := sb.String()
	m := &mockResponses{noEcho: true}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(body))
		m.handle(httptest.NewRecorder(), req)
	}
}
