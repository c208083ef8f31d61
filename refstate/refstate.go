// Package refstate writes our threads' turn history into the reference's paginated-history database
// ($CODEX_HOME/thread_history_1.sqlite), so the reference's thread/read and thread/turns/list show turns we
// recorded without resuming the thread there. It never creates or migrates that database: it writes only when
// the file exists and its migration history is exactly the one it knows (HistorySchemaVersion), inside
// IMMEDIATE transactions in WAL mode with a busy timeout.
package refstate

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// HistoryFile is the reference's paginated turn-history database under CODEX_HOME.
const HistoryFile = "thread_history_1.sqlite"

// HistorySchemaVersion is the last sqlx migration of HistoryFile this package knows (codex-cli 0.169.0).
const HistorySchemaVersion = 8

// ErrAbsent reports that CODEX_HOME has no reference history database.
var ErrAbsent = errors.New("refstate: reference history database absent")

// ErrUnknownSchema reports a reference history database whose migrations are not the ones this package knows.
var ErrUnknownSchema = errors.New("refstate: unknown reference history schema")

// Item is one thread item as the reference stores it: JSON without the lifecycle timestamps, which are columns.
type Item struct {
	ID            string
	Type          string
	JSON          []byte
	Ordinal       int64 // rollout ordinal of the record that produced it
	CreatedAtMs   int64
	StartedAtMs   *int64
	CompletedAtMs *int64
}

// Turn is one turn with its items, in rollout order.
type Turn struct {
	ID          string
	RootTurnID  string
	Ordinal     int64 // rollout ordinal of the record that opened it
	EndOrdinal  int64 // rollout ordinal of its last record
	Status      string
	ErrorJSON   []byte // nil: no error
	StartedAt   *int64 // seconds
	CompletedAt *int64 // seconds
	DurationMs  *int64
	Items       []Item
}

// History is an open reference history database.
type History struct {
	db *sql.DB

	mu    sync.Mutex
	stmts map[string]*sql.Stmt // prepared once: parsing a statement costs more than running it
}

// The statements a projection runs, prepared once per History (parsing one costs more than running it).
const (
	stateQuery = `SELECT next_rollout_ordinal, next_rollout_byte_offset
	FROM thread_history_projection_state WHERE thread_id = ?`
	insertTurnQuery = `INSERT INTO thread_turns (thread_id, turn_id, rollout_ordinal, status,
		error_json, started_at, completed_at, duration_ms, first_user_item_id, final_agent_item_id,
		rollout_end_ordinal, root_turn_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(thread_id, turn_id) DO NOTHING`
	insertItemQuery = `INSERT INTO thread_items (thread_id, turn_id, item_id, rollout_ordinal,
			created_at_ms, item_json, item_type, updated_at_ordinal, started_at_ms, completed_at_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(thread_id, turn_id, item_id) DO NOTHING`
	setStateQuery = `INSERT INTO thread_history_projection_state
		(thread_id, next_rollout_byte_offset, next_rollout_ordinal) VALUES (?, ?, ?)
		ON CONFLICT(thread_id) DO UPDATE SET next_rollout_byte_offset = excluded.next_rollout_byte_offset,
		next_rollout_ordinal = excluded.next_rollout_ordinal`
)

// prepare prepares the statements a projection runs. Call it outside transactions: the pool has one connection.
func (h *History) prepare(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stmts != nil {
		return nil
	}
	stmts := map[string]*sql.Stmt{}
	for _, q := range []string{stateQuery, insertTurnQuery, insertItemQuery, setStateQuery} {
		st, err := h.db.PrepareContext(ctx, q)
		if err != nil {
			for _, st := range stmts {
				_ = st.Close()
			}
			return fmt.Errorf("refstate: prepare: %w", err)
		}
		stmts[q] = st
	}
	h.stmts = stmts
	return nil
}

// stmt returns q prepared (after prepare).
func (h *History) stmt(q string) *sql.Stmt {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stmts[q]
}

// exec runs q in tx with its prepared statement.
func (h *History) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) error {
	_, err := tx.StmtContext(ctx, h.stmt(q)).ExecContext(ctx, args...)
	return err
}

// OpenHistory opens CODEX_HOME's reference history database for writing. It returns ErrAbsent when there is
// none and ErrUnknownSchema when its migrations differ from HistorySchemaVersion; it never creates the file.
func OpenHistory(ctx context.Context, codexHome string) (*History, error) {
	path := filepath.Join(codexHome, HistoryFile)
	if _, err := os.Stat(path); err != nil {
		return nil, ErrAbsent
	}
	// mode=rw: opening fails instead of creating the file if it vanished in between. The journal mode is
	// checked, never set: the reference keeps its databases in WAL mode.
	dsn := "file:" + path + "?mode=rw&_pragma=busy_timeout(5000)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("refstate: open: %w", err)
	}
	db.SetMaxOpenConns(1)
	h := &History{db: db}
	if err := h.checkSchema(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return h, nil
}

