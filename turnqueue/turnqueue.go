// Package turnqueue keeps each thread's queue of pending user messages (thread/queue/*) in tables of the
// durable state database, so that a queue survives restarts. It only stores and orders; starting turns from
// the queue is the server's job.
package turnqueue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	protocol "appserver/protocol/v2"

	"github.com/google/uuid"
)

// Domain names this package's tables in the state database.
const Domain = "turnqueue"

var migrations = []string{`
CREATE TABLE queued_submissions (
  id TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  input TEXT NOT NULL,        -- JSON array of UserInput
  client_id TEXT NOT NULL,    -- clientUserMessageId
  metadata TEXT               -- JSON object (responsesapiClientMetadata); NULL when none
) WITHOUT ROWID;
CREATE INDEX queued_submissions_thread ON queued_submissions(thread_id, position);
`}

// Database is the state database the tables live in (threadindex.State).
type Database interface {
	DB() *sql.DB
	Migrate(ctx context.Context, domain string, steps []string) error
}

// Item is one queued submission.
type Item struct {
	ID       string
	Input    []protocol.UserInput
	ClientID string
	Metadata map[string]string // nil when none
}

// Submission is the wire form of an item.
func (it Item) Submission() protocol.QueuedSubmission {
	return protocol.QueuedSubmission{ID: it.ID, Input: it.Input, ClientUserMessageID: it.ClientID, ResponsesapiClientMetadata: it.Metadata}
}

// ErrInvalid is wrapped by every error a client caused; its message is the one to show.
var ErrInvalid = errors.New("invalid queue request")

type clientError struct{ msg string }

func (e *clientError) Error() string { return e.msg }
func (e *clientError) Unwrap() error { return ErrInvalid }

func invalid(format string, a ...any) error { return &clientError{msg: fmt.Sprintf(format, a...)} }

func notFound(id string) error { return invalid("queued submission not found: %s", id) }

// Store is the queues of one state database.
type Store struct {
	db  *sql.DB
	wmu sync.Mutex
}

// Open creates (or upgrades) the tables in db.
func Open(ctx context.Context, db Database) (*Store, error) {
	if err := db.Migrate(ctx, Domain, migrations); err != nil {
		return nil, err
	}
	return &Store{db: db.DB()}, nil
}

// validInput refuses an empty input and, as the reference echoes it, gives text input its empty
// text_elements.
func validInput(input []protocol.UserInput) error {
	if len(input) == 0 {
		return invalid("only user input can be added to the user-message queue")
	}
	for i, in := range input {
		if txt, ok := in.Value.(protocol.UserInputText); ok && txt.TextElements == nil {
			txt.TextElements = []protocol.TextElement{}
			input[i].Value = txt
		}
	}
	return nil
}

