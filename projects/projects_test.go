package projects

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"appserver/threadindex"

	"github.com/stretchr/testify/require"
)

type fixture struct {
	st      *threadindex.State
	s       *Store
	path    string
	recency map[string]int64
	clock   time.Time
}

func open(t *testing.T, path string, f *fixture) {
	st, err := threadindex.OpenState(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	s, err := Open(context.Background(), st, func(_ context.Context, ids []string) (map[string]int64, error) {
		out := map[string]int64{}
		for _, id := range ids {
			if ms, ok := f.recency[id]; ok {
				out[id] = ms
			}
		}
		return out, nil
	})
	require.NoError(t, err)
	s.SetClock(func() time.Time { f.clock = f.clock.Add(time.Second); return f.clock })
	f.st, f.s, f.path = st, s, path
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{recency: map[string]int64{}, clock: time.Unix(1000, 0)}
	open(t, filepath.Join(t.TempDir(), threadindex.StateFile), f)
	return f
}

func exists(string) bool { return true }

func (f *fixture) create(t *testing.T, key, name string) Project {
	p, created, _, err := f.s.Create(context.Background(), CreateOptions{Key: key, Name: name})
	require.NoError(t, err)
	require.True(t, created)
	return p
}

func ids(ps []Project) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func TestCreateValidatesAndIsIdempotentAcrossReopen(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, created, _, err := f.s.Create(ctx, CreateOptions{Key: "k", Name: "  Alpha ", Roots: []string{"/a/../b/"}, Metadata: map[string]string{"c": "d"}})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "Alpha", p.Name)
	require.Equal(t, []string{"/b"}, p.Roots)
	require.Equal(t, int64(0), p.Position)
	require.Nil(t, p.RecencyMs)

	for _, tc := range []struct {
		o   CreateOptions
		msg string
	}{
		{CreateOptions{Key: "x", Name: "  "}, "project name must not be empty"},
		{CreateOptions{Key: "", Name: "n"}, "idempotencyKey must not be empty"},
		{CreateOptions{Key: "x", Name: "n", Roots: []string{"/a", "/a/"}}, "duplicate project root: /a"},
		{CreateOptions{Key: "x", Name: "n", Roots: []string{"rel"}}, "project root must be an absolute path: rel"},
		{CreateOptions{Key: "x", Name: "n", Threads: []string{"t", "t"}, ThreadExists: exists}, "duplicate thread id: t"},
		{CreateOptions{Key: "x", Name: "n", Threads: []string{"t"}, ThreadExists: func(string) bool { return false }}, "thread not found: t"},
	} {
		_, _, _, err := f.s.Create(ctx, tc.o)
		require.ErrorIs(t, err, ErrInvalid)
		require.EqualError(t, err, tc.msg)
	}
	list, _, err := f.s.List(ctx, ListQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 1, "a refused create (import) leaves nothing behind")

	open(t, f.path, f)
	again, created, _, err := f.s.Create(ctx, CreateOptions{Key: "k", Name: "Other"})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, p, again)

	_, err = f.s.Delete(ctx, p.ID)
	require.NoError(t, err)
	_, _, _, err = f.s.Create(ctx, CreateOptions{Key: "k", Name: "Other"})
	require.EqualError(t, err, "idempotency key refers to deleted project: k")
	_, err = f.s.Delete(ctx, p.ID)
	require.ErrorIs(t, err, ErrNotFound)
	require.EqualError(t, err, "project not found: "+p.ID)
}

func TestUpdateOnlyMovesUpdatedAtOnChange(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := f.create(t, "k", "A")
	same, changed, err := f.s.Update(ctx, p.ID, UpdateOptions{})
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, p.UpdatedMs, same.UpdatedMs)
	name := "A"
	_, changed, err = f.s.Update(ctx, p.ID, UpdateOptions{Name: &name})
	require.NoError(t, err)
	require.False(t, changed)

	roots := []string{"/r"}
	up, changed, err := f.s.Update(ctx, p.ID, UpdateOptions{Roots: &roots, Metadata: map[string]string{"k": "v"}})
	require.NoError(t, err)
	require.True(t, changed)
	require.Greater(t, up.UpdatedMs, p.UpdatedMs)
	require.Equal(t, []string{"/r"}, up.Roots)
	up, changed, err = f.s.Update(ctx, p.ID, UpdateOptions{Metadata: map[string]string{}})
	require.NoError(t, err)
	require.True(t, changed, "an empty metadata map replaces it")
	require.Empty(t, up.Metadata)

	empty := " "
	_, _, err = f.s.Update(ctx, p.ID, UpdateOptions{Name: &empty})
	require.EqualError(t, err, "project name must not be empty")
	_, _, err = f.s.Update(ctx, "nope", UpdateOptions{})
	require.EqualError(t, err, "project not found: nope")
	got, err := f.s.Get(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, up, got)
}

func TestMoveRenumbersAndDetectsNoOps(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, b, c := f.create(t, "a", "A"), f.create(t, "b", "B"), f.create(t, "c", "C")
	order := func() []string {
		l, _, err := f.s.List(ctx, ListQuery{Limit: 10})
		require.NoError(t, err)
		for i, p := range l {
			require.Equal(t, int64(i), p.Position)
		}
		return ids(l)
	}
	changed, err := f.s.Move(ctx, a.ID, b.ID)
	require.NoError(t, err)
	require.False(t, changed, "already there")
	changed, err = f.s.Move(ctx, a.ID, "")
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, []string{b.ID, c.ID, a.ID}, order())
	changed, err = f.s.Move(ctx, a.ID, b.ID)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, []string{a.ID, b.ID, c.ID}, order())
	moved, err := f.s.Get(ctx, a.ID)
	require.NoError(t, err)
	require.Greater(t, moved.UpdatedMs, a.UpdatedMs)

	_, err = f.s.Move(ctx, a.ID, a.ID)
	require.EqualError(t, err, "project "+a.ID+" cannot be moved before itself")
	_, err = f.s.Move(ctx, a.ID, "nope")
	require.EqualError(t, err, "before project not found: nope")
	_, err = f.s.Move(ctx, "nope", "")
	require.EqualError(t, err, "project not found: nope")

	_, err = f.s.Delete(ctx, b.ID)
	require.NoError(t, err)
	d := f.create(t, "d", "D")
	require.Equal(t, int64(3), d.Position, "a new project goes after the highest position")
}

