package rollout

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// genRollouts writes n small rollouts (one turn each) spread over a year, quickly (no fsync).
func genRollouts(b *testing.B, home string, n int) string {
	b.Helper()
	start := time.Date(2025, 1, 1, 8, 0, 0, 0, time.Local)
	var last string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("01e00000-0000-7000-8000-%012d", i)
		created := start.Add(time.Duration(i) * 10 * time.Minute)
		dir := filepath.Join(home, "sessions", created.Format("2006"), created.Format("01"), created.Format("02"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		ts := FormatTimestamp(created)
		content := fmt.Sprintf(`{"timestamp":"%[1]s","ordinal":0,"type":"session_meta","payload":{"id":"%[2]s","session_id":"%[2]s","timestamp":"%[1]s","cwd":"/work/p%[3]d","originator":"appserver","cli_version":"0.169.0","source":"vscode","model_provider":"openai","history_mode":"paginated"}}
{"timestamp":"%[1]s","ordinal":1,"type":"event_msg","payload":{"type":"task_started","turn_id":"t%[3]d","started_at":1}}
{"timestamp":"%[1]s","ordinal":2,"type":"turn_context","payload":{"turn_id":"t%[3]d","cwd":"/work/p%[3]d","approval_policy":"never","sandbox_policy":{"type":"read-only"},"model":"gpt-x","summary":"auto"}}
{"timestamp":"%[1]s","ordinal":3,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"question number %[3]d"}]}}
{"timestamp":"%[1]s","ordinal":4,"type":"event_msg","payload":{"type":"item_completed","thread_id":"%[2]s","turn_id":"t%[3]d","item":{"type":"UserMessage","id":"u%[3]d","content":[{"type":"text","text":"question number %[3]d","text_elements":[]}]}}}
{"timestamp":"%[1]s","ordinal":5,"type":"event_msg","payload":{"type":"item_completed","thread_id":"%[2]s","turn_id":"t%[3]d","item":{"type":"AgentMessage","id":"m%[3]d","content":[{"type":"Text","text":"answer %[3]d"}]}}}
{"timestamp":"%[1]s","ordinal":6,"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"answer %[3]d"}]}}
{"timestamp":"%[1]s","ordinal":7,"type":"event_msg","payload":{"type":"task_complete","turn_id":"t%[3]d","last_agent_message":"answer %[3]d"}}
`, ts, id, i)
		last = filepath.Join(dir, RolloutFileName(id, created))
		if err := os.WriteFile(last, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(last, created, created); err != nil {
			b.Fatal(err)
		}
	}
	return last
}

// BenchmarkStore50k times, over 50 000 rollouts: a second start (Open + first page, index present), the next
// page, a search page, a first start on a home without index (Open + first page, i.e. a full build) and ReadFile
// of one rollout.
func BenchmarkStore50k(b *testing.B) {
	home := b.TempDir()
	one := genRollouts(b, home, 50_000)
	s0, err := Open(home) // builds the index
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := s0.List(ListQuery{Limit: 1}); err != nil {
		b.Fatal(err)
	}
	_ = s0.Close()
	b.Run("SecondStartFirstPage", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s, err := Open(home)
			if err != nil {
				b.Fatal(err)
			}
			page, _, err := s.List(ListQuery{Limit: 50})
			if err != nil || len(page) != 50 {
				b.Fatal(err, len(page))
			}
			b.StopTimer()
			_ = s.WaitReconciled(context.Background())
			_ = s.Close()
			b.StartTimer()
		}
	})
	s, err := Open(home)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	_ = s.WaitReconciled(context.Background())
	b.Run("NextPage", func(b *testing.B) {
		_, next, err := s.List(ListQuery{Limit: 50, SortKey: SortUpdatedAt})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			page, _, err := s.List(ListQuery{Limit: 50, SortKey: SortUpdatedAt, Cursor: next})
			if err != nil || len(page) != 50 {
				b.Fatal(err, len(page))
			}
		}
	})
	b.Run("SearchPage", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, err := s.List(ListQuery{Limit: 50, SearchTerm: "number 4999", SortKey: SortUpdatedAt}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FirstStartFirstPage", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			for _, suffix := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(filepath.Join(home, IndexFileName+suffix))
			}
			b.StartTimer()
			s, err := Open(home)
			if err != nil {
				b.Fatal(err)
			}
			if page, _, err := s.List(ListQuery{Limit: 50}); err != nil || len(page) != 50 {
				b.Fatal(err, len(page))
			}
			_ = s.Close()
		}
	})
	b.Run("ReadFile", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			th, err := ReadFile(one)
			if err != nil || len(th.Turns) != 1 {
				b.Fatal(err)
			}
		}
	})
}

