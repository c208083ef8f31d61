package rollout

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Errors returned by Store.
var (
	ErrNotFound  = errors.New("rollout: no rollout found for thread id")
	ErrBadCursor = errors.New("rollout: invalid cursor")
)

// IndexFileName is our index file under CODEX_HOME (a cache; the rollouts are the source of truth).
const IndexFileName = "appserver_index_v1.jsonl"

// SessionIndexFileName is the reference's append-only thread-name file under CODEX_HOME.
const SessionIndexFileName = "session_index.jsonl"

// Sort keys and directions accepted by List.
const (
	SortCreatedAt = "created_at"
	SortUpdatedAt = "updated_at"
	SortAsc       = "asc"
	SortDesc      = "desc"
)

// DefaultListLimit is the page size when ListQuery.Limit is 0.
const DefaultListLimit = 25

// InteractiveSourceKinds is the source filter applied when ListQuery.SourceKinds is empty.
var InteractiveSourceKinds = []string{"cli", "vscode"}

// refreshInterval bounds how often List rescans directories for rollouts created behind our back.
var refreshInterval = 2 * time.Second

// Summary is what thread/list needs about one thread (protocol Thread minus status and turns).
type Summary struct {
	ID              string          `json:"id"`
	Path            string          `json:"path"`
	Cwd             string          `json:"cwd"`
	Preview         string          `json:"preview"`
	Name            string          `json:"name,omitempty"`
	CreatedAt       int64           `json:"createdAt"` // unix seconds
	UpdatedAt       int64           `json:"updatedAt"` // unix seconds (rollout mtime, like the reference)
	CreatedAtMs     int64           `json:"createdAtMs"`
	UpdatedAtMs     int64           `json:"updatedAtMs"`
	ModelProvider   string          `json:"modelProvider"`
	Model           string          `json:"model,omitempty"`
	ReasoningEffort string          `json:"reasoningEffort,omitempty"`
	Source          string          `json:"source"`
	SourceKind      string          `json:"sourceKind"`
	CLIVersion      string          `json:"cliVersion"`
	Originator      string          `json:"originator"`
	ForkedFromID    string          `json:"forkedFromId,omitempty"`
	Archived        bool            `json:"archived"`
	GitInfo         json.RawMessage `json:"gitInfo,omitempty"`
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
}

// entry is one indexed rollout.
type entry struct {
	Summary
	Rel      string // path relative to CODEX_HOME
	Size     int64
	ModNs    int64
	FileName string // name from thread_name_updated events in the file
	Deleted  bool

	lowerText string
}

// indexRecord is the compact on-disk form of an entry (one JSON line of the index file).
type indexRecord struct {
	ID              string          `json:"i"`
	Rel             string          `json:"r,omitempty"`
	Size            int64           `json:"s,omitempty"`
	ModNs           int64           `json:"m,omitempty"`
	CreatedAtMs     int64           `json:"c,omitempty"`
	Cwd             string          `json:"d,omitempty"`
	Preview         string          `json:"p,omitempty"`
	FileName        string          `json:"n,omitempty"`
	ModelProvider   string          `json:"mp,omitempty"`
	Model           string          `json:"mo,omitempty"`
	ReasoningEffort string          `json:"re,omitempty"`
	Source          string          `json:"so,omitempty"`
	SourceKind      string          `json:"sk,omitempty"`
	CLIVersion      string          `json:"v,omitempty"`
	Originator      string          `json:"o,omitempty"`
	ForkedFromID    string          `json:"f,omitempty"`
	Archived        bool            `json:"a,omitempty"`
	GitInfo         json.RawMessage `json:"g,omitempty"`
	Deleted         bool            `json:"x,omitempty"`
}

func (e *entry) record() indexRecord {
	return indexRecord{ID: e.ID, Rel: e.Rel, Size: e.Size, ModNs: e.ModNs, CreatedAtMs: e.CreatedAtMs, Cwd: e.Cwd,
		Preview: e.Preview, FileName: e.FileName, ModelProvider: e.ModelProvider, Model: e.Model,
		ReasoningEffort: e.ReasoningEffort, Source: e.Source, SourceKind: e.SourceKind, CLIVersion: e.CLIVersion,
		Originator: e.Originator, ForkedFromID: e.ForkedFromID, Archived: e.Archived, GitInfo: e.GitInfo,
		Deleted: e.Deleted}
}

