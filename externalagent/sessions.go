package externalagent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	protocol "appserver/protocol/v2"
	"appserver/rollout"
)

// Session detection limits when the request leaves them out, as the reference's.
const (
	DefaultMaxSessions       = 50
	DefaultMaxSessionAgeDays = 30
)

// SessionLedgerFile records, in CODEX_HOME, the source sessions already imported (the reference's file and shape).
const SessionLedgerFile = "external_agent_session_imports.json"

// importTurnPrefix names the turns of an imported thread ("external-import-turn-1", …).
const importTurnPrefix = "external-import-turn-"

// importedMarker is the last assistant message of an imported thread.
const importedMarker = "<EXTERNAL SESSION IMPORTED>"

// ThreadCreator makes a thread from a transcript: it creates the rollout (session_meta for cwd), lets write fill
// it, indexes it with its preview and gives it name when not empty. It returns the thread id.
type ThreadCreator func(cwd, name, preview string, write func(*rollout.Recorder) error) (string, error)

// ledger is the reference's record of imported sessions.
type ledger struct {
	Records   []ledgerRecord    `json:"records"`
	Connector []json.RawMessage `json:"detected_connector_records"`
}

type ledgerRecord struct {
	SourcePath       string   `json:"source_path"`
	ContentSHA256    string   `json:"content_sha256"`
	ImportedThreadID string   `json:"imported_thread_id"`
	ImportedAt       int64    `json:"imported_at"`
	SourceModifiedAt int64    `json:"source_modified_at"`
	ConnectorNames   []string `json:"connector_names"`
	Title            *string  `json:"title"`
}

// ledgerMu serialises the read-modify-write of ledgers (one process may serve several connections).
var ledgerMu sync.Mutex

func (s *Service) ledgerPath() string { return filepath.Join(s.CodexHome, SessionLedgerFile) }

func (s *Service) readLedger() (ledger, error) {
	var l ledger
	b, err := os.ReadFile(s.ledgerPath())
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, err
	}
	if json.Unmarshal(b, &l) != nil {
		return ledger{}, nil // a damaged ledger only means sessions are offered again
	}
	return l, nil
}

func (s *Service) addLedgerRecord(r ledgerRecord) error {
	ledgerMu.Lock()
	defer ledgerMu.Unlock()
	l, err := s.readLedger()
	if err != nil {
		return err
	}
	l.Records = append(l.Records, r)
	if l.Connector == nil {
		l.Connector = []json.RawMessage{}
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.ledgerPath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.ledgerPath())
}

func fileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// sessionFile is one candidate transcript.
type sessionFile struct {
	path string
	mod  time.Time
}

// detectSessions lists the recent source sessions not imported yet: the newest maxSessions transcripts
// (<projects>/<project>/<session>.jsonl) modified within maxAgeDays, minus those without an existing working
// directory and those already imported unchanged.
func (s *Service) detectSessions(opts DetectOptions) ([]protocol.SessionMigration, error) {
	maxSessions, maxAge := uint32(DefaultMaxSessions), uint32(DefaultMaxSessionAgeDays)
	if opts.MaxSessions != nil {
		maxSessions = *opts.MaxSessions
	}
	if opts.MaxSessionAgeDays != nil {
		maxAge = *opts.MaxSessionAgeDays
	}
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	cutoff := now.Add(-time.Duration(maxAge) * 24 * time.Hour)
	root, projects, ok, err := s.sourceProjects()
	if err != nil || !ok {
		return nil, err
	}
	var files []sessionFile
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		for _, path := range s.projectSessionFiles(filepath.Join(root, p.Name())) {
			st, err := os.Stat(path)
			if err != nil || !st.Mode().IsRegular() || !st.ModTime().After(cutoff) {
				continue
			}
			files = append(files, sessionFile{path: path, mod: st.ModTime()})
		}
	}
	sort.Slice(files, func(i, j int) bool {
		if !files[i].mod.Equal(files[j].mod) {
			return files[i].mod.After(files[j].mod)
		}
		return files[i].path < files[j].path
	})
	if uint32(len(files)) > maxSessions {
		files = files[:maxSessions]
	}
	led, err := s.readLedger()
	if err != nil {
		return nil, err
	}
	imported := map[string]string{}
	for _, r := range led.Records {
		imported[r.SourcePath] = r.ContentSHA256
	}
	var out []protocol.SessionMigration
	for _, f := range files {
		t, ok, err := s.readTranscript(f.path)
		if err != nil || !ok || t.Cwd == "" || !isDir(t.Cwd) {
			continue
		}
		if sum, seen := imported[f.path]; seen {
			if cur, err := fileSHA256(f.path); err == nil && cur == sum {
				continue
			}
		}
		out = append(out, protocol.SessionMigration{Path: f.path, Cwd: t.Cwd, Title: t.Title})
	}
	return out, nil
}

