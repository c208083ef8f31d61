package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// list: thread/list over N stored threads.
//
//	appserver-bench list --server "<command line>" [--server ...] [--threads 50000] [--timeout 10m] [--workdir DIR]
//	                     [--populated-by-first=true]
//
// list writes N one-turn rollouts (spread over a year, provider "openai", source vscode) once into
// <workdir>/list-<N>, reused by later runs. Each server gets its own CODEX_HOME holding hard links to them
// (with --populated-by-first, the second and later servers get a copy of the first server's CODEX_HOME after
// its runs, i.e. a home that server populated: its own databases included). Each server is started twice on
// its home: the first start times spawn → initialize and the first page (limit 50); the second start times
// the same, then the next page (with the first page's cursor) and a search page (searchTerm "number <N/2+7>"). Every
// thread/list passes modelProviders: [] (all providers).

type listOpts struct {
	benchOpts
	threads   int
	populated bool
}

func parseListFlags(args []string, stderr io.Writer) (listOpts, error) {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var servers stringList
	var timeout time.Duration
	var workdir string
	newBenchFlags(fs, &servers, &timeout, &workdir, 10*time.Minute)
	threads := fs.Int("threads", 50_000, "stored threads to generate")
	populated := fs.Bool("populated-by-first", true, "later servers start on a copy of the first server's CODEX_HOME")
	if err := parseFlagSet(fs, args); err != nil {
		return listOpts{}, err
	}
	o, err := finishBenchFlags(fs, servers, timeout, workdir)
	if err != nil {
		return listOpts{}, err
	}
	if *threads < 60 {
		return listOpts{}, fmt.Errorf("%w: --threads must be >= 60", errUsage)
	}
	return listOpts{benchOpts: o, threads: *threads, populated: *populated}, nil
}

// listResult is one server's figures.
type listResult struct {
	init1, page1, init2, page2, next, search time.Duration
	total                                    int
}

func runList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, help, err := setup(args, stderr, parseListFlags)
	if help || err != nil {
		return err
	}
	tmpl := filepath.Join(o.workdir, fmt.Sprintf("list-%d", o.threads))
	if err := genListHome(tmpl, o.threads); err != nil {
		return err
	}
	var prevHome string
	var base *listResult
	for i, c := range o.servers {
		dir, err := os.MkdirTemp(o.workdir, "run-list-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		codexHome, home := filepath.Join(dir, "codex"), filepath.Join(dir, "home")
		src := tmpl
		if o.populated && prevHome != "" {
			src = prevHome
		}
		if err := linkTree(src, codexHome); err != nil {
			return err
		}
		if err := os.MkdirAll(home, 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(fmt.Sprintf(turnConfig, "http://127.0.0.1:9/v1")), 0o600); err != nil {
			return err
		}
		var r listResult
		for start := 1; start <= 2; start++ {
			if err := listRun(ctx, c, codexHome, home, o.timeout, start, fmt.Sprint("number ", o.threads/2+7), &r); err != nil {
				return fmt.Errorf("%s: start %d: %w", c.text, start, err)
			}
		}
		if i == 0 {
			prevHome = codexHome
			base = &r
		}
		line := fmt.Sprintf("server=%s threads=%d listed_total_ge=%d first_start_init=%s first_start_page=%s second_start_init=%s second_start_page=%s next_page=%s search_page=%s",
			quoteIfNeeded(c.text), o.threads, r.total, ms(r.init1), ms(r.page1), ms(r.init2), ms(r.page2), ms(r.next), ms(r.search))
		if i > 0 && base != nil {
			x := func(a, b time.Duration) string { return fmt.Sprintf("%.3f", float64(a)/float64(max(b, 1))) }
			line += fmt.Sprintf(" first_start_page_x=%s second_start_page_x=%s next_page_x=%s search_page_x=%s",
				x(r.page1, base.page1), x(r.page2, base.page2), x(r.next, base.next), x(r.search, base.search))
		}
		fmt.Fprintln(stdout, line)
	}
	return nil
}