func (s *Store) entryFromRecord(r *indexRecord) *entry {
	e := &entry{Rel: r.Rel, Size: r.Size, ModNs: r.ModNs, FileName: r.FileName, Deleted: r.Deleted}
	e.Summary = Summary{ID: r.ID, Path: filepath.Join(s.home, r.Rel), Cwd: r.Cwd, Preview: r.Preview,
		CreatedAt: r.CreatedAtMs / 1000, CreatedAtMs: r.CreatedAtMs, UpdatedAt: r.ModNs / 1e9, UpdatedAtMs: r.ModNs / 1e6,
		ModelProvider: r.ModelProvider, Model: r.Model, ReasoningEffort: r.ReasoningEffort, Source: r.Source,
		SourceKind: r.SourceKind, CLIVersion: r.CLIVersion, Originator: r.Originator, ForkedFromID: r.ForkedFromID,
		Archived: r.Archived, GitInfo: r.GitInfo}
	return e
}

// Store indexes the rollouts of one CODEX_HOME for listing and manages their files.
type Store struct {
	home string

	mu          sync.Mutex
	entries     map[string]*entry
	names       map[string]string // session_index.jsonl
	byCreated   []*entry
	byUpdated   []*entry
	sortedDirty bool
	dirMtimes   map[string]int64
	lastScan    time.Time
	indexLines  int
}

