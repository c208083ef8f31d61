package threadindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// StateFile is the name, under CODEX_HOME, of the database holding what the rollouts cannot rebuild.
const StateFile = "appserver_state.sqlite"

// stateMigrations are applied in order; PRAGMA user_version counts the ones applied. Migrations are only
// ever appended: this database is never discarded, so a newer server must upgrade it in place.
var stateMigrations = []string{
	`CREATE TABLE thread_meta (
  thread_id TEXT PRIMARY KEY,
  git_info TEXT,         -- JSON object replacing the rollout's git info; NULL: the rollout's
  daybreak INTEGER       -- thread/metadata/update daybreakEnabled; NULL: unset
) WITHOUT ROWID;`,
	`CREATE TABLE domain_versions (
  domain TEXT PRIMARY KEY, -- a package keeping its tables here (projects, attachments, turnqueue)
  version INTEGER NOT NULL -- how many of its steps are applied
) WITHOUT ROWID;`,
}

// State is the durable per-thread state set by clients (thread/metadata/update). Unlike Index it is not a
// cache: a rebuild of the index never touches it.
type State struct {
	db  *sql.DB
	wmu sync.Mutex
}

// ThreadMeta is one thread's client-set metadata; nil fields are unset.
type ThreadMeta struct {
	GitInfo  *string // JSON
	Daybreak *bool
}

// OpenState opens (creating or upgrading) the state database at path.
func OpenState(path string) (*State, error) {
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("threadindex: open state: %w", err)
	}
	st := &State{db: db}
	if err := st.migrate(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return st, nil
}

func (st *State) migrate() error {
	tx, err := st.db.Begin()
	if err != nil {
		return fmt.Errorf("threadindex: state: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var v int
	if err := tx.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("threadindex: state: %w", err)
	}
	if v > len(stateMigrations) {
		return fmt.Errorf("threadindex: state database version %d is newer than this server's %d", v, len(stateMigrations))
	}
	for i := v; i < len(stateMigrations); i++ {
		if _, err := tx.Exec(stateMigrations[i]); err != nil {
			return fmt.Errorf("threadindex: state migration %d: %w", i+1, err)
		}
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", len(stateMigrations))); err != nil {
		return fmt.Errorf("threadindex: state: %w", err)
	}
	return tx.Commit()
}

// ThreadMeta returns a thread's client-set metadata (zero when none).
func (st *State) ThreadMeta(ctx context.Context, id string) (ThreadMeta, error) {
	var m ThreadMeta
	var git sql.NullString
	var day sql.NullBool
	err := st.db.QueryRowContext(ctx, "SELECT git_info, daybreak FROM thread_meta WHERE thread_id = ?", id).Scan(&git, &day)
	if errors.Is(err, sql.ErrNoRows) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if git.Valid {
		m.GitInfo = &git.String
	}
	if day.Valid {
		m.Daybreak = &day.Bool
	}
	return m, nil
}

// SetThreadMeta stores a thread's client-set metadata, replacing what was there.
func (st *State) SetThreadMeta(ctx context.Context, id string, m ThreadMeta) error {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	_, err := st.db.ExecContext(ctx, "INSERT INTO thread_meta(thread_id, git_info, daybreak) VALUES(?, ?, ?) ON CONFLICT(thread_id) DO UPDATE SET git_info = excluded.git_info, daybreak = excluded.daybreak", id, m.GitInfo, m.Daybreak)
	return err
}

// DB is the state database, for the domain packages that keep their own tables here (created with Migrate).
func (st *State) DB() *sql.DB { return st.db }

// Migrate applies, in one transaction, the steps of domain not applied yet (counted per domain). Like the
// state's own migrations, a domain's steps are only ever appended.
func (st *State) Migrate(ctx context.Context, domain string, steps []string) error {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("threadindex: %s: %w", domain, err)
	}
	defer func() { _ = tx.Rollback() }()
	var v int
	err = tx.QueryRowContext(ctx, "SELECT version FROM domain_versions WHERE domain = ?", domain).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("threadindex: %s: %w", domain, err)
	}
	if v > len(steps) {
		return fmt.Errorf("threadindex: %s tables version %d are newer than this server's %d", domain, v, len(steps))
	}
	for i := v; i < len(steps); i++ {
		if _, err := tx.ExecContext(ctx, steps[i]); err != nil {
			return fmt.Errorf("threadindex: %s migration %d: %w", domain, i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO domain_versions(domain, version) VALUES(?, ?) ON CONFLICT(domain) DO UPDATE SET version = excluded.version", domain, len(steps)); err != nil {
		return fmt.Errorf("threadindex: %s: %w", domain, err)
	}
	return tx.Commit()
}

// Close closes the database.
func (st *State) Close() error { return st.db.Close() }
