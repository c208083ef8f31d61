package filesearch

import (
	"context"
	"sync"
	"time"
)

// Update is one report of a session: the ranked matches for Query over the entries walked so far.
// Complete reports that the walk is over and Matches are final for Query.
type Update struct {
	Query    string
	Matches  []Match
	Complete bool
}

// progressEvery paces the interim reports while a walk is still running.
const progressEvery = 20 * time.Millisecond

// Session walks its roots once and re-ranks the walked entries whenever the query changes, reporting
// interim results while the walk runs and a final one once it ends.
type Session struct {
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu      sync.Mutex
	entries []Entry
	walked  bool
	query   string
	gen     int
}

// StartSession starts walking roots; report is called from the session's goroutine, never
// concurrently, until Close returns.
func StartSession(ctx context.Context, roots []string, limit int, report func(Update)) *Session {
	ctx, cancel := context.WithCancel(ctx)
	s := &Session{cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	walkDone := make(chan struct{})
	go func() {
		defer close(walkDone)
		_ = Walk(ctx, roots, func(batch []Entry) {
			s.mu.Lock()
			s.entries = append(s.entries, batch...)
			s.mu.Unlock()
			s.poke() // rank new entries at once until the query has its first matches
		})
		s.mu.Lock()
		s.walked = true
		s.mu.Unlock()
		s.poke()
	}()
	go func() {
		defer close(s.done)
		s.run(ctx, walkDone, limit, report)
	}()
	return s
}

// SetQuery changes the query; results follow as reports.
func (s *Session) SetQuery(q string) {
	s.mu.Lock()
	s.query = q
	s.gen++
	s.mu.Unlock()
	s.poke()
}

// Close stops the walk and the reports; no report is made once Close returns.
func (s *Session) Close() {
	s.cancel()
	<-s.done
}

func (s *Session) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Session) run(ctx context.Context, walkDone <-chan struct{}, limit int, report func(Update)) {
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	reportedGen, reportedLen, finalGen := -1, -1, -1
	var lastReport time.Time
	hadMatches := false // the current query's reports so far included matches
	// ranking of the current query over entries[:rankedLen], extended incrementally as the walk goes on
	var (
		ranked    *topK
		rankedGen = -1
		rankedLen int
		pattern   Pattern
		sc        *scorer
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-tick.C:
		}
		s.mu.Lock()
		gen, q, walked := s.gen, s.query, s.walked
		entries := s.entries[:len(s.entries):len(s.entries)]
		s.mu.Unlock()
		interim := !walked && q != "" && len(entries) != reportedLen &&
			(gen != reportedGen || !hadMatches || time.Since(lastReport) >= progressEvery)
		if gen == reportedGen && !interim && (!walked || finalGen == gen) {
			if walked {
				tick.Stop()
			}
			continue
		}
		var ms []Match
		if q != "" {
			if rankedGen != gen {
				pattern = ParsePattern(q)
				sc = newScorer(&pattern)
				ranked, rankedGen, rankedLen = &topK{limit: limit}, gen, 0
			}
			if !pattern.Empty() {
				for _, e := range entries[rankedLen:] {
					if score, idx, ok := sc.rank(e); ok {
						ranked.offer(e, score, idx)
						if sc.exactDir {
							ranked.offerExactDir(e, score, idx, q)
						}
					}
				}
				rankedLen = len(entries)
				snapshot := &topK{limit: limit, items: append([]Match(nil), ranked.items...), exact: ranked.exact}
				ms = snapshot.finish()
			}
		}
		if ctx.Err() != nil {
			return
		}
		if !walked && q == "" {
			continue // an empty query is answered once the walk is over, as the reference does
		}
		if gen != reportedGen {
			hadMatches = false
		}
		if !walked && gen == reportedGen && len(ms) == 0 && !hadMatches && q != "" {
			continue // nothing new to show yet: stay quiet until the first matches or the end
		}
		report(Update{Query: q, Matches: ms})
		hadMatches = hadMatches || len(ms) > 0
		reportedGen, reportedLen, lastReport = gen, len(entries), time.Now()
		if walked {
			report(Update{Query: q, Complete: true})
			finalGen = gen
		}
	}
}