// Open loads (or rebuilds) the index of codexHome and reconciles it with the rollout files on disk: new files are
// read, changed files (size or mtime) re-read, vanished files dropped.
func Open(codexHome string) (*Store, error) {
	s := &Store{home: codexHome, entries: map[string]*entry{}, names: map[string]string{}, dirMtimes: map[string]int64{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loadIndex()
	s.loadNames()
	changed, err := s.fullScan()
	if err != nil {
		return nil, err
	}
	if changed || s.indexLines > 2*len(s.entries)+64 {
		if err := s.rewriteIndex(); err != nil {
			slog.Warn("rollout: cannot write index", "err", err)
		}
	}
	s.sortedDirty = true
	return s, nil
}

// Home returns the CODEX_HOME the store indexes.
func (s *Store) Home() string { return s.home }

func (s *Store) indexPath() string { return filepath.Join(s.home, IndexFileName) }

func (s *Store) loadIndex() {
	f, err := os.Open(s.indexPath())
	if err != nil {
		return
	}
	defer f.Close()
	lr := newLineReader(f)
	for {
		ln, truncated, complete, err := lr.next(8 << 20)
		if err != nil {
			break
		}
		if truncated || !complete || len(ln) == 0 {
			continue
		}
		s.indexLines++
		var r indexRecord
		if json.Unmarshal(ln, &r) != nil || r.ID == "" {
			continue
		}
		if r.Deleted {
			delete(s.entries, r.ID)
			continue
		}
		s.entries[r.ID] = s.entryFromRecord(&r)
	}
}

func (s *Store) loadNames() {
	f, err := os.Open(filepath.Join(s.home, SessionIndexFileName))
	if err != nil {
		return
	}
	defer f.Close()
	lr := newLineReader(f)
	for {
		ln, truncated, _, err := lr.next(1 << 20)
		if err != nil {
			break
		}
		if truncated || len(bytes.TrimSpace(ln)) == 0 {
			continue
		}
		var rec struct {
			ID         string `json:"id"`
			ThreadName string `json:"thread_name"`
		}
		if json.Unmarshal(ln, &rec) == nil && rec.ID != "" {
			s.names[rec.ID] = rec.ThreadName
		}
	}
}

// threadIDFromFileName extracts <id> from rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl.
func threadIDFromFileName(name string) (string, bool) {
	const prefixLen = len("rollout-2006-01-02T15-04-05-")
	if !strings.HasPrefix(name, "rollout-") || !strings.HasSuffix(name, ".jsonl") || len(name) <= prefixLen+len(".jsonl") {
		return "", false
	}
	id := name[prefixLen : len(name)-len(".jsonl")]
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

// fullScan stats every rollout and reconciles the index; reports whether anything changed.
func (s *Store) fullScan() (bool, error) {
	if _, err := os.Stat(s.home); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("rollout: codex home: %w", err)
	}
	dirs := s.dayDirs()
	disk := map[string]diskFile{}
	archDir := filepath.Join(s.home, "archived_sessions")
	for d := range dirs {
		listDir(d, d == archDir, disk)
	}
	s.dirMtimes = dirs
	s.lastScan = time.Now()
	changed := false
	for id := range s.entries {
		if _, ok := disk[id]; !ok {
			delete(s.entries, id)
			changed = true
		}
	}
	for id, df := range disk {
		if e, ok := s.entries[id]; ok && e.Path == df.path && e.Size == df.size && e.ModNs == df.modNs && e.Archived == df.archived {
			s.applyName(e)
			continue
		}
		if s.indexFile(id, df) {
			changed = true
		}
	}
	return changed, nil
}

// quickScan relists only directories whose mtime changed (files added, removed or renamed behind our back).
func (s *Store) quickScan() {
	dirs := s.dayDirs()
	s.lastScan = time.Now()
	stale := map[string]bool{}
	for d, mt := range dirs {
		if old, ok := s.dirMtimes[d]; !ok || old != mt {
			stale[d] = true
		}
	}
	for d := range s.dirMtimes {
		if _, ok := dirs[d]; !ok {
			stale[d] = true
		}
	}
	s.dirMtimes = dirs
	if len(stale) == 0 {
		return
	}
	byDir := map[string][]*entry{}
	for _, e := range s.entries {
		if d := filepath.Dir(e.Path); stale[d] {
			byDir[d] = append(byDir[d], e)
		}
	}
	archDir := filepath.Join(s.home, "archived_sessions")
	listings := map[string]map[string]diskFile{}
	for d := range stale {
		disk := map[string]diskFile{}
		if _, ok := dirs[d]; ok {
			listDir(d, d == archDir, disk)
		}
		listings[d] = disk
		// Removals first: a file moved between two stale directories is then re-added from its new place.
		for _, e := range byDir[d] {
			if _, ok := disk[e.ID]; !ok && s.entries[e.ID] == e {
				if _, err := os.Stat(e.Path); err != nil {
					delete(s.entries, e.ID)
					s.sortedDirty = true
				}
			}
		}
	}
	var appended []*entry
	for _, disk := range listings {
		for id, df := range disk {
			if e, ok := s.entries[id]; ok && e.Path == df.path && e.Size == df.size && e.ModNs == df.modNs {
				continue
			}
			if s.indexFile(id, df) {
				appended = append(appended, s.entries[id])
			}
		}
	}
	for _, e := range appended {
		s.appendIndex(e)
	}
}

// indexFile reads one rollout's meta into the index; false if the file is unreadable.
func (s *Store) indexFile(id string, df diskFile) bool {
	m, err := ReadMeta(df.path)
	if err != nil {
		slog.Warn("rollout: skipping unreadable rollout", "path", df.path, "err", err)
		return false
	}
	if m.Session.ID != "" && m.Session.ID != id {
		slog.Warn("rollout: file name and session id differ", "path", df.path, "id", m.Session.ID)
	}
	e := &entry{Size: df.size, ModNs: df.modNs, FileName: m.Name}
	e.Summary = summaryFromMeta(id, m, df)
	e.Rel, _ = filepath.Rel(s.home, df.path)
	s.applyName(e)
	s.entries[id] = e
	s.sortedDirty = true
	return true
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
	return sum
}

func (s *Store) applyName(e *entry) {
	if n, ok := s.names[e.ID]; ok {
		e.Name = n
	} else {
		e.Name = e.FileName
	}
	e.lowerText = strings.ToLower(e.Preview + "\x00" + e.Name)
}

// rewriteIndex writes the whole index atomically (temp file + rename).
func (s *Store) rewriteIndex() error {
	tmp, err := os.CreateTemp(s.home, IndexFileName+".tmp*")
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	enc := json.NewEncoder(w)
	for _, e := range s.entries {
		if err := enc.Encode(e.record()); err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
			return err
		}
	}
	if err := w.Flush(); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), s.indexPath()); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	s.indexLines = len(s.entries)
	return nil
}

// appendIndex appends one entry line (best effort; the index is a cache).
func (s *Store) appendIndex(e *entry) {
	if _, err := os.Stat(s.home); err != nil {
		return
	}
	b, err := json.Marshal(e.record())
	if err != nil {
		return
	}
	f, err := os.OpenFile(s.indexPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		slog.Warn("rollout: cannot append to index", "err", err)
		return
	}
	defer f.Close()
	_, _ = f.Write(append(b, '\n'))
	s.indexLines++
}

