// Package filesearch finds files and directories under search roots by fuzzy query: an ignore-aware
// parallel walk, an fzf-style optimal matcher scoring each relative path with the matched character
// positions, and a ranking that puts file-name matches first, as the @-file picker of an IDE expects.
package filesearch

import (
	"context"
	"path"
	"sort"
	"strings"
	"sync"
)

// DefaultLimit is how many matches a search returns.
const DefaultLimit = 50

// Match is one ranked result.
type Match struct {
	Root     int // index into the search roots
	Path     string
	FileName string
	IsDir    bool
	Score    uint32
	Indices  []uint32 // rune positions in Path, ascending

	caseExact bool
}

// Ranking tiers added above the 16-bit match score.
const (
	tierFileName  = 1 << 16 // a file whose name alone matches the query: scored on the name
	tierExactName = 2 << 16 // the entry's name is the query
)

// scorer ranks entries against one pattern; not safe for concurrent use.
type scorer struct {
	p        *Pattern
	exactDir bool // the last ranked entry is a directory named exactly as the query
	m        matcher
	t        text
	base     text
	idx      []uint32
}

func newScorer(p *Pattern) *scorer { return &scorer{p: p} }

// rank scores one entry, or reports false when the pattern does not match it.
func (s *scorer) rank(e Entry) (uint32, []uint32, bool) {
	s.exactDir = false
	if s.p.rejects(e.Path) {
		return 0, nil, false
	}
	prepare(e.Path, &s.t)
	sc, idx, ok := s.m.score(s.p, &s.t, s.idx[:0])
	if !ok {
		return 0, nil, false
	}
	tier := uint32(0)
	name := path.Base(e.Path)
	prepare(name, &s.base)
	bt := &s.base
	if s.p.rawLiteral {
		bt = bt.literal()
	}
	if !e.IsDir {
		if nsc, nidx, ok := s.m.fuzzy(bt, s.p.raw, nil); ok {
			off := uint32(len(s.t.runes) - len(s.base.runes))
			sc, idx = nsc, idx[:0]
			for _, i := range nidx {
				idx = append(idx, i+off)
			}
			tier += tierFileName
		}
	}
	if runesEqual(bt.runes, s.p.raw) {
		if e.IsDir {
			s.exactDir = true // decided across the whole walk: see exactDirs
		} else {
			tier += tierExactName
		}
	}
	s.idx = idx
	return tier | uint32(sc), idx, true
}

// topK keeps the best limit matches by (score desc, path asc).
type topK struct {
	limit int
	items []Match
	total int
	// exact is the one directory named exactly as the query that gets the exact-name tier: the
	// reference ranks a single such directory up; we pick the shallowest, then the first by path.
	exact *Match
}

func (k *topK) offerExactDir(e Entry, score uint32, idx []uint32, query string) {
	m := Match{Root: e.Root, Path: e.Path, FileName: path.Base(e.Path), IsDir: true, Score: score | tierExactName,
		Indices: normalizeIndices(idx)}
	m.caseExact = m.FileName == query
	if k.exact == nil || shallower(&m, k.exact) {
		k.exact = &m
	}
}

// shallower orders exact-name directory candidates: same case as the query first, then shallowest,
// then by path.
func shallower(a, b *Match) bool {
	if a.caseExact != b.caseExact {
		return a.caseExact
	}
	da, db := strings.Count(a.Path, "/"), strings.Count(b.Path, "/")
	if da != db {
		return da < db
	}
	return a.Path < b.Path
}

// finish applies the exact-directory tier and returns the ranked matches.
func (k *topK) finish() []Match {
	if k.exact == nil {
		return k.items
	}
	e := *k.exact
	for i := range k.items {
		if k.items[i].Path == e.Path && k.items[i].Root == e.Root && k.items[i].IsDir {
			k.items = append(k.items[:i], k.items[i+1:]...)
			break
		}
	}
	k.total--
	k.offer(Entry{Root: e.Root, Path: e.Path, IsDir: true}, e.Score, e.Indices)
	return k.items
}

func better(a, b *Match) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Path < b.Path
}

func (k *topK) offer(e Entry, score uint32, idx []uint32) {
	k.total++
	if len(k.items) >= k.limit {
		worst := &k.items[len(k.items)-1]
		cand := Match{Score: score, Path: e.Path}
		if !better(&cand, worst) {
			return
		}
		k.items = k.items[:len(k.items)-1]
	}
	m := Match{Root: e.Root, Path: e.Path, FileName: path.Base(e.Path), IsDir: e.IsDir, Score: score,
		Indices: normalizeIndices(idx)}
	i := sort.Search(len(k.items), func(i int) bool { return better(&m, &k.items[i]) })
	k.items = append(k.items, Match{})
	copy(k.items[i+1:], k.items[i:])
	k.items[i] = m
}

func (k *topK) merge(o *topK) {
	for _, m := range o.items {
		k.total++
		if len(k.items) >= k.limit && !better(&m, &k.items[len(k.items)-1]) {
			continue
		}
		if len(k.items) >= k.limit {
			k.items = k.items[:len(k.items)-1]
		}
		i := sort.Search(len(k.items), func(i int) bool { return better(&m, &k.items[i]) })
		k.items = append(k.items, Match{})
		copy(k.items[i+1:], k.items[i:])
		k.items[i] = m
	}
	k.total += o.total - len(o.items)
	if o.exact != nil && (k.exact == nil || shallower(o.exact, k.exact)) {
		k.exact = o.exact
	}
}

func normalizeIndices(idx []uint32) []uint32 {
	out := append([]uint32(nil), idx...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	w := 0
	for i, v := range out {
		if i == 0 || v != out[w-1] {
			out[w] = v
			w++
		}
	}
	return out[:w]
}

// Rank scores entries against query and returns the best limit matches.
func Rank(entries []Entry, query string, limit int) []Match {
	p := ParsePattern(query)
	if p.Empty() {
		return nil
	}
	s := newScorer(&p)
	k := &topK{limit: limit}
	for _, e := range entries {
		if sc, idx, ok := s.rank(e); ok {
			k.offer(e, sc, idx)
			if s.exactDir {
				k.offerExactDir(e, sc, idx, query)
			}
		}
	}
	return k.finish()
}

// Search walks roots and returns the best limit matches for query; an empty query matches nothing.
// Cancelling ctx stops the walk and yields no matches and ctx's error.
func Search(ctx context.Context, roots []string, query string, limit int) ([]Match, error) {
	p := ParsePattern(query)
	if p.Empty() || len(roots) == 0 {
		return nil, ctx.Err()
	}
	var (
		mu      sync.Mutex
		best    = &topK{limit: limit}
		scorers = sync.Pool{New: func() any { return newScorer(&p) }}
	)
	err := Walk(ctx, roots, func(batch []Entry) {
		s := scorers.Get().(*scorer)
		local := &topK{limit: limit}
		for _, e := range batch {
			if sc, idx, ok := s.rank(e); ok {
				local.offer(e, sc, idx)
				if s.exactDir {
					local.offerExactDir(e, sc, idx, query)
				}
			}
		}
		scorers.Put(s)
		if local.total == 0 {
			return
		}
		mu.Lock()
		best.merge(local)
		mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	return best.finish(), nil
}