// listRun starts c on codexHome and times what start n measures.
func listRun(ctx context.Context, c command, codexHome, home string, timeout time.Duration, n int, search string, r *listResult) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.Env = append(append(os.Environ(), c.env...), "HOME="+home, "CODEX_HOME="+codexHome)
	cmd.Dir = home
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	rc := &rpcConn{cmd: cmd, home: home, errTail: &tailBuffer{max: 4096}, timeout: timeout, cancel: cancel, nextID: 1}
	cmd.Stderr = rc.errTail
	var err error
	if rc.stdin, err = cmd.StdinPipe(); err != nil {
		return err
	}
	if rc.stdout, err = cmd.StdoutPipe(); err != nil {
		return err
	}
	rc.r = bufio.NewReaderSize(rc.stdout, maxLineBuffer)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer rc.close()
	if _, err := rc.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "bench", "version": "0"}}, nil); err != nil {
		return err
	}
	tInit := time.Since(t0)
	if err := rc.notify("initialized"); err != nil {
		return err
	}
	type page struct {
		Data       []json.RawMessage `json:"data"`
		NextCursor *string           `json:"nextCursor"`
	}
	list := func(extra map[string]any) (page, time.Duration, error) {
		params := map[string]any{"limit": 50, "modelProviders": []string{}}
		for k, v := range extra {
			params[k] = v
		}
		t := time.Now()
		raw, err := rc.call("thread/list", params, nil)
		d := time.Since(t)
		var p page
		if err == nil {
			err = json.Unmarshal(raw, &p)
		}
		return p, d, err
	}
	p, d, err := list(nil)
	if err != nil {
		return err
	}
	if len(p.Data) != 50 || p.NextCursor == nil {
		return fmt.Errorf("first page has %d threads (want 50 and a next cursor)", len(p.Data))
	}
	if n == 1 {
		r.init1, r.page1 = tInit, d
		return nil
	}
	r.init2, r.page2 = tInit, d
	p2, d, err := list(map[string]any{"cursor": *p.NextCursor})
	if err != nil {
		return err
	}
	if len(p2.Data) != 50 {
		return fmt.Errorf("next page has %d threads", len(p2.Data))
	}
	r.next = d
	r.total = 100
	ps, d, err := list(map[string]any{"searchTerm": search})
	if err != nil {
		return err
	}
	if len(ps.Data) == 0 {
		return fmt.Errorf("search found nothing")
	}
	r.search = d
	return nil
}

// genListHome writes n one-turn rollouts under dir/sessions once (a marker file records completion).
func genListHome(dir string, n int) error {
	marker := filepath.Join(dir, ".generated")
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	_ = os.RemoveAll(dir)
	start := time.Date(2025, 1, 1, 8, 0, 0, 0, time.UTC)
	step := 365 * 24 * time.Hour / time.Duration(n)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("01e00000-0000-7000-8000-%012d", i)
		created := start.Add(time.Duration(i) * step)
		d := filepath.Join(dir, "sessions", created.Format("2006"), created.Format("01"), created.Format("02"))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		ts := created.Format("2006-01-02T15:04:05.000Z")
		content := fmt.Sprintf(`{"timestamp":"%[1]s","type":"session_meta","payload":{"id":"%[2]s","session_id":"%[2]s","timestamp":"%[1]s","cwd":"/work/p%[3]d","originator":"codex_vscode","cli_version":"0.169.0","source":"vscode","model_provider":"openai","history_mode":"legacy"}}
{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"task_started","turn_id":"t%[3]d","started_at":1,"model_context_window":null,"collaboration_mode_kind":"default"}}
{"timestamp":"%[1]s","type":"turn_context","payload":{"turn_id":"t%[3]d","cwd":"/work/p%[3]d","approval_policy":"never","sandbox_policy":{"type":"read-only"},"model":"gpt-x","summary":"auto"}}
{"timestamp":"%[1]s","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"question number %[3]d"}]}}
{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"user_message","message":"question number %[3]d","images":[],"local_images":[],"text_elements":[]}}
{"timestamp":"%[1]s","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"answer %[3]d"}]}}
{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"agent_message","message":"answer %[3]d"}}
{"timestamp":"%[1]s","type":"event_msg","payload":{"type":"task_complete","turn_id":"t%[3]d","last_agent_message":"answer %[3]d"}}
`, ts, id, i)
		p := filepath.Join(d, "rollout-"+created.Format("2006-01-02T15-04-05")+"-"+id+".jsonl")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
		if err := os.Chtimes(p, created, created); err != nil {
			return err
		}
	}
	return os.WriteFile(marker, nil, 0o644)
}

// linkTree recreates src under dst with directories copied and files hard-linked (SQLite databases and their
// journals are copied: a server writes to them).
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() || rel == ".generated" {
			return nil
		}
		if strings.Contains(d.Name(), ".sqlite") || strings.HasSuffix(d.Name(), ".jsonl") && !strings.HasPrefix(d.Name(), "rollout-") || d.Name() == "config.toml" {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, 0o644)
		}
		return os.Link(p, target)
	})
}