func TestMembershipRecencyAndRecencySort(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, b, c := f.create(t, "a", "A"), f.create(t, "b", "B"), f.create(t, "c", "C")
	changed, err := f.s.Assign(ctx, "t1", a.ID)
	require.NoError(t, err)
	require.True(t, changed)
	changed, err = f.s.Assign(ctx, "t1", a.ID)
	require.NoError(t, err)
	require.False(t, changed)
	_, err = f.s.Assign(ctx, "t2", "nope")
	require.EqualError(t, err, "project not found: nope")
	require.NoError(t, ignore(f.s.Assign(ctx, "t2", c.ID)))
	require.NoError(t, ignore(f.s.Assign(ctx, "t3", c.ID)))
	f.recency["t1"], f.recency["t2"], f.recency["t3"] = 5000, 7000, 9000

	got, err := f.s.Get(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, int64(9000), *got.RecencyMs, "the newest member counts")

	l, next, err := f.s.List(ctx, ListQuery{SortKey: SortRecency, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, next)
	require.Equal(t, []string{c.ID, a.ID, b.ID}, ids(l))
	asc := false
	l, _, err = f.s.List(ctx, ListQuery{SortKey: SortRecency, Desc: &asc, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{a.ID, c.ID, b.ID}, ids(l), "empty projects stay last ascending too")

	// Paging by recency follows the same order, across the null boundary.
	var paged []string
	cursor := ""
	for {
		l, next, err := f.s.List(ctx, ListQuery{SortKey: SortRecency, Limit: 1, Cursor: cursor})
		require.NoError(t, err)
		paged = append(paged, ids(l)...)
		require.Less(t, len(paged), 10)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, []string{c.ID, a.ID, b.ID}, paged)
	require.Equal(t, "v1|recencyAt|desc|null|"+b.ID, cursorOf(&l[2], SortRecency, true))

	proj, err := f.s.ProjectOf(ctx, "t2")
	require.NoError(t, err)
	require.Equal(t, c.ID, proj)
	m, err := f.s.Members(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"t2", "t3"}, m)
	all, err := f.s.Members(ctx, "")
	require.NoError(t, err)
	require.Equal(t, []string{"t1", "t2", "t3"}, all)

	require.NoError(t, f.s.ForgetThread(ctx, "t3"))
	members, err := f.s.Delete(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"t2"}, members)
	proj, err = f.s.ProjectOf(ctx, "t2")
	require.NoError(t, err)
	require.Empty(t, proj)
	changed, err = f.s.Assign(ctx, "t1", "")
	require.NoError(t, err)
	require.True(t, changed)
}

func TestImportMovesThreads(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.create(t, "a", "A")
	require.NoError(t, ignore(f.s.Assign(ctx, "t1", a.ID)))
	f.recency["t1"] = 4000
	p, created, moved, err := f.s.Create(ctx, CreateOptions{Key: "i", Name: "I", Threads: []string{"t1", "t2"}, ThreadExists: exists})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, []string{"t1", "t2"}, moved)
	require.Equal(t, int64(4000), *p.RecencyMs)
	m, err := f.s.Members(ctx, a.ID)
	require.NoError(t, err)
	require.Empty(t, m)
}

func TestListPagingAndCursorErrors(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var want []string
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		want = append(want, f.create(t, k, k).ID)
	}
	var got []string
	cursor := ""
	for {
		l, next, err := f.s.List(ctx, ListQuery{Limit: 2, Cursor: cursor})
		require.NoError(t, err)
		got = append(got, ids(l)...)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, want, got)
	desc := true
	l, next, err := f.s.List(ctx, ListQuery{SortKey: SortPosition, Desc: &desc, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{want[4], want[3]}, ids(l))
	require.Equal(t, "3|"+want[3], next)
	l, _, err = f.s.List(ctx, ListQuery{SortKey: SortPosition, Desc: &desc, Limit: 2, Cursor: next})
	require.NoError(t, err)
	require.Equal(t, []string{want[2], want[1]}, ids(l))
	l, _, err = f.s.List(ctx, ListQuery{Limit: 0})
	require.NoError(t, err)
	require.Len(t, l, 1, "a zero limit still returns one project")

	_, _, err = f.s.List(ctx, ListQuery{Desc: &desc})
	require.EqualError(t, err, "sortDirection requires sortKey")
	for _, c := range []string{"garbage", "x|id", "1|", "v1|recencyAt|desc|null|x"} {
		_, _, err = f.s.List(ctx, ListQuery{Cursor: c, Limit: 2})
		require.EqualError(t, err, badCursor, c)
	}
	_, _, err = f.s.List(ctx, ListQuery{SortKey: SortRecency, Cursor: "v1|recencyAt|asc|null|x", Limit: 2})
	require.EqualError(t, err, badCursor, "a cursor of the other direction")
}

func ignore[T any](_ T, err error) error { return err }
