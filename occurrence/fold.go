package occurrence

//go:generate go run gen_fold.go

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// folding is one entry of foldTable: a character and its Unicode full case folding.
type folding struct {
	r rune
	s string
}

// foldRune returns the full case folding of r (ß and ẞ give "ss"), and false when r folds to itself.
func foldRune(r rune) (string, bool) {
	i := sort.Search(len(foldTable), func(i int) bool { return foldTable[i].r >= r })
	if i < len(foldTable) && foldTable[i].r == r {
		return foldTable[i].s, true
	}
	return "", false
}

// foldString returns s with every character replaced by its full case folding; bytes that are not UTF-8
// are kept as they are.
func foldString(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is in b, or nothing changed yet when b is empty
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		f, ok := foldRune(r)
		if r == utf8.RuneError && n == 1 {
			ok = false
		}
		if ok {
			if b.Len() == 0 {
				b.Grow(len(s) + 8)
			}
			b.WriteString(s[done:i])
			b.WriteString(f)
			done = i + n
		}
		i += n
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}
