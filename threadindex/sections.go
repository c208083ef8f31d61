package threadindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// PinnedSectionID is the built-in section every CODEX_HOME has (the reference's fixed id).
const PinnedSectionID = "01984de2-8f74-7c91-a3b2-5c5e937cf318"

// PinnedSectionName is the built-in section's name.
const PinnedSectionName = "Pinned"

const sectionSchema = `
CREATE TABLE IF NOT EXISTS sections (id TEXT PRIMARY KEY, name TEXT NOT NULL, appearance TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS section_members (
  thread_id TEXT PRIMARY KEY,
  section_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  entered_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS section_members_pos ON section_members(section_id, position, thread_id);
`

// Section is one thread section; Appearance is its JSON ("" when none).
type Section struct {
	ID         string
	Name       string
	Appearance string
}

// Errors of the section operations.
var (
	ErrNoSection     = errors.New("threadindex: no such section")
	ErrPinnedSection = errors.New("threadindex: the built-in pinned section cannot be changed")
	ErrNoBefore      = errors.New("threadindex: beforeThreadId is not in the destination section")
)

func (ix *Index) initSections() error {
	_, err := ix.db.Exec(sectionSchema)
	if err != nil {
		return fmt.Errorf("threadindex: sections schema: %w", err)
	}
	_, err = ix.db.Exec("INSERT OR IGNORE INTO sections(id, name, appearance) VALUES(?, ?, NULL)", PinnedSectionID, PinnedSectionName)
	return err
}

// Sections returns up to limit sections after cursor (a section id), in id order (the built-in first), and
// whether more follow.
func (ix *Index) Sections(ctx context.Context, cursor string, limit int) ([]Section, bool, error) {
	rows, err := ix.db.QueryContext(ctx, "SELECT id, name, COALESCE(appearance, '') FROM sections WHERE id > ? ORDER BY id LIMIT ?", cursor, limit+1)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var out []Section
	for rows.Next() {
		var s Section
		if err := rows.Scan(&s.ID, &s.Name, &s.Appearance); err != nil {
			return nil, false, err
		}
		out = append(out, s)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, rows.Err()
}

// Section returns one section.
func (ix *Index) Section(ctx context.Context, id string) (Section, error) {
	s := Section{ID: id}
	err := ix.db.QueryRowContext(ctx, "SELECT name, COALESCE(appearance, '') FROM sections WHERE id = ?", id).Scan(&s.Name, &s.Appearance)
	if errors.Is(err, sql.ErrNoRows) {
		return s, ErrNoSection
	}
	return s, err
}

// CreateSection adds a section with a new time-ordered id.
func (ix *Index) CreateSection(ctx context.Context, name, appearance string) (Section, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Section{}, err
	}
	s := Section{ID: id.String(), Name: name, Appearance: appearance}
	err = ix.Tx(ctx, func(tx *Tx) error {
		return tx.Exec("INSERT INTO sections(id, name, appearance) VALUES(?, ?, NULLIF(?, ''))", s.ID, name, appearance)
	})
	return s, err
}

// UpdateSection renames a section and, when setAppearance, replaces its appearance ("" clears it).
func (ix *Index) UpdateSection(ctx context.Context, id, name string, setAppearance bool, appearance string) (Section, error) {
	if id == PinnedSectionID {
		return Section{}, ErrPinnedSection
	}
	err := ix.Tx(ctx, func(tx *Tx) error {
		res, err := tx.tx.Exec("UPDATE sections SET name = ? WHERE id = ?", name, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNoSection
		}
		if setAppearance {
			return tx.Exec("UPDATE sections SET appearance = NULLIF(?, '') WHERE id = ?", appearance, id)
		}
		return nil
	})
	if err != nil {
		return Section{}, err
	}
	return ix.Section(ctx, id)
}

// DeleteSection removes a section; its threads become unsectioned.
func (ix *Index) DeleteSection(ctx context.Context, id string) error {
	if id == PinnedSectionID {
		return ErrPinnedSection
	}
	return ix.Tx(ctx, func(tx *Tx) error {
		res, err := tx.tx.Exec("DELETE FROM sections WHERE id = ?", id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNoSection
		}
		return tx.Exec("DELETE FROM section_members WHERE section_id = ?", id)
	})
}

// MoveThread puts a thread into section (appended, or before another member), or takes it out of its
// section when section is "". nowMs is recorded as the time it entered a new section.
func (ix *Index) MoveThread(ctx context.Context, threadID, section, before string, nowMs int64) error {
	return ix.Tx(ctx, func(tx *Tx) error {
		if section == "" {
			return tx.Exec("DELETE FROM section_members WHERE thread_id = ?", threadID)
		}
		var n int
		if err := tx.tx.QueryRow("SELECT count(*) FROM sections WHERE id = ?", section).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return ErrNoSection
		}
		entered := nowMs
		var cur string
		var curEntered int64
		if tx.tx.QueryRow("SELECT section_id, entered_ms FROM section_members WHERE thread_id = ?", threadID).Scan(&cur, &curEntered) == nil && cur == section {
			entered = curEntered
		}
		rows, err := tx.tx.Query("SELECT thread_id FROM section_members WHERE section_id = ? AND thread_id <> ? ORDER BY position, thread_id", section, threadID)
		if err != nil {
			return err
		}
		var order []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			order = append(order, id)
		}
		rows.Close()
		at := len(order)
		if before != "" && before != threadID {
			at = -1
			for i, id := range order {
				if id == before {
					at = i
				}
			}
			if at < 0 {
				return ErrNoBefore
			}
		}
		order = append(order[:at], append([]string{threadID}, order[at:]...)...)
		if err := tx.Exec("DELETE FROM section_members WHERE thread_id = ?", threadID); err != nil {
			return err
		}
		for i, id := range order {
			e := int64(0)
			if id == threadID {
				e = entered
			}
			if err := tx.Exec(`INSERT INTO section_members(thread_id, section_id, position, entered_ms) VALUES(?, ?, ?, ?)
				ON CONFLICT(thread_id) DO UPDATE SET position = excluded.position`, id, section, i, e); err != nil {
				return err
			}
		}
		return nil
	})
}

// Position returns a thread's position in its section (0 when none).
func (ix *Index) Position(ctx context.Context, threadID string) int64 {
	var p int64
	_ = ix.db.QueryRowContext(ctx, "SELECT position FROM section_members WHERE thread_id = ?", threadID).Scan(&p)
	return p
}
