package externalagent

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite", to read the reference's import history

	protocol "appserver/protocol/v2"
)

// HistoryFile holds the completed imports, one JSON object a line, in CODEX_HOME.
const HistoryFile = "external_agent_imports.jsonl"

// referenceStateFile is the reference's state database; its external_agent_config_imports rows are read
// (never written) so imports made by the reference stay listed.
const referenceStateFile = "state_5.sqlite"

// History is the record of completed imports in one CODEX_HOME.
type History struct {
	dir string
	mu  sync.Mutex
	now func() time.Time
}

// NewHistory returns the history kept in codexHome.
func NewHistory(codexHome string) *History { return &History{dir: codexHome, now: time.Now} }

// Record appends a completed import (its completion time is now) and returns it as listed.
func (h *History) Record(importID string, providerID *string, successes []protocol.ExternalAgentConfigImportItemTypeSuccess, failures []protocol.ExternalAgentConfigImportItemTypeFailure) (protocol.ExternalAgentConfigImportHistory, error) {
	if successes == nil {
		successes = []protocol.ExternalAgentConfigImportItemTypeSuccess{}
	}
	if failures == nil {
		failures = []protocol.ExternalAgentConfigImportItemTypeFailure{}
	}
	line := protocol.ExternalAgentConfigImportHistory{ImportID: importID, ProviderID: providerID, CompletedAtMs: h.now().UnixMilli(), Successes: successes, Failures: failures}
	b, err := json.Marshal(line)
	if err != nil {
		return protocol.ExternalAgentConfigImportHistory{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		return protocol.ExternalAgentConfigImportHistory{}, err
	}
	f, err := os.OpenFile(filepath.Join(h.dir, HistoryFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return protocol.ExternalAgentConfigImportHistory{}, err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		_ = f.Close()
		return protocol.ExternalAgentConfigImportHistory{}, err
	}
	if err := f.Close(); err != nil {
		return protocol.ExternalAgentConfigImportHistory{}, err
	}
	return line, nil
}

// List returns every recorded import, newest first (ties by id), ours and the reference's.
func (h *History) List(ctx context.Context) ([]protocol.ExternalAgentConfigImportHistory, error) {
	byID := map[string]protocol.ExternalAgentConfigImportHistory{}
	ref, err := readReferenceHistory(ctx, filepath.Join(h.dir, referenceStateFile))
	if err != nil {
		return nil, err
	}
	for _, r := range ref {
		byID[r.ImportID] = r
	}
	h.mu.Lock()
	f, err := os.Open(filepath.Join(h.dir, HistoryFile))
	h.mu.Unlock()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
		for sc.Scan() {
			var l protocol.ExternalAgentConfigImportHistory
			if json.Unmarshal(sc.Bytes(), &l) != nil || l.ImportID == "" {
				continue // a torn or foreign line: skip it, keep the rest
			}
			byID[l.ImportID] = l
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	out := make([]protocol.ExternalAgentConfigImportHistory, 0, len(byID))
	for _, r := range byID {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CompletedAtMs != out[j].CompletedAtMs {
			return out[i].CompletedAtMs > out[j].CompletedAtMs
		}
		return out[i].ImportID < out[j].ImportID
	})
	return out, nil
}

// refSuccess and refFailure are the reference's stored JSON shapes (snake_case).
type refSuccess struct {
	ItemType string  `json:"item_type"`
	Cwd      *string `json:"cwd"`
	Source   *string `json:"source"`
	Target   *string `json:"target"`
	Title    *string `json:"title"`
}

type refFailure struct {
	ItemType     string  `json:"item_type"`
	ErrorType    *string `json:"error_type"`
	SubErrorType *string `json:"sub_error_type"`
	FailureStage string  `json:"failure_stage"`
	Message      string  `json:"message"`
	Cwd          *string `json:"cwd"`
	Source       *string `json:"source"`
}

// readReferenceHistory reads the reference's import rows read-only; a missing file or table is empty.
func readReferenceHistory(ctx context.Context, path string) ([]protocol.ExternalAgentConfigImportHistory, error) {
	if !isFile(path) {
		return nil, nil
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(2000)")
	if err != nil {
		return nil, nil
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='external_agent_config_imports'").Scan(&n); err != nil || n == 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, "SELECT * FROM external_agent_config_imports")
	if err != nil {
		return nil, nil
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []protocol.ExternalAgentConfigImportHistory
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if rows.Scan(ptrs...) != nil {
			continue
		}
		var r protocol.ExternalAgentConfigImportHistory
		var succ, fail string
		for i, c := range cols {
			switch c {
			case "import_id":
				r.ImportID = sqlString(vals[i])
			case "completed_at_ms":
				if v, ok := vals[i].(int64); ok {
					r.CompletedAtMs = v
				}
			case "provider_id":
				if vals[i] != nil {
					s := sqlString(vals[i])
					r.ProviderID = &s
				}
			case "successes":
				succ = sqlString(vals[i])
			case "failures":
				fail = sqlString(vals[i])
			}
		}
		var rs []refSuccess
		var rf []refFailure
		if r.ImportID == "" || json.Unmarshal([]byte(succ), &rs) != nil || json.Unmarshal([]byte(fail), &rf) != nil {
			continue
		}
		r.Successes = make([]protocol.ExternalAgentConfigImportItemTypeSuccess, 0, len(rs))
		for _, s := range rs {
			r.Successes = append(r.Successes, protocol.ExternalAgentConfigImportItemTypeSuccess{ItemType: ItemType(s.ItemType), Cwd: s.Cwd, Source: s.Source, Target: s.Target, Title: s.Title})
		}
		r.Failures = make([]protocol.ExternalAgentConfigImportItemTypeFailure, 0, len(rf))
		for _, f := range rf {
			r.Failures = append(r.Failures, protocol.ExternalAgentConfigImportItemTypeFailure{ItemType: ItemType(f.ItemType), ErrorType: f.ErrorType,
				SubErrorType: f.SubErrorType, FailureStage: f.FailureStage, Message: f.Message, Cwd: f.Cwd, Source: f.Source})
		}
		out = append(out, r)
	}
	return out, nil
}

func sqlString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}
