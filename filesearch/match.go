package filesearch

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Scoring constants of the fuzzy matcher. They reproduce the ranking of the reference's matcher (an
// fzf-style optimal alignment): a match earns scoreMatch per character plus position bonuses, gaps
// cost gapStart then gapExtension per character.
const (
	scoreMatch          = 16
	gapStart            = 3
	gapExtension        = 1
	bonusBoundary       = scoreMatch / 2
	bonusNonWord        = bonusBoundary
	bonusCamel123       = bonusBoundary - gapStart
	bonusConsecutive    = gapStart + gapExtension
	firstCharMultiplier = 2
	// Path mode: '/' is the only delimiter; the start of the string counts as just after one.
	bonusBoundaryWhite     = bonusBoundary
	bonusBoundaryDelimiter = bonusBoundary + 1
)

type charClass uint8

// Ordered: every class after delimiter is a word character.
const (
	classWhite charClass = iota
	classNonWord
	classDelimiter
	classLower
	classUpper
	classLetter
	classNumber
)

const initialClass = classDelimiter

func classOf(r rune) charClass {
	switch {
	case r >= 'a' && r <= 'z':
		return classLower
	case r >= 'A' && r <= 'Z':
		return classUpper
	case r >= '0' && r <= '9':
		return classNumber
	case r == ' ' || r == '\t' || r == '\n' || r == '\f' || r == '\r':
		return classWhite
	case r == '/':
		return classDelimiter
	case r < utf8.RuneSelf:
		return classNonWord
	case unicode.IsLower(r):
		return classLower
	case unicode.IsUpper(r):
		return classUpper
	case unicode.IsNumber(r):
		return classNumber
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsSpace(r):
		return classWhite
	}
	return classNonWord
}

func bonusFor(prev, cur charClass) int {
	if cur > classDelimiter {
		switch prev {
		case classWhite:
			return bonusBoundaryWhite
		case classDelimiter:
			return bonusBoundaryDelimiter
		case classNonWord:
			return bonusBoundary
		}
	}
	switch {
	case prev == classLower && cur == classUpper, prev != classNumber && cur == classNumber:
		return bonusCamel123
	case cur == classWhite:
		return bonusBoundaryWhite
	case cur == classNonWord:
		return bonusNonWord
	}
	return 0
}

