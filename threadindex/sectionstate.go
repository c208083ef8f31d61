package threadindex

import (
	"context"
	"database/sql"
	"fmt"
)

// SectionsDomain is the State domain holding the durable copy of the thread sections: the index answers every
// section query, and State keeps what a rebuild of the index would lose (the rollouts do not record sections,
// in the reference neither).
const SectionsDomain = "sections"

var sectionStateSteps = []string{
	`CREATE TABLE sections (id TEXT PRIMARY KEY, name TEXT NOT NULL, appearance TEXT) WITHOUT ROWID;
CREATE TABLE section_members (
  thread_id TEXT PRIMARY KEY,
  section_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  entered_ms INTEGER NOT NULL
) WITHOUT ROWID;`,
}

type sectionRows struct {
	sections [][3]any
	members  [][4]any
}

func readSections(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (sectionRows, error) {
	var out sectionRows
	rows, err := q.QueryContext(ctx, "SELECT id, name, appearance FROM sections")
	if err != nil {
		return out, err
	}
	for rows.Next() {
		var id, name string
		var app sql.NullString
		if err := rows.Scan(&id, &name, &app); err != nil {
			rows.Close()
			return out, err
		}
		out.sections = append(out.sections, [3]any{id, name, app})
	}
	rows.Close()
	rows, err = q.QueryContext(ctx, "SELECT thread_id, section_id, position, entered_ms FROM section_members")
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var tid, sid string
		var pos, entered int64
		if err := rows.Scan(&tid, &sid, &pos, &entered); err != nil {
			return out, err
		}
		out.members = append(out.members, [4]any{tid, sid, pos, entered})
	}
	return out, rows.Err()
}

func writeSections(ctx context.Context, tx *sql.Tx, r sectionRows) error {
	for _, q := range []string{"DELETE FROM sections", "DELETE FROM section_members"} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	for _, s := range r.sections {
		if _, err := tx.ExecContext(ctx, "INSERT INTO sections(id, name, appearance) VALUES(?, ?, ?)", s[:]...); err != nil {
			return err
		}
	}
	for _, m := range r.members {
		if _, err := tx.ExecContext(ctx, "INSERT INTO section_members(thread_id, section_id, position, entered_ms) VALUES(?, ?, ?, ?)", m[:]...); err != nil {
			return err
		}
	}
	return nil
}

// SaveSections copies the index's sections and their members into st (replacing its copy); section changes
// call it so that a rebuilt index gets them back (RestoreSections).
func (ix *Index) SaveSections(ctx context.Context, st *State) error {
	if err := st.Migrate(ctx, SectionsDomain, sectionStateSteps); err != nil {
		return err
	}
	// The copy is read and written under the index's write lock: no section change commits in between, so the
	// last save always writes the latest sections.
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	r, err := readSections(ctx, ix.db)
	if err != nil {
		return fmt.Errorf("threadindex: read sections: %w", err)
	}
	st.wmu.Lock()
	defer st.wmu.Unlock()
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := writeSections(ctx, tx, r); err != nil {
		return fmt.Errorf("threadindex: save sections: %w", err)
	}
	return tx.Commit()
}

// RestoreSections replaces the index's sections with st's copy, when st has one (a fresh or rebuilt index).
func (ix *Index) RestoreSections(ctx context.Context, st *State) error {
	var n int
	if err := st.db.QueryRowContext(ctx, "SELECT count(*) FROM domain_versions WHERE domain = ?", SectionsDomain).Scan(&n); err != nil || n == 0 {
		return err
	}
	r, err := readSections(ctx, st.db)
	if err != nil {
		return fmt.Errorf("threadindex: read saved sections: %w", err)
	}
	return ix.Tx(ctx, func(tx *Tx) error {
		if err := writeSections(ctx, tx.tx, r); err != nil {
			return err
		}
		// The built-in section exists in every index.
		return tx.Exec("INSERT OR IGNORE INTO sections(id, name, appearance) VALUES(?, ?, NULL)", PinnedSectionID, PinnedSectionName)
	})
}