// Add appends a submission to a thread's queue.
func (s *Store) Add(ctx context.Context, threadID string, input []protocol.UserInput, clientID string, metadata map[string]string) (Item, error) {
	if err := validInput(input); err != nil {
		return Item{}, err
	}
	it := Item{ID: uuid.Must(uuid.NewV7()).String(), Input: input, ClientID: clientID, Metadata: metadata}
	in, err := json.Marshal(input)
	if err != nil {
		return Item{}, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.db.ExecContext(ctx, `INSERT INTO queued_submissions(id, thread_id, position, input, client_id, metadata)
		VALUES(?, ?, (SELECT COALESCE(max(position), -1) + 1 FROM queued_submissions WHERE thread_id = ?), ?, ?, ?)`,
		it.ID, threadID, threadID, string(in), clientID, metaJSON(metadata))
	return it, err
}

func metaJSON(m map[string]string) any {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func scan(sc interface{ Scan(...any) error }) (Item, error) {
	var it Item
	var in string
	var meta sql.NullString
	if err := sc.Scan(&it.ID, &in, &it.ClientID, &meta); err != nil {
		return it, err
	}
	if err := json.Unmarshal([]byte(in), &it.Input); err != nil {
		return it, fmt.Errorf("turnqueue: input of %s: %w", it.ID, err)
	}
	if meta.Valid {
		if err := json.Unmarshal([]byte(meta.String), &it.Metadata); err != nil {
			return it, fmt.Errorf("turnqueue: metadata of %s: %w", it.ID, err)
		}
	}
	return it, nil
}

// All returns a thread's queue in order.
func (s *Store) All(ctx context.Context, threadID string) ([]Item, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, input, client_id, metadata FROM queued_submissions WHERE thread_id = ? ORDER BY position, id", threadID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Item
	for rows.Next() {
		it, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// List returns one page of a thread's queue and the next page's cursor ("" when none follows). Like the
// reference's, the cursor is the decimal offset of the page's first item.
func (s *Store) List(ctx context.Context, threadID, cursor string, limit int) ([]Item, string, error) {
	offset := 0
	if cursor != "" {
		n, err := strconv.ParseUint(cursor, 10, 32)
		if err != nil {
			return nil, "", invalid("invalid queue pagination cursor: %s", parseErrorText(err))
		}
		offset = int(n)
	}
	all, err := s.All(ctx, threadID)
	if err != nil {
		return nil, "", err
	}
	limit = max(limit, 1)
	if offset >= len(all) {
		return []Item{}, "", nil
	}
	page := all[offset:]
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = strconv.Itoa(offset + limit)
	}
	return page, next, nil
}

// parseErrorText words an integer parse error as the reference (Rust's ParseIntError) does.
func parseErrorText(err error) string {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		switch {
		case ne.Num == "":
			return "cannot parse integer from empty string"
		case errors.Is(ne.Err, strconv.ErrRange):
			return "number too large to fit in target type"
		}
	}
	return "invalid digit found in string"
}

// Update replaces a submission's input; metadata replaces the stored one only when non-empty.
func (s *Store) Update(ctx context.Context, threadID, id string, input []protocol.UserInput, metadata map[string]string) (Item, error) {
	if err := validInput(input); err != nil {
		return Item{}, err
	}
	in, err := json.Marshal(input)
	if err != nil {
		return Item{}, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	it, err := scan(s.db.QueryRowContext(ctx, "SELECT id, input, client_id, metadata FROM queued_submissions WHERE thread_id = ? AND id = ?", threadID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Item{}, notFound(id)
	}
	if err != nil {
		return Item{}, err
	}
	it.Input = input
	if len(metadata) > 0 {
		it.Metadata = metadata
	}
	_, err = s.db.ExecContext(ctx, "UPDATE queued_submissions SET input = ?, metadata = ? WHERE id = ?", string(in), metaJSON(it.Metadata), id)
	return it, err
}

// Delete removes a submission; deleted is false when the thread's queue has no such id.
func (s *Store) Delete(ctx context.Context, threadID, id string) (deleted bool, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	res, err := s.db.ExecContext(ctx, "DELETE FROM queued_submissions WHERE thread_id = ? AND id = ?", threadID, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// Reorder puts the queue in the given order, which must name every queued submission exactly once.
func (s *Store) Reorder(ctx context.Context, threadID string, ids []string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	all, err := s.All(ctx, threadID)
	if err != nil {
		return err
	}
	queued := map[string]bool{}
	for _, it := range all {
		queued[it.ID] = true
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if !queued[id] || seen[id] {
			return invalid("queue reorder must include every queued submission exactly once")
		}
		seen[id] = true
	}
	if len(ids) != len(all) {
		return invalid("queue reorder must include every queued submission exactly once")
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for i, id := range ids {
		if _, err := tx.ExecContext(ctx, "UPDATE queued_submissions SET position = ? WHERE id = ?", i, id); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// Take removes and returns a submission: the one with id, or the head of the queue when id is "".
func (s *Store) Take(ctx context.Context, threadID, id string) (Item, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	q, args := "SELECT id, input, client_id, metadata FROM queued_submissions WHERE thread_id = ? ORDER BY position, id LIMIT 1", []any{threadID}
	if id != "" {
		q, args = "SELECT id, input, client_id, metadata FROM queued_submissions WHERE thread_id = ? AND id = ?", []any{threadID, id}
	}
	it, err := scan(s.db.QueryRowContext(ctx, q, args...))
	switch {
	case errors.Is(err, sql.ErrNoRows) && id == "":
		return Item{}, invalid("queue is empty")
	case errors.Is(err, sql.ErrNoRows):
		return Item{}, notFound(id)
	case err != nil:
		return Item{}, err
	}
	_, err = s.db.ExecContext(ctx, "DELETE FROM queued_submissions WHERE id = ?", it.ID)
	return it, err
}

// ForgetThread drops a deleted thread's queue.
func (s *Store) ForgetThread(ctx context.Context, threadID string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.db.ExecContext(ctx, "DELETE FROM queued_submissions WHERE thread_id = ?", threadID)
	return err
}
