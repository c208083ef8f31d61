package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
)

type countingHandler struct{ requests atomic.Int64 }

func (h *countingHandler) HandleRequest(_ context.Context, r *Request) (any, error) {
	h.requests.Add(1)
	if len(r.Method)%2 == 0 {
		return nil, InvalidRequest("even")
	}
	return r.Params, nil
}
func (h *countingHandler) HandleNotification(context.Context, string, json.RawMessage) {}

// FuzzConn feeds arbitrary input through the reader and dispatcher: it must never panic, every request
// it dispatches gets exactly one answer, and everything written is one valid JSON object per line.
func FuzzConn(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"x","version":"1"}}}`,
		`{this is not json`,
		`[{"id":900,"method":"thread/loaded/list","params":{}}]`,
		`{}`, `{"id":902}`, `{"method":"x"}`, `{"id":99999,"result":{}}`,
		`{"jsonrpc":"2.0","id":"s","method":"m","params":null}`,
		"{\"id\":1,\"method\":\"a\"}\n{\"id\":2,\"method\":\"bb\",\"params\":[1,2]}\r\n",
		`{"id":1e400,"method":"x"}`, `{"id":-0,"method":"\u0000"}`, "\xff\xfe", `{"id":"\ud800","method":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		h := &countingHandler{}
		var out bytes.Buffer
		c := NewConn(bytes.NewReader(input), &out, h, Options{QueueSize: 1 << 16})
		if err := c.Run(context.Background()); err != nil {
			t.Fatalf("Run: %v", err)
		}
		answers := 0
		for _, line := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("invalid output line %q: %v", line, err)
			}
			answers++
		}
		if int64(answers) != h.requests.Load() {
			t.Fatalf("%d requests dispatched, %d answers written", h.requests.Load(), answers)
		}
	})
}
