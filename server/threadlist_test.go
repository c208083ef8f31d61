package server_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/rollout"
)

// storedThread writes a one-turn rollout into home.
func storedThread(t *testing.T, home, id, provider string, source json.RawMessage, created time.Time, text string) {
	t.Helper()
	r, err := rollout.Create(home, rollout.SessionMeta{ID: id, Cwd: "/w", Originator: "x", CLIVersion: "0.169.0",
		Source: source, ModelProvider: provider, HistoryMode: rollout.HistoryModePaginated}, created)
	require.NoError(t, err)
	require.NoError(t, r.AppendEvent(rollout.TaskStarted{TurnID: "t-" + id}))
	require.NoError(t, r.AppendEvent(rollout.ItemCompleted{ThreadID: id, TurnID: "t-" + id,
		Item: rollout.UserMessageItem{ID: "u-" + id, Content: []any{rollout.NewTextContent(text)}}}))
	require.NoError(t, r.AppendEvent(rollout.TaskComplete{TurnID: "t-" + id}))
	require.NoError(t, r.Close())
}

func TestThreadListFiltersAsTheReference(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	id := func(i int) string { return fmt.Sprintf("01f00000-0000-7000-8000-%012d", i) }
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	storedThread(t, home, id(1), "mock", rollout.StringSource("vscode"), base, "on the configured provider")
	storedThread(t, home, id(2), "openai", rollout.StringSource("vscode"), base.Add(time.Hour), "on another provider")
	storedThread(t, home, id(3), "mock", json.RawMessage(fmt.Sprintf(`{"subagent":{"thread_spawn":{"parent_thread_id":%q,"depth":1}}}`, id(1))), base.Add(2*time.Hour), "child")
	storedThread(t, home, id(4), "mock", json.RawMessage(fmt.Sprintf(`{"subagent":{"thread_spawn":{"parent_thread_id":%q,"depth":2}}}`, id(3))), base.Add(3*time.Hour), "grandchild")
	c := apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)

	list := func(params map[string]any) []string {
		var r struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		c.Result("thread/list", params, &r)
		out := []string{}
		for _, th := range r.Data {
			out = append(out, th.ID)
		}
		return out
	}
	require.Equal(t, []string{id(1)}, list(map[string]any{}), "omitted modelProviders: the configured provider")
	require.Equal(t, []string{id(2), id(1)}, list(map[string]any{"modelProviders": []string{}}), "empty: every provider")
	require.Equal(t, []string{id(2)}, list(map[string]any{"modelProviders": []string{}, "excludedThreadIds": []string{id(1)}}))
	require.Equal(t, []string{id(3)}, list(map[string]any{"parentThreadId": id(1)}))
	require.Equal(t, []string{id(4), id(3)}, list(map[string]any{"ancestorThreadId": id(1)}))
	require.Equal(t, []string{}, list(map[string]any{"sortKey": "section_position", "sectionId": "s1"}))
	require.Equal(t, []string{id(1)}, list(map[string]any{"sortKey": "recency_at"}))

	for _, bad := range []struct {
		params map[string]any
		code   int
		msg    string
	}{
		{map[string]any{"sortKey": "section_position"}, -32600, "section-position sorting requires a section filter"},
		{map[string]any{"originators": []string{"x"}}, -32602, "originator filtering is not supported by the local app-server"},
		{map[string]any{"projectId": "p1"}, -32602, "project not found: p1"},
		{map[string]any{"excludedThreadIds": []string{"nope"}}, -32602, "invalid excludedThreadIds entry: nope"},
		{map[string]any{"parentThreadId": id(1), "ancestorThreadId": id(1)}, -32602, "parentThreadId and ancestorThreadId are mutually exclusive"},
	} {
		m := c.Request("thread/list", bad.params)
		require.NotNil(t, m.Error, "%v", bad.params)
		require.Equal(t, bad.code, m.Error.Code, "%v", bad.params)
		require.Equal(t, bad.msg, m.Error.Message)
	}
}

// TestThreadListSubAgentKinds pins the reference's (0.169.0) sub-agent source filters: "subAgent" selects
// every sub-agent's thread, each subAgent… kind its own (an {"other": …} source is subAgentOther).
func TestThreadListSubAgentKinds(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	id := func(i int) string { return fmt.Sprintf("01f00000-0000-7000-8000-%012d", i) }
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	storedThread(t, home, id(1), "mock", rollout.StringSource("vscode"), base, "parent")
	sources := []string{fmt.Sprintf(`{"thread_spawn":{"parent_thread_id":%q,"depth":1}}`, id(1)), `"review"`, `"compact"`, `{"other":"x"}`}
	for i, src := range sources {
		storedThread(t, home, id(i+2), "mock", json.RawMessage(`{"subagent":`+src+`}`), base.Add(time.Duration(i+1)*time.Hour), "sub")
	}
	c := apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	list := func(kinds ...string) []string {
		var r struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		c.Result("thread/list", map[string]any{"sourceKinds": kinds}, &r)
		out := []string{}
		for _, th := range r.Data {
			out = append(out, th.ID)
		}
		return out
	}
	require.Equal(t, []string{id(5), id(4), id(3), id(2), id(1)}, list("vscode", "subAgent"))
	require.Equal(t, []string{id(5), id(4), id(3), id(2)}, list("subAgent"))
	require.Equal(t, []string{id(2)}, list("subAgentThreadSpawn"))
	require.Equal(t, []string{id(3)}, list("subAgentReview"))
	require.Equal(t, []string{id(4)}, list("subAgentCompact"))
	require.Equal(t, []string{id(5)}, list("subAgentOther"))
}

