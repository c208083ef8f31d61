// Package attachments keeps thread attachments (thread/attachment/*): opaque JSON payloads a client
// associates with a thread under a (type, identity key) pair that is unique per thread, stored in tables of the
// durable state database and found again by thread or, in reverse, by identity (thread/attachmentOwner/list).
package attachments

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Domain names this package's tables in the state database.
const Domain = "attachments"

var migrations = []string{`
CREATE TABLE attachments (
  id TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL,
  type TEXT NOT NULL,
  identity_key TEXT NOT NULL,
  payload TEXT NOT NULL,   -- JSON
  created_ms INTEGER NOT NULL,
  UNIQUE (thread_id, type, identity_key)
) WITHOUT ROWID;
CREATE INDEX attachments_identity ON attachments(type, identity_key, thread_id);
CREATE INDEX attachments_thread ON attachments(thread_id, created_ms, id);
`}

// Limits of one attachment, in bytes (the payload as JSON).
const (
	MaxTypeBytes    = 256
	MaxKeyBytes     = 256
	MaxPayloadBytes = 65536
)

// Database is the state database the tables live in (threadindex.State).
type Database interface {
	DB() *sql.DB
	Migrate(ctx context.Context, domain string, steps []string) error
}

// Attachment is one stored attachment.
type Attachment struct {
	ID          string
	ThreadID    string
	Type        string
	IdentityKey string
	Payload     json.RawMessage
	CreatedMs   int64
}

// ErrInvalid is wrapped by every error a client caused; its message is the one to show.
var ErrInvalid = errors.New("invalid attachment request")

type clientError struct{ msg string }

func (e *clientError) Error() string { return e.msg }
func (e *clientError) Unwrap() error { return ErrInvalid }

func invalid(format string, a ...any) error { return &clientError{msg: fmt.Sprintf(format, a...)} }

// Store is the attachments of one state database.
type Store struct {
	db  *sql.DB
	now func() time.Time
	wmu sync.Mutex
}

// Open creates (or upgrades) the tables in db.
func Open(ctx context.Context, db Database) (*Store, error) {
	if err := db.Migrate(ctx, Domain, migrations); err != nil {
		return nil, err
	}
	return &Store{db: db.DB(), now: time.Now}, nil
}

// SetClock replaces the clock (tests).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// ValidateIdentity checks an attachment type and identity key as the reference does.
func ValidateIdentity(typ, key string) error {
	switch {
	case typ == "":
		return invalid("attachmentType must not be empty")
	case key == "":
		return invalid("identityKey must not be empty")
	case len(typ) > MaxTypeBytes:
		return invalid("attachmentType must not exceed %d bytes", MaxTypeBytes)
	case len(key) > MaxKeyBytes:
		return invalid("identityKey must not exceed %d bytes", MaxKeyBytes)
	}
	return nil
}

