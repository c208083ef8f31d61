// Package threadindex is the embedded SQLite database behind thread/list: one row per rollout with what
// listing needs, queried by page without touching the rollouts. It is a cache: the rollouts stay the source
// of truth, and a database that cannot be opened or has another schema is discarded and rebuilt by its owner.
package threadindex

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// SchemaVersion is stored in PRAGMA user_version; a database with another version is rebuilt.
const SchemaVersion = 10

// Row is one indexed thread.
type Row struct {
	ID        string
	Rel       string // rollout path relative to CODEX_HOME
	Size      int64  // rollout size when read; -1 when seeded without reading the rollout
	ModNs     int64  // rollout mtime when read
	CreatedMs int64
	// NameMs is the time in the rollout's file name (whole seconds, read as UTC), by which the reference
	// sorts and pages created_at listings; put fills it from Rel (else CreatedMs in whole seconds).
	NameMs        int64
	UpdatedMs     int64
	Cwd           string
	Preview       string
	FileName      string // last thread_name_updated in the rollout
	ModelProvider string
	Model         string
	Effort        string
	Source        string
	SourceKind    string
	CLIVersion    string
	Originator    string
	ForkedFrom    string
	Archived      bool
	GitInfo       string // JSON, "" when none
	Parent        string // the thread that spawned this one (sub-agent), "" when none
	HistoryMode   string // session_meta history_mode ("" when the rollout has none)
	ThreadSource  string // session_meta thread_source, the client's analytics classification ("" when none)
	// RecencyMs is the thread's recency when it is not UpdatedMs (0): an imported session's last turn end.
	RecencyMs int64
	Content   string // user and agent messages joined by ContentSep (thread/search); not filled by reads
	// Name is the effective name (session_index.jsonl over FileName); filled by reads, ignored by writes.
	Name string
	// Section is the thread's section (nil when none) and SectionEnteredMs when it entered it; filled by reads.
	Section          *Section
	SectionEnteredMs int64
}

const schema = `
CREATE TABLE IF NOT EXISTS threads (
  id TEXT PRIMARY KEY,
  rel TEXT NOT NULL,
  size INTEGER NOT NULL,
  mod_ns INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  name_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  cwd TEXT NOT NULL,
  preview TEXT NOT NULL,
  lpreview TEXT NOT NULL,
  file_name TEXT NOT NULL,
  lfile_name TEXT NOT NULL,
  model_provider TEXT NOT NULL,
  model TEXT NOT NULL,
  effort TEXT NOT NULL,
  source TEXT NOT NULL,
  source_kind TEXT NOT NULL,
  cli_version TEXT NOT NULL,
  originator TEXT NOT NULL,
  forked_from TEXT NOT NULL,
  archived INTEGER NOT NULL,
  git_info TEXT NOT NULL,
  parent TEXT NOT NULL,
  history_mode TEXT NOT NULL,
  recency_ms INTEGER NOT NULL,
  thread_source TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS contents (id TEXT PRIMARY KEY, content TEXT NOT NULL, lcontent TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS threads_parent ON threads(parent) WHERE parent <> '';
CREATE INDEX IF NOT EXISTS threads_named ON threads(archived, name_ms, id);
CREATE INDEX IF NOT EXISTS threads_updated ON threads(archived, updated_ms, id);
CREATE TABLE IF NOT EXISTS names (id TEXT PRIMARY KEY, name TEXT NOT NULL, lname TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dirs (path TEXT PRIMARY KEY, mtime INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
`

// ErrCorrupt reports a database file that is not a usable index (it should be removed and rebuilt).
var ErrCorrupt = errors.New("threadindex: corrupt or foreign database")

// Index is an open index database. Reads run concurrently; writes are serialized.
type Index struct {
	path string
	db   *sql.DB
	wmu  sync.Mutex

	smu   sync.Mutex
	stmts map[string]*sql.Stmt // prepared page queries by text: a page does not parse its SQL again
}

// maxStmts bounds the prepared page queries kept (their text varies with the number of filter values).
const maxStmts = 64