// TestThreadUnreadableSource pins the reference's (0.169.0) handling of a session_meta whose source is not
// one of its session sources ({"weird":1}, null, {"custom":5}, an unknown sub-agent kind...): the record is
// no session metadata, so the thread is left out of every list and thread/read, thread/resume and
// thread/fork fail with its internal error naming the rollout.
func TestThreadUnreadableSource(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	id := func(i int) string { return fmt.Sprintf("01f00000-0000-7000-8000-%012d", i) }
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	storedThread(t, home, id(1), "mock", rollout.StringSource("vscode"), base, "good")
	bad := []string{`{"weird":1}`, `null`, `{"custom":5}`, `{"subagent":"weird"}`, `{"custom":"x","extra":1}`, `{"subagent":{"thread_spawn":{}}}`, `true`}
	for i, src := range bad {
		storedThread(t, home, id(i+2), "mock", json.RawMessage(src), base.Add(time.Duration(i+1)*time.Hour), "bad")
	}
	c := apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	for _, kinds := range [][]string{nil, {"unknown"}, {"subAgent", "subAgentOther", "vscode"}} {
		var r struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		params := map[string]any{}
		if kinds != nil {
			params["sourceKinds"] = kinds
		}
		c.Result("thread/list", params, &r)
		for _, th := range r.Data {
			require.Equal(t, id(1), th.ID, kinds)
		}
	}
	for i := range bad {
		tid := id(i + 2)
		matches, err := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+tid+".jsonl"))
		require.NoError(t, err)
		require.Len(t, matches, 1)
		p := matches[0]
		want := "failed to read thread: thread-store internal error: failed to read session metadata " + p +
			": thread-store internal error: failed to read session metadata " + p + ": rollout at " + p + " does not start with session metadata"
		requireError(t, c.Request("thread/read", map[string]any{"threadId": tid}), -32603, want)
		requireError(t, c.Request("thread/read", map[string]any{"threadId": tid, "includeTurns": true}), -32603, want)
		requireError(t, c.Request("thread/resume", map[string]any{"threadId": tid}), -32603, want)
		requireError(t, c.Request("thread/fork", map[string]any{"threadId": tid}), -32603, want)
	}
}

// TestThreadListCustomAndPlainSources pins the reference's (0.169.0) session sources as recorded: a
// {"custom": …} source is shown as such and selected by no source filter (not even "unknown", and the
// default interactive one neither); "mcp" is shown and filtered as "appServer"; any other name
// ("appServer" or "app_server" included) is "unknown". A `custom` filter is refused as an unknown variant.
func TestThreadListCustomAndPlainSources(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	id := func(i int) string { return fmt.Sprintf("01f00000-0000-7000-8000-%012d", i) }
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	sources := []string{`{"custom":"my-tool"}`, `"vscode"`, `{"custom":""}`, `"mcp"`, `"app_server"`, `"bogus"`}
	for i, src := range sources {
		storedThread(t, home, id(i+1), "mock", json.RawMessage(src), base.Add(time.Duration(i)*time.Hour), "hi")
	}
	c := apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	type listed struct {
		ID     string          `json:"id"`
		Source json.RawMessage `json:"source"`
	}
	list := func(params map[string]any) []string {
		var r struct {
			Data []listed `json:"data"`
		}
		c.Result("thread/list", params, &r)
		out := []string{}
		for _, th := range r.Data {
			out = append(out, th.ID[len(th.ID)-1:]+"="+string(th.Source))
		}
		return out
	}
	require.Equal(t, []string{`2="vscode"`}, list(map[string]any{}))
	require.Equal(t, []string{`4="appServer"`}, list(map[string]any{"sourceKinds": []string{"appServer"}}))
	require.Equal(t, []string{`6="unknown"`, `5="unknown"`}, list(map[string]any{"sourceKinds": []string{"unknown"}}))
	for i, want := range []string{`{"custom":"my-tool"}`, `"vscode"`, `{"custom":""}`, `"appServer"`, `"unknown"`, `"unknown"`} {
		var r struct {
			Thread listed `json:"thread"`
		}
		c.Result("thread/read", map[string]any{"threadId": id(i + 1)}, &r)
		require.JSONEq(t, want, string(r.Thread.Source), id(i+1))
	}
	var r struct {
		Thread listed `json:"thread"`
	}
	c.Result("thread/resume", map[string]any{"threadId": id(1)}, &r)
	require.JSONEq(t, `{"custom":"my-tool"}`, string(r.Thread.Source))
	const unknownKind = "Invalid request: unknown variant `custom`, expected one of `cli`, `vscode`, `exec`, `appServer`, " +
		"`subAgent`, `subAgentReview`, `subAgentCompact`, `subAgentThreadSpawn`, `subAgentOther`, `unknown`"
	requireError(t, c.Request("thread/list", map[string]any{"sourceKinds": []string{"custom"}}), -32600, unknownKind)
	requireError(t, c.Request("thread/search", map[string]any{"searchTerm": "hi", "sourceKinds": []string{"custom"}}), -32600, unknownKind)
}
