package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/rollout"
)

// benchThreads is the number of rollouts BenchmarkThreadList generates.
const benchThreads = 50_000

// genRollouts writes n small reference-format rollouts spread over 50 days, returning their ids.
func genRollouts(b *testing.B, home string, n int) []string {
	start := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	ids := make([]string, n)
	for i := 0; i < n; i++ {
		created := start.Add(time.Duration(i) * 86 * time.Second)
		id := fmt.Sprintf("01b00000-0000-7000-8000-%012d", i)
		ids[i] = id
		writeRollout(b, home, id, created, fmt.Sprintf("benchmark thread number %d", i))
	}
	return ids
}

// vmHWM returns the process's peak resident set size in kB (Linux), or -1.
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			v, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return v
		}
	}
	return -1
}

func BenchmarkThreadList(b *testing.B) {
	if testing.Short() {
		b.Skip("generates 50 000 rollouts")
	}
	base := b.TempDir()
	home := filepath.Join(base, "codex_home")
	require.NoError(b, os.MkdirAll(home, 0o755))
	t0 := time.Now()
	ids := genRollouts(b, home, benchThreads)
	b.Logf("generated %d rollouts in %v", len(ids), time.Since(t0))
	mm := mockmodel.New(b)

	listFirstPage := func(c *apptest.Client) {
		var res struct {
			Data []threadObj `json:"data"`
		}
		c.Result("thread/list", map[string]any{"limit": 25}, &res)
		if len(res.Data) != 25 {
			b.Fatalf("page of %d", len(res.Data))
		}
	}
	b.Run("cold_no_index", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			_ = os.Remove(filepath.Join(home, rollout.IndexFileName))
			c := apptest.Start(b, apptest.Options{Model: mm, Home: home})
			c.Initialize(false)
			b.StartTimer()
			listFirstPage(c)
			b.StopTimer()
			c.Close()
			b.StartTimer()
		}
	})
	b.Run("cold_with_index", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			c := apptest.Start(b, apptest.Options{Model: mm, Home: home})
			c.Initialize(false)
			b.StartTimer()
			listFirstPage(c)
			b.StopTimer()
			c.Close()
			b.StartTimer()
		}
	})
	c := apptest.Start(b, apptest.Options{Model: mm, Home: home})
	c.Initialize(false)
	listFirstPage(c)
	b.Run("warm", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			listFirstPage(c)
		}
	})
	// Pages after the first, by cursor, over the wire with a bare client (issue 17 item 2: < 20 ms).
	nextPages := func(b *testing.B, w *wireClient) {
		var first struct {
			NextCursor *string `json:"nextCursor"`
		}
		require.NoError(b, json.Unmarshal(w.call("thread/list", map[string]any{"limit": 50, "modelProviders": []string{}}), &first))
		require.NotNil(b, first.NextCursor)
		cpu0 := cpuTime(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			var res struct {
				Data       []json.RawMessage `json:"data"`
				NextCursor *string           `json:"nextCursor"`
			}
			require.NoError(b, json.Unmarshal(w.call("thread/list", map[string]any{"limit": 50, "modelProviders": []string{}, "cursor": *first.NextCursor}), &res))
			if len(res.Data) != 50 || res.NextCursor == nil {
				b.Fatalf("page of %d", len(res.Data))
			}
		}
		b.StopTimer()
		b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
	b.Run("next_page", func(b *testing.B) {
		w := startWire(b, home, mm)
		defer w.close()
		nextPages(b, w)
	})
	b.Run("next_page_during_reconcile", func(b *testing.B) {
		// A start on a home whose rollouts all changed since the index was written (as after a first start
		// seeded from the reference's database): the background reconcile re-reads every rollout while pages
		// are asked for. cpu-ms/op counts the reconcile's CPU too.
		later := time.Now().Add(time.Duration(b.N) * time.Minute)
		require.NoError(b, filepath.WalkDir(filepath.Join(home, "sessions"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				err = os.Chtimes(p, later, later)
			}
			return err
		}))
		w := startWire(b, home, mm)
		defer w.close()
		nextPages(b, w)
	})
	b.Run("read_one", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			th := readThread(b, c, ids[i%len(ids)], true)
			if len(th.Turns) != 1 {
				b.Fatalf("turns %d", len(th.Turns))
			}
		}
	})
}