// lower lower-cases r.
func lower(r rune) rune {
	if r < utf8.RuneSelf {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	return unicode.ToLower(r)
}

// fold lower-cases r and strips Latin diacritics so "É" matches "e".
func fold(r rune) rune {
	if r < utf8.RuneSelf {
		return lower(r)
	}
	if r <= 0x24F { // Latin-1 and Latin Extended: base letter of the decomposition
		var buf [utf8.UTFMax]byte
		n := utf8.EncodeRune(buf[:], r)
		d := norm.NFD.Bytes(buf[:n])
		if b, _ := utf8.DecodeRune(d); b != utf8.RuneError {
			r = b
		}
	}
	return unicode.ToLower(r)
}

// text is a haystack prepared for matching: folded runes and their classes.
type text struct {
	runes   []rune // folded
	classes []charClass
	lowered []rune // lower-cased only (diacritics kept); filled for non-ASCII text
	ascii   bool
	view    *text // scratch for literal()
}

func prepare(s string, t *text) {
	t.runes = t.runes[:0]
	t.classes = t.classes[:0]
	t.lowered = t.lowered[:0]
	t.ascii = true
	for _, r := range s {
		t.classes = append(t.classes, classOf(r))
		t.runes = append(t.runes, fold(r))
		if r >= utf8.RuneSelf {
			t.ascii = false
		}
	}
	if !t.ascii {
		for _, r := range s {
			t.lowered = append(t.lowered, lower(r))
		}
	}
}

// literal returns the text without diacritic folding (for needles that carry diacritics themselves).
func (t *text) literal() *text {
	if t.ascii {
		return t
	}
	if t.view == nil {
		t.view = &text{}
	}
	t.view.runes, t.view.classes, t.view.ascii = t.lowered, t.classes, false
	return t.view
}

// bonusAt is the position bonus of haystack index i.
func (t *text) bonusAt(i int) int {
	prev := initialClass
	if i > 0 {
		prev = t.classes[i-1]
	}
	return bonusFor(prev, t.classes[i])
}

// calculateScore scores the alignment found by a left-to-right scan from start whose last matched char
// is before end, appending matched positions to idx.
func calculateScore(t *text, needle []rune, start, end int, idx []uint32) (int, []uint32) {
	ni := 0
	inGap := false
	consecutive := 1
	idx = append(idx, uint32(start))
	firstBonus := t.bonusAt(start)
	score := scoreMatch + firstBonus*firstCharMultiplier
	if len(needle) > 1 {
		ni = 1
	}
	for i := start + 1; i < end; i++ {
		if t.runes[i] == needle[ni] {
			idx = append(idx, uint32(i))
			b := t.bonusAt(i)
			if consecutive != 0 {
				if b >= bonusBoundary && b > firstBonus {
					firstBonus = b
				}
				b = max(b, firstBonus, bonusConsecutive)
			} else {
				firstBonus = b
			}
			score += scoreMatch + b
			inGap = false
			consecutive++
			if ni+1 < len(needle) {
				ni++
			}
		} else {
			if inGap {
				score -= gapExtension
			} else {
				score -= gapStart
			}
			score = max(score, 0)
			inGap = true
			consecutive = 0
		}
	}
	return score, idx
}

// fuzzy finds the best-scoring fuzzy alignment of needle in t.
func (m *matcher) fuzzy(t *text, needle []rune, idx []uint32) (int, []uint32, bool) {
	n, h := len(needle), len(t.runes)
	if n == 0 || n > h {
		return 0, idx, false
	}
	if n == h {
		return exactAt(t, needle, 0, idx)
	}
	if n == 1 {
		return substring1(t, needle[0], idx)
	}
	// prefilter: first occurrence of needle[0], greedy forward match, last occurrence of the last char
	start := -1
	for i := 0; i <= h-n; i++ {
		if t.runes[i] == needle[0] {
			start = i
			break
		}
	}
	if start < 0 {
		return 0, idx, false
	}
	greedyEnd := start + 1
	for _, c := range needle[1:] {
		found := false
		for ; greedyEnd < h; greedyEnd++ {
			if t.runes[greedyEnd] == c {
				found = true
				greedyEnd++
				break
			}
		}
		if !found {
			return 0, idx, false
		}
	}
	end := greedyEnd
	last := needle[n-1]
	for i := h - 1; i >= greedyEnd; i-- {
		if t.runes[i] == last {
			end = i + 1
			break
		}
	}
	if n == end-start {
		s, idx := calculateScore(t, needle, start, greedyEnd, idx)
		return s, idx, true
	}
	return m.optimal(t, needle, start, end, idx)
}

// cell is one entry of the alignment matrix: the best score with needle[k] matched at a position.
type cell struct {
	score       int
	consecutive int  // bonus carried by the consecutive chunk ending here
	matched     bool // the previous needle char sits right before this one
	valid       bool
}

// matcher holds reusable scratch space for the optimal alignment.
type matcher struct {
	rowOff []int
	bonus  []int
	m      [][]cell // m[k][j-start]
	pm     [][]bool // pm[k][j-start]: the gap state at j came from a match at j-1
	tmp    text
}

func (m *matcher) optimal(t *text, needle []rune, start, end int, idx []uint32) (int, []uint32, bool) {
	n, w := len(needle), end-start
	hay := t.runes[start:end]
	m.bonus = m.bonus[:0]
	for i := start; i < end; i++ {
		m.bonus = append(m.bonus, t.bonusAt(i))
	}
	// rowOff[k]: first (greedy) position where needle[k] can sit.
	m.rowOff = append(m.rowOff[:0], make([]int, n)...)
	k := 0
	for i := 0; i < w && k < n; i++ {
		if hay[i] == needle[k] {
			m.rowOff[k] = i
			k++
		}
	}
	if k < n {
		return 0, idx, false
	}
	for len(m.m) < n {
		m.m = append(m.m, nil)
		m.pm = append(m.pm, nil)
	}
	for k := range n {
		if cap(m.m[k]) < w {
			m.m[k] = make([]cell, w)
			m.pm[k] = make([]bool, w)
		}
		m.m[k] = m.m[k][:w]
		m.pm[k] = m.pm[k][:w]
		clear(m.m[k])
		clear(m.pm[k])
	}
	// first row
	for j := 0; j <= w-n; j++ {
		if hay[j] == needle[0] {
			m.m[0][j] = cell{score: m.bonus[j]*firstCharMultiplier + scoreMatch, consecutive: m.bonus[j], valid: true}
		}
	}
	for k := 0; k < n-1; k++ {
		lastCol := w - n + k // last position needle[k] can take
		prevP, prevM := 0, 0
		for j := m.rowOff[k]; j <= lastCol; j++ {
			// gap state at j: needle[k] before j, j unmatched
			p, pFromM := max(prevP-gapExtension, 0), false
			if fromM := max(prevM-gapStart, 0); fromM > p {
				p, pFromM = fromM, true
			}
			m.pm[k][j] = pFromM
			cur := m.m[k][j]
			if j+1 >= m.rowOff[k+1] && j+1 < w && hay[j+1] == needle[k+1] {
				m.m[k+1][j+1] = nextCell(p, m.bonus[j+1], cur)
			}
			prevP, prevM = p, cur.score
		}
	}
	// best end: the last maximum wins, as in the reference
	best, bestJ := -1, -1
	for j := m.rowOff[n-1]; j < w; j++ {
		c := m.m[n-1][j]
		if c.valid && c.score >= best {
			best, bestJ = c.score, j
		}
	}
	if bestJ < 0 {
		return 0, idx, false
	}
	base := len(idx)
	idx = append(idx, make([]uint32, n)...)
	out := idx[base:]
	out[n-1] = uint32(start + bestJ)
	matched := m.m[n-1][bestJ].matched
	k, j := n-2, bestJ-1
	for k >= 0 && j >= 0 {
		if matched {
			out[k] = uint32(start + j)
			next := m.m[k][j].matched
			k--
			j--
			matched = next
			continue
		}
		matched = m.pm[k][j]
		j--
	}
	return best, idx, true
}

func nextCell(p, bonus int, prev cell) cell {
	if !prev.valid {
		return cell{score: p + bonus + scoreMatch, consecutive: bonus, valid: true}
	}
	cb := max(prev.consecutive, bonusConsecutive)
	if bonus >= bonusBoundary && bonus > cb {
		cb = bonus
	}
	viaMatch := prev.score + max(cb, bonus)
	viaSkip := p + bonus
	if viaMatch > viaSkip {
		return cell{score: viaMatch + scoreMatch, consecutive: cb, matched: true, valid: true}
	}
	return cell{score: viaSkip + scoreMatch, consecutive: bonus, valid: true}
}

// substring1 scores a one-character needle at its best position (first position with the best bonus).
func substring1(t *text, c rune, idx []uint32) (int, []uint32, bool) {
	best, pos := 0, -1
	for i, r := range t.runes {
		if r != c {
			continue
		}
		b := t.bonusAt(i)
		if s := b*firstCharMultiplier + scoreMatch; s > best {
			best, pos = s, i
			if b >= bonusBoundaryWhite {
				break
			}
		}
	}
	if pos < 0 {
		return 0, idx, false
	}
	return best, append(idx, uint32(pos)), true
}

// substring finds the best-scoring contiguous occurrence of needle.
func substring(t *text, needle []rune, idx []uint32) (int, []uint32, bool) {
	n, h := len(needle), len(t.runes)
	if n == 0 || n > h {
		return 0, idx, false
	}
	if n == 1 {
		return substring1(t, needle[0], idx)
	}
	best, pos := 0, -1
	for i := 0; i+n <= h; i++ {
		if !runesEqual(t.runes[i:i+n], needle) {
			continue
		}
		b := t.bonusAt(i)
		if s := b*firstCharMultiplier + scoreMatch; s > best {
			best, pos = s, i
			if b >= bonusBoundaryWhite {
				break
			}
		}
	}
	if pos < 0 {
		return 0, idx, false
	}
	s, idx := calculateScore(t, needle, pos, pos+n, idx)
	return s, idx, true
}

// exactAt matches needle exactly at t[start:start+len(needle)].
func exactAt(t *text, needle []rune, start int, idx []uint32) (int, []uint32, bool) {
	if start < 0 || start+len(needle) > len(t.runes) || !runesEqual(t.runes[start:start+len(needle)], needle) {
		return 0, idx, false
	}
	s, idx := calculateScore(t, needle, start, start+len(needle), idx)
	return s, idx, true
}

func runesEqual(a, b []rune) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func isWhite(r rune) bool { return classOf(r) == classWhite }

type atomKind uint8

const (
	atomFuzzy atomKind = iota
	atomSubstring
	atomPrefix
	atomPostfix
	atomExact
)

// atom is one whitespace-separated term of a query.
type atom struct {
	kind    atomKind
	negate  bool
	needle  []rune
	literal bool // the needle has diacritics: match them exactly instead of folding the haystack
}

// Pattern is a parsed query: whitespace-separated atoms, each fuzzy unless marked `'x` (substring),
// `^x` (prefix), `x$` (suffix), `^x$` (exact) or `!x` (must not occur), all case-insensitive.
type Pattern struct {
	atoms      []atom
	raw        []rune // the whole query as one fuzzy needle (for the file-name ranking)
	rawLiteral bool
	lower      string
}

// ParsePattern parses a query.
func ParsePattern(q string) Pattern {
	p := Pattern{lower: strings.ToLower(q)}
	p.raw, p.rawLiteral = needleOf(q)
	for _, word := range splitAtoms(q) {
		a := parseAtom(word)
		if len(a.needle) > 0 {
			p.atoms = append(p.atoms, a)
		}
	}
	return p
}

// Empty reports whether the pattern has no terms.
func (p *Pattern) Empty() bool { return len(p.atoms) == 0 }

// splitAtoms splits on unescaped whitespace; `\ ` stands for a literal space.
func splitAtoms(q string) []string {
	var out []string
	var cur strings.Builder
	esc := false
	for _, r := range q {
		switch {
		case esc:
			if !isWhite(r) {
				cur.WriteByte('\\')
			}
			cur.WriteRune(r)
			esc = false
		case r == '\\':
			esc = true
		case isWhite(r):
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if esc {
		cur.WriteByte('\\')
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func parseAtom(s string) atom {
	a := atom{}
	if strings.HasPrefix(s, "!") {
		a.negate = true
		s = s[1:]
	}
	switch {
	case strings.HasPrefix(s, "^"):
		a.kind, s = atomPrefix, s[1:]
	case strings.HasPrefix(s, "'"):
		a.kind, s = atomSubstring, s[1:]
	case strings.HasPrefix(s, `\^`), strings.HasPrefix(s, `\'`):
		s = s[1:]
	}
	appendDollar := false
	switch {
	case strings.HasSuffix(s, `\$`):
		appendDollar, s = true, s[:len(s)-2]
	case strings.HasSuffix(s, "$"):
		if a.kind == atomFuzzy {
			a.kind = atomPostfix
		} else {
			a.kind = atomExact
		}
		s = s[:len(s)-1]
	}
	if a.negate && a.kind == atomFuzzy {
		a.kind = atomSubstring
	}
	if appendDollar {
		s += "$"
	}
	a.needle, a.literal = needleOf(s)
	return a
}

// needleOf folds a needle; when folding would change any of its characters (it has diacritics) the
// needle is kept as written, lower-cased, and matched against an unfolded haystack.
func needleOf(s string) ([]rune, bool) {
	var folded, lowered []rune
	literal := false
	for _, r := range s {
		f, l := fold(r), lower(r)
		folded, lowered = append(folded, f), append(lowered, l)
		if f != l {
			literal = true
		}
	}
	if literal {
		return lowered, true
	}
	return folded, false
}

// match scores one atom against t.
func (m *matcher) matchAtom(a *atom, t *text, idx []uint32) (int, []uint32, bool) {
	if a.literal {
		t = t.literal()
	}
	switch a.kind {
	case atomSubstring:
		return substring(t, a.needle, idx)
	case atomPrefix:
		lead := 0
		for lead < len(t.runes) && isWhite(t.runes[lead]) {
			lead++
		}
		return exactAt(t, a.needle, lead, idx)
	case atomPostfix:
		end := len(t.runes)
		for end > 0 && isWhite(t.runes[end-1]) {
			end--
		}
		return exactAt(t, a.needle, end-len(a.needle), idx)
	case atomExact:
		lead, end := 0, len(t.runes)
		for lead < end && isWhite(t.runes[lead]) {
			lead++
		}
		for end > lead && isWhite(t.runes[end-1]) {
			end--
		}
		if end-lead != len(a.needle) {
			return 0, idx, false
		}
		return exactAt(t, a.needle, lead, idx)
	}
	return m.fuzzy(t, a.needle, idx)
}

// score matches every atom of p against t: the sum of the positive atoms' scores and their matched
// positions, or ok=false when a positive atom is missing or a negated one is present.
func (m *matcher) score(p *Pattern, t *text, idx []uint32) (int, []uint32, bool) {
	total := 0
	for i := range p.atoms {
		a := &p.atoms[i]
		if a.negate {
			if _, _, hit := m.matchAtom(a, t, nil); hit {
				return 0, idx, false
			}
			continue
		}
		s, next, ok := m.matchAtom(a, t, idx)
		if !ok {
			return 0, idx, false
		}
		idx = next
		total += s
	}
	return min(total, 0xFFFF), idx, true
}

// rejects is a cheap byte-level test that path cannot match: some positive term's letters do not occur
// in order. It only decides for ASCII paths and terms (folding can change others).
func (p *Pattern) rejects(path string) bool {
	for i := range p.atoms {
		a := &p.atoms[i]
		if a.negate || a.literal {
			continue
		}
		j := 0
		for k := 0; k < len(path) && j < len(a.needle); k++ {
			c := path[k]
			if c >= utf8.RuneSelf {
				return false
			}
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if rune(c) == a.needle[j] {
				j++
			}
		}
		if j < len(a.needle) {
			for k := 0; k < len(path); k++ {
				if path[k] >= utf8.RuneSelf {
					return false
				}
			}
			return true
		}
	}
	return false
}
