package server_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
	"appserver/rollout"
)

// forkThread forks params["threadId"] and returns the fork's thread object.
func forkThread(t *testing.T, c *apptest.Client, params map[string]any) threadObj {
	t.Helper()
	var res struct {
		Thread threadObj `json:"thread"`
	}
	c.Result("thread/fork", params, &res)
	return res.Thread
}

func turnIDs(th threadObj) []string {
	ids := make([]string, 0, len(th.Turns))
	for _, tn := range th.Turns {
		ids = append(ids, tn.ID)
	}
	return ids
}

// TestForkListAndReadMatchReference pins what the reference (0.169.0) shows for forks in thread/list and
// thread/read, live and after a restart: every fork (of a fork, at a turn) is previewed by the root's first
// message, forkedFromId names the direct parent (null in listings), thread/read with turns carries the
// inherited turns under their original ids, and an ephemeral fork reads with no preview and no forkedFromId.
func TestForkListAndReadMatchReference(t *testing.T) {
	mm := mockmodel.New(t)
	for _, r := range []string{"R1", "R2", "R3", "R4", "R5"} {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(r, 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	root := oneTurnThread(t, c, "First message")
	c.StartTurn(root, "Second message")
	c.WaitTurnCompleted()
	rootTurns := turnIDs(readThread(t, c, root, true))
	require.Len(t, rootTurns, 2)

	fk := forkThread(t, c, map[string]any{"threadId": root}).ID
	c.StartTurn(fk, "Fork message")
	c.WaitTurnCompleted()
	fk2 := forkThread(t, c, map[string]any{"threadId": fk}).ID
	c.StartTurn(fk2, "Fork2 message")
	c.WaitTurnCompleted()
	ft := forkThread(t, c, map[string]any{"threadId": root, "lastTurnId": rootTurns[0]}).ID
	c.StartTurn(ft, "ForkAt message")
	c.WaitTurnCompleted()
	fe := forkThread(t, c, map[string]any{"threadId": root, "ephemeral": true, "excludeTurns": true})
	require.Equal(t, root, *fe.ForkedFromID, "the fork response names an ephemeral fork's parent")

	check := func(c *apptest.Client) {
		t.Helper()
		list, _ := listThreads(t, c, map[string]any{})
		require.Len(t, list, 4)
		for _, th := range list {
			require.Equal(t, "First message", th.Preview, th.ID)
			require.Nil(t, th.ForkedFromID, "listings carry no forkedFromId")
		}
		for _, tc := range []struct {
			id, parent string
			turns      int
		}{{fk, root, 3}, {fk2, fk, 4}, {ft, root, 2}} {
			th := readThread(t, c, tc.id, true)
			require.Equal(t, "First message", th.Preview, tc.id)
			require.NotNil(t, th.ForkedFromID)
			require.Equal(t, tc.parent, *th.ForkedFromID)
			ids := turnIDs(th)
			require.Len(t, ids, tc.turns)
			require.Equal(t, rootTurns[0], ids[0], "inherited turns keep their ids")
			if tc.turns > 2 {
				require.Equal(t, rootTurns[1], ids[1])
			}
		}
		require.Equal(t, turnIDs(readThread(t, c, fk, true)), turnIDs(readThread(t, c, fk2, true))[:3])
	}
	check(c)
	// The fork's session_meta names the parent's records it starts from twice, as the reference writes it.
	f, err := os.Open(rolloutFile(t, c.Home, fk2))
	require.NoError(t, err)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	require.True(t, sc.Scan())
	require.NoError(t, f.Close())
	var first struct {
		Payload struct {
			ForkedFromID               string `json:"forked_from_id"`
			ForkedFromOrdinalExclusive *int64 `json:"forked_from_ordinal_exclusive"`
			HistoryBase                struct {
				EndOrdinalExclusive int64 `json:"end_ordinal_exclusive"`
			} `json:"history_base"`
		} `json:"payload"`
	}
	require.NoError(t, json.Unmarshal(sc.Bytes(), &first))
	require.Equal(t, fk, first.Payload.ForkedFromID)
	require.NotNil(t, first.Payload.ForkedFromOrdinalExclusive)
	require.Positive(t, first.Payload.HistoryBase.EndOrdinalExclusive)
	require.Equal(t, first.Payload.HistoryBase.EndOrdinalExclusive, *first.Payload.ForkedFromOrdinalExclusive)
	eph := readThread(t, c, fe.ID, false)
	require.Equal(t, "", eph.Preview)
	require.Nil(t, eph.ForkedFromID, "the reference reads an ephemeral fork without its origin")

	c.Close()
	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: c.Home})
	c2.Initialize(true)
	check(c2)
}

