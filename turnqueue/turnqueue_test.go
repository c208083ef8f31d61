package turnqueue

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	protocol "appserver/protocol/v2"
	"appserver/threadindex"

	"github.com/stretchr/testify/require"
)

func openStore(t *testing.T, path string) *Store {
	st, err := threadindex.OpenState(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	s, err := Open(context.Background(), st)
	require.NoError(t, err)
	return s
}

func text(s string) []protocol.UserInput {
	return []protocol.UserInput{{Value: protocol.UserInputText{Text: s}}}
}

func texts(items []Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.Input[0].Value.(protocol.UserInputText).Text)
	}
	return out
}

func TestQueueOrderAndPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), threadindex.StateFile)
	s := openStore(t, path)
	ctx := context.Background()
	var ids []string
	for _, m := range []string{"a", "b", "c"} {
		it, err := s.Add(ctx, "t1", text(m), "c-"+m, nil)
		require.NoError(t, err)
		ids = append(ids, it.ID)
	}
	_, err := s.Add(ctx, "t2", text("other"), "", map[string]string{"k": "v"})
	require.NoError(t, err)
	_, err = s.Add(ctx, "t1", nil, "x", nil)
	require.ErrorIs(t, err, ErrInvalid)
	require.EqualError(t, err, "only user input can be added to the user-message queue")

	s = openStore(t, path)
	all, err := s.All(ctx, "t1")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, texts(all))
	require.Equal(t, "c-b", all[1].ClientID)
	require.Nil(t, all[0].Metadata)
	b, _ := json.Marshal(all[0].Submission())
	require.JSONEq(t, `{"id":"`+ids[0]+`","input":[{"type":"text","text":"a","text_elements":[]}],"clientUserMessageId":"c-a","responsesapiClientMetadata":null}`, string(b))

	require.NoError(t, s.Reorder(ctx, "t1", []string{ids[2], ids[0], ids[1]}))
	all, _ = s.All(ctx, "t1")
	require.Equal(t, []string{"c", "a", "b"}, texts(all))
	for _, bad := range [][]string{{ids[0]}, {ids[0], ids[1], ids[1]}, {ids[0], ids[1], "nope"}, {ids[0], ids[1], ids[2], ids[2]}} {
		err := s.Reorder(ctx, "t1", bad)
		require.EqualError(t, err, "queue reorder must include every queued submission exactly once")
	}
	require.NoError(t, s.Reorder(ctx, "empty", nil), "an empty queue reorders to nothing")

	it, err := s.Take(ctx, "t1", ids[0])
	require.NoError(t, err)
	require.Equal(t, ids[0], it.ID)
	it, err = s.Take(ctx, "t1", "")
	require.NoError(t, err)
	require.Equal(t, ids[2], it.ID, "the head after the reorder")
	_, err = s.Take(ctx, "t1", "nope")
	require.EqualError(t, err, "queued submission not found: nope")
	_, err = s.Take(ctx, "t1", "")
	require.NoError(t, err)
	_, err = s.Take(ctx, "t1", "")
	require.EqualError(t, err, "queue is empty")
	// A new item after the queue emptied goes last of whatever is left.
	_, err = s.Add(ctx, "t2", text("later"), "", nil)
	require.NoError(t, err)
	all, _ = s.All(ctx, "t2")
	require.Equal(t, []string{"other", "later"}, texts(all))
	require.NoError(t, s.ForgetThread(ctx, "t2"))
	all, _ = s.All(ctx, "t2")
	require.Empty(t, all)
}

func TestUpdateDeleteAndMetadata(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), threadindex.StateFile))
	ctx := context.Background()
	it, err := s.Add(ctx, "t1", text("a"), "c", nil)
	require.NoError(t, err)
	up, err := s.Update(ctx, "t1", it.ID, text("a2"), map[string]string{"a": "b"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "b"}, up.Metadata)
	up, err = s.Update(ctx, "t1", it.ID, text("a3"), map[string]string{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "b"}, up.Metadata, "empty metadata keeps the stored one")
	up, err = s.Update(ctx, "t1", it.ID, text("a4"), nil)
	require.NoError(t, err)
	require.Equal(t, "c", up.ClientID)
	all, _ := s.All(ctx, "t1")
	require.Equal(t, []string{"a4"}, texts(all))
	require.Equal(t, map[string]string{"a": "b"}, all[0].Metadata)

	_, err = s.Update(ctx, "t1", "nope", text("x"), nil)
	require.EqualError(t, err, "queued submission not found: nope")
	_, err = s.Update(ctx, "t2", it.ID, text("x"), nil)
	require.EqualError(t, err, "queued submission not found: "+it.ID, "another thread's item")
	_, err = s.Update(ctx, "t1", it.ID, nil, nil)
	require.EqualError(t, err, "only user input can be added to the user-message queue")

	deleted, err := s.Delete(ctx, "t1", "nope")
	require.NoError(t, err)
	require.False(t, deleted)
	deleted, err = s.Delete(ctx, "t1", it.ID)
	require.NoError(t, err)
	require.True(t, deleted)
}

func TestListPaging(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), threadindex.StateFile))
	ctx := context.Background()
	for _, m := range []string{"a", "b", "c"} {
		_, err := s.Add(ctx, "t1", text(m), "", nil)
		require.NoError(t, err)
	}
	page, next, err := s.List(ctx, "t1", "", 2)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, texts(page))
	require.Equal(t, "2", next)
	page, next, err = s.List(ctx, "t1", next, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"c"}, texts(page))
	require.Empty(t, next)
	page, next, err = s.List(ctx, "t1", "99", 2)
	require.NoError(t, err)
	require.Empty(t, page)
	require.Empty(t, next)
	page, _, err = s.List(ctx, "t1", "", 0)
	require.NoError(t, err)
	require.Len(t, page, 1)
	for c, msg := range map[string]string{
		"bad":                  "invalid queue pagination cursor: invalid digit found in string",
		"-1":                   "invalid queue pagination cursor: invalid digit found in string",
		"99999999999999999999": "invalid queue pagination cursor: number too large to fit in target type",
	} {
		_, _, err := s.List(ctx, "t1", c, 2)
		require.EqualError(t, err, msg, c)
	}
}
