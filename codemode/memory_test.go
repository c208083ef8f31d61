package codemode

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/thread"
)

// smallCap sets a 16 MiB memory cap for the test, after a GC so that an earlier test's garbage does
// not count.
func smallCap(t *testing.T) {
	t.Helper()
	runtime.GC()
	watcher.override.Store(16 << 20)
	t.Cleanup(func() { watcher.override.Store(0) })
}

// safetyNet bounds a test whose cap fails: past 1.5 GiB of heap it fails the test and stops the sets'
// scripts the ordinary way (the engine's interrupt), so a broken cap cannot take the machine down.
func safetyNet(t *testing.T, sets ...*Set) {
	t.Helper()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var ms runtime.MemStats
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > 1536<<20 {
				t.Errorf("heap reached %d MiB: the cap did not stop the script", ms.HeapAlloc>>20)
				for _, s := range sets {
					s.st.terminateAll()
				}
				return
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
}

// A runaway script is stopped by the cap; the model reads what the reference's model reads when its
// script host died, then, on the thread's next call, that the runtime was replaced (stored values gone);
// the call after runs normally.
func TestMemoryCapStopsRunaways(t *testing.T) {
	smallCap(t)
	for _, tc := range []struct{ name, src string }{
		{"array push loop", "let a = []; while (true) a.push(new Array(1e5).fill(1));"},
		{"string doubling", `let s = "x"; while (true) s += s;`},
		{"map growth", "const m = new Map(); let i = 0; while (true) m.set(i++, {a: i, b: [i]});"},
		{"object in a timer", "const a = []; await new Promise(() => setTimeout(function f() { a.push(new Array(1e5).fill(1)); setTimeout(f, 0); }, 0));"},
		// One-step builtins, checked up front (a fifth of each would pass the cap).
		{"fill", "new Array(2e7).fill(1);"},
		{"Array.from", "Array.from({length: 2e7});"},
		{"typed array", "new Uint8Array(5e8);"},
		{"repeat", `"x".repeat(2e8);`},
		{"padEnd", `"x".padEnd(2e8);`},
		{"split", `"x".repeat(1e7).split("");`},
		{"apply", "Math.max.apply(null, new Array(2e7));"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSet()
			safetyNet(t, s)
			_, _ = run(t, s, context.Background(), `store("k", 1);`)
			head, texts := run(t, s, context.Background(), "// @exec: {\"yield_time_ms\": 600000}\n"+tc.src)
			require.Equal(t, lostText, head)
			require.Empty(t, texts)
			head, _ = run(t, s, context.Background(), `text("not run");`)
			require.Equal(t, replacedText, head)
			head, texts = run(t, s, context.Background(), `text(String(load("k")));`)
			require.Regexp(t, "^Script completed\n", head)
			require.Equal(t, []string{"undefined"}, texts)
		})
	}
}

// The cap stops the thread running the runaway, not another thread's idle script; a yielded cell of
// the runaway's thread goes with it, and the thread's next call (a wait) reports the replacement.
func TestMemoryCapAttribution(t *testing.T) {
	smallCap(t)
	other, s := newTestSet(), newTestSet()
	safetyNet(t, other, s)
	defer other.st.terminateAll()
	head, _ := run(t, other, context.Background(), "// @exec: {\"yield_time_ms\": 0}\nconst keep = new Array(1e5).fill(1);\nawait new Promise(r => setTimeout(r, 600000));")
	require.Regexp(t, "^Script running with cell ID 1\n", head)
	head, _ = run(t, s, context.Background(), "// @exec: {\"yield_time_ms\": 0}\nawait new Promise(r => setTimeout(r, 600000));")
	require.Regexp(t, "^Script running with cell ID 1\n", head)
	idle := s.st.cell("1")

	head, _ = run(t, s, context.Background(), "// @exec: {\"yield_time_ms\": 600000}\nlet a = []; while (true) a.push(new Array(1e5).fill(1));")
	require.Equal(t, lostText, head)
	<-idle.done
	out := s.wait(context.Background(), thread.ToolCall{Type: "function_call", CallID: "w", Name: WaitTool, Arguments: `{"cell_id": "1"}`})
	head, _ = parseOutput(t, out)
	require.Equal(t, replacedText, head)

	require.NotNil(t, other.st.cell("1"), "the other thread's script still runs")
	select {
	case <-other.st.cell("1").done:
		t.Fatal("the other thread's script was stopped")
	default:
	}
}

// V8's string limit: a builder asked for more throws its RangeError (the script may catch it).
func TestStringLimit(t *testing.T) {
	head, texts := run(t, newTestSet(), context.Background(), "try { \"ab\".repeat(2 ** 29); } catch (e) { text(String(e)); }\ntext([1].join.name + [1].join.length + typeof Uint8Array.from + (new Uint8Array(2) instanceof Uint8Array));\n\"x\".padStart(2 ** 30);")
	require.Regexp(t, "^Script failed\n", head)
	require.Equal(t, []string{"RangeError: Invalid string length", "join1functiontrue", "Script error:\nRangeError: Invalid string length\n    at exec_main.mjs:3:13"}, texts)
}
