package server_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/rollout"
)

type wireProject struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Roots     []map[string]any  `json:"roots"`
	Metadata  map[string]string `json:"metadata"`
	Position  int64             `json:"position"`
	RecencyAt *int64            `json:"recencyAt"`
}

func createProject(t *testing.T, c *apptest.Client, key, name string) wireProject {
	t.Helper()
	var r struct{ Project wireProject }
	c.Result("project/create", map[string]any{"idempotencyKey": key, "name": name, "roots": []any{}}, &r)
	return r.Project
}

func listedIDs(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var r struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(raw, &r))
	out := []string{}
	for _, d := range r.Data {
		out = append(out, d.ID)
	}
	return out
}

func projectIs(id, change string) func(json.RawMessage) bool {
	return func(p json.RawMessage) bool {
		return strings.Contains(string(p), `"projectId":"`+id+`"`) && strings.Contains(string(p), `"changeType":"`+change+`"`)
	}
}

func TestProjectsLifecycle(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	id := func(i int) string { return fmt.Sprintf("01f20000-0000-7000-8000-%012d", i) }
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= 3; i++ {
		storedThread(t, home, id(i), "mock", rollout.StringSource("vscode"), base.Add(time.Duration(i)*time.Hour), fmt.Sprint("q", i))
	}
	c := apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)

	require.Empty(t, listedIDs(t, c.Result("project/list", map[string]any{}, nil)))
	requireError(t, c.Request("project/read", map[string]any{"projectId": "x"}), -32602, "project not found: x")
	requireError(t, c.Request("thread/list", map[string]any{"projectId": "x"}), -32602, "project not found: x")

	mark := c.Mark()
	var created struct{ Project wireProject }
	c.Result("project/create", map[string]any{"idempotencyKey": "k1", "name": " Alpha ", "roots": []any{map[string]any{"path": "/a/../b/"}}, "metadata": map[string]any{"c": "red"}}, &created)
	a := created.Project
	require.Equal(t, "Alpha", a.Name)
	require.Equal(t, []map[string]any{{"path": "/b"}}, a.Roots)
	require.Equal(t, map[string]string{"c": "red"}, a.Metadata)
	require.Nil(t, a.RecencyAt)
	require.Equal(t, []string{"project/changed"}, apptest.NotificationMethods(c.Since(mark)))
	mark = c.Mark()
	var again struct{ Project wireProject }
	c.Result("project/import", map[string]any{"idempotencyKey": "k1", "name": "Other", "roots": []any{}}, &again)
	require.Equal(t, a, again.Project, "the same key answers with the same project")
	require.Empty(t, apptest.NotificationMethods(c.Since(mark)), "and announces nothing")

	requireError(t, c.Request("project/create", map[string]any{"idempotencyKey": "k2", "name": "  ", "roots": []any{}}), -32602, "project name must not be empty")
	requireError(t, c.Request("project/create", map[string]any{"idempotencyKey": "", "name": "n", "roots": []any{}}), -32602, "idempotencyKey must not be empty")
	requireError(t, c.Request("project/create", map[string]any{"idempotencyKey": "k2", "name": "n", "roots": []any{map[string]any{"path": "rel"}}}), -32600, "Invalid request: AbsolutePathBuf deserialized without a base path")
	requireError(t, c.Request("project/create", map[string]any{"idempotencyKey": "k2", "name": "n", "roots": []any{map[string]any{"path": "/a"}, map[string]any{"path": "/a/"}}}), -32602, "duplicate project root: /a")

	b := createProject(t, c, "k2", "Beta")
	require.Equal(t, int64(1), b.Position)
	requireError(t, c.Request("project/list", map[string]any{"sortDirection": "desc"}), -32602, "sortDirection requires sortKey")
	requireError(t, c.Request("project/list", map[string]any{"cursor": "garbage"}), -32602, "invalid project cursor: malformed or mismatched sort anchor")
	var page struct {
		NextCursor *string `json:"nextCursor"`
	}
	raw := c.Result("project/list", map[string]any{"limit": 1}, &page)
	require.Equal(t, []string{a.ID}, listedIDs(t, raw))
	require.Equal(t, "0|"+a.ID, *page.NextCursor)
	require.Equal(t, []string{b.ID}, listedIDs(t, c.Result("project/list", map[string]any{"limit": 1, "cursor": *page.NextCursor}, nil)))

	// update: announced only when something changes
	mark = c.Mark()
	var up struct{ Project wireProject }
	c.Result("project/update", map[string]any{"projectId": a.ID, "name": "Alpha"}, &up)
	require.Empty(t, apptest.NotificationMethods(c.Since(mark)))
	up.Project = wireProject{}
	c.Result("project/update", map[string]any{"projectId": a.ID, "name": "Alpha 2", "metadata": map[string]any{}}, &up)
	require.Equal(t, "Alpha 2", up.Project.Name)
	require.Empty(t, up.Project.Metadata)
	c.WaitNotification("project/changed", projectIs(a.ID, "updated"))
	requireError(t, c.Request("project/update", map[string]any{"projectId": "nope"}), -32602, "project not found: nope")

	// move
	c.Result("project/move", map[string]any{"projectId": a.ID}, nil)
	require.Equal(t, []string{b.ID, a.ID}, listedIDs(t, c.Result("project/list", map[string]any{}, nil)))
	requireError(t, c.Request("project/move", map[string]any{"projectId": a.ID, "beforeProjectId": a.ID}), -32602, "project "+a.ID+" cannot be moved before itself")
	requireError(t, c.Request("project/move", map[string]any{"projectId": a.ID, "beforeProjectId": "nope"}), -32602, "before project not found: nope")

	// membership: metadata/update, thread/list's filter, thread/read, recency
	mark = c.Mark()
	var th struct {
		Thread struct {
			ProjectID *string `json:"projectId"`
		} `json:"thread"`
	}
	c.Result("thread/metadata/update", map[string]any{"threadId": id(1), "projectId": a.ID}, &th)
	require.Equal(t, a.ID, *th.Thread.ProjectID)
	require.Equal(t, []string{"thread/project/updated"}, apptest.NotificationMethods(c.Since(mark)))
	mark = c.Mark()
	c.Result("thread/metadata/update", map[string]any{"threadId": id(1), "projectId": a.ID}, nil)
	require.Empty(t, apptest.NotificationMethods(c.Since(mark)), "no change, no notification")
	requireError(t, c.Request("thread/metadata/update", map[string]any{"threadId": id(1), "projectId": "nope"}), -32600, "project not found: nope")
	c.Result("thread/metadata/update", map[string]any{"threadId": id(2), "projectId": b.ID}, nil)
	require.Equal(t, []string{id(1)}, listedIDs(t, c.Result("thread/list", map[string]any{"projectId": a.ID}, nil)))
	require.Equal(t, []string{id(3)}, listedIDs(t, c.Result("thread/list", map[string]any{"projectId": nil}, nil)), "null: threads without a project")
	require.Len(t, listedIDs(t, c.Result("thread/list", map[string]any{}, nil)), 3)
	c.Result("thread/read", map[string]any{"threadId": id(2)}, &th)
	require.Equal(t, b.ID, *th.Thread.ProjectID)
	var read struct{ Project wireProject }
	c.Result("project/read", map[string]any{"projectId": a.ID}, &read)
	var member struct {
		Thread struct {
			RecencyAt *int64 `json:"recencyAt"`
		} `json:"thread"`
	}
	c.Result("thread/read", map[string]any{"threadId": id(1)}, &member)
	require.NotNil(t, read.Project.RecencyAt)
	require.Equal(t, *member.Thread.RecencyAt, *read.Project.RecencyAt, "the member's recency")
	raw = c.Result("project/list", map[string]any{"sortKey": "recencyAt"}, nil)
	require.Equal(t, []string{b.ID, a.ID}, listedIDs(t, raw), "newest member first")

	// import moves threads; delete empties the project
	requireError(t, c.Request("project/import", map[string]any{"idempotencyKey": "i1", "name": "I", "roots": []any{}, "threads": []any{id(3), id(3)}}), -32602, "duplicate thread id: "+id(3))
	requireError(t, c.Request("project/import", map[string]any{"idempotencyKey": "i1", "name": "I", "roots": []any{}, "threads": []any{id(9)}}), -32602, "thread not found: "+id(9))
	var imp struct{ Project wireProject }
	c.Result("project/import", map[string]any{"idempotencyKey": "i1", "name": "I", "roots": []any{}, "threads": []any{id(1), id(3)}}, &imp)
	c.WaitNotification("thread/project/updated", threadIDIs(id(3)))
	require.Equal(t, []string{id(3), id(1)}, listedIDs(t, c.Result("thread/list", map[string]any{"projectId": imp.Project.ID}, nil)))
	require.Empty(t, listedIDs(t, c.Result("thread/list", map[string]any{"projectId": a.ID}, nil)))

	mark = c.Mark()
	c.Result("project/delete", map[string]any{"projectId": imp.Project.ID}, nil)
	require.Equal(t, []string{"project/changed", "thread/project/updated", "thread/project/updated"}, apptest.NotificationMethods(c.Since(mark)))
	requireError(t, c.Request("project/delete", map[string]any{"projectId": imp.Project.ID}), -32602, "project not found: "+imp.Project.ID)
	requireError(t, c.Request("project/create", map[string]any{"idempotencyKey": "i1", "name": "I", "roots": []any{}}), -32602, "idempotency key refers to deleted project: i1")
	c.Result("thread/read", map[string]any{"threadId": id(1)}, &th)
	require.Nil(t, th.Thread.ProjectID)
	c.Close()

	// everything survives a restart
	c = apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	require.Equal(t, []string{b.ID, a.ID}, listedIDs(t, c.Result("project/list", map[string]any{}, nil)))
	require.Equal(t, []string{id(2)}, listedIDs(t, c.Result("thread/list", map[string]any{"projectId": b.ID}, nil)))
	c.Result("thread/metadata/update", map[string]any{"threadId": id(2), "projectId": ""}, &th)
	require.Nil(t, th.Thread.ProjectID, "an empty projectId clears it")
}

