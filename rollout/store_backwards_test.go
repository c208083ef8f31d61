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
	require.Equal(t, "2026-01-02T03:04:09.000Z", p.Backwards)
	require.NotEmpty(t, p.Next)

	tests := []struct {
		name   string
		cursor string
		dir    string
		want   []string
	}{
		{"desc includes the instant", "2026-01-02T03:04:07.000Z", SortDesc, []string{tid(2), tid(1), tid(0)}},
		{"asc includes the instant", "2026-01-02T03:04:07.000Z", SortAsc, []string{tid(2), tid(3), tid(4), tid(5), tid(6)}},
		{"desc with equal timestamps", "2026-01-02T03:04:09.000Z", SortDesc, []string{tid(6), tid(5), tid(4), tid(3), tid(2), tid(1), tid(0)}},
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