// Add stores an attachment unless the thread already has one with that identity, which is then returned
// unchanged (created false).
func (s *Store) Add(ctx context.Context, threadID, typ, key string, payload json.RawMessage) (Attachment, bool, error) {
	if err := ValidateIdentity(typ, key); err != nil {
		return Attachment{}, false, err
	}
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	if len(payload) > MaxPayloadBytes {
		return Attachment{}, false, invalid("attachment payload must not exceed %d bytes", MaxPayloadBytes)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	a, err := s.get(ctx, threadID, typ, key)
	if err == nil {
		return a, false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return a, false, err
	}
	a = Attachment{ID: uuid.Must(uuid.NewV7()).String(), ThreadID: threadID, Type: typ, IdentityKey: key,
		Payload: payload, CreatedMs: s.now().UnixMilli()}
	_, err = s.db.ExecContext(ctx, "INSERT INTO attachments(id, thread_id, type, identity_key, payload, created_ms) VALUES(?, ?, ?, ?, ?, ?)",
		a.ID, a.ThreadID, a.Type, a.IdentityKey, string(a.Payload), a.CreatedMs)
	if err != nil {
		return Attachment{}, false, err
	}
	return a, true, nil
}

const columns = "id, thread_id, type, identity_key, payload, created_ms"

func scan(sc interface{ Scan(...any) error }) (Attachment, error) {
	var a Attachment
	var payload string
	err := sc.Scan(&a.ID, &a.ThreadID, &a.Type, &a.IdentityKey, &payload, &a.CreatedMs)
	a.Payload = json.RawMessage(payload)
	return a, err
}

func (s *Store) get(ctx context.Context, threadID, typ, key string) (Attachment, error) {
	return scan(s.db.QueryRowContext(ctx, "SELECT "+columns+" FROM attachments WHERE thread_id = ? AND type = ? AND identity_key = ?", threadID, typ, key))
}

// Remove deletes a thread's attachment with that identity; removed is false when there was none.
func (s *Store) Remove(ctx context.Context, threadID, typ, key string) (a Attachment, removed bool, err error) {
	if err := ValidateIdentity(typ, key); err != nil {
		return a, false, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	a, err = s.get(ctx, threadID, typ, key)
	if errors.Is(err, sql.ErrNoRows) {
		return a, false, nil
	}
	if err != nil {
		return a, false, err
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM attachments WHERE id = ?", a.ID); err != nil {
		return a, false, err
	}
	return a, true, nil
}

// ForgetThread deletes every attachment of a deleted thread.
func (s *Store) ForgetThread(ctx context.Context, threadID string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.db.ExecContext(ctx, "DELETE FROM attachments WHERE thread_id = ?", threadID)
	return err
}

const badCursor = "invalid pagination cursor"

// List returns one page of a thread's attachments, oldest first, and the next page's cursor ("" when none
// follows). The cursor is the reference's "<threadId>|<createdAt seconds>|<id>".
func (s *Store) List(ctx context.Context, threadID, cursor string, limit int) ([]Attachment, string, error) {
	limit = max(limit, 1)
	q := "SELECT " + columns + " FROM attachments WHERE thread_id = ?"
	args := []any{threadID}
	if cursor != "" {
		parts := strings.Split(cursor, "|")
		if len(parts) != 3 || parts[0] != threadID || parts[2] == "" {
			return nil, "", invalid(badCursor)
		}
		sec, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			return nil, "", invalid(badCursor)
		}
		q += " AND (created_ms / 1000 > ? OR (created_ms / 1000 = ? AND id > ?))"
		args = append(args, sec, sec, parts[2])
	}
	q += " ORDER BY created_ms / 1000, id LIMIT ?"
	args = append(args, limit+1)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []Attachment
	for rows.Next() {
		a, err := scan(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = fmt.Sprintf("%s|%d|%s", threadID, last.CreatedMs/1000, last.ID)
	}
	return out, next, nil
}

// Owner is a thread holding an attachment of the requested identity.
type Owner struct {
	ThreadID string
	Archived bool
}

// ThreadStates tells, for each listed thread that still exists, whether it is archived; threads missing
// from the map are gone and left out.
type ThreadStates func(ctx context.Context, threadIDs []string) (map[string]bool, error)

// ownerCursor is the reference's owner-list cursor: the query it belongs to and the last thread returned.
type ownerCursor struct {
	Type     string `json:"attachment_type"`
	Key      string `json:"identity_key"`
	Archived *bool  `json:"archived"`
	ThreadID string `json:"thread_id"`
}

// Owners returns one page, by thread id, of the threads holding an attachment with that identity (only
// archived or only unarchived ones when archived is set), and the next page's cursor.
func (s *Store) Owners(ctx context.Context, typ, key string, archived *bool, cursor string, limit int, states ThreadStates) ([]Owner, string, error) {
	if err := ValidateIdentity(typ, key); err != nil {
		return nil, "", err
	}
	limit = max(limit, 1)
	after := ""
	if cursor != "" {
		var c ownerCursor
		if err := json.Unmarshal([]byte(cursor), &c); err != nil || c.Type != typ || c.Key != key || c.ThreadID == "" ||
			(c.Archived == nil) != (archived == nil) || (c.Archived != nil && *c.Archived != *archived) {
			return nil, "", invalid(badCursor)
		}
		after = c.ThreadID
	}
	rows, err := s.db.QueryContext(ctx, "SELECT thread_id FROM attachments WHERE type = ? AND identity_key = ? AND thread_id > ? ORDER BY thread_id", typ, key, after)
	if err != nil {
		return nil, "", err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, "", err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	st, err := states(ctx, ids)
	if err != nil {
		return nil, "", err
	}
	var out []Owner
	for _, id := range ids {
		arch, ok := st[id]
		if !ok || (archived != nil && arch != *archived) {
			continue
		}
		out = append(out, Owner{ThreadID: id, Archived: arch})
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		b, _ := json.Marshal(ownerCursor{Type: typ, Key: key, Archived: archived, ThreadID: out[limit-1].ThreadID})
		next = string(b)
	}
	return out, next, nil
}