// genBigRollout writes a rollout of about size bytes: turns of a user message, a 4 kB command output and a reply.
func genBigRollout(b *testing.B, home, id string, size int64) (string, int) {
	created := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	dir := filepath.Join(home, "sessions", "2026", "10", "01")
	require.NoError(b, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "rollout-2026-10-01T00-00-00-"+id+".jsonl")
	f, err := os.Create(path)
	require.NoError(b, err)
	w := bufio.NewWriterSize(f, 1<<20)
	ts := created.Format("2006-01-02T15:04:05.000Z")
	ord := 0
	line := func(format string, args ...any) {
		fmt.Fprintf(w, `{"timestamp":%q,"ordinal":%d,`, ts, ord)
		fmt.Fprintf(w, format, args...)
		w.WriteString("}\n")
		ord++
	}
	line(`"type":"session_meta","payload":{"id":%q,"session_id":%q,"timestamp":%q,"cwd":"/w","originator":"bench","cli_version":"0.169.0","source":"vscode","model_provider":"mock","history_mode":"paginated"}`, id, id, ts)
	output := strings.Repeat("x", 4000)
	turns := 0
	var written int64
	for written < size {
		tid := fmt.Sprintf("turn-%d", turns)
		line(`"type":"event_msg","payload":{"type":"task_started","turn_id":%q,"started_at":1}`, tid)
		line(`"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"question %d"}]}`, turns)
		line(`"type":"event_msg","payload":{"type":"item_completed","thread_id":%q,"turn_id":%q,"item":{"type":"UserMessage","id":"u%d","content":[{"type":"text","text":"question %d","text_elements":[]}]}}`, id, tid, turns, turns)
		line(`"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"c%d"}`, turns)
		line(`"type":"event_msg","payload":{"type":"item_completed","thread_id":%q,"turn_id":%q,"item":{"type":"CommandExecution","id":"c%d","command":["ls"],"cwd":"file:///w","parsed_cmd":[],"source":"agent","status":"completed","aggregated_output":%q,"exit_code":0,"duration":{"secs":0,"nanos":1000000}}}`, id, tid, turns, output)
		line(`"type":"response_item","payload":{"type":"function_call_output","call_id":"c%d","output":%q}`, turns, output)
		line(`"type":"event_msg","payload":{"type":"item_completed","thread_id":%q,"turn_id":%q,"item":{"type":"AgentMessage","id":"a%d","content":[{"type":"Text","text":"answer %d"}]}}`, id, tid, turns, turns)
		line(`"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"answer %d"}]}`, turns)
		line(`"type":"event_msg","payload":{"type":"task_complete","turn_id":%q,"last_agent_message":"answer %d"}`, tid, turns)
		turns++
		written = int64(w.Buffered()) + fileSize(f)
	}
	require.NoError(b, w.Flush())
	require.NoError(b, f.Close())
	return path, turns
}

func fileSize(f *os.File) int64 {
	info, err := f.Stat()
	if err != nil {
		return 0
	}
	return info.Size()
}

func BenchmarkResumeLargeRollout(b *testing.B) {
	if testing.Short() {
		b.Skip("generates a 100 MB rollout")
	}
	base := b.TempDir()
	home := filepath.Join(base, "codex_home")
	require.NoError(b, os.MkdirAll(home, 0o755))
	const id = "01b00000-0000-7000-8000-00000000b16b"
	path, turns := genBigRollout(b, home, id, 100<<20)
	info, err := os.Stat(path)
	require.NoError(b, err)
	b.Logf("rollout %d MB, %d turns", info.Size()>>20, turns)
	mm := mockmodel.New(b)
	c := apptest.Start(b, apptest.Options{Model: mm, Home: home})
	c.Initialize(false)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	hwmBefore := vmHWM()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var res struct {
			Thread struct {
				ID string `json:"id"`
			} `json:"thread"`
		}
		c.Result("thread/resume", map[string]any{"threadId": id, "excludeTurns": true}, &res)
		if res.Thread.ID != id {
			b.Fatal("wrong thread")
		}
		b.StopTimer()
		c.Srv.Threads().Unload(id)
		b.StartTimer()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(info.Size())/float64(1<<20), "MB_rollout")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(1<<20), "MB_alloc/op")
	b.ReportMetric(float64(vmHWM()), "kB_VmHWM")
	b.ReportMetric(float64(vmHWM()-hwmBefore), "kB_VmHWM_growth")
}
