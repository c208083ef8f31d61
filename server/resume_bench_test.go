package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/config"
	"appserver/internal/mockmodel"
	"appserver/server"
)

// wireClient is a bare JSON-RPC client over pipes to an in-process server: unlike apptest it does not validate
// messages against the schema, so a benchmark's time is the server's and the transport's.
type wireClient struct {
	tb     testing.TB
	srv    *server.Server
	in     *io.PipeWriter
	out    *bufio.Reader
	done   chan error
	nextID int64
}

// startWire starts a server on home (config.toml pointing at a mock model) and initializes a connection.
func startWire(tb testing.TB, home string, mm *mockmodel.Server) *wireClient {
	tb.Helper()
	cfgText := fmt.Sprintf(`model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.mock]
name = "Mock Responses API"
base_url = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, mm.URL())
	require.NoError(tb, os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfgText), 0o644))
	return serveWire(tb, home, "bench", nil)
}

// serveWire starts a server on home's config.toml and initializes a connection as client name; wrap,
// when set, wraps the server's output (to watch or hold its writes).
func serveWire(tb testing.TB, home, name string, wrap func(io.Writer) io.Writer) *wireClient {
	tb.Helper()
	cfg, err := config.Load(home, nil)
	require.NoError(tb, err)
	srv := server.New(server.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var w io.Writer = outW
	if wrap != nil {
		w = wrap(outW)
	}
	c := &wireClient{tb: tb, srv: srv, in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	go func() {
		c.done <- srv.ServeConn(context.Background(), inR, w)
		_ = outW.Close()
	}()
	c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": name, "version": "1"}})
	c.notify("initialized")
	return c
}

func (c *wireClient) notify(method string) {
	_, err := fmt.Fprintf(c.in, `{"jsonrpc":"2.0","method":%q}`+"\n", method)
	require.NoError(c.tb, err)
}

// call sends a request and returns its raw result, skipping notifications; a JSON-RPC error fails the benchmark.
func (c *wireClient) call(method string, params any) json.RawMessage {
	c.nextID++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	require.NoError(c.tb, err)
	_, err = c.in.Write(append(b, '\n'))
	require.NoError(c.tb, err)
	for {
		line, err := c.out.ReadBytes('\n')
		require.NoError(c.tb, err)
		if !strings.HasPrefix(string(line[:min(len(line), 12)]), `{"id":`) && !strings.HasPrefix(string(line[:min(len(line), 12)]), `{"error":`) {
			continue // a notification or a server request
		}
		var m struct {
			ID     *int64          `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		require.NoError(c.tb, json.Unmarshal(line, &m))
		if m.Method != "" || m.ID == nil || *m.ID != c.nextID {
			continue
		}
		if len(m.Error) > 0 {
			c.tb.Fatalf("%s: %s", method, m.Error)
		}
		return m.Result
	}
}

func (c *wireClient) close() {
	go func() { _, _ = io.Copy(io.Discard, c.out) }() // the server may still write (thread/closed…)
	_ = c.in.Close()
	<-c.done
	c.srv.Close()
}

// writeScaleRollout stores, like `appserver-bench scale`, a legacy thread of items/2 one-message turns (a user
// and an agent message each) in home.
func writeScaleRollout(tb testing.TB, home, id string, items int) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := filepath.Join(home, "sessions", "2026", "01", "02")
	require.NoError(tb, os.MkdirAll(d, 0o755))
	ts := created.Format("2006-01-02T15:04:05.000Z")
	var b strings.Builder
	fmt.Fprintf(&b, `{"timestamp":"%[1]s","type":"session_meta","payload":{"id":"%[2]s","session_id":"%[2]s","timestamp":"%[1]s","cwd":"%[3]s","originator":"codex_vscode","cli_version":"0.169.0","source":"vscode","model_provider":"mock","history_mode":"legacy"}}`+"\n", ts, id, home)
	for t := 0; t < (items+1)/2; t++ {
		fmt.Fprintf(&b, `{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"task_started","turn_id":"t%[2]d","started_at":1,"model_context_window":null,"collaboration_mode_kind":"default"}}
{"timestamp":"%[1]s","type":"turn_context","payload":{"turn_id":"t%[2]d","cwd":"%[3]s","approval_policy":"never","sandbox_policy":{"type":"read-only"},"model":"mock-model","summary":"auto"}}
{"timestamp":"%[1]s","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"question number %[2]d"}]}}
{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"user_message","message":"question number %[2]d","images":[],"local_images":[],"text_elements":[]}}
{"timestamp":"%[1]s","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"answer %[2]d"}]}}
{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"agent_message","message":"answer %[2]d"}}
{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"task_complete","turn_id":"t%[2]d","last_agent_message":"answer %[2]d"}}
`, ts, t, home)
	}
	p := filepath.Join(d, "rollout-"+created.Format("2006-01-02T15-04-05")+"-"+id+".jsonl")
	require.NoError(tb, os.WriteFile(p, []byte(b.String()), 0o644))
}

// BenchmarkResume10kItems times thread/resume (all turns included, as `appserver-bench scale` asks) of a stored
// thread of 10 000 items over the wire, request → reply, unloading the thread between runs. cpu-ms/op (server
// and client) and allocations are steadier than wall time on a shared machine. Issue 17 item 1: < 300 ms.
func BenchmarkResume10kItems(b *testing.B) {
	home := filepath.Join(b.TempDir(), "codex_home")
	require.NoError(b, os.MkdirAll(home, 0o755))
	const id = "01e00000-0000-7000-8000-5ca1e0000001"
	writeScaleRollout(b, home, id, 10_000)
	c := startWire(b, home, mockmodel.New(b))
	defer c.close()
	resume := func(b *testing.B) {
		res := c.call("thread/resume", map[string]any{"threadId": id})
		// Count the items without decoding the reply: the client's work is not what is measured.
		if n := bytes.Count(res, []byte(`{"type":"userMessage",`)) + bytes.Count(res, []byte(`{"type":"agentMessage",`)); n != 10_000 {
			b.Fatalf("resume returned %d items", n)
		}
		c.srv.Threads().Unload(id)
	}
	// first: a fresh server on a fresh home per run, as `appserver-bench scale` measures it (the first resume
	// of a server also builds the thread index, which reads the rollout's metadata).
	b.Run("first", func(b *testing.B) {
		runtime.GC()
		b.ReportAllocs()
		var cpu time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			h := filepath.Join(b.TempDir(), "codex_home")
			require.NoError(b, os.MkdirAll(h, 0o755))
			writeScaleRollout(b, h, id, 10_000)
			fc := startWire(b, h, mockmodel.New(b))
			cpu0 := cpuTime(b)
			b.StartTimer()
			res := fc.call("thread/resume", map[string]any{"threadId": id})
			b.StopTimer()
			cpu += cpuTime(b) - cpu0
			if n := bytes.Count(res, []byte(`{"type":"userMessage",`)) + bytes.Count(res, []byte(`{"type":"agentMessage",`)); n != 10_000 {
				b.Fatalf("resume returned %d items", n)
			}
			fc.close()
		}
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	})
	t0 := time.Now()
	resume(b) // the first resume of the server also opens the thread index
	b.Logf("first resume (opens the index): %v", time.Since(t0))
	b.Run("again", func(b *testing.B) {
		runtime.GC()
		b.ReportAllocs()
		cpu0 := cpuTime(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			resume(b)
		}
		b.StopTimer()
		b.ReportMetric(float64((cpuTime(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
	})
}