func (s *Store) maybeRefresh() {
	if time.Since(s.lastScan) >= refreshInterval {
		s.quickScan()
	}
}

func (s *Store) sortIfDirty() {
	if !s.sortedDirty && s.byCreated != nil {
		return
	}
	all := make([]*entry, 0, len(s.entries))
	for _, e := range s.entries {
		all = append(all, e)
	}
	s.byCreated = slices.Clone(all)
	slices.SortFunc(s.byCreated, func(a, b *entry) int { return cmpKey(a.CreatedAtMs, a.ID, b.CreatedAtMs, b.ID) })
	s.byUpdated = all
	slices.SortFunc(s.byUpdated, func(a, b *entry) int { return cmpKey(a.UpdatedAtMs, a.ID, b.UpdatedAtMs, b.ID) })
	s.sortedDirty = false
}

func cmpKey(at int64, aid string, bt int64, bid string) int {
	switch {
	case at < bt:
		return -1
	case at > bt:
		return 1
	}
	return strings.Compare(aid, bid)
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
	// Backwards is the first thread's sort timestamp (RFC 3339, milliseconds, UTC) as the reference reports
	// it: used as a cursor it selects the threads at or beyond that instant in the requested direction, so a
	// client can page back towards newer threads ("" for an empty page).
	Backwards string
}

// List returns one page ordered by (timestamp, id) and the cursor of the next page ("" when there is none).
func (s *Store) List(q ListQuery) ([]Summary, string, error) {
	p, err := s.ListPage(q)
	return p.Threads, p.Next, err
}

// backwardsLayout formats Page.Backwards.
const backwardsLayout = "2006-01-02T15:04:05.000Z"

// ListPage returns one page ordered by (timestamp, id) with its forward and backwards cursors. Cursors are
// either Next values or Backwards timestamps.
func (s *Store) ListPage(q ListQuery) (Page, error) {
	key := q.SortKey
	if key == "" {
		key = SortCreatedAt
	}
	if key != SortCreatedAt && key != SortUpdatedAt {
		return Page{}, fmt.Errorf("rollout: unsupported sort key %q", key)
	}
	dir := q.SortDirection
	if dir == "" {
		dir = SortDesc
	}
	if dir != SortAsc && dir != SortDesc {
		return Page{}, fmt.Errorf("rollout: unsupported sort direction %q", dir)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	var cur *cursor
	var at *int64 // a Backwards cursor: the instant, inclusive
	if q.Cursor != "" {
		if t, err := time.Parse(time.RFC3339Nano, q.Cursor); err == nil {
			ms := t.UnixMilli()
			at = &ms
		} else {
			c, err := decodeCursor(q.Cursor)
			if err != nil {
				return Page{}, err
			}
			if c.Key != key {
				return Page{}, fmt.Errorf("%w: sort key changed", ErrBadCursor)
			}
			cur = &c
		}
	}
	kinds := q.SourceKinds
	if len(kinds) == 0 {
		kinds = InteractiveSourceKinds
	}
	term := strings.ToLower(q.SearchTerm)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.maybeRefresh()
	s.sortIfDirty()
	order := s.byCreated
	keyOf := func(e *entry) int64 { return e.CreatedAtMs }
	if key == SortUpdatedAt {
		order = s.byUpdated
		keyOf = func(e *entry) int64 { return e.UpdatedAtMs }
	}
	match := func(e *entry) bool {
		if e.Archived != q.Archived {
			return false
		}
		if len(q.Cwds) > 0 && !slices.Contains(q.Cwds, e.Cwd) {
			return false
		}
		if len(q.ModelProviders) > 0 && !slices.Contains(q.ModelProviders, e.ModelProvider) {
			return false
		}
		if !slices.Contains(kinds, e.SourceKind) {
			return false
		}
		return term == "" || strings.Contains(e.lowerText, term)
	}
	var page []Summary
	var first, last *entry
	more := false
	visit := func(e *entry) bool {
		if !match(e) {
			return true
		}
		if len(page) == limit {
			more = true
			return false
		}
		page = append(page, e.Summary)
		if first == nil {
			first = e
		}
		last = e
		return true
	}
	if dir == SortDesc {
		start := len(order)
		if cur != nil {
			start, _ = slices.BinarySearchFunc(order, *cur, func(e *entry, c cursor) int { return cmpKey(keyOf(e), e.ID, c.T, c.ID) })
		} else if at != nil {
			start, _ = slices.BinarySearchFunc(order, *at+1, func(e *entry, t int64) int { return cmpKey(keyOf(e), "", t, "") })
		}
		for i := start - 1; i >= 0 && visit(order[i]); i-- {
		}
	} else {
		start := 0
		if cur != nil {
			i, found := slices.BinarySearchFunc(order, *cur, func(e *entry, c cursor) int { return cmpKey(keyOf(e), e.ID, c.T, c.ID) })
			if found {
				i++
			}
			start = i
		} else if at != nil {
			start, _ = slices.BinarySearchFunc(order, *at, func(e *entry, t int64) int { return cmpKey(keyOf(e), "", t, "") })
		}
		for i := start; i < len(order) && visit(order[i]); i++ {
		}
	}
	next := ""
	if more && last != nil {
		next = encodeCursor(cursor{Key: key, T: keyOf(last), ID: last.ID})
	}
	if page == nil {
		page = []Summary{}
	}
	back := ""
	if first != nil {
		back = time.UnixMilli(keyOf(first)).UTC().Format(backwardsLayout)
	}
	return Page{Threads: page, Next: next, Backwards: back}, nil
}

// Get returns the summary of one thread.
func (s *Store) Get(threadID string) (Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(threadID)
	if err != nil {
		return Summary{}, err
	}
	return e.Summary, nil
}

// lookup finds an entry, rescanning once for files created behind our back.
func (s *Store) lookup(threadID string) (*entry, error) {
	if e, ok := s.entries[threadID]; ok {
		if _, err := os.Stat(e.Path); err == nil {
			return e, nil
		}
	}
	if !validThreadID(threadID) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, threadID)
	}
	p, err := findRolloutByID(s.home, threadID)
	if err != nil {
		delete(s.entries, threadID)
		s.sortedDirty = true
		return nil, fmt.Errorf("%w: %s", ErrNotFound, threadID)
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, threadID)
	}
	df := diskFile{path: p, size: info.Size(), modNs: info.ModTime().UnixNano(),
		archived: filepath.Base(filepath.Dir(p)) == "archived_sessions"}
	if !s.indexFile(threadID, df) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, threadID)
	}
	e := s.entries[threadID]
	s.appendIndex(e)
	return e, nil
}

