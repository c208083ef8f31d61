package codemode

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/thread"
)

func newTestSet() *Set {
	return newSet(&state{itemID: "at_test", cells: map[string]*cell{}, stored: map[string]string{}}, nil, nil)
}

// run execs src and returns the output's header and texts.
func run(t *testing.T, s *Set, ctx context.Context, src string) (string, []string) {
	t.Helper()
	out := s.exec(ctx, nil, thread.ToolCall{Type: "custom_tool_call", CallID: "c", Name: ExecTool, Input: src})
	return parseOutput(t, out)
}

func parseOutput(t *testing.T, out json.RawMessage) (string, []string) {
	t.Helper()
	var item struct {
		Output json.RawMessage `json:"output"`
	}
	require.NoError(t, json.Unmarshal(out, &item))
	var s string
	if json.Unmarshal(item.Output, &s) == nil {
		return s, nil
	}
	var parts []struct{ Text string }
	require.NoError(t, json.Unmarshal(item.Output, &parts))
	var texts []string
	for _, p := range parts[1:] {
		texts = append(texts, p.Text)
	}
	return parts[0].Text, texts
}

func TestExecGlobals(t *testing.T) {
	for _, tc := range []struct {
		name, src, status string
		texts             []string
	}{
		{"text values", `text("a"); text(1.5); text(true); text(null); text(undefined); text([1, {b: 2}]);`, "Script completed",
			[]string{"a", "1.5", "true", "null", "undefined", `[1,{"b":2}]`}},
		{"exit ends early", "text(1);\nexit();\ntext(2);", "Script completed", []string{"1"}},
		{"exit inside try", "try { exit(); } catch (e) { text(\"caught\"); }\ntext(2);", "Script completed", nil},
		{"exit after await", "await Promise.resolve();\ntext(1);\nexit();\ntext(2);", "Script completed", []string{"1"}},
		{"timers", "await new Promise(r => setTimeout(r, 1));\nconst id = setTimeout(() => text(\"never\"), 1);\nclearTimeout(id);\nawait new Promise(r => setTimeout(r, 5));\ntext(\"after\");", "Script completed", []string{"after"}},
		{"no console", `text(typeof console); text(typeof require); text(ALL_TOOLS.length);`, "Script completed", []string{"undefined", "undefined", "0"}},
		{"throw a string", `throw "plain";`, "Script failed", []string{"Script error:\nplain"}},
		{"error position on line 1", `throw new Error("x");`, "Script failed", []string{"Script error:\nError: x\n    at exec_main.mjs:1:7"}},
		{"pragma keeps lines", "// @exec: {\"yield_time_ms\": 60000}\n\nthrow new Error(\"x\");", "Script failed", []string{"Script error:\nError: x\n    at exec_main.mjs:3:7"}},
		{"bad pragma", "// @exec: {\"bogus\": 1}\ntext(1);", "Script failed", []string{"Script error:\ninvalid exec pragma: json: unknown field \"bogus\""}},
		{"syntax", "let = = ;", "Script failed", []string{"Script error:\nSyntaxError: Unexpected token ="}},
		{"recursion", "function f() { return f(); }\nf();", "Script failed", []string{"Script error:\nRangeError: Maximum call stack size exceeded"}},
		{"truncation", "// @exec: {\"max_output_tokens\": 2}\ntext(\"0123456789abc\");\ntext(\"dropped\");", "Script completed", []string{"01234567\n…1 tokens truncated…"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head, texts := run(t, newTestSet(), context.Background(), tc.src)
			require.Regexp(t, "^"+tc.status+`\nWall time \d+\.\d seconds\nOutput:\n$`, head)
			require.Equal(t, tc.texts, texts)
		})
	}
}

func TestStoreLoadAcrossCalls(t *testing.T) {
	s := newTestSet()
	_, _ = run(t, s, context.Background(), `store("k", {n: [1, 2]}); text(load("missing") === undefined);`)
	_, texts := run(t, s, context.Background(), `const v = load("k"); v.n.push(3); text(v);`)
	require.Equal(t, []string{`{"n":[1,2,3]}`}, texts)
}

// A script still running at its yield time is reported with its cell id; wait takes the rest of its
// output; yield_control returns early.
func TestYieldAndWait(t *testing.T) {
	s := newTestSet()
	head, texts := run(t, s, context.Background(), "text(\"a\");\nyield_control();\nawait new Promise(r => setTimeout(r, 20));\ntext(\"b\");")
	require.Regexp(t, `^Script running with cell ID 1\n`, head)
	require.Equal(t, []string{"a"}, texts)
	out := s.wait(context.Background(), thread.ToolCall{Type: "function_call", CallID: "w", Name: WaitTool, Arguments: `{"cell_id": "1", "yield_time_ms": 600000}`})
	head, texts = parseOutput(t, out)
	require.Regexp(t, `^Script completed\n`, head)
	require.Equal(t, []string{"b"}, texts)
	require.Nil(t, s.st.cell("1"), "a finished cell is released")
}

// A script that yields and then ends at once is answered as it stood at the yield: running, with the
// output made before it; the rest, and the end, go to wait. (Before, whichever the caller saw first won,
// so a loaded machine turned this exec's answer into "Script completed" with both texts.)
func TestYieldThenEndAnswersTheYield(t *testing.T) {
	for i := 0; i < 20; i++ {
		s := newTestSet()
		head, texts := run(t, s, context.Background(), "text(\"a\");\nyield_control();\ntext(\"b\");")
		require.Regexp(t, `^Script running with cell ID 1\n`, head)
		require.Equal(t, []string{"a"}, texts)
		out := s.wait(context.Background(), thread.ToolCall{Type: "function_call", CallID: "w", Name: WaitTool, Arguments: `{"cell_id": "1", "yield_time_ms": 600000}`})
		head, texts = parseOutput(t, out)
		require.Regexp(t, `^Script completed\n`, head)
		require.Equal(t, []string{"b"}, texts)
		require.Nil(t, s.st.cell("1"))
	}
}

// A busy loop is stopped when the caller's context ends (turn interrupt), and by wait's terminate.
func TestBusyLoopStops(t *testing.T) {
	s := newTestSet()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	head, _ := run(t, s, ctx, "while (true) {}")
	require.Regexp(t, `^Script terminated\n`, head)
	require.Empty(t, s.st.cells)

	head, _ = run(t, s, context.Background(), "// @exec: {\"yield_time_ms\": 0}\nwhile (true) {}")
	require.Regexp(t, `^Script running with cell ID 2\n`, head)
	c := s.st.cell("2")
	require.NotNil(t, c)
	out := s.wait(context.Background(), thread.ToolCall{Type: "function_call", CallID: "w", Name: WaitTool, Arguments: `{"cell_id": "2", "terminate": true}`})
	head, _ = parseOutput(t, out)
	require.Regexp(t, `^Script terminated\n`, head)
	select {
	case <-c.done:
	default:
		t.Fatal("the loop still runs")
	}
	s.st.terminateAll()
}
