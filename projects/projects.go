// Package projects keeps the projects of one CODEX_HOME (project/*) and which thread belongs to which project,
// in tables of the durable state database. A project is a named, ordered group of threads with root paths and
// string metadata; a thread belongs to at most one project.
package projects

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Domain names this package's tables in the state database.
const Domain = "projects"

var migrations = []string{`
CREATE TABLE projects (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  roots TEXT NOT NULL,      -- JSON array of absolute, cleaned paths
  metadata TEXT NOT NULL,   -- JSON object of strings
  position INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE project_keys (
  key TEXT PRIMARY KEY,     -- idempotencyKey of project/create and project/import
  project_id TEXT NOT NULL  -- kept after the project is deleted, so the key is not reused
) WITHOUT ROWID;
CREATE TABLE thread_projects (
  thread_id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX thread_projects_project ON thread_projects(project_id, thread_id);
`}

// Database is the state database the tables live in (threadindex.State).
type Database interface {
	DB() *sql.DB
	Migrate(ctx context.Context, domain string, steps []string) error
}

// RecencyFunc returns the recency (Unix ms) of the listed threads that count for a project's recency
// (stored and not archived); the others are left out of the map.
type RecencyFunc func(ctx context.Context, threadIDs []string) (map[string]int64, error)

// Project is one project. RecencyMs is its newest counted member's recency (nil when it has none).
type Project struct {
	ID        string
	Name      string
	Roots     []string
	Metadata  map[string]string
	Position  int64
	CreatedMs int64
	UpdatedMs int64
	RecencyMs *int64
}

// Error kinds; every error of the store's operations that a client caused wraps one of them, and its message
// is the one to show.
var (
	ErrNotFound = errors.New("project not found")
	ErrInvalid  = errors.New("invalid project request")
)

type clientError struct {
	kind error
	msg  string
}

func (e *clientError) Error() string { return e.msg }
func (e *clientError) Unwrap() error { return e.kind }

func invalid(format string, a ...any) error {
	return &clientError{kind: ErrInvalid, msg: fmt.Sprintf(format, a...)}
}

func notFound(id string) error {
	return &clientError{kind: ErrNotFound, msg: "project not found: " + id}
}

// Store is the projects of one state database. Writes are serialized.
type Store struct {
	db      *sql.DB
	recency RecencyFunc
	now     func() time.Time
	wmu     sync.Mutex
}

// Open creates (or upgrades) the tables in db; recency tells the members' recency (nil: none counts).
func Open(ctx context.Context, db Database, recency RecencyFunc) (*Store, error) {
	if err := db.Migrate(ctx, Domain, migrations); err != nil {
		return nil, err
	}
	if recency == nil {
		recency = func(context.Context, []string) (map[string]int64, error) { return map[string]int64{}, nil }
	}
	return &Store{db: db.DB(), recency: recency, now: time.Now}, nil
}

// SetClock replaces the clock (tests).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// CreateOptions are project/create's (and project/import's) parameters.
type CreateOptions struct {
	Key      string
	Name     string
	Roots    []string
	Metadata map[string]string
	// Threads join the project (project/import); each must satisfy ThreadExists.
	Threads      []string
	ThreadExists func(id string) bool
}

// Create creates a project, or returns the one created earlier with the same key (created false). With
// Threads, they move into the new project; moved lists those whose project changed.
func (s *Store) Create(ctx context.Context, o CreateOptions) (p Project, created bool, moved []string, err error) {
	name := strings.TrimSpace(o.Name)
	if name == "" {
		return p, false, nil, invalid("project name must not be empty")
	}
	if o.Key == "" {
		return p, false, nil, invalid("idempotencyKey must not be empty")
	}
	roots, err := cleanRoots(o.Roots)
	if err != nil {
		return p, false, nil, err
	}
	seen := map[string]bool{}
	for _, id := range o.Threads {
		if seen[id] {
			return p, false, nil, invalid("duplicate thread id: %s", id)
		}
		seen[id] = true
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var existing string
	err = s.db.QueryRowContext(ctx, "SELECT project_id FROM project_keys WHERE key = ?", o.Key).Scan(&existing)
	switch {
	case err == nil:
		p, err := s.get(ctx, existing)
		if errors.Is(err, ErrNotFound) {
			return p, false, nil, invalid("idempotency key refers to deleted project: %s", o.Key)
		}
		return p, false, nil, err
	case !errors.Is(err, sql.ErrNoRows):
		return p, false, nil, err
	}
	for _, id := range o.Threads {
		if o.ThreadExists == nil || !o.ThreadExists(id) {
			return p, false, nil, invalid("thread not found: %s", id)
		}
	}
	meta := o.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	now := s.now().UnixMilli()
	p = Project{ID: uuid.Must(uuid.NewV7()).String(), Name: name, Roots: roots, Metadata: meta, CreatedMs: now, UpdatedMs: now}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var maxPos sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT max(position) FROM projects").Scan(&maxPos); err != nil {
			return err
		}
		if maxPos.Valid {
			p.Position = maxPos.Int64 + 1
		}
		rj, _ := json.Marshal(p.Roots)
		mj, _ := json.Marshal(p.Metadata)
		if _, err := tx.ExecContext(ctx, "INSERT INTO projects(id, name, roots, metadata, position, created_ms, updated_ms) VALUES(?, ?, ?, ?, ?, ?, ?)",
			p.ID, p.Name, string(rj), string(mj), p.Position, now, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO project_keys(key, project_id) VALUES(?, ?)", o.Key, p.ID); err != nil {
			return err
		}
		for _, id := range o.Threads {
			changed, err := assign(ctx, tx, id, p.ID)
			if err != nil {
				return err
			}
			if changed {
				moved = append(moved, id)
			}
		}
		return nil
	})
	if err != nil {
		return Project{}, false, nil, err
	}
	if len(o.Threads) > 0 {
		if err := s.fillRecency(ctx, []*Project{&p}); err != nil {
			return Project{}, false, nil, err
		}
	}
	return p, true, moved, nil
}