// TestForkRefusalsMatchReference pins the reference's (0.169.0) refusals of thread/fork, checked in that order:
// the id's syntax ("invalid session id"), the parent's rollout, an ephemeral fork without `excludeTurns:
// true` (whatever else is asked), then the turn to fork at, which is looked up after the full-history
// deprecation notice went out.
func TestForkRefusalsMatchReference(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("R1", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	fresh := c.StartThread(nil)
	tid := oneTurnThread(t, c, "First message")
	const ephemeralMsg = "ephemeral paginated thread/fork requires `excludeTurns: true`"
	for _, tc := range []struct {
		name   string
		params map[string]any
		msg    string
		notice bool // a deprecationNotice precedes the error
	}{
		{"ephemeral", map[string]any{"threadId": tid, "ephemeral": true}, ephemeralMsg, false},
		{"ephemeral excludeTurns false", map[string]any{"threadId": tid, "ephemeral": true, "excludeTurns": false}, ephemeralMsg, false},
		{"ephemeral unknown lastTurnId", map[string]any{"threadId": tid, "ephemeral": true, "lastTurnId": "nope"}, ephemeralMsg, false},
		{"ephemeral unknown beforeTurnId", map[string]any{"threadId": tid, "ephemeral": true, "beforeTurnId": "nope"}, ephemeralMsg, false},
		{"ephemeral other overrides", map[string]any{"threadId": tid, "ephemeral": true, "cwd": "/nonexistent/dir"}, ephemeralMsg, false},
		{"ephemeral unknown thread", map[string]any{"threadId": unknownID, "ephemeral": true}, "no rollout found for thread id " + unknownID, false},
		{"ephemeral thread without turns", map[string]any{"threadId": fresh, "ephemeral": true}, "no rollout found for thread id " + fresh, false},
		{"ephemeral invalid id", map[string]any{"threadId": "bogus", "ephemeral": true}, "invalid session id: invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `o` at 2", false},
		{"unknown lastTurnId", map[string]any{"threadId": tid, "lastTurnId": "nope"}, "turn not found: nope", true},
		{"unknown beforeTurnId", map[string]any{"threadId": tid, "beforeTurnId": "nope"}, "turn not found: nope", true},
		{"unknown lastTurnId excludeTurns", map[string]any{"threadId": tid, "lastTurnId": "nope", "excludeTurns": true}, "turn not found: nope", false},
		{"ephemeral null", map[string]any{"threadId": tid, "ephemeral": nil}, "Invalid request: invalid type: null, expected a boolean", false},
		{"excludeTurns null", map[string]any{"threadId": tid, "excludeTurns": nil}, "Invalid request: invalid type: null, expected a boolean", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := c.Mark()
			m := c.Request("thread/fork", tc.params)
			requireError(t, m, -32600, tc.msg)
			notices := 0
			for _, got := range c.Since(mark) {
				if got.ID != nil && got.Method == "" { // the error response: what follows is not this request's
					break
				}
				if got.Method == "deprecationNotice" {
					notices++
				}
			}
			if tc.notice {
				require.Equal(t, 1, notices)
			} else {
				require.Zero(t, notices)
			}
		})
	}
	fe := forkThread(t, c, map[string]any{"threadId": tid, "ephemeral": true, "excludeTurns": true})
	require.Nil(t, fe.Path, "an ephemeral fork has no rollout")
	require.Empty(t, fe.Turns)
	fk := forkThread(t, c, map[string]any{"threadId": tid, "ephemeral": false, "excludeTurns": false})
	require.NotNil(t, fk.Path)
	require.Len(t, fk.Turns, 1)
}

// TestEphemeralForkOfLegacyThread: the reference refuses an ephemeral fork without excludeTurns only for a
// paginated parent; a legacy rollout (no history_mode, as older versions wrote) is forked.
func TestEphemeralForkOfLegacyThread(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	legacy, paginated := "01f00000-0000-7000-8000-000000000001", "01f00000-0000-7000-8000-000000000002"
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	r, err := rollout.Create(home, rollout.SessionMeta{ID: legacy, Cwd: "/w", Originator: "x", CLIVersion: "0.100.0",
		Source: rollout.StringSource("vscode"), ModelProvider: "mock"}, base)
	require.NoError(t, err)
	require.NoError(t, r.AppendEvent(rollout.TaskStarted{TurnID: "t-1"}))
	require.NoError(t, r.AppendEvent(rollout.TaskComplete{TurnID: "t-1"}))
	require.NoError(t, r.Close())
	storedThread(t, home, paginated, "mock", rollout.StringSource("vscode"), base.Add(time.Hour), "paginated")
	c := apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	fk := forkThread(t, c, map[string]any{"threadId": legacy, "ephemeral": true})
	require.Nil(t, fk.Path)
	requireError(t, c.Request("thread/fork", map[string]any{"threadId": paginated, "ephemeral": true}), -32600,
		"ephemeral paginated thread/fork requires `excludeTurns: true`")
}

