package threadindex

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ReferenceStateFile is the reference's thread-metadata database under CODEX_HOME.
const ReferenceStateFile = "state_5.sqlite"

// ReadReferenceThreads reads every thread row of the reference's state database, read-only, as index rows
// (Rel holds the rollout path as the reference stored it, Source its source column, Size 0). It returns an
// error wrapping fs.ErrNotExist when CODEX_HOME has no such database; it never creates or changes it.
func ReadReferenceThreads(ctx context.Context, codexHome string) ([]*Row, error) {
	path := filepath.Join(codexHome, ReferenceStateFile)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("threadindex: reference state: %w", fs.ErrNotExist)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("threadindex: reference state: %w", err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id, rollout_path, COALESCE(created_at_ms, created_at*1000),
		COALESCE(updated_at_ms, updated_at*1000), cwd, CASE WHEN preview <> '' THEN preview ELSE first_user_message END,
		COALESCE(name, ''), model_provider, COALESCE(model, ''), COALESCE(reasoning_effort, ''), source, cli_version,
		COALESCE(originator, ''), archived, COALESCE(git_sha, ''), COALESCE(git_branch, ''), COALESCE(git_origin_url, ''),
		history_mode, COALESCE(thread_source, '') FROM threads`)
	if err != nil {
		return nil, fmt.Errorf("threadindex: reference state: %w", err)
	}
	defer rows.Close()
	var out []*Row
	for rows.Next() {
		r := &Row{}
		var sha, branch, origin string
		if err := rows.Scan(&r.ID, &r.Rel, &r.CreatedMs, &r.UpdatedMs, &r.Cwd, &r.Preview, &r.FileName,
			&r.ModelProvider, &r.Model, &r.Effort, &r.Source, &r.CLIVersion, &r.Originator, &r.Archived,
			&sha, &branch, &origin, &r.HistoryMode, &r.ThreadSource); err != nil {
			return nil, fmt.Errorf("threadindex: reference state: %w", err)
		}
		r.ModNs = r.UpdatedMs * 1e6
		if sha != "" || branch != "" || origin != "" {
			r.GitInfo = gitJSON(sha, branch, origin)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func gitJSON(sha, branch, origin string) string {
	q := func(s string) string {
		if s == "" {
			return "null"
		}
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf(`{"commit_hash":%s,"branch":%s,"repository_url":%s}`, q(sha), q(branch), q(origin))
}
