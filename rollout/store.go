package rollout

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"appserver/threadindex"
)

// Errors returned by Store.
var (
	ErrNotFound  = errors.New("rollout: no rollout found for thread id")
	ErrBadCursor = errors.New("rollout: invalid cursor")
)

// IndexFileName is our index database under CODEX_HOME (a cache; the rollouts are the source of truth).
const IndexFileName = "appserver_index_v2.sqlite"

// legacyIndexFileName is the JSON-lines index of earlier versions, removed when found.
const legacyIndexFileName = "appserver_index_v1.jsonl"

// SessionIndexFileName is the reference's append-only thread-name file under CODEX_HOME.
const SessionIndexFileName = "session_index.jsonl"

// Sort keys and directions accepted by List.
const (
	SortCreatedAt       = "created_at"
	SortUpdatedAt       = "updated_at"
	SortSectionPosition = "section_position" // needs ListQuery.SectionID
	SortAsc             = "asc"
	SortDesc            = "desc"
)

// DefaultListLimit is the page size when ListQuery.Limit is 0.
const DefaultListLimit = 25

// InteractiveSourceKinds is the source filter applied when ListQuery.SourceKinds is empty.
var InteractiveSourceKinds = []string{"cli", "vscode"}

// refreshInterval bounds how often List relists directories whose mtime changed (rollouts created, moved or
// removed behind our back).
var refreshInterval = 2 * time.Second

// sweepInterval bounds how often a background sweep stats every rollout (appends behind our back).
var sweepInterval = 10 * time.Second

// Summary is what thread/list needs about one thread (protocol Thread minus status and turns).
type Summary struct {
	ID          string `json:"id"`
	Path        string `json:"path"`
	Cwd         string `json:"cwd"`
	Preview     string `json:"preview"`
	Name        string `json:"name,omitempty"`
	CreatedAt   int64  `json:"createdAt"` // unix seconds
	UpdatedAt   int64  `json:"updatedAt"` // unix seconds (rollout mtime, like the reference)
	CreatedAtMs int64  `json:"createdAtMs"`
	UpdatedAtMs int64  `json:"updatedAtMs"`
	// RecencyAt (unix seconds) is the thread's recency when it is not UpdatedAt (0): the end of the last turn
	// of a session imported from another agent (see ImportedSpan).
	RecencyAt       int64  `json:"recencyAt,omitempty"`
	ModelProvider   string `json:"modelProvider"`
	Model           string `json:"model,omitempty"`
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	Source          string `json:"source"`
	SourceKind      string `json:"sourceKind"`
	CLIVersion      string `json:"cliVersion"`
	Originator      string `json:"originator"`
	ForkedFromID    string `json:"forkedFromId,omitempty"`
	ParentThreadID  string `json:"parentThreadId,omitempty"`
	HistoryMode     string `json:"historyMode,omitempty"`  // session_meta history_mode
	ThreadSource    string `json:"threadSource,omitempty"` // session_meta thread_source
	// Snippet is the message (or name/preview) that matched a content search.
	Snippet  string          `json:"-"`
	Archived bool            `json:"archived"`
	GitInfo  json.RawMessage `json:"gitInfo,omitempty"`
	// Section is the thread's section (nil when none), SectionEnteredAtMs when it entered it.
	Section            *threadindex.Section `json:"-"`
	SectionEnteredAtMs int64                `json:"-"`
}

// ListQuery selects a page of thread/list.
type ListQuery struct {
	Cursor         string
	Limit          int
	SortKey        string // SortCreatedAt (default) or SortUpdatedAt
	SortDirection  string // SortDesc (default) or SortAsc
	Archived       bool
	Cwds           []string // exact matches; empty = any
	ModelProviders []string // empty = any
	SourceKinds    []string // protocol ThreadSourceKind values; empty = InteractiveSourceKinds
	SearchTerm     string   // case-insensitive substring of preview or name
	// InContent makes SearchTerm match the user and agent messages too, and fills Summary.Snippet.
	InContent      bool
	ForkedFrom     *string  // only forks of this thread
	ParentThreadID *string  // only threads spawned by this one
	AncestorID     *string  // only threads spawned, at any depth, from this one
	Excluded       []string // ids left out before the limit
	SectionID      string   // only threads of this section ("" = any)
	// Members, when not nil, keeps only (or, Outside, leaves out) the threads it lists: a project's members.
	Members *threadindex.Members
	// IncludeEmpty lists threads without a first user message too (the reference hides them).
	IncludeEmpty bool
}

// Store indexes the rollouts of one CODEX_HOME in an embedded database (threadindex) for listing, and manages
// the rollout files. Opening never reads the rollouts: a fresh index is built, and an existing one reconciled
// with the files on disk, in the background.
type Store struct {
	home string
	ix   *threadindex.Index

	ready      chan struct{} // closed once the index can answer (built, or seeded from the reference's DB)
	reconciled chan struct{} // closed once the first full reconcile is done

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex // guards the fields below and serializes scans
	dirMtimes map[string]int64
	lastScan  time.Time
	lastSweep time.Time
	sweeping  bool
	namesOff  int64

	// requests counts index queries in progress (pages, lookups); background reads give way to them.
	requests atomic.Int32
	// foreground counts thread reads in progress (Busy); background reads give way to them too.
	foreground atomic.Int32
}

// maxYield bounds how long background index work waits for requests in one go, so that it always progresses.
const maxYield = 50 * time.Millisecond

// serving marks an index query in progress until the returned func is called.
func (s *Store) serving() func() {
	s.requests.Add(1)
	return func() { s.requests.Add(-1) }
}

// maxForegroundYield bounds how long background index work waits for a thread read (Busy) in one go.
const maxForegroundYield = time.Second