// prepared returns the prepared statement for a page query, preparing it on first use.
func (ix *Index) prepared(ctx context.Context, query string) (*sql.Stmt, bool, error) {
	ix.smu.Lock()
	defer ix.smu.Unlock()
	if st, ok := ix.stmts[query]; ok {
		return st, true, nil
	}
	st, err := ix.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, false, err
	}
	if len(ix.stmts) >= maxStmts {
		return st, false, nil // the caller closes it
	}
	if ix.stmts == nil {
		ix.stmts = map[string]*sql.Stmt{}
	}
	ix.stmts[query] = st
	return st, true, nil
}

// Open opens (creating if needed) the index at path. A file that is not an index of SchemaVersion gives
// ErrCorrupt; OpenOrRebuild handles that.
func Open(path string) (*Index, error) {
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("threadindex: open: %w", err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	ix := &Index{db: db, path: path}
	if err := ix.init(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return ix, nil
}

func (ix *Index) init() error {
	var v int
	if err := ix.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if v != 0 && v != SchemaVersion {
		return fmt.Errorf("%w: schema version %d", ErrCorrupt, v)
	}
	if v == 0 {
		var n int
		if err := ix.db.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if n != 0 {
			return fmt.Errorf("%w: unknown tables", ErrCorrupt)
		}
		if _, err := ix.db.Exec(schema + fmt.Sprintf("PRAGMA user_version = %d;", SchemaVersion)); err != nil {
			return fmt.Errorf("threadindex: create schema: %w", err)
		}
	}
	if err := ix.initSections(); err != nil {
		return err
	}
	// A cheap structural check here (a truncated file); the full check runs in the background (Check).
	var pages, pageSize int64
	if err := ix.db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if err := ix.db.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if info, err := os.Stat(ix.path); err == nil && info.Size() < pages*pageSize {
		if wal, err := os.Stat(ix.path + "-wal"); err != nil || wal.Size() == 0 {
			return fmt.Errorf("%w: file shorter than its %d pages", ErrCorrupt, pages)
		}
	}
	var n int
	if err := ix.db.QueryRow("SELECT count(*) FROM kv").Scan(&n); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return nil
}

// Check runs SQLite's integrity check over the whole database; an error wrapping ErrCorrupt means the index
// should be discarded (Discard) and rebuilt.
func (ix *Index) Check(ctx context.Context) error {
	var ok string
	if err := ix.db.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&ok); err != nil || ok != "ok" {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: quick_check: %v %s", ErrCorrupt, err, ok)
	}
	return nil
}

// Discard removes the database files so the next Open starts afresh (this Index keeps working on the
// unlinked files until closed).
func (ix *Index) Discard() {
	for _, p := range []string{ix.path, ix.path + "-wal", ix.path + "-shm", ix.path + "-journal"} {
		_ = os.Remove(p)
	}
}

// OpenOrRebuild opens the index at path, removing and recreating a corrupt one; fresh reports an empty index.
func OpenOrRebuild(path string) (ix *Index, fresh bool, err error) {
	_, statErr := os.Stat(path)
	ix, err = Open(path)
	if errors.Is(err, ErrCorrupt) {
		for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
			_ = os.Remove(p)
		}
		ix, err = Open(path)
		return ix, true, err
	}
	if err != nil {
		return nil, false, err
	}
	if statErr != nil {
		return ix, true, nil
	}
	return ix, ix.Get(context.Background(), "complete") != "1", nil
}

// Close closes the database.
func (ix *Index) Close() error {
	ix.smu.Lock()
	for _, st := range ix.stmts {
		_ = st.Close()
	}
	ix.stmts = nil
	ix.smu.Unlock()
	return ix.db.Close()
}

// Get returns a key of the kv table ("" when unset).
func (ix *Index) Get(ctx context.Context, key string) string {
	var v string
	_ = ix.db.QueryRowContext(ctx, "SELECT value FROM kv WHERE key = ?", key).Scan(&v)
	return v
}

// Set writes a key of the kv table.
func (ix *Index) Set(ctx context.Context, key, value string) error {
	return ix.Tx(ctx, func(tx *Tx) error { return tx.Set(key, value) })
}

// Tx is a write transaction.
type Tx struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