func TestProjectOnThreadStartForkResume(t *testing.T) {
	mm := mockmodel.New(t)
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	p := createProject(t, c, "k", "P")
	requireError(t, c.Request("thread/start", map[string]any{"projectId": "nope"}), -32600, "project not found: nope")
	tid := c.StartThread(map[string]any{"projectId": p.ID})
	var th struct {
		Thread struct {
			ProjectID *string `json:"projectId"`
		} `json:"thread"`
	}
	c.Result("thread/read", map[string]any{"threadId": tid}, &th)
	require.Equal(t, p.ID, *th.Thread.ProjectID)
	c.StartTurn(tid, "hello")
	c.WaitTurnCompleted()
	var fork struct {
		Thread struct {
			ID        string  `json:"id"`
			ProjectID *string `json:"projectId"`
		} `json:"thread"`
	}
	c.Result("thread/fork", map[string]any{"threadId": tid, "excludeTurns": true}, &fork)
	require.Equal(t, p.ID, *fork.Thread.ProjectID, "a fork stays in its source's project")
	eph := c.StartThread(map[string]any{"projectId": p.ID, "ephemeral": true})
	c.Close()

	c = apptest.Start(t, apptest.Options{Model: mm, Home: c.Home})
	c.Initialize(true)
	c.Result("thread/resume", map[string]any{"threadId": tid, "excludeTurns": true}, &th)
	require.Equal(t, p.ID, *th.Thread.ProjectID)
	members := listedIDs(t, c.Result("thread/list", map[string]any{"projectId": p.ID}, nil))
	require.Contains(t, members, tid)
	require.NotContains(t, members, eph, "an ephemeral thread's project is not stored")
}