// Busy marks a foreground read of a rollout (a thread being resumed) in progress until the returned func is
// called: background index reads give way to it, up to maxForegroundYield at a time.
func (s *Store) Busy() (done func()) {
	s.foreground.Add(1)
	return func() { s.foreground.Add(-1) }
}

// yield waits, up to maxYield, while index queries are in progress, and up to maxForegroundYield while a thread
// is read (Busy): a page asked for during a reconcile, or a resume, does not share the CPU (and the garbage
// collector) with rollout reading.
func (s *Store) yield() {
	for waited := time.Duration(0); s.ctx.Err() == nil; waited += time.Millisecond {
		if !(waited < maxYield && s.requests.Load() > 0) && !(waited < maxForegroundYield && s.foreground.Load() > 0) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Open opens the index of codexHome (creating it, or replacing a corrupt one) and starts reconciling it with
// the rollouts in the background. List waits only while a fresh index is first built.
func Open(codexHome string) (*Store, error) {
	if _, err := os.Stat(codexHome); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("rollout: codex home: %w", err)
		}
		if err := os.MkdirAll(codexHome, 0o755); err != nil {
			return nil, fmt.Errorf("rollout: codex home: %w", err)
		}
	}
	ix, fresh, err := threadindex.OpenOrRebuild(filepath.Join(codexHome, IndexFileName))
	if err != nil {
		return nil, fmt.Errorf("rollout: index: %w", err)
	}
	_ = os.Remove(filepath.Join(codexHome, legacyIndexFileName))
	if fresh {
		restoreSections(ix, codexHome)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{home: codexHome, ix: ix, ready: make(chan struct{}), reconciled: make(chan struct{}),
		ctx: ctx, cancel: cancel, dirMtimes: map[string]int64{}, lastScan: time.Now(), lastSweep: time.Now()}
	if dirs, err := ix.Dirs(ctx); err == nil {
		s.dirMtimes = dirs
	}
	// Names other programs appended since the index was last written apply before the first answer:
	// the index answers while the reconcile below runs.
	s.syncNames()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(s.reconciled)
		switch {
		case !fresh:
			close(s.ready)
		case ix.Get(ctx, "seeded") == "1" || s.seedFromReference():
			// Seeded now or by an earlier start whose reconcile did not finish: answer while it runs.
			close(s.ready)
			fresh = false
		}
		if err := s.reconcile(); err != nil && ctx.Err() == nil {
			slog.Warn("rollout: index reconcile failed", "err", err)
		}
		if err := ix.Check(ctx); errors.Is(err, threadindex.ErrCorrupt) {
			slog.Warn("rollout: index damaged; it is rebuilt from the rollouts at the next start", "err", err)
			ix.Discard()
		}
		if fresh {
			close(s.ready)
		}
	}()
	return s, nil
}

// Close stops background work and closes the index.
func (s *Store) Close() error {
	s.cancel()
	s.wg.Wait()
	return s.ix.Close()
}