// Tx runs f in one write transaction: all of it is committed, or none of it when f fails or the process dies.
func (ix *Index) Tx(ctx context.Context, f func(*Tx) error) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("threadindex: begin: %w", err)
	}
	if err := f(&Tx{tx: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("threadindex: commit: %w", err)
	}
	return nil
}

// Set writes a key of the kv table.
func (t *Tx) Set(key, value string) error {
	_, err := t.tx.Exec("INSERT INTO kv(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", key, value)
	return err
}

const putColumns = ` INTO threads(id, rel, size, mod_ns, created_ms, name_ms, updated_ms, cwd, preview, lpreview,
		file_name, lfile_name, model_provider, model, effort, source, source_kind, cli_version, originator, forked_from,
		archived, git_info, parent, history_mode, recency_ms, thread_source) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`

// FileNameMs reads the time in a rollout file name ("rollout-2006-01-02T15-04-05-<id>…", the base of
// rel) as UTC, in Unix milliseconds.
func FileNameMs(rel string) (int64, bool) {
	base := path.Base(filepath.ToSlash(rel))
	const layout = "2006-01-02T15-04-05"
	if !strings.HasPrefix(base, "rollout-") || len(base) < len("rollout-")+len(layout) {
		return 0, false
	}
	t, err := time.Parse(layout, base[len("rollout-"):len("rollout-")+len(layout)])
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

// Put inserts or replaces a thread row.
func (t *Tx) Put(r *Row) error { return t.put("INSERT OR REPLACE", r) }

// PutIfAbsent inserts a thread row unless its id is indexed.
func (t *Tx) PutIfAbsent(r *Row) error { return t.put("INSERT OR IGNORE", r) }

func (t *Tx) put(verb string, r *Row) error {
	if t.stmts == nil {
		t.stmts = map[string]*sql.Stmt{}
	}
	st := t.stmts[verb]
	if st == nil {
		var err error
		if st, err = t.tx.Prepare(verb + putColumns); err != nil {
			return fmt.Errorf("threadindex: put: %w", err)
		}
		t.stmts[verb] = st
	}
	if ms, ok := FileNameMs(r.Rel); ok {
		r.NameMs = ms
	} else {
		r.NameMs = r.CreatedMs - r.CreatedMs%1000
	}
	_, err := st.Exec(r.ID, r.Rel, r.Size, r.ModNs, r.CreatedMs, r.NameMs, r.UpdatedMs, r.Cwd, r.Preview, strings.ToLower(r.Preview),
		r.FileName, strings.ToLower(r.FileName), r.ModelProvider, r.Model, r.Effort, r.Source, r.SourceKind,
		r.CLIVersion, r.Originator, r.ForkedFrom, r.Archived, r.GitInfo, r.Parent, r.HistoryMode, r.RecencyMs, r.ThreadSource)
	if err != nil {
		return fmt.Errorf("threadindex: put %s: %w", r.ID, err)
	}
	if r.Content == "" && verb != "INSERT OR REPLACE" {
		return nil
	}
	cst := t.stmts["content"]
	if cst == nil {
		if cst, err = t.tx.Prepare("INSERT OR REPLACE INTO contents(id, content, lcontent) VALUES(?, ?, ?)"); err != nil {
			return fmt.Errorf("threadindex: put: %w", err)
		}
		t.stmts["content"] = cst
	}
	if _, err := cst.Exec(r.ID, r.Content, strings.ToLower(r.Content)); err != nil {
		return fmt.Errorf("threadindex: put %s: %w", r.ID, err)
	}
	return nil
}

// Touch updates a row's file facts and updated time; the recency follows the updated time again.
func (t *Tx) Touch(id string, size, modNs, updatedMs int64) error {
	_, err := t.tx.Exec("UPDATE threads SET size = ?, mod_ns = ?, updated_ms = ?, recency_ms = 0 WHERE id = ?", size, modNs, updatedMs, id)
	return err
}

// Move updates a row's path and archived flag.
func (t *Tx) Move(id, rel string, archived bool, size, modNs int64) error {
	_, err := t.tx.Exec("UPDATE threads SET rel = ?, archived = ?, size = ?, mod_ns = ? WHERE id = ?", rel, archived, size, modNs, id)
	return err
}

// Delete removes a thread row.
func (t *Tx) Delete(id string) error {
	if _, err := t.tx.Exec("DELETE FROM threads WHERE id = ?", id); err != nil {
		return err
	}
	_, err := t.tx.Exec("DELETE FROM contents WHERE id = ?", id)
	return err
}

// SetName records a session_index.jsonl name.
func (t *Tx) SetName(id, name string) error {
	_, err := t.tx.Exec("INSERT OR REPLACE INTO names(id, name, lname) VALUES(?, ?, ?)", id, name, strings.ToLower(name))
	return err
}

// SetDir records a directory's mtime; mtime < 0 forgets it.
func (t *Tx) SetDir(path string, mtime int64) error {
	if mtime < 0 {
		_, err := t.tx.Exec("DELETE FROM dirs WHERE path = ?", path)
		return err
	}
	_, err := t.tx.Exec("INSERT OR REPLACE INTO dirs(path, mtime) VALUES(?, ?)", path, mtime)
	return err
}

// Dirs returns the recorded directory mtimes.
func (ix *Index) Dirs(ctx context.Context) (map[string]int64, error) {
	rows, err := ix.db.QueryContext(ctx, "SELECT path, mtime FROM dirs")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var p string
		var m int64
		if err := rows.Scan(&p, &m); err != nil {
			return nil, err
		}
		out[p] = m
	}
	return out, rows.Err()
}