// writeTurns writes a rollout of items/2 one-message turns (a user and an agent message each) and returns its
// path: legacy (user_message/agent_message events, as `appserver-bench scale` writes) or paginated
// (item_completed events, as the reference 0.169 writes).
func writeTurns(b *testing.B, home string, items int, paginated bool) string {
	b.Helper()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dir := filepath.Join(home, "sessions", "2026", "01", "02")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	id := "01e00000-0000-7000-8000-5ca1e0000001"
	mode := "legacy"
	if paginated {
		mode = HistoryModePaginated
	}
	ts := created.Format("2006-01-02T15:04:05.000Z")
	var sb strings.Builder
	fmt.Fprintf(&sb, `{"timestamp":"%[1]s","type":"session_meta","payload":{"id":"%[2]s","session_id":"%[2]s","timestamp":"%[1]s","cwd":"/w","originator":"codex_vscode","cli_version":"0.169.0","source":"vscode","model_provider":"mock","history_mode":"%[3]s"}}`+"\n", ts, id, mode)
	for t := 0; t < (items+1)/2; t++ {
		fmt.Fprintf(&sb, `{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"task_started","turn_id":"t%[2]d","started_at":1,"model_context_window":null,"collaboration_mode_kind":"default"}}
{"timestamp":"%[1]s","type":"turn_context","payload":{"turn_id":"t%[2]d","cwd":"/w","approval_policy":"never","sandbox_policy":{"type":"read-only"},"model":"mock-model","summary":"auto"}}
{"timestamp":"%[1]s","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"question number %[2]d"}]}}
`, ts, t)
		if paginated {
			fmt.Fprintf(&sb, `{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"item_completed","thread_id":"%[3]s","turn_id":"t%[2]d","item":{"type":"UserMessage","id":"u%[2]d","content":[{"type":"text","text":"question number %[2]d","text_elements":[]}]},"started_at_ms":1767323045000,"completed_at_ms":1767323045000}}
{"timestamp":"%[1]s","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"answer %[2]d"}]}}
{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"item_completed","thread_id":"%[3]s","turn_id":"t%[2]d","item":{"type":"AgentMessage","id":"a%[2]d","content":[{"type":"Text","text":"answer %[2]d"}],"phase":"final_answer"},"started_at_ms":1767323045000,"completed_at_ms":1767323045001}}
`, ts, t, id)
		} else {
			fmt.Fprintf(&sb, `{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"user_message","message":"question number %[2]d","images":[],"local_images":[],"text_elements":[]}}
{"timestamp":"%[1]s","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"answer %[2]d"}]}}
{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"agent_message","message":"answer %[2]d"}}
`, ts, t)
		}
		fmt.Fprintf(&sb, `{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"task_complete","turn_id":"t%[2]d","last_agent_message":"answer %[2]d"}}
`, ts, t)
	}
	p := filepath.Join(dir, "rollout-"+created.Format("2006-01-02T15-04-05")+"-"+id+".jsonl")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkReadFile10kItems reads back a thread of 10 000 items (5 000 turns), in the legacy and the paginated
// shape: the first step of thread/resume.
func BenchmarkReadFile10kItems(b *testing.B) {
	for _, paginated := range []bool{false, true} {
		name := "legacy"
		if paginated {
			name = "paginated"
		}
		b.Run(name, func(b *testing.B) {
			p := writeTurns(b, b.TempDir(), 10_000, paginated)
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				th, err := ReadFile(p)
				if err != nil || len(th.Turns) != 5000 || len(th.Turns[4999].Items) != 2 || len(th.ResponseItems) != 10_000 {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime returns the process's user and system CPU time: steadier than wall time on a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