// projectSessionFiles lists the transcripts of one source project folder.
func (s *Service) projectSessionFiles(project string) []string {
	if s.cursor {
		return cursorSessionFiles(project)
	}
	files, _ := filepath.Glob(filepath.Join(project, "*.jsonl"))
	return files
}

// readTranscript parses a session of the source agent.
func (s *Service) readTranscript(path string) (Transcript, bool, error) {
	if s.cursor {
		return readCursorTranscript(path, s.cursorSessionCwd(path))
	}
	return ReadTranscript(path)
}

// importSession turns one validated source session into a thread and records it in the ledger. ok is false
// when the session holds no conversation or was imported already unchanged (nothing is imported, nothing
// reported).
func (s *Service) importSession(sess protocol.SessionMigration) (protocol.ExternalAgentConfigImportItemTypeSuccess, bool, error) {
	path := sess.Path
	var t Transcript
	var ok bool
	var err error
	if s.cursor {
		// Cursor's transcripts do not name their directory: the selection's cwd is used, when it exists.
		if !filepath.IsAbs(sess.Cwd) || !isDir(sess.Cwd) {
			return protocol.ExternalAgentConfigImportItemTypeSuccess{}, false, nil
		}
		t, ok, err = readCursorTranscript(path, sess.Cwd)
	} else {
		t, ok, err = ReadTranscript(path)
	}
	if err != nil {
		return protocol.ExternalAgentConfigImportItemTypeSuccess{}, false, err
	}
	if !ok || len(t.Turns) == 0 {
		return protocol.ExternalAgentConfigImportItemTypeSuccess{}, false, nil
	}
	if s.CreateThread == nil {
		return protocol.ExternalAgentConfigImportItemTypeSuccess{}, false, errors.New("importing external agent sessions is not supported by this server")
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return protocol.ExternalAgentConfigImportItemTypeSuccess{}, false, err
	}
	led, err := s.readLedger()
	if err != nil {
		return protocol.ExternalAgentConfigImportItemTypeSuccess{}, false, err
	}
	for _, r := range led.Records {
		if r.SourcePath == path && r.ContentSHA256 == sum {
			return protocol.ExternalAgentConfigImportItemTypeSuccess{}, false, nil // imported already, unchanged
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return protocol.ExternalAgentConfigImportItemTypeSuccess{}, false, err
	}
	id, err := s.CreateThread(t.Cwd, t.Name, t.Preview, func(rec *rollout.Recorder) error { return WriteTranscript(rec, t) })
	if err != nil {
		return protocol.ExternalAgentConfigImportItemTypeSuccess{}, false, err
	}
	if err := s.addLedgerRecord(ledgerRecord{SourcePath: path, ContentSHA256: sum, ImportedThreadID: id, ImportedAt: time.Now().Unix(),
		SourceModifiedAt: st.ModTime().UnixNano(), ConnectorNames: []string{}, Title: t.Title}); err != nil {
		return protocol.ExternalAgentConfigImportItemTypeSuccess{}, false, err
	}
	cwd, src := t.Cwd, path
	return protocol.ExternalAgentConfigImportItemTypeSuccess{ItemType: TypeSessions, Cwd: &cwd, Source: &src, Target: &id, Title: t.Title}, true, nil
}

// Event payloads of an imported thread, in the reference's shapes (null and empty members kept).
type importTaskStarted struct {
	TurnID                string `json:"turn_id"`
	StartedAt             int64  `json:"started_at"`
	ModelContextWindow    *int64 `json:"model_context_window"`
	CollaborationModeKind string `json:"collaboration_mode_kind"`
}

func (importTaskStarted) EventType() string { return "task_started" }

type importUserMessage struct {
	Message      string `json:"message"`
	LocalImages  []any  `json:"local_images"`
	LocalAudio   []any  `json:"local_audio"`
	TextElements []any  `json:"text_elements"`
}

func (importUserMessage) EventType() string { return "user_message" }

type importAgentMessage struct {
	Message        string  `json:"message"`
	Phase          *string `json:"phase"`
	MemoryCitation any     `json:"memory_citation"`
}

func (importAgentMessage) EventType() string { return "agent_message" }

type importTaskComplete struct {
	TurnID           string  `json:"turn_id"`
	LastAgentMessage *string `json:"last_agent_message"`
	StartedAt        int64   `json:"started_at"`
	CompletedAt      int64   `json:"completed_at,omitempty"`
}

func (importTaskComplete) EventType() string { return "task_complete" }

type importTokenCount struct {
	Info struct {
		Total              rollout.TokenUsage `json:"total_token_usage"`
		Last               rollout.TokenUsage `json:"last_token_usage"`
		ModelContextWindow *int64             `json:"model_context_window"`
	} `json:"info"`
	RateLimits any `json:"rate_limits"`
}

func (importTokenCount) EventType() string { return "token_count" }

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type messageItem struct {
	Type    string        `json:"type"`
	Role    string        `json:"role"`
	Content []textContent `json:"content"`
}

// WriteTranscript appends an imported session to a new thread's rollout as the reference writes it: legacy
// user_message / agent_message events beside their response items, one turn per user message, then the import
// marker, a token estimate and the last turn's completion.
func WriteTranscript(rec *rollout.Recorder, t Transcript) error {
	for i, turn := range t.Turns {
		id := importTurnPrefix + itoa(i+1)
		if err := rec.AppendEvent(importTaskStarted{TurnID: id, StartedAt: turn.StartedAt, CollaborationModeKind: "default"}); err != nil {
			return err
		}
		if err := rec.AppendEvent(importUserMessage{Message: turn.User, LocalImages: []any{}, LocalAudio: []any{}, TextElements: []any{}}); err != nil {
			return err
		}
		if err := appendMessage(rec, "user", "input_text", turn.User); err != nil {
			return err
		}
		for _, a := range turn.Agent {
			if err := rec.AppendEvent(importAgentMessage{Message: a}); err != nil {
				return err
			}
			if err := appendMessage(rec, "assistant", "output_text", a); err != nil {
				return err
			}
		}
		done := importTaskComplete{TurnID: id, StartedAt: turn.StartedAt}
		if i == len(t.Turns)-1 {
			if err := rec.AppendEvent(importAgentMessage{Message: importedMarker}); err != nil {
				return err
			}
			tc := importTokenCount{}
			tc.Info.Total.TotalTokens = t.ApproxTokens()
			tc.Info.Last = tc.Info.Total
			if err := rec.AppendEvent(tc); err != nil {
				return err
			}
			done.CompletedAt = t.LastAt
		}
		if err := rec.AppendEvent(done); err != nil {
			return err
		}
	}
	return nil
}

func appendMessage(rec *rollout.Recorder, role, kind, text string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(messageItem{Type: "message", Role: role, Content: []textContent{{Type: kind, Text: text}}}); err != nil {
		return err
	}
	return rec.AppendResponseItem(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// sourceProjects lists the source home's projects folder; ok is false when it does not exist.
func (s *Service) sourceProjects() (root string, entries []os.DirEntry, ok bool, err error) {
	root = filepath.Join(s.SourceHome, "projects")
	entries, err = os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return root, nil, false, nil
	}
	if err != nil {
		return root, nil, false, err
	}
	return root, entries, true, nil
}