// FileState is what reconciling needs about one row.
type FileState struct {
	Rel      string
	Size     int64
	ModNs    int64
	Archived bool
}

// Files returns the file facts of every row, keyed by id.
func (ix *Index) Files(ctx context.Context) (map[string]FileState, error) {
	rows, err := ix.db.QueryContext(ctx, "SELECT id, rel, size, mod_ns, archived FROM threads")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]FileState{}
	for rows.Next() {
		var id string
		var f FileState
		if err := rows.Scan(&id, &f.Rel, &f.Size, &f.ModNs, &f.Archived); err != nil {
			return nil, err
		}
		out[id] = f
	}
	return out, rows.Err()
}

// FilesUnder returns the file facts of the rows whose rollout lies in directory relDir.
func (ix *Index) FilesUnder(ctx context.Context, relDir string) (map[string]FileState, error) {
	rows, err := ix.db.QueryContext(ctx, "SELECT id, rel, size, mod_ns, archived FROM threads WHERE rel >= ? AND rel < ?",
		relDir+"/", relDir+"0") // '0' follows '/'
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]FileState{}
	for rows.Next() {
		var id string
		var f FileState
		if err := rows.Scan(&id, &f.Rel, &f.Size, &f.ModNs, &f.Archived); err != nil {
			return nil, err
		}
		if !strings.Contains(f.Rel[len(relDir)+1:], "/") {
			out[id] = f
		}
	}
	return out, rows.Err()
}

const rowColumns = `t.id, t.rel, t.size, t.mod_ns, t.created_ms, t.name_ms, t.updated_ms, t.cwd, t.preview, t.file_name,
	t.model_provider, t.model, t.effort, t.source, t.source_kind, t.cli_version, t.originator, t.forked_from,
	t.archived, t.git_info, t.parent, t.history_mode, t.recency_ms, t.thread_source, COALESCE(n.name, t.file_name), COALESCE(m.section_id, ''), COALESCE(s.name, ''),
	COALESCE(s.appearance, ''), COALESCE(m.entered_ms, 0)`

const rowJoins = ` FROM threads t LEFT JOIN names n ON n.id = t.id LEFT JOIN section_members m ON m.thread_id = t.id
	LEFT JOIN sections s ON s.id = m.section_id`

func scanRow(sc interface{ Scan(...any) error }) (Row, error) {
	var r Row
	var sec Section
	err := sc.Scan(&r.ID, &r.Rel, &r.Size, &r.ModNs, &r.CreatedMs, &r.NameMs, &r.UpdatedMs, &r.Cwd, &r.Preview, &r.FileName,
		&r.ModelProvider, &r.Model, &r.Effort, &r.Source, &r.SourceKind, &r.CLIVersion, &r.Originator, &r.ForkedFrom,
		&r.Archived, &r.GitInfo, &r.Parent, &r.HistoryMode, &r.RecencyMs, &r.ThreadSource, &r.Name, &sec.ID, &sec.Name, &sec.Appearance, &r.SectionEnteredMs)
	if sec.ID != "" {
		r.Section = &sec
	}
	return r, err
}

