package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type scaleOpts struct {
	benchOpts
	threads, items, concurrent int
}

func parseScaleFlags(args []string, stderr io.Writer) (scaleOpts, error) {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var servers stringList
	var timeout time.Duration
	var workdir string
	newBenchFlags(fs, &servers, &timeout, &workdir, 120*time.Second)
	threads := fs.Int("threads", 1000, "idle threads to load (thread/start) before reading VmRSS")
	items := fs.Int("items", 10000, "items (user + agent messages) in the stored thread that is resumed")
	concurrent := fs.Int("concurrent", 20, "turns started at once on one connection, one per thread")
	if err := parseFlagSet(fs, args); err != nil {
		return scaleOpts{}, err
	}
	if *threads < *concurrent || *concurrent < 1 || *items < 2 {
		return scaleOpts{}, fmt.Errorf("%w: need --concurrent ≥ 1, --threads ≥ --concurrent and --items ≥ 2", errUsage)
	}
	bo, err := finishBenchFlags(fs, servers, timeout, workdir)
	if err != nil {
		return scaleOpts{}, err
	}
	return scaleOpts{benchOpts: bo, threads: *threads, items: *items, concurrent: *concurrent}, nil
}

// scaleResult is one server's scale figures.
type scaleResult struct {
	resume      time.Duration // thread/resume of the --items thread: request → response
	resumeItems int           // items in the resumed thread's turns
	startAll    time.Duration // --threads thread/start calls, one after another
	rssKiB      int64         // VmRSS with --threads idle threads loaded
	concurrent  time.Duration // first turn/start sent → last turn/completed
	checked     int           // items checked for cross-talk
	err         error
}