func TestThreadAttachments(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	id := func(i int) string { return fmt.Sprintf("01f30000-0000-7000-8000-%012d", i) }
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= 2; i++ {
		storedThread(t, home, id(i), "mock", rollout.StringSource("vscode"), base.Add(time.Duration(i)*time.Hour), fmt.Sprint("q", i))
	}
	c := apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	add := func(tid, typ, key string, payload any) map[string]any {
		var r map[string]any
		c.Result("thread/attachment/add", map[string]any{"threadId": tid, "attachmentType": typ, "identityKey": key, "payload": payload}, &r)
		return r
	}
	requireErrorMatch(t, c.Request("thread/attachment/add", map[string]any{"threadId": "x", "attachmentType": "t", "identityKey": "k", "payload": 1}), -32602, `^invalid thread id: `)
	requireError(t, c.Request("thread/attachment/add", map[string]any{"threadId": id(9), "attachmentType": "t", "identityKey": "k", "payload": 1}), -32602, "thread not found: "+id(9))
	requireError(t, c.Request("thread/attachment/add", map[string]any{"threadId": id(1), "attachmentType": "", "identityKey": "k", "payload": 1}), -32602, "attachmentType must not be empty")
	requireError(t, c.Request("thread/attachment/add", map[string]any{"threadId": id(1), "attachmentType": "t", "identityKey": strings.Repeat("k", 257), "payload": 1}), -32602, "identityKey must not exceed 256 bytes")
	requireError(t, c.Request("thread/attachment/add", map[string]any{"threadId": id(1), "attachmentType": "t", "identityKey": "k", "payload": strings.Repeat("y", 70000)}), -32602, "attachment payload must not exceed 65536 bytes")
	empty := c.Result("thread/attachment/list", map[string]any{"threadId": id(9)}, nil)
	require.JSONEq(t, `{"data":[],"nextCursor":null}`, string(empty))

	mark := c.Mark()
	first := add(id(1), "worktree", "k1", map[string]any{"a": 1})
	require.Equal(t, "created", first["outcome"])
	n := c.WaitNotification("thread/attachment/updated", threadIDIs(id(1)))
	require.Contains(t, string(n.Params), `"operation":"created"`)
	same := add(id(1), "worktree", "k1", map[string]any{"b": 2})
	require.Equal(t, "existing", same["outcome"])
	require.Equal(t, first["attachment"], same["attachment"])
	add(id(1), "worktree", "k2", nil)
	add(id(2), "worktree", "k1", "s")
	c.WaitNotification("thread/attachment/updated", threadIDIs(id(2)))
	// Each add's notification follows its reply, so the k2 one (thread 1) may come after thread 2's.
	updates := func() int {
		return strings.Count(strings.Join(apptest.NotificationMethods(c.Since(mark)), ","), "thread/attachment/updated")
	}
	require.Eventually(t, func() bool { return updates() >= 3 }, apptest.WaitLimit, time.Millisecond)
	require.Equal(t, 3, updates())

	var page struct {
		Data       []map[string]any `json:"data"`
		NextCursor *string          `json:"nextCursor"`
	}
	c.Result("thread/attachment/list", map[string]any{"threadId": id(1), "limit": 1}, &page)
	require.Len(t, page.Data, 1)
	require.Equal(t, "k1", page.Data[0]["identityKey"])
	c.Result("thread/attachment/list", map[string]any{"threadId": id(1), "cursor": *page.NextCursor}, &page)
	require.Len(t, page.Data, 1)
	require.Equal(t, "k2", page.Data[0]["identityKey"])
	require.Nil(t, page.Data[0]["payload"])
	requireError(t, c.Request("thread/attachment/list", map[string]any{"threadId": id(1), "cursor": "bad"}), -32602, "invalid pagination cursor")

	owners := c.Result("thread/attachmentOwner/list", map[string]any{"attachmentType": "worktree", "identityKey": "k1"}, nil)
	require.JSONEq(t, fmt.Sprintf(`{"data":[{"threadId":%q,"archived":false},{"threadId":%q,"archived":false}],"nextCursor":null}`, id(1), id(2)), string(owners))
	c.Result("thread/archive", map[string]any{"threadId": id(2)}, nil)
	owners = c.Result("thread/attachmentOwner/list", map[string]any{"attachmentType": "worktree", "identityKey": "k1", "archived": true}, nil)
	require.JSONEq(t, fmt.Sprintf(`{"data":[{"threadId":%q,"archived":true}],"nextCursor":null}`, id(2)), string(owners))
	owners = c.Result("thread/attachmentOwner/list", map[string]any{"attachmentType": "worktree", "identityKey": "k1", "limit": 1}, &page)
	require.Contains(t, *page.NextCursor, `"thread_id":"`+id(1)+`"`)
	requireError(t, c.Request("thread/attachmentOwner/list", map[string]any{"attachmentType": "worktree", "identityKey": "k1", "cursor": "bad"}), -32602, "invalid pagination cursor")

	mark = c.Mark()
	c.Result("thread/attachment/remove", map[string]any{"threadId": id(1), "attachmentType": "worktree", "identityKey": "k1"}, nil)
	c.WaitNotification("thread/attachment/updated", func(p json.RawMessage) bool {
		return strings.Contains(string(p), `"operation":"deleted"`) && strings.Contains(string(p), `"identityKey":"k1"`)
	})
	c.Result("thread/attachment/remove", map[string]any{"threadId": id(1), "attachmentType": "worktree", "identityKey": "k1"}, nil)
	require.Equal(t, []string{"thread/attachment/updated"}, apptest.NotificationMethods(c.Since(mark)), "removing nothing announces nothing")
	requireError(t, c.Request("thread/attachment/remove", map[string]any{"threadId": id(9), "attachmentType": "t", "identityKey": "k"}), -32602, "thread not found: "+id(9))
	c.Close()

	c = apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	c.Result("thread/attachment/list", map[string]any{"threadId": id(1)}, &page)
	require.Len(t, page.Data, 1, "attachments survive a restart")
	c.Result("thread/delete", map[string]any{"threadId": id(2)}, nil)
	owners = c.Result("thread/attachmentOwner/list", map[string]any{"attachmentType": "worktree", "identityKey": "k1"}, nil)
	require.JSONEq(t, `{"data":[],"nextCursor":null}`, string(owners), "a deleted thread's attachments go with it")
}

