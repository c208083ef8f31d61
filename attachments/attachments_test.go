package attachments

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"appserver/threadindex"

	"github.com/stretchr/testify/require"
)

func openStore(t *testing.T, path string) *Store {
	st, err := threadindex.OpenState(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	s, err := Open(context.Background(), st)
	require.NoError(t, err)
	clock := time.Unix(1000, 0)
	s.SetClock(func() time.Time { clock = clock.Add(700 * time.Millisecond); return clock })
	return s
}

func TestAddListRemoveSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), threadindex.StateFile)
	s := openStore(t, path)
	ctx := context.Background()
	a, created, err := s.Add(ctx, "t1", "worktree", "k1", json.RawMessage(`{"a":1}`))
	require.NoError(t, err)
	require.True(t, created)
	again, created, err := s.Add(ctx, "t1", "worktree", "k1", json.RawMessage(`{"b":2}`))
	require.NoError(t, err)
	require.False(t, created, "the identity exists: the first payload stays")
	require.Equal(t, a, again)
	b, _, err := s.Add(ctx, "t1", "worktree", "k2", nil)
	require.NoError(t, err)
	require.JSONEq(t, "null", string(b.Payload))
	c, _, err := s.Add(ctx, "t1", "other", "k1", json.RawMessage(`"s"`))
	require.NoError(t, err)
	_, _, err = s.Add(ctx, "t2", "worktree", "k1", json.RawMessage(`1`))
	require.NoError(t, err)

	s = openStore(t, path)
	all, next, err := s.List(ctx, "t1", "", 100)
	require.NoError(t, err)
	require.Empty(t, next)
	require.Equal(t, []string{a.ID, b.ID, c.ID}, ids(all))
	require.JSONEq(t, `{"a":1}`, string(all[0].Payload))

	var paged []string
	cursor := ""
	for range 10 {
		page, next, err := s.List(ctx, "t1", cursor, 1)
		require.NoError(t, err)
		paged = append(paged, ids(page)...)
		if next == "" {
			break
		}
		require.True(t, strings.HasPrefix(next, "t1|"), next)
		cursor = next
	}
	require.Equal(t, []string{a.ID, b.ID, c.ID}, paged)
	for _, bad := range []string{"bad", "t2|1|x", "t1|x|y", "t1|1|"} {
		_, _, err = s.List(ctx, "t1", bad, 1)
		require.ErrorIs(t, err, ErrInvalid)
		require.EqualError(t, err, "invalid pagination cursor")
	}

	gone, removed, err := s.Remove(ctx, "t1", "worktree", "k1")
	require.NoError(t, err)
	require.True(t, removed)
	require.Equal(t, a.ID, gone.ID)
	_, removed, err = s.Remove(ctx, "t1", "worktree", "k1")
	require.NoError(t, err)
	require.False(t, removed)
	require.NoError(t, s.ForgetThread(ctx, "t2"))
	none, _, err := s.List(ctx, "t2", "", 10)
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestValidation(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), threadindex.StateFile))
	ctx := context.Background()
	long := strings.Repeat("x", 257)
	for _, tc := range []struct {
		typ, key, payload, msg string
	}{
		{"", "k", "1", "attachmentType must not be empty"},
		{"t", "", "1", "identityKey must not be empty"},
		{long, "k", "1", "attachmentType must not exceed 256 bytes"},
		{"t", long, "1", "identityKey must not exceed 256 bytes"},
		{"t", "k", `"` + strings.Repeat("y", 65536) + `"`, "attachment payload must not exceed 65536 bytes"},
	} {
		_, _, err := s.Add(ctx, "t1", tc.typ, tc.key, json.RawMessage(tc.payload))
		require.ErrorIs(t, err, ErrInvalid)
		require.EqualError(t, err, tc.msg)
	}
	_, _, err := s.Remove(ctx, "t1", "", "k")
	require.EqualError(t, err, "attachmentType must not be empty")
	_, _, err = s.Add(ctx, "t1", strings.Repeat("x", 256), strings.Repeat("k", 256), json.RawMessage(`1`))
	require.NoError(t, err, "the limits are inclusive")
}

func TestOwners(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), threadindex.StateFile))
	ctx := context.Background()
	for _, th := range []string{"t3", "t1", "t2", "gone"} {
		_, _, err := s.Add(ctx, th, "worktree", "k", json.RawMessage(`1`))
		require.NoError(t, err)
	}
	states := func(_ context.Context, ids []string) (map[string]bool, error) {
		out := map[string]bool{}
		for _, id := range ids {
			if id != "gone" {
				out[id] = id == "t2"
			}
		}
		return out, nil
	}
	all, next, err := s.Owners(ctx, "worktree", "k", nil, "", 10, states)
	require.NoError(t, err)
	require.Empty(t, next)
	require.Equal(t, []Owner{{"t1", false}, {"t2", true}, {"t3", false}}, all)
	no := false
	live, _, err := s.Owners(ctx, "worktree", "k", &no, "", 10, states)
	require.NoError(t, err)
	require.Equal(t, []Owner{{"t1", false}, {"t3", false}}, live)

	page, next, err := s.Owners(ctx, "worktree", "k", nil, "", 1, states)
	require.NoError(t, err)
	require.Equal(t, []Owner{{"t1", false}}, page)
	require.JSONEq(t, `{"attachment_type":"worktree","identity_key":"k","archived":null,"thread_id":"t1"}`, next)
	page, _, err = s.Owners(ctx, "worktree", "k", nil, next, 1, states)
	require.NoError(t, err)
	require.Equal(t, []Owner{{"t2", true}}, page)
	_, _, err = s.Owners(ctx, "worktree", "k", &no, next, 1, states)
	require.EqualError(t, err, "invalid pagination cursor", "a cursor of another query")
	_, _, err = s.Owners(ctx, "worktree", "k", nil, "bad", 1, states)
	require.EqualError(t, err, "invalid pagination cursor")
	none, _, err := s.Owners(ctx, "worktree", "other", nil, "", 1, states)
	require.NoError(t, err)
	require.Empty(t, none)
	_, _, err = s.Owners(ctx, "", "k", nil, "", 1, states)
	require.EqualError(t, err, "attachmentType must not be empty")
}

func ids(as []Attachment) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}
