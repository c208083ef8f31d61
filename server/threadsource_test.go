package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// rolloutSessionMeta is the session_meta payload (the first line) of a thread's rollout under home.
func rolloutSessionMeta(t *testing.T, home, id string) map[string]any {
	t.Helper()
	f, err := os.Open(rolloutFile(t, home, id))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	require.True(t, sc.Scan())
	var rec struct {
		Type    string         `json:"type"`
		Payload map[string]any `json:"payload"`
	}
	require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
	require.Equal(t, "session_meta", rec.Type)
	return rec.Payload
}

// threadField returns a field of the thread of a result ({"thread": {...}}), and whether it is present.
func threadField(t *testing.T, raw json.RawMessage, field string) (any, bool) {
	t.Helper()
	var r struct {
		Thread map[string]any `json:"thread"`
	}
	require.NoError(t, json.Unmarshal(raw, &r))
	v, ok := r.Thread[field]
	return v, ok
}

// listedThreadSources maps each thread of thread/list to its threadSource member (which must be present).
func listedThreadSources(t *testing.T, c *apptest.Client) map[string]any {
	t.Helper()
	var list struct {
		Data []map[string]any `json:"data"`
	}
	c.Result("thread/list", map[string]any{}, &list)
	out := map[string]any{}
	for _, th := range list.Data {
		v, ok := th["threadSource"]
		require.True(t, ok, "thread/list carries threadSource (null)")
		out[th["id"].(string)] = v
	}
	return out
}

