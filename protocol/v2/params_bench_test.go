package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

// turnStartPasted is a turn/start with a 1 MiB pasted text input and a cwd, the common large request.
func turnStartPasted(tb testing.TB) json.RawMessage {
	tb.Helper()
	text := strings.Repeat("pasted line with \"quotes\", a tab\t and some words\n", 1<<20/48)
	raw, err := json.Marshal(map[string]any{
		"threadId": "019a0000-0000-7000-8000-000000000000",
		"cwd":      "/work/project",
		"input":    []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}},
	})
	require.NoError(tb, err)
	return raw
}

// BenchmarkDecodeParamsTurnStart decodes a turn/start with a large pasted input, as the dispatch does.
func BenchmarkDecodeParamsTurnStart(b *testing.B) {
	spec, ok := protocol.LookupClientRequest(protocol.MethodTurnStart)
	require.True(b, ok)
	raw := turnStartPasted(b)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := protocol.DecodeParams(spec, raw, nil); err != nil {
			b.Fatal(err)
		}
	}
}