// cleanRoots cleans each root path and refuses duplicates; the paths must be absolute.
func cleanRoots(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, r := range in {
		if !filepath.IsAbs(r) {
			return nil, invalid("project root must be an absolute path: %s", r)
		}
		c := filepath.Clean(r)
		if slices.Contains(out, c) {
			return nil, invalid("duplicate project root: %s", c)
		}
		out = append(out, c)
	}
	return out, nil
}

func (s *Store) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

const projectColumns = "id, name, roots, metadata, position, created_ms, updated_ms"

func scanProject(sc interface{ Scan(...any) error }) (Project, error) {
	var p Project
	var roots, meta string
	if err := sc.Scan(&p.ID, &p.Name, &roots, &meta, &p.Position, &p.CreatedMs, &p.UpdatedMs); err != nil {
		return p, err
	}
	if err := json.Unmarshal([]byte(roots), &p.Roots); err != nil {
		return p, fmt.Errorf("projects: roots of %s: %w", p.ID, err)
	}
	if err := json.Unmarshal([]byte(meta), &p.Metadata); err != nil {
		return p, fmt.Errorf("projects: metadata of %s: %w", p.ID, err)
	}
	return p, nil
}

func (s *Store) get(ctx context.Context, id string) (Project, error) {
	p, err := scanProject(s.db.QueryRowContext(ctx, "SELECT "+projectColumns+" FROM projects WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, notFound(id)
	}
	if err != nil {
		return p, err
	}
	return p, s.fillRecency(ctx, []*Project{&p})
}

// Get returns one project.
func (s *Store) Get(ctx context.Context, id string) (Project, error) { return s.get(ctx, id) }

// Exists reports whether a project exists.
func (s *Store) Exists(ctx context.Context, id string) (bool, error) {
	var one int
	err := s.db.QueryRowContext(ctx, "SELECT 1 FROM projects WHERE id = ?", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// fillRecency sets each project's RecencyMs from its members.
func (s *Store) fillRecency(ctx context.Context, ps []*Project) error {
	if len(ps) == 0 {
		return nil
	}
	byProject := map[string]*Project{}
	for _, p := range ps {
		p.RecencyMs = nil
		byProject[p.ID] = p
	}
	members, err := s.membership(ctx)
	if err != nil {
		return err
	}
	var ids []string
	for tid, pid := range members {
		if byProject[pid] != nil {
			ids = append(ids, tid)
		}
	}
	rec, err := s.recency(ctx, ids)
	if err != nil {
		return err
	}
	for _, tid := range ids {
		ms, ok := rec[tid]
		if !ok {
			continue
		}
		p := byProject[members[tid]]
		if p.RecencyMs == nil || ms > *p.RecencyMs {
			p.RecencyMs = &ms
		}
	}
	return nil
}

// membership maps every assigned thread to its project.
func (s *Store) membership(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT thread_id, project_id FROM thread_projects")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var t, p string
		if err := rows.Scan(&t, &p); err != nil {
			return nil, err
		}
		out[t] = p
	}
	return out, rows.Err()
}

// UpdateOptions are project/update's parameters; nil fields are kept.
type UpdateOptions struct {
	Name     *string
	Roots    *[]string
	Metadata map[string]string
}

// Update changes a project; changed tells whether anything differs (only then is updatedAt moved).
func (s *Store) Update(ctx context.Context, id string, o UpdateOptions) (p Project, changed bool, err error) {
	var name string
	if o.Name != nil {
		name = strings.TrimSpace(*o.Name)
		if name == "" {
			return p, false, invalid("project name must not be empty")
		}
	}
	var roots []string
	if o.Roots != nil {
		if roots, err = cleanRoots(*o.Roots); err != nil {
			return p, false, err
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	p, err = s.get(ctx, id)
	if err != nil {
		return p, false, err
	}
	next := p
	if o.Name != nil {
		next.Name = name
	}
	if o.Roots != nil {
		next.Roots = roots
	}
	if o.Metadata != nil {
		next.Metadata = o.Metadata
	}
	if next.Name == p.Name && slices.Equal(next.Roots, p.Roots) && mapsEqual(next.Metadata, p.Metadata) {
		return p, false, nil
	}
	next.UpdatedMs = s.now().UnixMilli()
	rj, _ := json.Marshal(next.Roots)
	mj, _ := json.Marshal(next.Metadata)
	if _, err := s.db.ExecContext(ctx, "UPDATE projects SET name = ?, roots = ?, metadata = ?, updated_ms = ? WHERE id = ?",
		next.Name, string(rj), string(mj), next.UpdatedMs, id); err != nil {
		return p, false, err
	}
	return next, true, nil
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Move puts a project just before another one, or last when before is ""; positions are renumbered from 0.
// changed is false when the order stays the same.
func (s *Store) Move(ctx context.Context, id, before string) (changed bool, err error) {
	if before == id {
		return false, invalid("project %s cannot be moved before itself", id)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	rows, err := s.db.QueryContext(ctx, "SELECT id FROM projects ORDER BY position, id")
	if err != nil {
		return false, err
	}
	var order []string
	for rows.Next() {
		var pid string
		if err := rows.Scan(&pid); err != nil {
			rows.Close()
			return false, err
		}
		order = append(order, pid)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	if !slices.Contains(order, id) {
		return false, notFound(id)
	}
	if before != "" && !slices.Contains(order, before) {
		return false, invalid("before project not found: %s", before)
	}
	next := slices.DeleteFunc(slices.Clone(order), func(x string) bool { return x == id })
	at := len(next)
	if before != "" {
		at = slices.Index(next, before)
	}
	next = slices.Insert(next, at, id)
	if slices.Equal(next, order) {
		return false, nil
	}
	now := s.now().UnixMilli()
	return true, s.tx(ctx, func(tx *sql.Tx) error {
		for i, pid := range next {
			if _, err := tx.ExecContext(ctx, "UPDATE projects SET position = ? WHERE id = ?", i, pid); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "UPDATE projects SET updated_ms = ? WHERE id = ?", now, id)
		return err
	})
}

// Delete removes a project; its threads leave it (members lists them, by id). Its idempotency key stays
// taken.
func (s *Store) Delete(ctx context.Context, id string) (members []string, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	err = s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM projects WHERE id = ?", id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound(id)
		}
		rows, err := tx.QueryContext(ctx, "SELECT thread_id FROM thread_projects WHERE project_id = ? ORDER BY thread_id", id)
		if err != nil {
			return err
		}
		for rows.Next() {
			var t string
			if err := rows.Scan(&t); err != nil {
				rows.Close()
				return err
			}
			members = append(members, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM thread_projects WHERE project_id = ?", id)
		return err
	})
	return members, err
}

// Assign puts a thread into a project ("" takes it out of any); changed tells whether its project changed.
func (s *Store) Assign(ctx context.Context, threadID, projectID string) (changed bool, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if projectID != "" {
			var one int
			err := tx.QueryRowContext(ctx, "SELECT 1 FROM projects WHERE id = ?", projectID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return notFound(projectID)
			}
			if err != nil {
				return err
			}
		}
		changed, err = assign(ctx, tx, threadID, projectID)
		return err
	})
	return changed, err
}

func assign(ctx context.Context, tx *sql.Tx, threadID, projectID string) (bool, error) {
	var cur string
	err := tx.QueryRowContext(ctx, "SELECT project_id FROM thread_projects WHERE thread_id = ?", threadID).Scan(&cur)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	if cur == projectID {
		return false, nil
	}
	if projectID == "" {
		_, err = tx.ExecContext(ctx, "DELETE FROM thread_projects WHERE thread_id = ?", threadID)
	} else {
		_, err = tx.ExecContext(ctx, "INSERT INTO thread_projects(thread_id, project_id) VALUES(?, ?) ON CONFLICT(thread_id) DO UPDATE SET project_id = excluded.project_id", threadID, projectID)
	}
	return err == nil, err
}

// ProjectOf returns a thread's project ("" when it has none).
func (s *Store) ProjectOf(ctx context.Context, threadID string) (string, error) {
	var p string
	err := s.db.QueryRowContext(ctx, "SELECT project_id FROM thread_projects WHERE thread_id = ?", threadID).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return p, err
}

// Members returns the threads of a project, or with projectID "" every thread that has a project.
func (s *Store) Members(ctx context.Context, projectID string) ([]string, error) {
	q, args := "SELECT thread_id FROM thread_projects ORDER BY thread_id", []any{}
	if projectID != "" {
		q, args = "SELECT thread_id FROM thread_projects WHERE project_id = ? ORDER BY thread_id", []any{projectID}
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// ForgetThread takes a deleted thread out of its project.
func (s *Store) ForgetThread(ctx context.Context, threadID string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.db.ExecContext(ctx, "DELETE FROM thread_projects WHERE thread_id = ?", threadID)
	return err
}

// Sort keys of List.
const (
	SortPosition = "position"
	SortRecency  = "recencyAt"
)

// ListQuery selects one page of projects. SortKey defaults to SortPosition; Desc reverses the key's default
// direction only when set (nil: ascending for position, descending for recency).
type ListQuery struct {
	Cursor  string
	Limit   int
	SortKey string
	Desc    *bool
}

// DefaultLimit is the page size when the query sets none.
const DefaultLimit = 100

const badCursor = "invalid project cursor: malformed or mismatched sort anchor"

// List returns one page of projects and the cursor of the next page ("" when none follows). Recency sorting
// puts the projects without a recency last in either direction.
func (s *Store) List(ctx context.Context, q ListQuery) ([]Project, string, error) {
	key := q.SortKey
	if key == "" {
		if q.Desc != nil {
			return nil, "", invalid("sortDirection requires sortKey")
		}
		key = SortPosition
	}
	desc := key == SortRecency
	if q.Desc != nil {
		desc = *q.Desc
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 1
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+projectColumns+" FROM projects")
	if err != nil {
		return nil, "", err
	}
	var all []Project
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			rows.Close()
			return nil, "", err
		}
		all = append(all, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	ptrs := make([]*Project, len(all))
	for i := range all {
		ptrs[i] = &all[i]
	}
	if err := s.fillRecency(ctx, ptrs); err != nil {
		return nil, "", err
	}
	less := positionLess
	if key == SortRecency {
		less = recencyLess
	}
	sort.Slice(all, func(i, j int) bool { return less(&all[i], &all[j], desc) })
	start := 0
	if q.Cursor != "" {
		anchor, err := parseCursor(q.Cursor, key, desc)
		if err != nil {
			return nil, "", err
		}
		start = sort.Search(len(all), func(i int) bool { return less(&anchor, &all[i], desc) })
	}
	page := all[start:]
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = cursorOf(&page[len(page)-1], key, desc)
	}
	return page, next, nil
}

// positionLess orders by (position, id), reversed when desc.
func positionLess(a, b *Project, desc bool) bool {
	if a.Position != b.Position {
		return (a.Position < b.Position) != desc
	}
	return a.ID != b.ID && (a.ID < b.ID) != desc
}

// recencyLess orders by (recency, id), reversed when desc, with the projects without recency last.
func recencyLess(a, b *Project, desc bool) bool {
	switch {
	case a.RecencyMs == nil && b.RecencyMs != nil:
		return false
	case a.RecencyMs != nil && b.RecencyMs == nil:
		return true
	case a.RecencyMs != nil && *a.RecencyMs != *b.RecencyMs:
		return (*a.RecencyMs < *b.RecencyMs) != desc
	}
	return a.ID != b.ID && (a.ID < b.ID) != desc
}

func direction(desc bool) string {
	if desc {
		return "desc"
	}
	return "asc"
}

// cursorOf is the reference's cursor shape: "<position>|<id>", or "v1|recencyAt|<dir>|<ms or null>|<id>".
func cursorOf(p *Project, key string, desc bool) string {
	if key == SortPosition {
		return strconv.FormatInt(p.Position, 10) + "|" + p.ID
	}
	rec := "null"
	if p.RecencyMs != nil {
		rec = strconv.FormatInt(*p.RecencyMs, 10)
	}
	return "v1|" + SortRecency + "|" + direction(desc) + "|" + rec + "|" + p.ID
}

// parseCursor decodes a cursor of the same sort into the anchor project it names.
func parseCursor(c, key string, desc bool) (Project, error) {
	parts := strings.Split(c, "|")
	var anchor Project
	switch {
	case key == SortPosition && len(parts) == 2 && parts[1] != "":
		pos, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			break
		}
		anchor.Position, anchor.ID = pos, parts[1]
		return anchor, nil
	case key == SortRecency && len(parts) == 5 && parts[0] == "v1" && parts[1] == SortRecency && parts[2] == direction(desc) && parts[4] != "":
		anchor.ID = parts[4]
		if parts[3] == "null" {
			return anchor, nil
		}
		ms, err := strconv.ParseInt(parts[3], 10, 64)
		if err != nil {
			break
		}
		anchor.RecencyMs = &ms
		return anchor, nil
	}
	return anchor, invalid("%s", badCursor)
}