// ErrNoRow reports an id that is not indexed.
var ErrNoRow = errors.New("threadindex: no such thread")

// Row returns one thread.
func (ix *Index) Row(ctx context.Context, id string) (Row, error) {
	r, err := scanRow(ix.db.QueryRowContext(ctx, "SELECT "+rowColumns+rowJoins+" WHERE t.id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Row{}, ErrNoRow
	}
	return r, err
}

// Name returns a thread's effective name ("" when none).
func (ix *Index) Name(ctx context.Context, id string) string {
	var n string
	if ix.db.QueryRowContext(ctx, "SELECT name FROM names WHERE id = ?", id).Scan(&n) == nil {
		return n
	}
	_ = ix.db.QueryRowContext(ctx, "SELECT file_name FROM threads WHERE id = ?", id).Scan(&n)
	return n
}

// Count returns the number of rows.
func (ix *Index) Count(ctx context.Context) (int, error) {
	var n int
	err := ix.db.QueryRowContext(ctx, "SELECT count(*) FROM threads").Scan(&n)
	return n, err
}

// Query selects one page of threads.
type Query struct {
	ByUpdated bool // sort by updated_ms, else name_ms (the rollout file name's time, as the reference)
	// BySection sorts by position in Section (which must be set); cursors then carry the position.
	BySection bool
	// Section keeps the threads of this section only ("" = any).
	Section string
	Asc     bool
	// After continues strictly after (T, ID) in the sort direction when AfterID is set; else when HasAt, starts
	// at T inclusive (strictly after T with AtStrict).
	T        int64
	AfterID  string
	HasAt    bool
	AtStrict bool

	Archived       bool
	Cwds           []string
	ModelProviders []string
	SourceKinds    []string
	ForkedFrom     *string
	Parent         *string  // direct children of this thread
	Ancestor       *string  // descendants of this thread at any depth
	Excluded       []string // ids left out before the limit
	// Members, when not nil, keeps only the threads it lists (Outside: only those it does not); a project's.
	Members        *Members
	SearchTerm     string // lower-case substring of preview or name
	InContent      bool   // SearchTerm also matches the messages (thread/search)
	RequirePreview bool   // only threads with a first user message
	Limit          int
}

// Members is a set of thread ids a listing keeps (or, Outside, leaves out).
type Members struct {
	IDs     []string
	Outside bool
}

// Recency returns the recency (Unix ms: RecencyMs when set, else the updated time) of the listed threads that
// are indexed, not archived and have a first user message (as listings show them).
func (ix *Index) Recency(ctx context.Context, ids []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(ids) == 0 {
		return out, nil
	}
	b, _ := json.Marshal(ids)
	rows, err := ix.db.QueryContext(ctx, "SELECT id, CASE WHEN recency_ms > 0 THEN recency_ms ELSE updated_ms END FROM threads WHERE archived = 0 AND preview <> '' AND id IN (SELECT value FROM json_each(?))", string(b))
	if err != nil {
		return nil, fmt.Errorf("threadindex: recency: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var ms int64
		if err := rows.Scan(&id, &ms); err != nil {
			return nil, err
		}
		out[id] = ms
	}
	return out, rows.Err()
}

// List returns up to q.Limit+1 rows (the extra one tells the caller a next page exists).
func (ix *Index) List(ctx context.Context, q Query) ([]Row, error) {
	col := "t.name_ms"
	switch {
	case q.BySection:
		col = "m.position"
	case q.ByUpdated:
		col = "t.updated_ms"
	}
	var where []string
	var args []any
	where = append(where, "t.archived = ?")
	args = append(args, q.Archived)
	cmp, order := "<", "DESC"
	if q.Asc {
		cmp, order = ">", "ASC"
	}
	switch {
	case q.AfterID != "":
		where = append(where, fmt.Sprintf("(%s %s ? OR (%s = ? AND t.id %s ?))", col, cmp, col, cmp))
		args = append(args, q.T, q.T, q.AfterID)
	case q.HasAt && q.AtStrict:
		where = append(where, fmt.Sprintf("%s %s ?", col, cmp))
		args = append(args, q.T)
	case q.HasAt:
		where = append(where, fmt.Sprintf("%s %s= ?", col, cmp))
		args = append(args, q.T)
	}
	in := func(column string, vals []string) {
		if len(vals) == 0 {
			return
		}
		where = append(where, column+" IN ("+strings.TrimSuffix(strings.Repeat("?,", len(vals)), ",")+")")
		for _, v := range vals {
			args = append(args, v)
		}
	}
	if q.Section != "" {
		where = append(where, "m.section_id = ?")
		args = append(args, q.Section)
	}
	in("t.cwd", q.Cwds)
	in("t.model_provider", q.ModelProviders)
	in("t.source_kind", q.SourceKinds)
	if q.ForkedFrom != nil {
		where = append(where, "t.forked_from = ?")
		args = append(args, *q.ForkedFrom)
	}
	if q.Parent != nil {
		where = append(where, "t.parent = ?")
		args = append(args, *q.Parent)
	}
	if q.Ancestor != nil {
		where = append(where, `t.id IN (WITH RECURSIVE d(id) AS (SELECT id FROM threads WHERE parent = ?
			UNION SELECT c.id FROM threads c JOIN d ON c.parent = d.id) SELECT id FROM d)`)
		args = append(args, *q.Ancestor)
	}
	if len(q.Excluded) > 0 {
		where = append(where, "t.id NOT IN ("+strings.TrimSuffix(strings.Repeat("?,", len(q.Excluded)), ",")+")")
		for _, v := range q.Excluded {
			args = append(args, v)
		}
	}
	if q.Members != nil {
		not := ""
		if q.Members.Outside {
			not = "NOT "
		}
		ids, _ := json.Marshal(q.Members.IDs)
		if q.Members.IDs == nil {
			ids = []byte("[]")
		}
		where = append(where, "t.id "+not+"IN (SELECT value FROM json_each(?))")
		args = append(args, string(ids))
	}
	if q.RequirePreview {
		where = append(where, "t.preview <> ''")
	}
	switch {
	case q.SearchTerm != "" && q.InContent:
		where = append(where, "(instr(t.lpreview, ?) > 0 OR instr(COALESCE(n.lname, t.lfile_name), ?) > 0 OR instr((SELECT c.lcontent FROM contents c WHERE c.id = t.id), ?) > 0)")
		args = append(args, q.SearchTerm, q.SearchTerm, q.SearchTerm)
	case q.SearchTerm != "":
		where = append(where, "(instr(t.lpreview, ?) > 0 OR instr(COALESCE(n.lname, t.lfile_name), ?) > 0)")
		args = append(args, q.SearchTerm, q.SearchTerm)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 25
	}
	args = append(args, limit+1)
	stmt := "SELECT " + rowColumns + rowJoins + " WHERE " + strings.Join(where, " AND ") +
		fmt.Sprintf(" ORDER BY t.archived, %s %s, t.id %s LIMIT ?", col, order, order)
	st, kept, err := ix.prepared(ctx, stmt)
	if err != nil {
		return nil, fmt.Errorf("threadindex: list: %w", err)
	}
	if !kept {
		defer st.Close()
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("threadindex: list: %w", err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Exec runs one statement in the transaction.
func (t *Tx) Exec(stmt string, args ...any) error {
	_, err := t.tx.Exec(stmt, args...)
	return err
}

// Rel returns a row's rollout path inside the transaction.
func (t *Tx) Rel(id string) (string, bool) {
	var rel string
	if t.tx.QueryRow("SELECT rel FROM threads WHERE id = ?", id).Scan(&rel) != nil {
		return "", false
	}
	return rel, true
}

// ContentSep separates the messages of Row.Content.
const ContentSep = "\x1e"

// Content returns a thread's indexed messages ("" when none).
func (ix *Index) Content(ctx context.Context, id string) string {
	var c string
	_ = ix.db.QueryRowContext(ctx, "SELECT content FROM contents WHERE id = ?", id).Scan(&c)
	return c
}
