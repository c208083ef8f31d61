package features

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRuntimePrecedence(t *testing.T) {
	var r Runtime
	acc := r.Set(map[string]bool{"memories": true, "remote_control": true, "unified_exec": false, "nope": true})
	require.Equal(t, map[string]bool{"memories": true, "remote_control": true}, acc)
	require.True(t, r.Effective("memories", nil, false), "runtime over default")
	require.False(t, r.Effective("memories", map[string]bool{"memories": false}, false), "config over runtime")
	require.True(t, r.Effective("shell_tool", nil, false), "catalogue default")
	require.True(t, r.Effective("not_in_catalogue", nil, true), "fallback")
}

func TestPage(t *testing.T) {
	xs := []int{1, 2, 3, 4, 5}
	p, next, err := Page(xs, "", 2)
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, p)
	require.Equal(t, "2", next)
	p, next, err = Page(xs, "4", 2)
	require.NoError(t, err)
	require.Equal(t, []int{5}, p)
	require.Empty(t, next)
	_, _, err = Page(xs, "x", 2)
	require.ErrorIs(t, err, ErrInvalidCursor)
	_, _, err = Page(xs, "9", 2)
	require.ErrorIs(t, err, ErrInvalidCursor)
	require.Len(t, Catalogue(), 215)
}

// TestToggleableSorted: Set looks names up by binary search, which needs the list sorted and unique.
func TestToggleableSorted(t *testing.T) {
	names := ToggleableNames()
	require.True(t, slices.IsSorted(names))
	require.Len(t, slices.Compact(slices.Clone(names)), len(names))
	var r Runtime
	for _, n := range names {
		require.Equal(t, map[string]bool{n: true}, r.Set(map[string]bool{n: true, n + "_not": true}))
	}
}
