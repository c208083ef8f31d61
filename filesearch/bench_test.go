package filesearch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// makeTree generates a repository-like tree of n files (about 20 per directory, 4 levels deep) with a
// .gitignore; it returns the root. The same generator is used for the side-by-side figures in
// docs/benchmarks.md (`go test -bench FuzzySearch -run ^$ ./filesearch/`).
func makeTree(tb testing.TB, root string, n int) string {
	tb.Helper()
	words := []string{"app", "server", "config", "util", "main", "model", "view", "handler", "client", "store",
		"index", "router", "thread", "turn", "search", "file", "exec", "sandbox", "proto", "schema"}
	exts := []string{".go", ".rs", ".ts", ".md", ".json", "_test.go", ".py"}
	r := rand.New(rand.NewPCG(1, 2))
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("*.log\nbuild/\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		tb.Fatal(err)
	}
	made := 0
	for d := 0; made < n; d++ {
		dir := root
		for l := 0; l < 1+d%4; l++ {
			dir = filepath.Join(dir, fmt.Sprintf("%s%d", words[(d*7+l*3)%len(words)], (d/(l+1))%50))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		for f := 0; f < 20 && made < n; f++ {
			name := words[r.IntN(len(words))] + words[r.IntN(len(words))] + exts[r.IntN(len(exts))]
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d_%s", f, name)), nil, 0o644); err != nil {
				tb.Fatal(err)
			}
			made++
		}
	}
	return root
}

var benchTree string

func benchRoot(b *testing.B) string {
	if benchTree == "" {
		// FILESEARCH_BENCH_TREE keeps the generated tree (made on first use) for side-by-side runs.
		if d := os.Getenv("FILESEARCH_BENCH_TREE"); d != "" {
			if _, err := os.Stat(filepath.Join(d, ".git")); err != nil {
				makeTree(b, d, 100_000)
			}
			benchTree = d
		} else {
			benchTree = makeTree(b, b.TempDir(), 100_000)
		}
	}
	return benchTree
}

// BenchmarkFuzzySearch100k is a one-shot fuzzyFileSearch over a 100k-file tree (warm page cache).
func BenchmarkFuzzySearch100k(b *testing.B) {
	root := benchRoot(b)
	if _, err := Search(context.Background(), []string{root}, "srvcfg", DefaultLimit); err != nil { // warm
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		ms, err := Search(context.Background(), []string{root}, "srvcfg", DefaultLimit)
		if err != nil || len(ms) == 0 {
			b.Fatal(err, len(ms))
		}
	}
}

// BenchmarkFuzzySessionFirstResults100k measures a session from start to its first report with matches
// (the @-picker's first paint), and reports the time to the final report too.
func BenchmarkFuzzySessionFirstResults100k(b *testing.B) {
	root := benchRoot(b)
	var final time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		first := make(chan struct{}, 1)
		done := make(chan struct{}, 1)
		s := StartSession(context.Background(), []string{root}, DefaultLimit, func(u Update) {
			if u.Complete && u.Query != "" {
				done <- struct{}{}
			} else if len(u.Matches) > 0 {
				select {
				case first <- struct{}{}:
				default:
				}
			}
		})
		s.SetQuery("srvcfg")
		select {
		case <-first:
		case <-time.After(time.Minute):
			b.Fatal("no first results")
		}
		b.StopTimer()
		<-done
		final += time.Since(start)
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(final.Milliseconds())/float64(b.N), "ms-final/op")
}

// BenchmarkRank100k re-ranks an already walked 100k-entry index (a session's query update).
func BenchmarkRank100k(b *testing.B) {
	root := benchRoot(b)
	var (
		mu      sync.Mutex
		entries []Entry
	)
	_ = Walk(context.Background(), []string{root}, func(batch []Entry) {
		mu.Lock()
		entries = append(entries, batch...)
		mu.Unlock()
	})
	b.ResetTimer()
	for b.Loop() {
		if len(Rank(entries, "srvcfg", DefaultLimit)) == 0 {
			b.Fatal("no matches")
		}
	}
}
