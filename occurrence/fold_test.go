package occurrence

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/cases"
)

// The generated table is x/text's full case folding: every character, and strings mixing characters that
// fold, characters that do not and bytes that are not UTF-8.
func TestFoldMatchesXText(t *testing.T) {
	fold := cases.Fold()
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(r)
		if want := fold.String(s); foldString(s) != want {
			require.Equal(t, want, foldString(s), "%U", r)
		}
	}
	pieces := []string{"a", "A", "ß", "ẞ", "İ", "ﬃ", "Σ", "ς", "\xff", "\xe2\x82", "K", "Ꭰ", "ꭰ", "日本", " ", "ǅ"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		var s string
		for range rng.IntN(8) {
			s += pieces[rng.IntN(len(pieces))]
		}
		require.Equal(t, fold.String(s), foldString(s), "%q", s)
	}
}