func (h *History) checkSchema(ctx context.Context) error {
	var mode string
	if err := h.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fmt.Errorf("%w: %v", ErrUnknownSchema, err)
	}
	if mode != "wal" {
		return fmt.Errorf("%w: journal mode %q, want wal", ErrUnknownSchema, mode)
	}
	var maxV, n, failed int64
	err := h.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0), COUNT(*), COALESCE(SUM(success = 0), 0)
		FROM _sqlx_migrations`).Scan(&maxV, &n, &failed)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnknownSchema, err)
	}
	if maxV != HistorySchemaVersion || n != HistorySchemaVersion || failed != 0 {
		return fmt.Errorf("%w: migration %d (%d applied, %d failed), want %d", ErrUnknownSchema, maxV, n, failed,
			HistorySchemaVersion)
	}
	return nil
}

// Close closes the database.
func (h *History) Close() error {
	h.mu.Lock()
	for _, st := range h.stmts {
		_ = st.Close()
	}
	h.stmts = nil
	h.mu.Unlock()
	return h.db.Close()
}

// ErrStale reports that the projection state is behind the turns a caller offered (ProjectSince): the caller
// must offer every turn again.
var ErrStale = errors.New("refstate: projection state behind the turns offered")

// State returns a thread's projection state: the next rollout ordinal and byte offset to project. ok is false
// when the thread has none.
func (h *History) State(ctx context.Context, threadID string) (nextOrdinal, nextByteOffset int64, ok bool, err error) {
	if err := h.prepare(ctx); err != nil {
		return 0, 0, false, err
	}
	err = h.stmt(stateQuery).QueryRowContext(ctx, threadID).Scan(&nextOrdinal, &nextByteOffset)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, 0, false, nil
	case err != nil:
		return 0, 0, false, fmt.Errorf("refstate: projection state: %w", err)
	}
	return nextOrdinal, nextByteOffset, true, nil
}

// Project writes the turns of a thread that are not projected yet: those whose ordinal is at or past the
// thread's projection state (next_rollout_ordinal), then moves the projection state to nextOrdinal and
// nextByteOffset (the rollout's size). Rows the reference wrote are never changed. It does nothing when the
// projection state is already at or past nextByteOffset. Everything happens in one transaction: any conflict
// rolls it back whole.
func (h *History) Project(ctx context.Context, threadID string, turns []Turn, nextOrdinal, nextByteOffset int64) error {
	return h.ProjectSince(ctx, threadID, turns, 0, nextOrdinal, nextByteOffset)
}

// ProjectSince is Project for a caller that offers only the turns whose ordinal is at or past since: when the
// projection state is below since (turns it would write are missing), it writes nothing and returns ErrStale.
func (h *History) ProjectSince(ctx context.Context, threadID string, turns []Turn, since, nextOrdinal, nextByteOffset int64) error {
	if err := h.prepare(ctx); err != nil {
		return err
	}
	tx, err := h.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("refstate: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	var from, doneBytes int64
	err = tx.StmtContext(ctx, h.stmt(stateQuery)).QueryRowContext(ctx, threadID).Scan(&from, &doneBytes)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		from, doneBytes = 0, -1
	case err != nil:
		return fmt.Errorf("refstate: projection state: %w", err)
	}
	if doneBytes >= nextByteOffset {
		return nil
	}
	if from < since {
		return fmt.Errorf("%w: state at ordinal %d, turns offered from %d", ErrStale, from, since)
	}
	for _, t := range turns {
		if t.Ordinal < from {
			continue
		}
		if err := h.insertTurn(ctx, tx, threadID, t); err != nil {
			return err
		}
	}
	if err := h.exec(ctx, tx, setStateQuery, threadID, nextByteOffset, nextOrdinal); err != nil {
		return fmt.Errorf("refstate: projection state: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("refstate: commit: %w", err)
	}
	return nil
}

func (h *History) insertTurn(ctx context.Context, tx *sql.Tx, threadID string, t Turn) error {
	var firstUser, finalAgent *string
	for i := range t.Items {
		it := &t.Items[i]
		if it.Type == "userMessage" && firstUser == nil {
			firstUser = &it.ID
		}
		if it.Type == "agentMessage" {
			finalAgent = &it.ID
		}
	}
	var errJSON *string
	if t.ErrorJSON != nil {
		s := string(t.ErrorJSON)
		errJSON = &s
	}
	root := t.RootTurnID
	if root == "" {
		root = t.ID
	}
	if err := h.exec(ctx, tx, insertTurnQuery,
		threadID, t.ID, t.Ordinal, t.Status, errJSON, t.StartedAt, t.CompletedAt, t.DurationMs, firstUser,
		finalAgent, t.EndOrdinal, root); err != nil {
		return fmt.Errorf("refstate: turn %s: %w", t.ID, err)
	}
	for _, it := range t.Items {
		if err := h.exec(ctx, tx, insertItemQuery,
			threadID, t.ID, it.ID, it.Ordinal, it.CreatedAtMs, string(it.JSON), it.Type, it.Ordinal,
			it.StartedAtMs, it.CompletedAtMs); err != nil {
			return fmt.Errorf("refstate: item %s: %w", it.ID, err)
		}
	}
	return nil
}

// ItemFromMap turns a protocol item (as thread/read returns it) into a stored Item: startedAtMs and
// completedAtMs move to columns, the rest is the item's JSON. fallbackMs is used as created_at_ms when the
// item has no start time.
func ItemFromMap(m map[string]any, ordinal, fallbackMs int64) (Item, error) {
	it := Item{Ordinal: ordinal, CreatedAtMs: fallbackMs}
	it.ID, _ = m["id"].(string)
	it.Type, _ = m["type"].(string)
	c := make(map[string]any, len(m))
	for k, v := range m {
		switch k {
		case "startedAtMs":
			it.StartedAtMs = intPtr(v)
		case "completedAtMs":
			it.CompletedAtMs = intPtr(v)
		default:
			c[k] = v
		}
	}
	if it.StartedAtMs != nil {
		it.CreatedAtMs = *it.StartedAtMs
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return Item{}, fmt.Errorf("refstate: item json: %w", err)
	}
	it.JSON = raw
	return it, nil
}

func intPtr(v any) *int64 {
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case int:
		n = int64(x)
	case float64:
		n = int64(x)
	case json.Number:
		var err error
		if n, err = x.Int64(); err != nil {
			return nil
		}
	case *int64:
		return x
	default:
		return nil
	}
	return &n
}