func text(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }

func TestThreadQueue(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("working", 1), mockmodel.Hang(60)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	requireErrorMatch(t, c.Request("thread/queue/list", map[string]any{"threadId": "x"}), -32600, `^invalid thread id: `)
	ghost := "01f40000-0000-7000-8000-000000000009"
	requireError(t, c.Request("thread/queue/add", map[string]any{"threadId": ghost, "clientUserMessageId": "c", "input": text("q")}), -32603,
		"failed to read thread: invalid thread-store request: no rollout found for thread id "+ghost)

	tid := c.StartThread(nil)
	requireError(t, c.Request("thread/queue/start", map[string]any{"threadId": tid}), -32600, "queue is empty")
	first := c.StartTurn(tid, "long")
	require.Eventually(t, func() bool { return mm.HasNote("hang") }, apptest.WaitLimit, 10*time.Millisecond)

	var ids []string
	for _, m := range []string{"q1", "q2", "q3"} {
		var r struct {
			QueuedSubmission struct{ ID string } `json:"queuedSubmission"`
		}
		c.Result("thread/queue/add", map[string]any{"threadId": tid, "clientUserMessageId": "c-" + m, "input": text(m)}, &r)
		ids = append(ids, r.QueuedSubmission.ID)
		c.WaitNotification("thread/queue/changed", threadIDIs(tid))
	}
	requireError(t, c.Request("thread/queue/add", map[string]any{"threadId": tid, "clientUserMessageId": "c", "input": []any{}}), -32600, "only user input can be added to the user-message queue")
	var page struct {
		Data       []map[string]any `json:"data"`
		NextCursor *string          `json:"nextCursor"`
	}
	c.Result("thread/queue/list", map[string]any{"threadId": tid, "limit": 2}, &page)
	require.Len(t, page.Data, 2)
	require.Equal(t, "2", *page.NextCursor)
	requireError(t, c.Request("thread/queue/list", map[string]any{"threadId": tid, "cursor": "x"}), -32600, "invalid queue pagination cursor: invalid digit found in string")

	var upd struct {
		QueuedSubmission map[string]any `json:"queuedSubmission"`
	}
	c.Result("thread/queue/update", map[string]any{"threadId": tid, "queuedSubmissionId": ids[0], "input": text("q1!"), "responsesapiClientMetadata": map[string]any{"a": "b"}}, &upd)
	require.Equal(t, map[string]any{"a": "b"}, upd.QueuedSubmission["responsesapiClientMetadata"])
	requireError(t, c.Request("thread/queue/update", map[string]any{"threadId": tid, "queuedSubmissionId": "nope", "input": text("x")}), -32600, "queued submission not found: nope")
	requireError(t, c.Request("thread/queue/reorder", map[string]any{"threadId": tid, "queuedSubmissionIds": []any{ids[0]}}), -32600, "queue reorder must include every queued submission exactly once")
	c.Result("thread/queue/reorder", map[string]any{"threadId": tid, "queuedSubmissionIds": []any{ids[2], ids[0], ids[1]}}, nil)
	requireError(t, c.Request("thread/queue/start", map[string]any{"threadId": tid}), -32600, "thread already has an active or pending turn")
	var del struct{ Deleted bool }
	c.Result("thread/queue/delete", map[string]any{"threadId": tid, "queuedSubmissionId": ids[1]}, &del)
	require.True(t, del.Deleted)
	c.Result("thread/queue/delete", map[string]any{"threadId": tid, "queuedSubmissionId": ids[1]}, &del)
	require.False(t, del.Deleted)

	// An interrupted turn leaves the queue alone.
	c.Result("turn/interrupt", map[string]any{"threadId": tid, "turnId": first}, nil)
	require.Equal(t, "interrupted", c.WaitTurnCompleted()["status"])
	c.Result("thread/queue/list", map[string]any{"threadId": tid}, &page)
	require.Len(t, page.Data, 2)
	requireError(t, c.Request("thread/queue/start", map[string]any{"threadId": tid, "queuedSubmissionId": "nope"}), -32600, "queued submission not found: nope")
	c.Close()

	// The queue survives a restart; an unloaded thread must be resumed before a queued message starts.
	c = apptest.Start(t, apptest.Options{Model: mm, Home: c.Home})
	c.Initialize(true)
	c.Result("thread/queue/list", map[string]any{"threadId": tid}, &page)
	require.Len(t, page.Data, 2)
	require.Equal(t, "q3", page.Data[0]["input"].([]any)[0].(map[string]any)["text"], "in the reordered order")
	requireError(t, c.Request("thread/queue/start", map[string]any{"threadId": tid}), -32600, "resume the thread before starting a queued message")
	c.Result("thread/resume", map[string]any{"threadId": tid, "excludeTurns": true}, nil)

	// Starting the head runs it; each completed turn then starts the next queued message.
	mark := c.Mark()
	var started struct {
		Turn struct{ ID, Status string } `json:"turn"`
	}
	c.Result("thread/queue/start", map[string]any{"threadId": tid}, &started)
	require.Equal(t, "inProgress", started.Turn.Status)
	c.WaitTurnCompleted()
	c.WaitTurnCompleted()
	c.Result("thread/queue/list", map[string]any{"threadId": tid}, &page)
	require.Empty(t, page.Data)
	methods := apptest.NotificationMethods(c.Since(mark), append(usageNoise, "item/agentMessage/delta", "item/started", "item/completed", "thread/status/changed", "warning", "thread/readState/changed", "thread/goal/cleared")...)
	require.Equal(t, []string{"thread/queue/changed", "turn/started", "turn/completed", "thread/queue/changed", "turn/started", "turn/completed"}, methods)
	var clientIDs []string
	for _, m := range c.Since(mark) {
		if m.Method == "item/started" && strings.Contains(string(m.Params), `"userMessage"`) {
			var p struct {
				Item struct{ ClientID string } `json:"item"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &p))
			clientIDs = append(clientIDs, p.Item.ClientID)
		}
	}
	require.Equal(t, []string{"c-q3", "c-q1"}, clientIDs, "each turn carries its message's clientUserMessageId")

	// On an idle loaded thread, an added message starts at once.
	mark = c.Mark()
	c.Result("thread/queue/add", map[string]any{"threadId": tid, "clientUserMessageId": "now", "input": text("now")}, nil)
	c.WaitTurnCompleted()
	methods = apptest.NotificationMethods(c.Since(mark), append(usageNoise, "item/agentMessage/delta", "item/started", "item/completed", "thread/status/changed", "warning", "thread/readState/changed", "thread/goal/cleared")...)
	require.Equal(t, []string{"thread/queue/changed", "thread/queue/changed", "turn/started", "turn/completed"}, methods)
}