// WaitReconciled blocks until the first background reconcile after Open is done (tests, benchmarks).
func (s *Store) WaitReconciled(ctx context.Context) error {
	select {
	case <-s.reconciled:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) waitReady() {
	select {
	case <-s.ready:
	case <-s.ctx.Done():
	}
}

// Home returns the CODEX_HOME the store indexes.
func (s *Store) Home() string { return s.home }

func (s *Store) rel(path string) string {
	r, err := filepath.Rel(s.home, path)
	if err != nil {
		return path
	}
	return r
}

func (s *Store) abs(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(s.home, rel)
}

// syncNames applies lines appended to session_index.jsonl since the last call (all of it if it shrank).
func (s *Store) syncNames() {
	p := filepath.Join(s.home, SessionIndexFileName)
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() == s.namesOff {
		return
	}
	off := s.namesOff
	if info.Size() < off {
		off = 0
	}
	if _, err := f.Seek(off, 0); err != nil {
		return
	}
	type rec struct{ id, name string }
	var recs []rec
	lr := newLineReader(f)
	defer lr.release()
	consumed := off
	for {
		ln, truncated, complete, err := lr.next(1 << 20)
		if err != nil || !complete {
			break
		}
		consumed = off + lr.off
		if truncated || len(strings.TrimSpace(string(ln))) == 0 {
			continue
		}
		var r struct {
			ID         string `json:"id"`
			ThreadName string `json:"thread_name"`
		}
		if json.Unmarshal(ln, &r) == nil && r.ID != "" {
			recs = append(recs, rec{r.ID, r.ThreadName})
		}
	}
	err = s.ix.Tx(s.ctx, func(tx *threadindex.Tx) error {
		for _, r := range recs {
			if err := tx.SetName(r.id, r.name); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.namesOff = consumed
	}
}

func rowOf(sum *Summary, rel string, size, modNs int64, fileName string) *threadindex.Row {
	return &threadindex.Row{ID: sum.ID, Rel: rel, Size: size, ModNs: modNs, CreatedMs: sum.CreatedAtMs,
		UpdatedMs: sum.UpdatedAtMs, Cwd: sum.Cwd, Preview: sum.Preview, FileName: fileName,
		ModelProvider: sum.ModelProvider, Model: sum.Model, Effort: sum.ReasoningEffort, Source: sum.Source,
		SourceKind: sum.SourceKind, CLIVersion: sum.CLIVersion, Originator: sum.Originator,
		ForkedFrom: sum.ForkedFromID, Archived: sum.Archived, GitInfo: string(sum.GitInfo), Parent: sum.ParentThreadID,
		HistoryMode: sum.HistoryMode, RecencyMs: sum.RecencyAt * 1000, ThreadSource: sum.ThreadSource}
}

func (s *Store) summaryOf(r *threadindex.Row) Summary {
	sum := Summary{ID: r.ID, Path: s.abs(r.Rel), Cwd: r.Cwd, Preview: r.Preview, Name: r.Name,
		CreatedAt: r.CreatedMs / 1000, CreatedAtMs: r.CreatedMs, UpdatedAt: r.UpdatedMs / 1000, UpdatedAtMs: r.UpdatedMs,
		ModelProvider: r.ModelProvider, Model: r.Model, ReasoningEffort: r.Effort, Source: r.Source,
		SourceKind: r.SourceKind, CLIVersion: r.CLIVersion, Originator: r.Originator, ForkedFromID: r.ForkedFrom,
		ParentThreadID: r.Parent, HistoryMode: r.HistoryMode, Archived: r.Archived, Section: r.Section, SectionEnteredAtMs: r.SectionEnteredMs,
		RecencyAt: r.RecencyMs / 1000, ThreadSource: r.ThreadSource}
	if r.GitInfo != "" {
		sum.GitInfo = json.RawMessage(r.GitInfo)
	}
	return sum
}

// readRow reads one rollout's meta into an index row; nil if the file is unreadable. pc (may be nil) is
// the build's memory of fork parents.
func (s *Store) readRow(id string, df diskFile, pc *parentCache) *threadindex.Row {
	r, _ := s.readRowErr(id, df, pc)
	return r
}

// readRowErr is readRow with the reason a rollout is skipped.
func (s *Store) readRowErr(id string, df diskFile, pc *parentCache) (*threadindex.Row, error) {
	m, err := readMeta(df.path, -1, 0, pc)
	if err != nil {
		slog.Warn("rollout: skipping unreadable rollout", "path", df.path, "err", err)
		return nil, err
	}
	if m.Session.ID != "" && m.Session.ID != id {
		slog.Warn("rollout: file name and session id differ", "path", df.path, "id", m.Session.ID)
	}
	sum := summaryFromMeta(id, m, df)
	r := rowOf(&sum, s.rel(df.path), df.size, df.modNs, m.Name)
	r.Content = strings.Join(m.Texts, threadindex.ContentSep)
	return r, nil
}

// putRows writes rows in one transaction.
func (s *Store) putRows(rows []*threadindex.Row) error {
	if len(rows) == 0 {
		return nil
	}
	return s.ix.Tx(s.ctx, func(tx *threadindex.Tx) error {
		for _, r := range rows {
			if err := tx.Put(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// indexFile reads one rollout and stores its row; nil if the file is unreadable.
func (s *Store) indexFile(id string, df diskFile) (*threadindex.Row, error) {
	r, err := s.readRowErr(id, df, nil)
	if r == nil {
		return nil, err
	}
	if err := s.putRows([]*threadindex.Row{r}); err != nil {
		slog.Warn("rollout: index write failed", "err", err)
	}
	return r, nil
}

// reconcile stats every rollout and brings the index in line: new and changed files are read (in parallel,
// written in batches), vanished ones dropped. A fresh index is built this way.
func (s *Store) reconcile() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncNames()
	dirs := s.dayDirs()
	disk := map[string]diskFile{}
	archDir := filepath.Join(s.home, "archived_sessions")
	for d := range dirs {
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		listDir(d, d == archDir, disk)
	}
	known, err := s.ix.Files(s.ctx)
	if err != nil {
		return err
	}
	var gone []string
	for id, f := range known {
		if _, ok := disk[id]; !ok {
			gone = append(gone, id)
			_ = f
		}
	}
	var todo []string
	for id, df := range disk {
		if f, ok := known[id]; ok && f.Rel == s.rel(df.path) && f.Size == df.size && f.ModNs == df.modNs && f.Archived == df.archived {
			continue
		}
		todo = append(todo, id)
	}
	workers := runtime.GOMAXPROCS(0)
	select {
	case <-s.ready:
		workers = 1 // the index answers meanwhile: leave the other CPUs to the requests
	default:
	}
	if err := s.readAndPut(todo, disk, workers); err != nil {
		return err
	}
	if err := s.dropGone(gone); err != nil {
		return err
	}
	s.dirMtimes = dirs
	s.lastScan, s.lastSweep = time.Now(), time.Now()
	return s.ix.Tx(s.ctx, func(tx *threadindex.Tx) error {
		if err := tx.Exec("DELETE FROM dirs"); err != nil {
			return err
		}
		for d, m := range dirs {
			if err := tx.SetDir(d, m); err != nil {
				return err
			}
		}
		return tx.Set("complete", "1")
	})
}

// readAndPut reads the metas of ids with the given number of workers and writes them in batches.
func (s *Store) readAndPut(ids []string, disk map[string]diskFile, workers int) error {
	if len(ids) == 0 {
		return nil
	}
	// Newest first: a build in progress fills the first page early.
	slices.SortFunc(ids, func(a, b string) int { return strings.Compare(disk[b].path, disk[a].path) })
	jobs := make(chan string)
	out := make(chan *threadindex.Row, 256)
	pc := newParentCache()
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range jobs {
				s.yield()
				out <- s.readRow(id, disk[id], pc)
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, id := range ids {
			select {
			case jobs <- id:
			case <-s.ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()
	var batch []*threadindex.Row
	var werr error
	for r := range out {
		if r == nil || werr != nil {
			continue
		}
		batch = append(batch, r)
		if len(batch) == 500 {
			werr = s.putRows(batch)
			batch = batch[:0]
		}
	}
	if werr != nil {
		return werr
	}
	if err := s.ctx.Err(); err != nil {
		return err
	}
	return s.putRows(batch)
}

// dropGone removes the rows of rollouts no longer on disk (re-checked inside the transaction: a concurrent
// archive may have moved one).
func (s *Store) dropGone(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return s.ix.Tx(s.ctx, func(tx *threadindex.Tx) error {
		for _, id := range ids {
			rel, ok := tx.Rel(id)
			if !ok {
				continue
			}
			if _, err := os.Stat(s.abs(rel)); err == nil {
				continue
			}
			if err := tx.Delete(id); err != nil {
				return err
			}
		}
		return nil
	})
}

// seedFromReference fills a fresh index from the reference's state_5.sqlite when CODEX_HOME has one, so the
// first page does not wait for every rollout to be read; the reconcile that follows re-reads each rollout.
func (s *Store) seedFromReference() bool {
	rows, err := threadindex.ReadReferenceThreads(s.ctx, s.home)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			slog.Info("rollout: not seeding the index from the reference's state database", "err", err)
		}
		return false
	}
	for _, r := range rows {
		r.Rel = s.rel(r.Rel)
		r.Size = -1 // read the rollout at reconcile
		r.SourceKind = SourceKind(sourceRaw(r.Source))
		if !strings.HasPrefix(strings.TrimSpace(r.Source), "{") {
			r.Source = SourceString(sourceRaw(r.Source))
		}
	}
	for i := 0; i < len(rows); i += 2000 {
		if err := s.seedRows(rows[i:min(len(rows), i+2000)]); err != nil {
			slog.Warn("rollout: seeding the index failed", "err", err)
			return false
		}
	}
	return s.ix.Set(s.ctx, "seeded", "1") == nil
}

// seedRows inserts rows whose ids are not indexed yet (rows read from the rollouts win).
func (s *Store) seedRows(rows []*threadindex.Row) error {
	return s.ix.Tx(s.ctx, func(tx *threadindex.Tx) error {
		for _, r := range rows {
			if err := tx.PutIfAbsent(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// sourceRaw turns the reference DB's source column (a bare kind or JSON) into a session_meta source value.
func sourceRaw(src string) json.RawMessage {
	if t := strings.TrimSpace(src); strings.HasPrefix(t, "{") || strings.HasPrefix(t, `"`) {
		if json.Valid([]byte(t)) {
			return json.RawMessage(t)
		}
	}
	if src == "" {
		return nil
	}
	return StringSource(src)
}

// quickScan relists only directories whose mtime changed (files added, removed or renamed behind our back)
// and applies new session_index.jsonl lines. Callers hold s.mu.
func (s *Store) quickScan() {
	s.lastScan = time.Now()
	s.syncNames()
	dirs := s.dayDirs()
	var stale []string
	for d, mt := range dirs {
		if old, ok := s.dirMtimes[d]; !ok || old != mt {
			stale = append(stale, d)
		}
	}
	for d := range s.dirMtimes {
		if _, ok := dirs[d]; !ok {
			stale = append(stale, d)
		}
	}
	if len(stale) == 0 {
		return
	}
	archDir := filepath.Join(s.home, "archived_sessions")
	disk := map[string]diskFile{}
	var gone, todo []string
	for _, d := range stale {
		listing := map[string]diskFile{}
		if _, ok := dirs[d]; ok {
			listDir(d, d == archDir, listing)
		}
		known, err := s.ix.FilesUnder(s.ctx, s.rel(d))
		if err != nil {
			return
		}
		for id := range known {
			if _, ok := listing[id]; !ok {
				gone = append(gone, id)
			}
		}
		for id, df := range listing {
			disk[id] = df
			if f, ok := known[id]; ok && f.Size == df.size && f.ModNs == df.modNs {
				continue
			}
			todo = append(todo, id)
		}
	}
	// Removals first: a file moved between two stale directories is then re-added from its new place.
	if err := s.dropGone(gone); err != nil {
		return
	}
	if err := s.readAndPut(todo, disk, 1); err != nil {
		return
	}
	s.dirMtimes = dirs
	_ = s.ix.Tx(s.ctx, func(tx *threadindex.Tx) error {
		for _, d := range stale {
			m, ok := dirs[d]
			if !ok {
				m = -1
			}
			if err := tx.SetDir(d, m); err != nil {
				return err
			}
		}
		return nil
	})
}

// maybeRefresh runs a quick scan when refreshInterval has passed, and starts a background sweep (a full
// reconcile: rollouts appended in place by another writer) when sweepInterval has.
func (s *Store) maybeRefresh() {
	if !s.mu.TryLock() {
		return // a scan is running; the index answers as it is
	}
	defer s.mu.Unlock()
	if time.Since(s.lastScan) >= refreshInterval {
		s.quickScan()
	}
	if !s.sweeping && time.Since(s.lastSweep) >= sweepInterval && s.ctx.Err() == nil {
		s.sweeping = true
		s.lastSweep = time.Now()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.reconcile(); err != nil && s.ctx.Err() == nil {
				slog.Warn("rollout: index sweep failed", "err", err)
			}
			s.mu.Lock()
			s.sweeping = false
			s.mu.Unlock()
		}()
	}
}

// threadIDFromFileName extracts <id> from rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl (or .jsonl.zst).
func threadIDFromFileName(name string) (string, bool) {
	const prefixLen = len("rollout-2006-01-02T15-04-05-")
	name = strings.TrimSuffix(name, CompressedSuffix)
	if !strings.HasPrefix(name, "rollout-") || !strings.HasSuffix(name, ".jsonl") || len(name) <= prefixLen+len(".jsonl") {
		return "", false
	}
	id, _ := splitFileID(name[prefixLen : len(name)-len(".jsonl")])
	return id, validThreadID(id)
}

type diskFile struct {
	path     string
	size     int64
	modNs    int64
	archived bool
}

// listDir returns the rollout files of one directory.
func listDir(dir string, archived bool, out map[string]diskFile) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range des {
		if de.IsDir() {
			continue
		}
		id, ok := threadIDFromFileName(de.Name())
		if !ok {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue
		}
		if prev, ok := out[id]; ok {
			p := filepath.Join(dir, de.Name())
			if laterSegment(prev.path, p) {
				continue // a reverted thread's newest segment is its file
			}
			if !laterSegment(p, prev.path) && filepath.Dir(prev.path) == dir && !IsCompressed(prev.path) {
				continue // the plain rollout wins over a compressed copy (the reference's materialized file)
			}
		}
		out[id] = diskFile{path: filepath.Join(dir, de.Name()), size: info.Size(), modNs: info.ModTime().UnixNano(), archived: archived}
	}
}

// dayDirs returns sessions/YYYY/MM/DD directories with their mtimes.
func (s *Store) dayDirs() map[string]int64 {
	out := map[string]int64{}
	root := filepath.Join(s.home, "sessions")
	years, _ := os.ReadDir(root)
	for _, y := range years {
		if !y.IsDir() {
			continue
		}
		months, _ := os.ReadDir(filepath.Join(root, y.Name()))
		for _, m := range months {
			if !m.IsDir() {
				continue
			}
			days, _ := os.ReadDir(filepath.Join(root, y.Name(), m.Name()))
			for _, d := range days {
				if !d.IsDir() {
					continue
				}
				p := filepath.Join(root, y.Name(), m.Name(), d.Name())
				if info, err := d.Info(); err == nil {
					out[p] = info.ModTime().UnixNano()
				}
			}
		}
	}
	arch := filepath.Join(s.home, "archived_sessions")
	if info, err := os.Stat(arch); err == nil {
		out[arch] = info.ModTime().UnixNano()
	}
	return out
}

func summaryFromMeta(id string, m *Meta, df diskFile) Summary {
	created := m.CreatedAt
	if created.IsZero() {
		created = time.Unix(0, df.modNs)
	}
	sum := Summary{
		ID: id, Path: df.path, Cwd: m.Session.Cwd, Preview: m.Preview,
		CreatedAt: created.Unix(), CreatedAtMs: created.UnixMilli(),
		UpdatedAt: df.modNs / 1e9, UpdatedAtMs: df.modNs / 1e6,
		ModelProvider: m.Session.ModelProvider, Model: m.Model, ReasoningEffort: m.ReasoningEffort,
		Source: SourceString(m.Session.Source), SourceKind: SourceKind(m.Session.Source),
		CLIVersion: m.Session.CLIVersion, Originator: m.Session.Originator, ForkedFromID: m.Session.ForkedFromID,
		Archived: df.archived, GitInfo: m.Session.Git,
	}
	if len(m.Session.Source) == 0 {
		sum.SourceKind = "unknown"
	}
	sum.ParentThreadID = SpawnParent(m.Session.Source)
	sum.HistoryMode = m.Session.HistoryMode
	sum.ThreadSource = m.Session.ThreadSource
	sum.RecencyAt = m.ImportedRecency(created.Unix())
	if t := strings.TrimSpace(string(m.Session.Source)); strings.HasPrefix(t, "{") {
		sum.Source = t // object sources (sub-agents) keep their JSON; see ProtocolSource
	}
	return sum
}

type cursor struct {
	Key string `json:"k"`
	T   int64  `json:"t"`
	ID  string `json:"id"`
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.ID == "" {
		return c, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	return c, nil
}

// Page is one page of thread/list.
type Page struct {
	Threads []Summary
	// Next continues after the last thread ("" when nothing follows).
	Next string
	// Backwards is, as the reference reports it, the first thread's sort timestamp moved 1 ms towards the
	// threads before it (RFC 3339, UTC, milliseconds unless zero): used as a cursor it selects the threads at
	// or beyond that instant in the requested direction, so a client can page back towards newer threads
	// with the first thread included ("" for an empty page).
	Backwards string
}

// List returns one page ordered by (timestamp, id) and the cursor of the next page ("" when there is none).
func (s *Store) List(q ListQuery) ([]Summary, string, error) {
	p, err := s.ListPage(q)
	return p.Threads, p.Next, err
}

// cursorTime formats a sort timestamp (unix milliseconds) as the reference's cursors do: RFC 3339 in UTC
// with milliseconds, left out when zero ("2026-11-24T18:37:29.123Z", "2026-11-24T18:34:12Z").
func cursorTime(ms int64) string {
	t := time.UnixMilli(ms).UTC()
	if ms%1000 == 0 {
		return t.Format("2006-01-02T15:04:05Z")
	}
	return t.Format("2006-01-02T15:04:05.000Z")
}

// timeCursor is the reference's form of a next-page cursor: the last thread's sort timestamp and its id,
// joined by "|".
func timeCursor(ms int64, id string) string { return cursorTime(ms) + "|" + id }

// parseTimeCursor reads a "<RFC 3339 time>|<thread id>" cursor.
func parseTimeCursor(s string) (ms int64, id string, ok bool) {
	ts, id, found := strings.Cut(s, "|")
	if _, err := uuid.Parse(id); !found || err != nil {
		return 0, "", false
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return 0, "", false
	}
	return t.UnixMilli(), id, true
}

// ListPage returns one page ordered by (timestamp, id) with its forward and backwards cursors. Cursors are
// either Next values or Backwards timestamps.
func (s *Store) ListPage(q ListQuery) (Page, error) {
	key := q.SortKey
	if key == "" {
		key = SortCreatedAt
	}
	if key != SortCreatedAt && key != SortUpdatedAt && key != SortSectionPosition {
		return Page{}, fmt.Errorf("rollout: unsupported sort key %q", key)
	}
	if key == SortSectionPosition && q.SectionID == "" {
		return Page{}, errors.New("rollout: section-position sorting requires a section filter")
	}
	dir := q.SortDirection
	if dir == "" {
		dir = SortDesc
		if key == SortSectionPosition {
			dir = SortAsc // a section reads top to bottom
		}
	}
	if dir != SortAsc && dir != SortDesc {
		return Page{}, fmt.Errorf("rollout: unsupported sort direction %q", dir)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	iq := threadindex.Query{ByUpdated: key == SortUpdatedAt, Asc: dir == SortAsc, Archived: q.Archived,
		Cwds: q.Cwds, ModelProviders: q.ModelProviders, SourceKinds: q.SourceKinds, ForkedFrom: q.ForkedFrom,
		SearchTerm: strings.ToLower(q.SearchTerm), InContent: q.InContent, RequirePreview: !q.IncludeEmpty, Limit: limit,
		Parent: q.ParentThreadID, Ancestor: q.AncestorID, Excluded: q.Excluded,
		BySection: key == SortSectionPosition, Section: q.SectionID, Members: q.Members}
	if len(iq.SourceKinds) == 0 && q.ParentThreadID == nil && q.AncestorID == nil {
		iq.SourceKinds = InteractiveSourceKinds
	}
	iq.SourceKinds = filterKinds(iq.SourceKinds)
	if q.Cursor != "" {
		if t, err := time.Parse(time.RFC3339Nano, q.Cursor); err == nil {
			// created_at compares the rollout file names' whole seconds with the instant, strictly (the
			// reference's)
			iq.T, iq.HasAt, iq.AtStrict = t.UnixMilli(), true, key == SortCreatedAt
		} else if ms, id, ok := parseTimeCursor(q.Cursor); ok && key != SortSectionPosition {
			iq.T, iq.AfterID = ms, id
		} else {
			c, err := decodeCursor(q.Cursor)
			if err != nil {
				return Page{}, err
			}
			if c.Key != key {
				return Page{}, fmt.Errorf("%w: sort key changed", ErrBadCursor)
			}
			iq.T, iq.AfterID = c.T, c.ID
		}
	}
	s.waitReady()
	s.maybeRefresh() // in this goroutine: its reads must not wait for the page they serve
	defer s.serving()()
	rows, err := s.ix.List(s.ctx, iq)
	if err != nil {
		return Page{}, err
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	positions := map[string]int64{}
	if iq.BySection && len(rows) > 0 {
		positions = s.positions(rows)
	}
	keyOf := func(r *threadindex.Row) int64 {
		if iq.BySection {
			return positions[r.ID]
		}
		if iq.ByUpdated {
			return r.UpdatedMs
		}
		return r.NameMs
	}
	page := make([]Summary, 0, len(rows))
	for i := range rows {
		sum := s.summaryOf(&rows[i])
		if q.InContent {
			sum.Snippet = snippet(s.ix.Content(s.ctx, sum.ID), sum.Name, sum.Preview, iq.SearchTerm)
		}
		page = append(page, sum)
	}
	pg := Page{Threads: page}
	if more {
		last := &rows[len(rows)-1]
		if iq.BySection {
			pg.Next = encodeCursor(cursor{Key: key, T: keyOf(last), ID: last.ID})
		} else {
			pg.Next = timeCursor(keyOf(last), last.ID)
		}
	}
	if len(rows) > 0 {
		// One millisecond before the first thread's (after it, ascending): the reverse page starts with it.
		step := int64(-1)
		if iq.Asc {
			step = 1
		}
		first := keyOf(&rows[0])
		if !iq.BySection && !iq.ByUpdated {
			first = rows[0].CreatedMs // the reference's backwards cursor: session_meta's time, not the name's
		}
		pg.Backwards = cursorTime(first + step)
	}
	return pg, nil
}

// Get returns the summary of one thread.
func (s *Store) Get(threadID string) (Summary, error) {
	r, err := s.lookup(threadID)
	if err != nil {
		return Summary{}, err
	}
	return s.summaryOf(r), nil
}

// lookup finds a thread's row, indexing a rollout created behind our back.
func (s *Store) lookup(threadID string) (*threadindex.Row, error) {
	if !validThreadID(threadID) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, threadID)
	}
	defer s.serving()()
	if r, err := s.ix.Row(s.ctx, threadID); err == nil {
		if _, err := os.Stat(s.abs(r.Rel)); err == nil {
			return &r, nil
		}
	}
	p, err := findRolloutByID(s.home, threadID)
	if err != nil {
		_ = s.ix.Tx(s.ctx, func(tx *threadindex.Tx) error { return tx.Delete(threadID) })
		return nil, fmt.Errorf("%w: %s", ErrNotFound, threadID)
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, threadID)
	}
	df := diskFile{path: p, size: info.Size(), modNs: info.ModTime().UnixNano(),
		archived: filepath.Base(filepath.Dir(p)) == "archived_sessions"}
	if _, err := s.indexFile(threadID, df); err != nil {
		if errors.Is(err, ErrNoSessionMeta) {
			return nil, &SessionMetaError{Path: p}
		}
		return nil, fmt.Errorf("%w: %s", ErrNotFound, threadID)
	}
	r, err := s.ix.Row(s.ctx, threadID)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, threadID)
	}
	return &r, nil
}

// Locate returns the rollout path of a thread without reading the file: the indexed path while that file
// exists, else the file named after the thread. Unlike Find it never indexes the rollout (the background
// reconcile or the next lookup does), so a caller about to read the whole file reads it once.
func (s *Store) Locate(threadID string) (string, error) {
	if !validThreadID(threadID) {
		return "", fmt.Errorf("%w: %s", ErrNotFound, threadID)
	}
	defer s.serving()()
	if r, err := s.ix.Row(s.ctx, threadID); err == nil {
		if p := s.abs(r.Rel); fileExists(p) {
			return p, nil
		}
	}
	p, err := findRolloutByID(s.home, threadID)
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrNotFound, threadID)
	}
	return p, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Find returns the rollout path of a thread and whether it is archived.
func (s *Store) Find(threadID string) (string, bool, error) {
	r, err := s.lookup(threadID)
	if err != nil {
		return "", false, err
	}
	return s.abs(r.Rel), r.Archived, nil
}

// Archive moves the rollout to $CODEX_HOME/archived_sessions/<same name>; archiving an archived thread is a no-op.
func (s *Store) Archive(threadID string) error {
	r, err := s.lookup(threadID)
	if err != nil {
		return err
	}
	if r.Archived {
		return nil
	}
	dir := filepath.Join(s.home, "archived_sessions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("rollout: archive: %w", err)
	}
	cur := s.abs(r.Rel)
	if _, err = s.move(r, filepath.Join(dir, filepath.Base(r.Rel)), true); err == nil {
		moveOlderSegments(s.home, threadID, cur, true)
	}
	return err
}

// Unarchive moves an archived rollout back to sessions/YYYY/MM/DD (the date in its file name) and returns its
// summary; unarchiving a live thread is a no-op.
func (s *Store) Unarchive(threadID string) (Summary, error) {
	r, err := s.lookup(threadID)
	if err != nil {
		return Summary{}, err
	}
	if !r.Archived {
		return s.summaryOf(r), nil
	}
	base := filepath.Base(r.Rel)
	t, err := time.Parse("2006-01-02", strings.TrimPrefix(base, "rollout-")[:min(10, len(base)-len("rollout-"))])
	if err != nil {
		return Summary{}, fmt.Errorf("rollout: unarchive: no date in file name %q", base)
	}
	dir := filepath.Join(s.home, "sessions", t.Format("2006"), t.Format("01"), t.Format("02"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Summary{}, fmt.Errorf("rollout: unarchive: %w", err)
	}
	cur := s.abs(r.Rel)
	sum, err := s.move(r, filepath.Join(dir, base), false)
	if err == nil {
		moveOlderSegments(s.home, threadID, cur, false)
	}
	return sum, err
}

func (s *Store) move(r *threadindex.Row, dst string, archived bool) (Summary, error) {
	if _, err := os.Stat(dst); err == nil {
		return Summary{}, fmt.Errorf("rollout: %s already exists", dst)
	}
	src := s.abs(r.Rel)
	if err := os.Rename(src, dst); err != nil {
		return Summary{}, fmt.Errorf("rollout: move: %w", err)
	}
	r.Rel, r.Archived = s.rel(dst), archived
	if info, err := os.Stat(dst); err == nil {
		r.Size, r.ModNs = info.Size(), info.ModTime().UnixNano()
	}
	// s.mu before the index's transaction, in the order reconcile takes them (the other order deadlocked
	// an archive against the background reconcile of a store just opened).
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.ix.Tx(s.ctx, func(tx *threadindex.Tx) error {
		if err := tx.Move(r.ID, r.Rel, archived, r.Size, r.ModNs); err != nil {
			return err
		}
		// Our own rename changed both directories: record their new mtimes so the next scan does not relist them.
		for _, d := range []string{filepath.Dir(src), dst} {
			d = filepath.Dir(d)
			if _, tracked := s.dirMtimes[d]; !tracked && d != filepath.Dir(dst) {
				continue
			}
			if info, err := os.Stat(d); err == nil {
				s.dirMtimes[d] = info.ModTime().UnixNano()
				if err := tx.SetDir(d, s.dirMtimes[d]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return Summary{}, fmt.Errorf("rollout: move: %w", err)
	}
	return s.summaryOf(r), nil
}

// Delete removes a thread's rollout file and index entry.
func (s *Store) Delete(threadID string) error {
	r, err := s.lookup(threadID)
	if err != nil {
		return err
	}
	cur := s.abs(r.Rel)
	older := olderSegments(s.home, threadID, cur)
	if err := os.Remove(cur); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rollout: delete: %w", err)
	}
	for _, p := range older { // a reverted thread's earlier files
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			slog.Warn("rollout: delete: an older segment remains", "path", p, "err", err)
		}
	}
	return s.ix.Tx(s.ctx, func(tx *threadindex.Tx) error { return tx.Delete(threadID) })
}

// SetName records a thread name the way the reference does: a {"id","thread_name","updated_at"} line appended to
// $CODEX_HOME/session_index.jsonl (the rollout itself is not touched).
func (s *Store) SetName(threadID, name string) error {
	if _, err := s.lookup(threadID); err != nil {
		return err
	}
	rec, _ := json.Marshal(struct {
		ID         string `json:"id"`
		ThreadName string `json:"thread_name"`
		UpdatedAt  string `json:"updated_at"`
	}{threadID, name, time.Now().UTC().Format(time.RFC3339Nano)})
	f, err := os.OpenFile(filepath.Join(s.home, SessionIndexFileName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("rollout: set name: %w", err)
	}
	_, werr := f.Write(append(rec, '\n'))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("rollout: set name: %w", err)
	}
	return s.ix.Tx(s.ctx, func(tx *threadindex.Tx) error { return tx.SetName(threadID, name) })
}

// Name returns the recorded name of a thread ("" if none).
func (s *Store) Name(threadID string) string {
	return s.ix.Name(s.ctx, threadID)
}

// Upsert records what the turn engine knows about a thread it writes; Path must be set. Size and mtime are taken
// from the file so the entry stays valid at the next Open; UpdatedAt follows the file's mtime.
func (s *Store) Upsert(sum Summary) error {
	if sum.ID == "" || sum.Path == "" {
		return errors.New("rollout: upsert needs id and path")
	}
	info, err := os.Stat(sum.Path)
	if err != nil {
		return fmt.Errorf("rollout: upsert: %w", err)
	}
	modNs := info.ModTime().UnixNano()
	sum.UpdatedAtMs, sum.UpdatedAt = modNs/1e6, modNs/1e9
	if sum.CreatedAtMs == 0 {
		sum.CreatedAtMs = sum.CreatedAt * 1000
	}
	if sum.SourceKind == "" {
		sum.SourceKind = "vscode"
		if sum.Source != "" {
			sum.SourceKind = SourceKind(sourceRaw(sum.Source))
		}
	}
	sum.Archived = filepath.Base(filepath.Dir(sum.Path)) == "archived_sessions"
	fileName := ""
	if old, err := s.ix.Row(s.ctx, sum.ID); err == nil {
		fileName = old.FileName
	}
	return s.putRows([]*threadindex.Row{rowOf(&sum, s.rel(sum.Path), info.Size(), modNs, fileName)})
}

// Reindex re-reads a rollout's meta (e.g. after a turn appended to it) and returns the fresh summary.
func (s *Store) Reindex(path string) (Summary, error) {
	id, ok := threadIDFromFileName(filepath.Base(path))
	if !ok {
		return Summary{}, fmt.Errorf("rollout: not a rollout file name: %s", path)
	}
	info, err := os.Stat(path)
	if err != nil {
		return Summary{}, fmt.Errorf("rollout: reindex: %w", err)
	}
	df := diskFile{path: path, size: info.Size(), modNs: info.ModTime().UnixNano(),
		archived: filepath.Base(filepath.Dir(path)) == "archived_sessions"}
	if r, _ := s.indexFile(id, df); r == nil {
		return Summary{}, fmt.Errorf("rollout: reindex: unreadable %s", path)
	}
	return s.Get(id)
}

// ReadThread finds and reads a thread's rollout, applying the name recorded in session_index.jsonl.
func (s *Store) ReadThread(threadID string) (*Thread, error) {
	r, err := s.lookup(threadID)
	if err != nil {
		return nil, err
	}
	th, err := ReadFile(s.abs(r.Rel))
	if err != nil {
		return nil, err
	}
	if r.Name != "" {
		th.Name = r.Name
	}
	return th, nil
}

// Touch refreshes a thread's updatedAt (and size/mtime) after its rollout was appended to, re-reading the meta
// only while the thread still has no preview. Call it when a turn ends.
func (s *Store) Touch(threadID string) (Summary, error) {
	r, err := s.lookup(threadID)
	if err != nil {
		return Summary{}, err
	}
	path := s.abs(r.Rel)
	info, err := os.Stat(path)
	if err != nil {
		return Summary{}, fmt.Errorf("rollout: touch: %w", err)
	}
	if r.Preview == "" && info.Size() != r.Size {
		df := diskFile{path: path, size: info.Size(), modNs: info.ModTime().UnixNano(), archived: r.Archived}
		if r, _ := s.indexFile(threadID, df); r != nil {
			return s.Get(threadID)
		}
	}
	modNs := info.ModTime().UnixNano()
	if err := s.ix.Tx(s.ctx, func(tx *threadindex.Tx) error { return tx.Touch(threadID, info.Size(), modNs, modNs/1e6) }); err != nil {
		return Summary{}, fmt.Errorf("rollout: touch: %w", err)
	}
	r.Size, r.ModNs, r.UpdatedMs, r.RecencyMs = info.Size(), modNs, modNs/1e6, 0
	return s.summaryOf(r), nil
}

// Reconcile brings the index in line with every rollout on disk now (the background sweep, run in the
// caller's goroutine).
func (s *Store) Reconcile() error {
	s.waitReady()
	return s.reconcile()
}

// SpawnParent returns the parent thread id of a sub-agent session source ({"subagent":{"thread_spawn":
// {"parent_thread_id":…}}}), "" for any other source.
func SpawnParent(raw json.RawMessage) string {
	var src struct {
		Subagent struct {
			ThreadSpawn struct {
				ParentThreadID string `json:"parent_thread_id"`
			} `json:"thread_spawn"`
		} `json:"subagent"`
	}
	if json.Unmarshal(raw, &src) != nil {
		return ""
	}
	return src.Subagent.ThreadSpawn.ParentThreadID
}

// ProtocolSource splits Summary.Source into the protocol's forms: a plain name, the name of a
// {"custom": …} object source, or the inner value of a {"subagent": …} one (at most one of custom and
// subAgent is set). Plain names are mapped as the reference does ("mcp" is "appServer", a name outside
// the protocol's is "unknown", "" stays ""); so is an unrecognised object ("unknown").
func ProtocolSource(src string) (name string, custom *string, subAgent json.RawMessage) {
	if !strings.HasPrefix(src, "{") {
		if src == "" {
			return "", nil, nil
		}
		return SourceKind(StringSource(src)), nil, nil
	}
	var obj struct {
		Subagent json.RawMessage `json:"subagent"`
		Custom   *string         `json:"custom"`
	}
	if json.Unmarshal([]byte(src), &obj) == nil {
		switch {
		case len(obj.Subagent) > 0:
			return "", nil, obj.Subagent
		case obj.Custom != nil:
			return "", obj.Custom, nil
		}
	}
	return "unknown", nil, nil
}

// Index returns the store's database (thread sections live there).
func (s *Store) Index() *threadindex.Index { return s.ix }

// positions returns the section positions of rows.
func (s *Store) positions(rows []threadindex.Row) map[string]int64 {
	out := make(map[string]int64, len(rows))
	for i := range rows {
		out[rows[i].ID] = s.ix.Position(s.ctx, rows[i].ID)
	}
	return out
}

// snippet returns the first message containing lowerTerm, else the name or preview.
func snippet(content, name, preview, lowerTerm string) string {
	for _, msg := range strings.Split(content, threadindex.ContentSep) {
		if strings.Contains(strings.ToLower(msg), lowerTerm) {
			return msg
		}
	}
	if name != "" && strings.Contains(strings.ToLower(name), lowerTerm) {
		return name
	}
	return preview
}

// restoreSections gives a fresh (or rebuilt) index the thread sections kept in the durable state database, when
// there is one.
func restoreSections(ix *threadindex.Index, codexHome string) {
	path := filepath.Join(codexHome, threadindex.StateFile)
	if _, err := os.Stat(path); err != nil {
		return
	}
	st, err := threadindex.OpenState(path)
	if err == nil {
		err = ix.RestoreSections(context.Background(), st)
		_ = st.Close()
	}
	if err != nil {
		slog.Warn("rollout: restoring thread sections", "error", err)
	}
}