// The reference has no rollout for a started thread until its first turn, so it cannot be forked yet.
func TestForkOfThreadWithoutTurnsFails(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("R1", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(nil)
	m := c.Request("thread/fork", map[string]any{"threadId": tid})
	require.NotNil(t, m.Error)
	require.Equal(t, -32600, m.Error.Code)
	require.Equal(t, "no rollout found for thread id "+tid, m.Error.Message)

	c.StartTurn(tid, "First message")
	c.WaitTurnCompleted()
	require.Equal(t, tid, *forkThread(t, c, map[string]any{"threadId": tid}).ForkedFromID)
}

// Until its first turn the reference has no rollout for a started thread: its turns and items cannot be listed.
func TestTurnsOfThreadWithoutRollout(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("R1", 1)}})
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(nil)
	for _, tc := range []struct {
		method string
		params map[string]any
		msg    string
	}{
		{"thread/read", map[string]any{"threadId": tid, "includeTurns": true}, "list_turns is not supported yet"},
		{"thread/turns/list", map[string]any{"threadId": tid}, "list_turns is not supported yet"},
		{"thread/items/list", map[string]any{"threadId": tid}, "thread/items/list is not supported yet"},
	} {
		m := c.Request(tc.method, tc.params)
		require.NotNil(t, m.Error, tc.method)
		require.Equal(t, -32601, m.Error.Code, tc.method)
		require.Equal(t, tc.msg, m.Error.Message, tc.method)
	}
	require.Empty(t, readThread(t, c, tid, false).Turns)

	c.StartTurn(tid, "First message")
	c.WaitTurnCompleted()
	require.Len(t, readThread(t, c, tid, true).Turns, 1)
	c.Result("thread/turns/list", map[string]any{"threadId": tid}, nil)
	c.Result("thread/items/list", map[string]any{"threadId": tid}, nil)
}

// TestForkKeepsClientUserMessageID pins the reference (0.169.0): the userMessage items a fork inherits keep the
// clientId given as clientUserMessageId at turn/start, in the fork response, thread/read, thread/turns/list
// and thread/resume, and after a restart; a turn started without one reads with a null clientId.
func TestForkKeepsClientUserMessageID(t *testing.T) {
	mm := mockmodel.New(t)
	for _, r := range []string{"R1", "R2"} {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(r, 1)}})
	}
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(true)
	tid := c.StartThread(nil)
	c.Result("turn/start", map[string]any{"threadId": tid, "clientUserMessageId": "cli-1",
		"input": []any{map[string]any{"type": "text", "text": "hi"}}}, nil)
	c.WaitTurnCompleted()
	c.StartTurn(tid, "no client id")
	c.WaitTurnCompleted()

	clientIDs := func(turns []turnObj) []any {
		t.Helper()
		var out []any
		for _, tn := range turns {
			for _, it := range tn.Items {
				if it["type"] == "userMessage" {
					v, ok := it["clientId"]
					require.True(t, ok, "userMessage carries clientId")
					out = append(out, v)
				}
			}
		}
		return out
	}
	want := []any{"cli-1", nil}
	fk := forkThread(t, c, map[string]any{"threadId": tid})
	require.Equal(t, want, clientIDs(fk.Turns), "thread/fork")
	check := func(c *apptest.Client) {
		t.Helper()
		require.Equal(t, want, clientIDs(readThread(t, c, fk.ID, true).Turns), "thread/read")
		var page struct {
			Data []turnObj `json:"data"`
		}
		c.Result("thread/turns/list", map[string]any{"threadId": fk.ID, "sortDirection": "asc"}, &page)
		require.Equal(t, want, clientIDs(page.Data), "thread/turns/list")
	}
	check(c)
	c.Close()
	c2 := apptest.Start(t, apptest.Options{Model: mm, Home: c.Home})
	c2.Initialize(true)
	check(c2)
	var res struct {
		Thread threadObj `json:"thread"`
	}
	c2.Result("thread/resume", map[string]any{"threadId": fk.ID}, &res)
	require.Equal(t, want, clientIDs(res.Thread.Turns), "thread/resume")
}