// Find returns the rollout path of a thread and whether it is archived.
func (s *Store) Find(threadID string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(threadID)
	if err != nil {
		return "", false, err
	}
	return e.Path, e.Archived, nil
}

// Archive moves the rollout to $CODEX_HOME/archived_sessions/<same name>; archiving an archived thread is a no-op.
func (s *Store) Archive(threadID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(threadID)
	if err != nil {
		return err
	}
	if e.Archived {
		return nil
	}
	dir := filepath.Join(s.home, "archived_sessions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("rollout: archive: %w", err)
	}
	return s.move(e, filepath.Join(dir, filepath.Base(e.Path)), true)
}

// Unarchive moves an archived rollout back to sessions/YYYY/MM/DD (the date in its file name) and returns its
// summary; unarchiving a live thread is a no-op.
func (s *Store) Unarchive(threadID string) (Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(threadID)
	if err != nil {
		return Summary{}, err
	}
	if !e.Archived {
		return e.Summary, nil
	}
	base := filepath.Base(e.Path)
	t, err := time.Parse("2006-01-02", strings.TrimPrefix(base, "rollout-")[:min(10, len(base)-len("rollout-"))])
	if err != nil {
		return Summary{}, fmt.Errorf("rollout: unarchive: no date in file name %q", base)
	}
	dir := filepath.Join(s.home, "sessions", t.Format("2006"), t.Format("01"), t.Format("02"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Summary{}, fmt.Errorf("rollout: unarchive: %w", err)
	}
	if err := s.move(e, filepath.Join(dir, base), false); err != nil {
		return Summary{}, err
	}
	return e.Summary, nil
}

func (s *Store) move(e *entry, dst string, archived bool) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("rollout: %s already exists", dst)
	}
	src := e.Path
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("rollout: move: %w", err)
	}
	e.Path = dst
	e.Rel, _ = filepath.Rel(s.home, dst)
	e.Archived = archived
	if info, err := os.Stat(dst); err == nil {
		e.Size, e.ModNs = info.Size(), info.ModTime().UnixNano()
	}
	// Our own rename changed both directories: record their new mtimes so the next scan does not relist them.
	for _, d := range []string{filepath.Dir(src), filepath.Dir(dst)} {
		if _, tracked := s.dirMtimes[d]; !tracked {
			continue
		}
		if info, err := os.Stat(d); err == nil {
			s.dirMtimes[d] = info.ModTime().UnixNano()
		}
	}
	s.sortedDirty = true
	s.appendIndex(e)
	return nil
}