// runScale implements the scale subcommand: per server, resume a stored thread of --items items, load
// --threads idle threads and read VmRSS, then run --concurrent turns at once on one connection and check
// that every item carries its own turn's ids and content.
func runScale(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, help, err := setup(args, stderr, parseScaleFlags)
	if help || err != nil {
		return err
	}
	mock, err := startMockResponses()
	if err != nil {
		return err
	}
	defer mock.close()
	config := fmt.Sprintf(turnConfig, mock.baseURL())
	results := make([]scaleResult, len(o.servers))
	for j, c := range o.servers {
		results[j] = scaleOne(ctx, c, config, o)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	failed := 0
	for j, c := range o.servers {
		r := &results[j]
		var b strings.Builder
		fmt.Fprintf(&b, "server=%s threads=%d items=%d concurrent=%d", quoteIfNeeded(c.text), o.threads, o.items, o.concurrent)
		if r.err != nil {
			failed++
			fmt.Fprintf(stderr, "server=%s: %v\n", quoteIfNeeded(c.text), r.err)
		}
		fmt.Fprintf(&b, " resume=%s resume_items=%d thread_start_all=%s rss_idle=%s concurrent_turns=%s crosstalk_checked=%d",
			ms(r.resume), r.resumeItems, ms(r.startAll), mib(r.rssKiB), ms(r.concurrent), r.checked)
		if j > 0 && results[0].err == nil && r.err == nil {
			b0 := results[0]
			fmt.Fprintf(&b, " resume_x=%s rss_idle_x=%s concurrent_turns_x=%s",
				ratio(float64(r.resume), float64(b0.resume)), ratio(float64(r.rssKiB), float64(b0.rssKiB)),
				ratio(float64(r.concurrent), float64(b0.concurrent)))
		}
		if _, err := fmt.Fprintln(stdout, b.String()); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d servers failed", failed)
	}
	return nil
}

// scaleThreadID is the id of the stored --items thread.
const scaleThreadID = "01e00000-0000-7000-8000-5ca1e0000001"

func scaleOne(ctx context.Context, c command, config string, o scaleOpts) (r scaleResult) {
	conn, err := startConnPrep(ctx, c, o.workdir, config, o.timeout, func(home string) error {
		return writeBigRollout(home, o.items)
	})
	if err != nil {
		r.err = err
		return r
	}
	defer conn.close()
	if r.resume, r.resumeItems, err = scaleResume(conn); err != nil {
		r.err = err
		return r
	}
	if r.resumeItems < o.items {
		r.err = fmt.Errorf("thread/resume returned %d items, want %d", r.resumeItems, o.items)
		return r
	}
	ids := make([]string, 0, o.threads)
	start := time.Now()
	for i := 0; i < o.threads; i++ {
		res, err := conn.call("thread/start", map[string]any{"cwd": conn.home}, nil)
		if err != nil {
			r.err = err
			return r
		}
		var ts struct {
			Thread struct {
				ID string `json:"id"`
			} `json:"thread"`
		}
		if err := json.Unmarshal(res, &ts); err != nil || ts.Thread.ID == "" {
			r.err = fmt.Errorf("thread/start: no thread id in %.200s", res)
			return r
		}
		ids = append(ids, ts.Thread.ID)
	}
	r.startAll = time.Since(start)
	time.Sleep(time.Second) // let start-up work of the last threads settle before reading RSS
	if r.rssKiB, _, err = procMemKiB(conn.pid()); err != nil {
		r.err = err
		return r
	}
	r.concurrent, r.checked, r.err = scaleConcurrent(conn, ids[:o.concurrent])
	return r
}

// writeBigRollout stores a thread of items/2 one-message turns (user + agent message each) in home.
func writeBigRollout(home string, items int) error {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := filepath.Join(home, "sessions", "2026", "01", "02")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	ts := created.Format("2006-01-02T15:04:05.000Z")
	var b strings.Builder
	fmt.Fprintf(&b, `{"timestamp":"%[1]s","type":"session_meta","payload":{"id":"%[2]s","session_id":"%[2]s","timestamp":"%[1]s","cwd":"%[3]s","originator":"codex_vscode","cli_version":"0.169.0","source":"vscode","model_provider":"mock","history_mode":"legacy"}}`+"\n", ts, scaleThreadID, home)
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
	p := filepath.Join(d, "rollout-"+created.Format("2006-01-02T15-04-05")+"-"+scaleThreadID+".jsonl")
	return os.WriteFile(p, []byte(b.String()), 0o644)
}

// scaleResume times thread/resume of the stored thread and counts the items of its turns.
func scaleResume(conn *rpcConn) (time.Duration, int, error) {
	start := time.Now()
	res, err := conn.call("thread/resume", map[string]any{"threadId": scaleThreadID}, nil)
	d := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	var tr struct {
		Thread struct {
			Turns []struct {
				Items []json.RawMessage `json:"items"`
			} `json:"turns"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &tr); err != nil {
		return 0, 0, fmt.Errorf("thread/resume: %w", err)
	}
	n := 0
	for _, t := range tr.Thread.Turns {
		n += len(t.Items)
	}
	return d, n, nil
}

// scaleItem is the part of an item/started or item/completed notification the cross-talk check reads.
type scaleItem struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Item     struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"item"`
}

// scaleConcurrent starts one turn on each thread without waiting, then reads until every turn completed,
// checking that every item and delta names its own thread and turn and carries that turn's text.
func scaleConcurrent(conn *rpcConn, threads []string) (time.Duration, int, error) {
	prompt := func(i int) string { return fmt.Sprintf("scale turn %d on %s", i, threads[i]) }
	byThread := map[string]int{}
	reqs := map[string]int{} // request id → thread index
	start := time.Now()
	for i, id := range threads {
		byThread[id] = i
		rid, err := conn.send("turn/start", map[string]any{"threadId": id,
			"input": []any{map[string]any{"type": "text", "text": prompt(i)}}})
		if err != nil {
			return 0, 0, err
		}
		reqs[fmt.Sprint(rid)] = i
	}
	turnOf := make([]string, len(threads)) // thread index → turn id from the turn/start response
	agentText := make([]string, len(threads))
	var early []*message // notifications read before their turn/start response
	completed, checked := 0, 0
	deadline := time.Now().Add(conn.timeout)
	check := func(m *message) error {
		switch m.Method {
		case "item/started", "item/completed", "item/agentMessage/delta", "turn/started", "turn/completed":
		default:
			return nil
		}
		var p struct {
			scaleItem
			Delta string `json:"delta"`
			Turn  struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"turn"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return fmt.Errorf("%s: %w", m.Method, err)
		}
		i, ok := byThread[p.ThreadID]
		if !ok {
			return fmt.Errorf("%s names thread %q, which got no turn", m.Method, p.ThreadID)
		}
		turnID := p.TurnID
		if strings.HasPrefix(m.Method, "turn/") {
			turnID = p.Turn.ID
		}
		if turnID != turnOf[i] {
			return fmt.Errorf("cross-talk: %s on thread %s names turn %q, its turn is %q", m.Method, p.ThreadID, turnID, turnOf[i])
		}
		checked++
		want := prompt(i)
		switch {
		case m.Method == "turn/completed":
			if p.Turn.Status != "completed" {
				return fmt.Errorf("turn %s ended %s", turnID, p.Turn.Status)
			}
			if agentText[i] != "ok: "+want {
				return fmt.Errorf("cross-talk: turn %s answered %q, want %q", turnID, agentText[i], "ok: "+want)
			}
			completed++
		case m.Method == "item/agentMessage/delta":
			if !strings.HasPrefix("ok: "+want, p.Delta) && !strings.Contains("ok: "+want, p.Delta) {
				return fmt.Errorf("cross-talk: delta %q in turn %s", p.Delta, turnID)
			}
		case m.Method == "item/completed" && p.Item.Type == "agentMessage":
			agentText[i] = p.Item.Text
		case m.Method == "item/completed" && p.Item.Type == "userMessage":
			if len(p.Item.Content) == 0 || p.Item.Content[0].Text != want {
				return fmt.Errorf("cross-talk: user message %+v in turn %s, want %q", p.Item.Content, turnID, want)
			}
		}
		return nil
	}
	for completed < len(threads) {
		m, err := conn.next(deadline)
		if err != nil {
			return 0, checked, fmt.Errorf("concurrent turns (%d/%d completed): %w", completed, len(threads), err)
		}
		if m.Method == "" {
			i, ok := reqs[string(m.ID)]
			if !ok {
				return 0, checked, fmt.Errorf("response to unknown request %s", m.ID)
			}
			var ts turnParams
			if m.Error != nil || json.Unmarshal(m.Result, &ts) != nil || ts.Turn.ID == "" {
				return 0, checked, fmt.Errorf("turn/start on %s failed: %s", threads[i], m.Error)
			}
			turnOf[i] = ts.Turn.ID
			// Notifications of this thread that came before the response are checked now.
			rest := early[:0]
			for _, e := range early {
				var p scaleItem
				_ = json.Unmarshal(e.Params, &p)
				if p.ThreadID != threads[i] {
					rest = append(rest, e)
					continue
				}
				if err := check(e); err != nil {
					return 0, checked, err
				}
			}
			early = rest
			continue
		}
		var p scaleItem
		_ = json.Unmarshal(m.Params, &p)
		if i, ok := byThread[p.ThreadID]; ok && turnOf[i] == "" {
			early = append(early, m)
			continue
		}
		if err := conn.other(m, check); err != nil {
			return 0, checked, err
		}
	}
	return time.Since(start), checked, nil
}
