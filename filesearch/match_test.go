package filesearch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The expected scores and positions below were observed from the reference on the same paths.
func TestRankMatchesReference(t *testing.T) {
	cases := []struct {
		path, query string
		dir         bool
		score       uint32
		idx         []uint32
	}{
		{"src/app/main.go", "main", false, 65645, []uint32{8, 9, 10, 11}},
		{"src/app/domain.go", "main", false, 65612, []uint32{10, 11, 12, 13}},
		{"src/app/main.go", "mn", false, 65582, []uint32{8, 11}},
		{".git/hooks/fsmonitor-watchman.sample", "mn", false, 65565, []uint32{26, 28}},
		{"src/app/main.go", "app", false, 84, []uint32{4, 5, 6}},
		{".git/hooks/applypatch-msg.sample", "app", false, 65620, []uint32{11, 12, 13}},
		{"e/main", "main", false, 196717, []uint32{2, 3, 4, 5}},
		{"f/MAIN", "main", false, 196717, []uint32{2, 3, 4, 5}},
		{"a/mainstuff", "main", true, 109, []uint32{2, 3, 4, 5}},
		{"b/xmain", "main", true, 76, []uint32{3, 4, 5, 6}},
		{"ab/xab", "ab", false, 65572, []uint32{4, 5}},
		{"e/MAIN.txt", "e/m", false, 84, []uint32{0, 1, 2}},
		{"e/main", "e/main", false, 159, []uint32{0, 1, 2, 3, 4, 5}},
		{"e/app", "^e", false, 34, []uint32{0}},
		{"e/main", "main !txt", false, 109, []uint32{2, 3, 4, 5}},
		{"e/MAIN.txt", "ma in", false, 95, []uint32{2, 3, 4, 5}},
		{"b/xmain", "ma in", true, 72, []uint32{3, 4, 5, 6}},
		{"core/naïve", "naive", false, 196742, []uint32{5, 6, 7, 8, 9}},
		{"v2/main2/é", "e", false, 196642, []uint32{9}},
		{"é/applya_b.rs", "épy_s", false, 90, []uint32{0, 3, 6, 8, 12}},
	}
	for _, tc := range cases {
		t.Run(tc.path+"|"+tc.query, func(t *testing.T) {
			p := ParsePattern(tc.query)
			s := newScorer(&p)
			score, idx, ok := s.rank(Entry{Path: tc.path, IsDir: tc.dir})
			require.True(t, ok)
			require.Equal(t, tc.score, score)
			require.Equal(t, tc.idx, normalizeIndices(idx))
		})
	}
}

func TestRankRejects(t *testing.T) {
	for _, tc := range []struct{ path, query string }{
		{"e/MAIN.txt", "main !txt"}, // negated term present
		{"e/main", "'ain$"},         // exact "ain" only
		{"src/main.go", "xyz"},
		{"main", "mainx"},
		{"pyDir/indexpya_b.json", "épy_s"}, // a needle with diacritics does not fold the haystack
		{"abc", "^bc"},
		{"abc", "ab$"},
	} {
		p := ParsePattern(tc.query)
		_, _, ok := newScorer(&p).rank(Entry{Path: tc.path})
		require.False(t, ok, "%q should not match %q", tc.query, tc.path)
	}
}

func TestRankOrderAndLimit(t *testing.T) {
	entries := []Entry{
		{Path: "b/main.go"}, {Path: "a/main.go"}, {Path: "main", IsDir: true}, {Path: "x/main", IsDir: true},
		{Path: "docs/domain.md"}, {Path: "m/a/i/n"},
	}
	ms := Rank(entries, "main", 4)
	var got []string
	for _, m := range ms {
		got = append(got, m.Path)
	}
	// exact directory name (only the shallowest gets the tier), then file-name matches by path
	require.Equal(t, []string{"main", "a/main.go", "b/main.go", "docs/domain.md"}, got)
	require.Empty(t, Rank(entries, "", 10))
	require.Empty(t, Rank(entries, "   ", 10))
}

func TestParsePatternAtoms(t *testing.T) {
	p := ParsePattern(`^src foo$ 'bar !baz ^exact$ a\ b \^lit`)
	kinds := []atomKind{}
	for _, a := range p.atoms {
		kinds = append(kinds, a.kind)
	}
	require.Equal(t, []atomKind{atomPrefix, atomPostfix, atomSubstring, atomSubstring, atomExact, atomFuzzy, atomFuzzy}, kinds)
	require.True(t, p.atoms[3].negate)
	require.Equal(t, []rune("a b"), p.atoms[5].needle)
	require.Equal(t, []rune("^lit"), p.atoms[6].needle)
}
