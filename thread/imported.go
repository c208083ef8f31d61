package thread

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"

	"appserver/config"
	"appserver/rollout"
)

// CreateImported makes a thread out of another agent's session, as the reference's session import does: a
// rollout with a legacy-history session_meta for cwd (the configured provider, base instructions and the
// client's originator), filled by write, indexed with preview and, when not empty, named name. The thread is
// not loaded. It returns the new thread's id.
func (m *Manager) CreateImported(cwd, name, preview, originator string, write func(*rollout.Recorder) error) (string, error) {
	cfg := m.Config()
	id := uuid.Must(uuid.NewV7()).String()
	now := time.Now()
	provider := firstNonEmpty(cfg.ModelProvider, config.DefaultModelProvider)
	meta := rollout.SessionMeta{
		ID: id, SessionID: id, Timestamp: rollout.FormatTimestamp(now), Cwd: cwd, Originator: originator,
		CLIVersion: m.deps.Version, Source: rollout.StringSource("vscode"), ModelProvider: provider,
		BaseInstructions: &rollout.BaseInstructions{Text: baseInstructions}, HistoryMode: "legacy",
	}
	rec, err := rollout.Create(cfg.CodexHome, meta, now)
	if err != nil {
		return "", fmt.Errorf("create rollout: %w", err)
	}
	werr := write(rec)
	if err := errors.Join(werr, rec.Close()); err != nil {
		_ = os.Remove(rec.Path())
		return "", err
	}
	// Created and updated at the import, as the reference: the rollout's modification time is the list's
	// updatedAt, and writing it may have crossed a second boundary after now.
	_ = os.Chtimes(rec.Path(), now, now)
	st, err := m.Store()
	if err != nil {
		return id, nil // the index finds the rollout when it opens
	}
	sum := rollout.Summary{ID: id, Path: rec.Path(), Cwd: cwd, Preview: preview, CreatedAt: now.Unix(), CreatedAtMs: now.UnixMilli(),
		ModelProvider: provider, Source: "vscode", CLIVersion: m.deps.Version, Originator: originator, HistoryMode: "legacy"}
	if meta, err := rollout.ReadMeta(rec.Path()); err == nil {
		sum.RecencyAt = meta.ImportedRecency(now.Unix())
	}
	if err := st.Upsert(sum); err != nil {
		m.log.Warn("rollout index upsert failed", "error", err)
	}
	if name != "" {
		if err := st.SetName(id, name); err != nil {
			return id, fmt.Errorf("name imported thread: %w", err)
		}
	}
	return id, nil
}
