package rollout

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"appserver/refstate"
)

// benchTurn returns one turn's records as our recorder writes them: the turn context, the user message, three
// tool calls with their outputs, token counts and the answer.
func benchTurn(l *incLines, n int) string {
	var sb strings.Builder
	turn := "turn-" + itoa(n)
	sb.WriteString(l.started(turn))
	sb.WriteString(l.rec("turn_context", `{"turn_id":"`+turn+`","cwd":"/work/proj","approval_policy":"never","sandbox_policy":{"type":"read-only"},"model":"gpt-test","summary":"auto"}`))
	sb.WriteString(l.rec("response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"please look at the files of the project and tell me what they do, number `+itoa(n)+`"}]}`))
	sb.WriteString(l.user(turn, "u-"+itoa(n), "please look at the files of the project and tell me what they do"))
	for k := range 3 {
		sb.WriteString(l.tool(turn, "call_"+itoa(n)+"_"+itoa(k)))
		sb.WriteString(l.rec("event_msg", `{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000,"cached_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":0,"total_tokens":1050},"last_token_usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":15},"model_context_window":258400},"rate_limits":null}`))
	}
	sb.WriteString(l.rec("response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"They build the server, test it and document it."}]}`))
	sb.WriteString(l.agent(turn, "a-"+itoa(n), "They build the server, test it and document it."))
	sb.WriteString(l.completed(turn))
	return sb.String()
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// BenchmarkRefHistoryTurnEnd times the reference-history projection at a turn's end on a thread of 2 000 turns
// (about 30 000 records, 8 items each): each iteration appends one turn and projects it. "incremental" is
// RefHistory as it runs (reads what the turn appended), "whole" the same with nothing kept (what a thread just
// resumed costs), "before" the projection as it was (ReadFile of the whole rollout, every turn converted).
func BenchmarkRefHistoryTurnEnd(b *testing.B) {
	const turns = 2000
	ctx := context.Background()
	for _, mode := range []string{"incremental", "whole", "before"} {
		b.Run(mode, func(b *testing.B) {
			t := &testing.T{}
			home, path, _ := incHome(t)
			l := &incLines{ord: 1}
			fixture, _ := os.ReadFile("testdata/paginated_three_turns.jsonl")
			var sb strings.Builder
			sb.WriteString(strings.SplitAfter(string(fixture), "\n")[0]) // session_meta, paginated
			for n := range turns {
				sb.WriteString(benchTurn(l, n))
			}
			if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			rh := NewRefHistory(home)
			defer rh.Close()
			h, err := refstate.OpenHistory(ctx, home)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			project := func() {
				switch mode {
				case "whole":
					rh.Forget(incThread)
					fallthrough
				case "incremental":
					rh.Project(ctx, incThread, path)
				case "before":
					info, err := os.Stat(path)
					if err != nil {
						b.Fatal(err)
					}
					th, err := ReadFile(path)
					if err != nil {
						b.Fatal(err)
					}
					if err := h.Project(ctx, incThread, ReferenceTurns(th), th.NextOrdinal, info.Size()); err != nil {
						b.Fatal(err)
					}
				}
			}
			project()
			info, _ := os.Stat(path)
			var cpu time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.WriteString(benchTurn(l, turns+i)); err != nil {
					b.Fatal(err)
				}
				_ = f.Close()
				b.StartTimer()
				c0 := cpuTime()
				project()
				cpu += cpuTime() - c0
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(info.Size())/(1<<20), "MiB")
		})
	}
}
