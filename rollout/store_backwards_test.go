package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestListPageBackwardsCursor(t *testing.T) {
	home := t.TempDir()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// Threads 0..4 one second apart; 5 and 6 share thread 4's instant.
	for i := 0; i < 7; i++ {
		at := base.Add(time.Duration(min(i, 4)) * time.Second)
		makeThread(t, home, tid(i), at, nil, "q")
	}
	s, err := Open(home)
	require.NoError(t, err)

	p, err := s.ListPage(ListQuery{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{tid(6), tid(5)}, ids(p.Threads))
	require.Equal(t, "2026-01-02T03:04:08.999Z", p.Backwards, "the first thread's key, 1 ms towards the ones before it")
	require.Equal(t, "2026-01-02T03:04:09Z|"+tid(5), p.Next, "the last thread's key and id, no fraction when whole")

	tests := []struct {
		name   string
		cursor string
		dir    string
		want   []string
	}{
		// created_at compares the file names' seconds with the instant strictly, as the reference does
		{"desc excludes the instant", "2026-01-02T03:04:07.000Z", SortDesc, []string{tid(1), tid(0)}},
		{"asc excludes the instant", "2026-01-02T03:04:07.000Z", SortAsc, []string{tid(3), tid(4), tid(5), tid(6)}},
		{"desc with equal timestamps", "2026-01-02T03:04:09.000Z", SortDesc, []string{tid(3), tid(2), tid(1), tid(0)}},
		{"desc just after equal timestamps", "2026-01-02T03:04:09.001Z", SortDesc, []string{tid(6), tid(5), tid(4), tid(3), tid(2), tid(1), tid(0)}},
		{"between instants", "2026-01-02T03:04:07.500Z", SortAsc, []string{tid(3), tid(4), tid(5), tid(6)}},
		{"before everything", "2020-01-01T00:00:00Z", SortDesc, []string{}},
		{"after everything", "2030-01-01T00:00:00Z", SortAsc, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s.ListPage(ListQuery{Cursor: tc.cursor, SortDirection: tc.dir, Limit: 10})
			require.NoError(t, err)
			require.Equal(t, tc.want, ids(p.Threads))
			if len(tc.want) == 0 {
				require.Empty(t, p.Backwards)
			}
		})
	}
	// A backwards cursor is valid for either sort key; a garbled one is not.
	_, err = s.ListPage(ListQuery{Cursor: p.Backwards, SortKey: SortUpdatedAt})
	require.NoError(t, err)
	_, err = s.ListPage(ListQuery{Cursor: "2026-13-45T99:00:00Z"})
	require.ErrorIs(t, err, ErrBadCursor)
}

// Cursors take the reference's (codex-cli 0.169.0) forms: nextCursor "<time>|<id>" (RFC 3339, UTC,
// milliseconds unless zero; under created_at the rollout file name's time, in whole seconds), backwardsCursor the first thread's time 1 ms before it (descending) or after it
// (ascending); both are accepted back, as are the base64 cursors of earlier versions. A "<time>|<id>" whose
// id is not a UUID is refused.
func TestListPageCursorForms(t *testing.T) {
	home := t.TempDir()
	base := time.Date(2026, 1, 2, 3, 4, 5, 250e6, time.UTC)
	for i := 0; i < 4; i++ {
		makeThread(t, home, tid(i), base.Add(time.Duration(i)*time.Second), nil, "q")
	}
	s, err := Open(home)
	require.NoError(t, err)
	p, err := s.ListPage(ListQuery{Limit: 2, SortDirection: SortAsc})
	require.NoError(t, err)
	require.Equal(t, []string{tid(0), tid(1)}, ids(p.Threads))
	require.Equal(t, "2026-01-02T03:04:06Z|"+tid(1), p.Next)
	require.Equal(t, "2026-01-02T03:04:05.251Z", p.Backwards)
	p2, err := s.ListPage(ListQuery{Limit: 2, SortDirection: SortAsc, Cursor: p.Next})
	require.NoError(t, err)
	require.Equal(t, []string{tid(2), tid(3)}, ids(p2.Threads))
	require.Empty(t, p2.Next)
	require.Equal(t, "2026-01-02T03:04:07.251Z", p2.Backwards)
	back, err := s.ListPage(ListQuery{Limit: 10, SortDirection: SortDesc, Cursor: p2.Backwards})
	require.NoError(t, err)
	require.Equal(t, []string{tid(2), tid(1), tid(0)}, ids(back.Threads), "the reverse page starts with the first thread")

	old := encodeCursor(cursor{Key: SortCreatedAt, T: base.Add(time.Second).UnixMilli(), ID: tid(1)})
	p3, err := s.ListPage(ListQuery{Limit: 2, SortDirection: SortAsc, Cursor: old})
	require.NoError(t, err)
	require.Equal(t, []string{tid(2), tid(3)}, ids(p3.Threads))
	for _, bad := range []string{"2026-01-02T03:04:06.250Z|x", "x|" + tid(1), "|", "garbage"} {
		_, err = s.ListPage(ListQuery{Cursor: bad})
		require.ErrorIs(t, err, ErrBadCursor, bad)
	}
}
