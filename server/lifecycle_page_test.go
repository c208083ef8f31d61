package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHistoryPage(t *testing.T) {
	at := func(pos int, include bool) *historyAnchor { return &historyAnchor{pos: pos, include: include} }
	tests := []struct {
		name       string
		n, limit   int
		anchor     *historyAnchor
		asc        bool
		idx        []int
		next, back *historyAnchor
	}{
		{"empty", 0, 5, nil, false, nil, nil, nil},
		{"desc first page", 5, 2, nil, false, []int{4, 3}, at(3, false), at(4, true)},
		{"desc next page", 5, 2, at(3, false), false, []int{2, 1}, at(1, false), at(2, true)},
		{"desc last page", 5, 2, at(1, false), false, []int{0}, nil, at(0, true)},
		{"desc inclusive anchor", 5, 2, at(3, true), false, []int{3, 2}, at(2, false), at(3, true)},
		{"asc first page", 5, 2, nil, true, []int{0, 1}, at(1, false), at(0, true)},
		{"asc exact end", 4, 2, at(1, false), true, []int{2, 3}, nil, at(2, true)},
		{"asc inclusive anchor", 5, 10, at(3, true), true, []int{3, 4}, nil, at(3, true)},
		{"anchor past the end desc", 3, 10, at(9, false), false, []int{2, 1, 0}, nil, at(2, true)},
		{"anchor past the end asc", 3, 10, at(9, false), true, nil, nil, nil},
		{"default limit", 30, 0, nil, true, func() []int {
			var out []int
			for i := 0; i < 25; i++ {
				out = append(out, i)
			}
			return out
		}(), at(24, false), at(0, true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx, next, back := historyPage(tc.n, tc.limit, tc.anchor, tc.asc)
			require.Equal(t, tc.idx, idx)
			require.Equal(t, tc.next, next)
			require.Equal(t, tc.back, back)
		})
	}
}

func TestParseHistoryCursor(t *testing.T) {
	const tid = "01b00000-0000-7000-8000-000000000001"
	good := historyCursor(tid, scopeTurns, 4, true)
	a, err := parseHistoryCursor(good, tid, scopeTurns)
	require.NoError(t, err)
	require.Equal(t, historyAnchor{pos: 4, include: true}, a)
	for _, bad := range []string{
		"", "garbage", "7", `{}`,
		historyCursor(tid, scopeItems, 4, true),
		historyCursor("01b00000-0000-7000-8000-000000000002", scopeTurns, 4, true),
		`{"requestedThreadId":"` + tid + `","rolloutOrdinal":-1,"includeAnchor":false,"scope":{"kind":"turns"}}`,
		`{"requestedThreadId":"` + tid + `","includeAnchor":false,"scope":{"kind":"turns"}}`,
	} {
		_, err := parseHistoryCursor(bad, tid, scopeTurns)
		require.Error(t, err, bad)
	}
}