// TestThreadSourceIsPersisted: thread/start's and thread/fork's threadSource is written to the rollout's
// session_meta as thread_source (a fork without one has none, whatever its parent's), returned by
// thread/start, thread/fork, thread/started, thread/read and thread/resume, before and after a restart;
// thread/list shows null, as codex-cli 0.169.0 does.
func TestThreadSourceIsPersisted(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply("one"), okReply("two"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	home := c.Home
	c.Initialize(false)
	raw := c.Result("thread/start", map[string]any{"cwd": c.Work, "threadSource": "my_source"}, nil)
	v, _ := threadField(t, raw, "id")
	tid := v.(string)
	c.WaitNotification("thread/started", nil)
	c.StartTurn(tid, "first")
	c.WaitTurnCompleted()
	require.Equal(t, "my_source", rolloutSessionMeta(t, home, tid)["thread_source"])

	raw = c.Result("thread/fork", map[string]any{"threadId": tid, "threadSource": "fork_source"}, nil)
	v, _ = threadField(t, raw, "id")
	fid := v.(string)
	v, _ = threadField(t, raw, "threadSource")
	require.Equal(t, "fork_source", v, "thread/fork's response")
	started := c.WaitNotification("thread/started", nil)
	require.Contains(t, string(started.Params), `"threadSource":"fork_source"`)
	meta := rolloutSessionMeta(t, home, fid)
	require.Equal(t, "fork_source", meta["thread_source"])
	require.Equal(t, tid, meta["forked_from_id"])

	raw = c.Result("thread/fork", map[string]any{"threadId": tid}, nil)
	v, _ = threadField(t, raw, "id")
	plain := v.(string)
	v, ok := threadField(t, raw, "threadSource")
	require.True(t, ok)
	require.Nil(t, v, "a fork does not inherit its parent's thread source")
	_, has := rolloutSessionMeta(t, home, plain)["thread_source"]
	require.False(t, has)

	raw = c.Result("thread/read", map[string]any{"threadId": fid}, nil)
	v, _ = threadField(t, raw, "threadSource")
	require.Equal(t, "fork_source", v)
	for id, src := range listedThreadSources(t, c) {
		require.Nil(t, src, id)
	}
	c.StartTurn(fid, "on the fork")
	c.WaitTurnCompleted()
	c.Close()

	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c2.Initialize(false)
	for id, src := range listedThreadSources(t, c2) {
		require.Nil(t, src, id)
	}
	for id, want := range map[string]any{tid: "my_source", fid: "fork_source", plain: nil} {
		raw = c2.Result("thread/read", map[string]any{"threadId": id}, nil)
		v, _ = threadField(t, raw, "threadSource")
		require.Equal(t, want, v, "thread/read of a stored thread %s", id)
	}
	for id, want := range map[string]any{tid: "my_source", fid: "fork_source"} {
		raw = c2.Result("thread/resume", map[string]any{"threadId": id}, nil)
		v, _ = threadField(t, raw, "threadSource")
		require.Equal(t, want, v, "thread/resume %s", id)
		raw = c2.Result("thread/read", map[string]any{"threadId": id}, nil)
		v, _ = threadField(t, raw, "threadSource")
		require.Equal(t, want, v, "thread/read of the resumed thread %s", id)
	}
}

// messagesAfterHistory returns the message items a model request adds after the last assistant message of
// the history it repeats (the context re-sent before the new prompt, then the prompt).
func messagesAfterHistory(body map[string]any) []map[string]any {
	input := body["input"].([]any)
	last := -1
	for i, it := range input {
		if m := it.(map[string]any); m["role"] == "assistant" {
			last = i
		}
	}
	var out []map[string]any
	for _, it := range input[last+1:] {
		if m := it.(map[string]any); m["type"] == "message" {
			out = append(out, m)
		}
	}
	return out
}

// messageText is the first content part's text of a message item.
func messageText(m map[string]any) string {
	return m["content"].([]any)[0].(map[string]any)["text"].(string)
}

// contextAfterHistory labels messagesAfterHistory: "permissions", "environment", else role:text.
func contextAfterHistory(body map[string]any) []string {
	var out []string
	for _, m := range messagesAfterHistory(body) {
		text := messageText(m)
		switch {
		case strings.HasPrefix(text, "<permissions instructions>"):
			out = append(out, "permissions")
		case strings.HasPrefix(text, "<environment_context>"):
			out = append(out, "environment")
		default:
			out = append(out, fmt.Sprint(m["role"], ":", text))
		}
	}
	return out
}

// TestResumeAndForkRepeatOnlyChangedContext: the first model request after thread/resume or thread/fork
// repeats the permissions only when the sandbox or approval policy differs from the last turn's (as
// recorded in its turn_context), and the environment context only when the cwd or the sandbox does, as
// codex-cli 0.169.0 does; with the same settings the new prompt follows the history directly.
func TestResumeAndForkRepeatOnlyChangedContext(t *testing.T) {
	mm := mockmodel.New(t)
	for i := 0; i < 7; i++ {
		mm.Enqueue(okReply(fmt.Sprint("reply ", i)))
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	home := c.Home
	c.Initialize(false)
	tid := c.StartThread(nil)
	c.StartTurn(tid, "first")
	c.WaitTurnCompleted()
	c.Close()

	c = apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c.Initialize(false)
	other := filepath.Join(c.Work, "other")
	require.NoError(t, os.Mkdir(other, 0o755))
	forkTurn := func(params map[string]any, text string) []string {
		t.Helper()
		params["threadId"] = tid
		raw := c.Result("thread/fork", params, nil)
		v, _ := threadField(t, raw, "id")
		c.StartTurn(v.(string), text)
		c.WaitTurnCompleted()
		reqs := mm.ResponseRequests()
		return contextAfterHistory(reqs[len(reqs)-1].Body)
	}
	require.Equal(t, []string{"user:plain fork"}, forkTurn(map[string]any{}, "plain fork"))
	require.Equal(t, []string{"permissions", "environment", "user:full access"},
		forkTurn(map[string]any{"sandbox": "danger-full-access"}, "full access"))
	require.Equal(t, []string{"permissions", "user:asks"},
		forkTurn(map[string]any{"approvalPolicy": "on-request"}, "asks"))
	require.Equal(t, []string{"environment", "user:moved"}, forkTurn(map[string]any{"cwd": other}, "moved"))

	c.Result("thread/resume", map[string]any{"threadId": tid}, nil)
	c.StartTurn(tid, "after resume")
	c.WaitTurnCompleted()
	reqs := mm.ResponseRequests()
	require.Equal(t, []string{"user:after resume"}, contextAfterHistory(reqs[len(reqs)-1].Body))
	c.Close()

	c = apptest.Start(t, apptest.Options{Model: mm, Home: home})
	c.Initialize(false)
	c.Result("thread/resume", map[string]any{"threadId": tid, "sandbox": "danger-full-access", "cwd": other}, nil)
	c.StartTurn(tid, "changed")
	c.WaitTurnCompleted()
	reqs = mm.ResponseRequests()
	require.Equal(t, []string{"permissions", "environment", "user:changed"}, contextAfterHistory(reqs[len(reqs)-1].Body))
}

// TestResumeOfAReferenceRollout: a rollout of the reference without its world_state records (what the model
// was told) gets the whole initial context again before the next prompt, as codex-cli 0.169.0 sends it for
// this fixture; with a world_state record, only what changed since the last turn_context (here nothing: the
// fixture's policies are the configuration's).
func TestResumeOfAReferenceRollout(t *testing.T) {
	for _, tc := range []struct {
		name       string
		worldState bool
		want       []string
	}{
		{"without world_state", false, []string{"permissions", "environment", "user:Carry on"}},
		{"with world_state", true, []string{"user:Carry on"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(okReply("resumed"))
			c := apptest.Start(t, apptest.Options{Model: mm, ApprovalPolicy: "on-request"}) // the fixture's turn_context
			path := installFixture(t, c.Home, c.Work, "rollout-2026-11-20T09-00-00-"+fixturePaginatedID+".jsonl")
			if tc.worldState {
				f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
				require.NoError(t, err)
				_, err = f.WriteString(`{"timestamp":"2026-11-20T09:00:07.000Z","ordinal":18,"type":"world_state","payload":{"full":false,"state":{}}}` + "\n")
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}
			c.Initialize(false)
			c.Result("thread/resume", map[string]any{"threadId": fixturePaginatedID}, nil)
			c.StartTurn(fixturePaginatedID, "Carry on")
			c.WaitTurnCompleted()
			require.Equal(t, tc.want, contextAfterHistory(mm.ResponseRequests()[0].Body))
		})
	}
}