// Delete removes a thread's rollout file and index entry.
func (s *Store) Delete(threadID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(threadID)
	if err != nil {
		return err
	}
	if err := os.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rollout: delete: %w", err)
	}
	delete(s.entries, threadID)
	s.sortedDirty = true
	s.appendIndex(&entry{Summary: Summary{ID: threadID}, Deleted: true})
	return nil
}

// SetName records a thread name the way the reference does: a {"id","thread_name","updated_at"} line appended to
// $CODEX_HOME/session_index.jsonl (the rollout itself is not touched).
func (s *Store) SetName(threadID, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(threadID)
	if err != nil {
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
	s.names[threadID] = name
	s.applyName(e)
	return nil
}

// Name returns the recorded name of a thread ("" if none).
func (s *Store) Name(threadID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.names[threadID]; ok {
		return n
	}
	if e, ok := s.entries[threadID]; ok {
		return e.Name
	}
	return ""
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
	s.mu.Lock()
	defer s.mu.Unlock()
	e := &entry{Summary: sum, Size: info.Size(), ModNs: info.ModTime().UnixNano()}
	if old, ok := s.entries[sum.ID]; ok {
		e.FileName = old.FileName
	}
	e.UpdatedAtMs = e.ModNs / 1e6
	e.UpdatedAt = e.ModNs / 1e9
	if e.CreatedAtMs == 0 {
		e.CreatedAtMs = e.CreatedAt * 1000
	}
	if e.SourceKind == "" {
		e.SourceKind = "vscode"
		if e.Source != "" {
			e.SourceKind = SourceKind(StringSource(e.Source))
		}
	}
	e.Rel, _ = filepath.Rel(s.home, sum.Path)
	e.Archived = filepath.Base(filepath.Dir(sum.Path)) == "archived_sessions"
	s.applyName(e)
	s.entries[sum.ID] = e
	s.sortedDirty = true
	s.appendIndex(e)
	return nil
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
	s.mu.Lock()
	defer s.mu.Unlock()
	df := diskFile{path: path, size: info.Size(), modNs: info.ModTime().UnixNano(),
		archived: filepath.Base(filepath.Dir(path)) == "archived_sessions"}
	if !s.indexFile(id, df) {
		return Summary{}, fmt.Errorf("rollout: reindex: unreadable %s", path)
	}
	e := s.entries[id]
	s.appendIndex(e)
	return e.Summary, nil
}

// ReadThread finds and reads a thread's rollout, applying the name recorded in session_index.jsonl.
func (s *Store) ReadThread(threadID string) (*Thread, error) {
	path, _, err := s.Find(threadID)
	if err != nil {
		return nil, err
	}
	th, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if n, ok := s.names[threadID]; ok {
		th.Name = n
	}
	s.mu.Unlock()
	return th, nil
}

// Touch refreshes a thread's updatedAt (and size/mtime) after its rollout was appended to, re-reading the meta
// only while the thread still has no preview. Call it when a turn ends.
func (s *Store) Touch(threadID string) (Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(threadID)
	if err != nil {
		return Summary{}, err
	}
	info, err := os.Stat(e.Path)
	if err != nil {
		return Summary{}, fmt.Errorf("rollout: touch: %w", err)
	}
	if e.Preview == "" && info.Size() != e.Size {
		df := diskFile{path: e.Path, size: info.Size(), modNs: info.ModTime().UnixNano(), archived: e.Archived}
		if s.indexFile(threadID, df) {
			e = s.entries[threadID]
		}
	} else {
		e.Size, e.ModNs = info.Size(), info.ModTime().UnixNano()
		e.UpdatedAt, e.UpdatedAtMs = e.ModNs/1e9, e.ModNs/1e6
		s.sortedDirty = true
	}
	s.appendIndex(e)
	return e.Summary, nil
}
