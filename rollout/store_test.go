package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/threadindex"
)

// makeThread writes a minimal one-turn rollout and returns its path.
func makeThread(t testing.TB, home, id string, created time.Time, mutate func(*SessionMeta), userText string) string {
	t.Helper()
	meta := SessionMeta{ID: id, Cwd: "/w", Originator: "appserver", CLIVersion: "0.169.0",
		Source: StringSource("vscode"), ModelProvider: "openai", HistoryMode: HistoryModePaginated}
	if mutate != nil {
		mutate(&meta)
	}
	r, err := Create(home, meta, created)
	require.NoError(t, err)
	require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "t-" + id}))
	require.NoError(t, r.AppendTurnContext(TurnContext{TurnID: "t-" + id, Cwd: meta.Cwd, ApprovalPolicy: "never",
		SandboxPolicy: map[string]any{"type": "read-only"}, Model: "gpt-x"}))
	require.NoError(t, r.AppendEvent(ItemCompleted{ThreadID: id, TurnID: "t-" + id,
		Item: UserMessageItem{ID: "u-" + id, Content: []any{NewTextContent(userText)}}}))
	require.NoError(t, r.AppendEvent(TaskComplete{TurnID: "t-" + id}))
	require.NoError(t, r.Close())
	return r.Path()
}

func tid(i int) string { return fmt.Sprintf("01d00000-0000-7000-8000-%012d", i) }

func ids(page []Summary) []string {
	out := make([]string, len(page))
	for i, s := range page {
		out[i] = s.ID
	}
	return out
}

func TestListPaginationEqualTimestamps(t *testing.T) {
	home := t.TempDir()
	same := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mtime := time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	const n = 23
	for i := 0; i < n; i++ {
		p := makeThread(t, home, tid(i), same, nil, fmt.Sprintf("q%d", i))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
	}
	s, err := Open(home)
	require.NoError(t, err)
	for _, key := range []string{SortCreatedAt, SortUpdatedAt} {
		for _, dir := range []string{SortDesc, SortAsc} {
			t.Run(key+"/"+dir, func(t *testing.T) {
				var all []string
				cur := ""
				for pages := 0; ; pages++ {
					require.Less(t, pages, 10)
					page, next, err := s.List(ListQuery{Cursor: cur, Limit: 5, SortKey: key, SortDirection: dir})
					require.NoError(t, err)
					all = append(all, ids(page)...)
					if next == "" {
						require.Len(t, page, 3)
						break
					}
					require.Len(t, page, 5)
					cur = next
				}
				require.Len(t, all, n)
				seen := map[string]bool{}
				for i, id := range all {
					require.False(t, seen[id], "duplicate %s", id)
					seen[id] = true
					want := tid(i)
					if dir == SortDesc {
						want = tid(n - 1 - i)
					}
					require.Equal(t, want, id, "equal timestamps are ordered by id")
				}
			})
		}
	}
}

func TestListOrderFiltersAndCursorErrors(t *testing.T) {
	home := t.TempDir()
	base := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	makeThread(t, home, tid(1), base, nil, "Fix the Parser")
	makeThread(t, home, tid(2), base.Add(time.Hour), func(m *SessionMeta) { m.Cwd = "/other" }, "write docs")
	makeThread(t, home, tid(3), base.Add(2*time.Hour), func(m *SessionMeta) { m.ModelProvider = "mock" }, "mock run")
	makeThread(t, home, tid(4), base.Add(3*time.Hour), func(m *SessionMeta) { m.Source = StringSource("exec") }, "exec run")
	makeThread(t, home, tid(5), base.Add(4*time.Hour), func(m *SessionMeta) {
		m.Source = json.RawMessage(`{"subagent":"review"}`)
	}, "review")
	// updated_at follows mtime: make the oldest thread the most recently updated.
	p1, _, err := func() (string, bool, error) { s, _ := Open(home); defer s.Close(); return s.Find(tid(1)) }()
	require.NoError(t, err)
	future := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(p1, future, future))

	s, err := Open(home)
	require.NoError(t, err)
	require.NoError(t, s.WaitReconciled(context.Background()), "the mtime change is seen by the reconcile after Open")
	page, next, err := s.List(ListQuery{})
	require.NoError(t, err)
	require.Empty(t, next)
	require.Equal(t, []string{tid(3), tid(2), tid(1)}, ids(page), "default: created_at desc, interactive sources only")
	require.Equal(t, "Fix the Parser", page[2].Preview)
	require.Equal(t, "gpt-x", page[2].Model)
	require.Equal(t, "vscode", page[2].Source)
	require.Equal(t, base.Unix(), page[2].CreatedAt)
	require.Equal(t, future.Unix(), page[2].UpdatedAt)

	page, _, err = s.List(ListQuery{SortKey: SortUpdatedAt})
	require.NoError(t, err)
	require.Equal(t, tid(1), page[0].ID)

	for name, tc := range map[string]struct {
		q    ListQuery
		want []string
	}{
		"cwd":       {ListQuery{Cwds: []string{"/other"}}, []string{tid(2)}},
		"providers": {ListQuery{ModelProviders: []string{"mock", "nope"}}, []string{tid(3)}},
		"sources":   {ListQuery{SourceKinds: []string{"exec", "subAgentReview"}}, []string{tid(5), tid(4)}},
		"search":    {ListQuery{SearchTerm: "PARSER"}, []string{tid(1)}},
		"none":      {ListQuery{SearchTerm: "zzz"}, []string{}},
		"archived":  {ListQuery{Archived: true}, []string{}},
		"asc":       {ListQuery{SortDirection: SortAsc, Limit: 2}, []string{tid(1), tid(2)}},
	} {
		page, _, err := s.List(tc.q)
		require.NoError(t, err, name)
		require.Equal(t, tc.want, ids(page), name)
	}

	_, _, err = s.List(ListQuery{Cursor: "%%%"})
	require.ErrorIs(t, err, ErrBadCursor)
	_, next, err = s.List(ListQuery{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, next)
	_, _, err = s.List(ListQuery{Limit: 1, Cursor: next, SortKey: SortUpdatedAt})
	require.NoError(t, err, "as the reference's, a \"<time>|<id>\" cursor names no sort key")
	_, _, err = s.List(ListQuery{Limit: 1, Cursor: encodeCursor(cursor{Key: SortCreatedAt, T: 1, ID: tid(1)}), SortKey: SortUpdatedAt})
	require.ErrorIs(t, err, ErrBadCursor, "an old base64 cursor is bound to its sort key")
	_, _, err = s.List(ListQuery{SortKey: "recency"})
	require.Error(t, err)
	_, _, err = s.List(ListQuery{SortDirection: "up"})
	require.Error(t, err)
}

func TestArchiveUnarchiveDeleteName(t *testing.T) {
	home := t.TempDir()
	created := time.Date(2026, 3, 4, 5, 6, 7, 0, time.Local)
	orig := makeThread(t, home, tid(1), created, nil, "hello")
	makeThread(t, home, tid(2), created.Add(time.Minute), nil, "other")
	s, err := Open(home)
	require.NoError(t, err)

	require.NoError(t, s.SetName(tid(1), "My thread"))
	require.Equal(t, "My thread", s.Name(tid(1)))
	idx, err := os.ReadFile(filepath.Join(home, SessionIndexFileName))
	require.NoError(t, err)
	var rec map[string]string
	require.NoError(t, json.Unmarshal(idx[:len(idx)-1], &rec))
	require.Equal(t, tid(1), rec["id"])
	require.Equal(t, "My thread", rec["thread_name"])
	require.NotEmpty(t, rec["updated_at"])
	page, _, err := s.List(ListQuery{SearchTerm: "my THREAD"})
	require.NoError(t, err)
	require.Equal(t, []string{tid(1)}, ids(page), "search covers the name")

	require.NoError(t, s.Archive(tid(1)))
	archived := filepath.Join(home, "archived_sessions", filepath.Base(orig))
	require.FileExists(t, archived)
	require.NoFileExists(t, orig)
	p, isArch, err := s.Find(tid(1))
	require.NoError(t, err)
	require.True(t, isArch)
	require.Equal(t, archived, p)
	page, _, err = s.List(ListQuery{})
	require.NoError(t, err)
	require.Equal(t, []string{tid(2)}, ids(page))
	page, _, err = s.List(ListQuery{Archived: true})
	require.NoError(t, err)
	require.Equal(t, []string{tid(1)}, ids(page))
	require.True(t, page[0].Archived)
	require.Equal(t, "My thread", page[0].Name)
	require.NoError(t, s.Archive(tid(1)), "archiving twice is a no-op")

	// A fresh store sees the same state (names from session_index.jsonl, archive from the directory).
	s2, err := Open(home)
	require.NoError(t, err)
	sum, err := s2.Get(tid(1))
	require.NoError(t, err)
	require.True(t, sum.Archived)
	require.Equal(t, "My thread", sum.Name)

	sum, err = s.Unarchive(tid(1))
	require.NoError(t, err)
	require.Equal(t, orig, sum.Path, "back under sessions/YYYY/MM/DD from the file name's date")
	require.False(t, sum.Archived)
	require.FileExists(t, orig)
	_, err = s.Unarchive(tid(1))
	require.NoError(t, err, "unarchiving a live thread is a no-op")

	require.NoError(t, s.Delete(tid(1)))
	require.NoFileExists(t, orig)
	_, _, err = s.Find(tid(1))
	require.ErrorIs(t, err, ErrNotFound)
	page, _, err = s.List(ListQuery{})
	require.NoError(t, err)
	require.Equal(t, []string{tid(2)}, ids(page))

	s3, err := Open(home)
	require.NoError(t, err)
	_, err = s3.Get(tid(1))
	require.ErrorIs(t, err, ErrNotFound)

	for _, bad := range []string{tid(9), "../../etc/passwd", "", "a*b"} {
		require.ErrorIs(t, s.Archive(bad), ErrNotFound, bad)
		_, err := s.Unarchive(bad)
		require.ErrorIs(t, err, ErrNotFound, bad)
		require.ErrorIs(t, s.Delete(bad), ErrNotFound, bad)
		require.ErrorIs(t, s.SetName(bad, "x"), ErrNotFound, bad)
	}
}

func TestIndexRebuildAndBehindOurBack(t *testing.T) {
	home := t.TempDir()
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	makeThread(t, home, tid(1), base, nil, "one")
	s, err := Open(home)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(home, IndexFileName))
	// While the start-up reconcile runs, a page does not rescan (it answers from the index as it is).
	require.NoError(t, s.WaitReconciled(context.Background()))

	// A rollout written by another process appears without reopening (after the refresh interval).
	old := refreshInterval
	refreshInterval = 0
	t.Cleanup(func() { refreshInterval = old })
	makeThread(t, home, tid(2), base.Add(48*time.Hour), nil, "two")
	page, _, err := s.List(ListQuery{})
	require.NoError(t, err)
	require.Equal(t, []string{tid(2), tid(1)}, ids(page))

	// Find sees a file created behind our back even before a rescan.
	refreshInterval = time.Hour
	p3 := makeThread(t, home, tid(3), base.Add(96*time.Hour), nil, "three")
	p, _, err := s.Find(tid(3))
	require.NoError(t, err)
	require.Equal(t, p3, p)

	// Index deleted: rebuilt from the rollouts.
	require.NoError(t, os.Remove(filepath.Join(home, IndexFileName)))
	s2, err := Open(home)
	require.NoError(t, err)
	page, _, err = s2.List(ListQuery{})
	require.NoError(t, err)
	require.Equal(t, []string{tid(3), tid(2), tid(1)}, ids(page))
	require.FileExists(t, filepath.Join(home, IndexFileName))

	// Index stale: a file appended (reference resumed it) and one removed behind our back.
	r, err := OpenAppend(p3)
	require.NoError(t, err)
	require.NoError(t, r.AppendEvent(ThreadNameUpdated{ThreadID: tid(3), ThreadName: "renamed in file"}))
	require.NoError(t, r.Close())
	future := time.Now().Add(2 * time.Hour)
	require.NoError(t, os.Chtimes(p3, future, future))
	p1, _, err := s2.Find(tid(1))
	require.NoError(t, err)
	require.NoError(t, os.Remove(p1))
	s3, err := Open(home)
	require.NoError(t, err)
	require.NoError(t, s3.WaitReconciled(context.Background()))
	page, _, err = s3.List(ListQuery{})
	require.NoError(t, err)
	require.Equal(t, []string{tid(3), tid(2)}, ids(page))
	require.Equal(t, "renamed in file", page[0].Name)
	require.Equal(t, future.Unix(), page[0].UpdatedAt)

	// Garbage index lines and a corrupt rollout are tolerated.
	require.NoError(t, os.WriteFile(filepath.Join(home, IndexFileName), []byte("garbage\n{\"id\":\n"), 0o644))
	bad := filepath.Join(home, "sessions", "2026", "04", "01", "rollout-2026-04-01T00-00-00-"+tid(8)+".jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("not a rollout\n"), 0o644))
	require.NoError(t, s3.Close())
	s4, err := Open(home)
	require.NoError(t, err)
	page, _, err = s4.List(ListQuery{})
	require.NoError(t, err)
	require.Equal(t, []string{tid(3), tid(2)}, ids(page))
}

func TestUpsertAndReindex(t *testing.T) {
	home := t.TempDir()
	s, err := Open(home) // empty CODEX_HOME
	require.NoError(t, err)
	page, next, err := s.List(ListQuery{})
	require.NoError(t, err)
	require.Empty(t, page)
	require.Empty(t, next)

	created := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	r, err := Create(home, SessionMeta{ID: tid(1), Cwd: "/w", Source: StringSource("vscode"), ModelProvider: "openai"}, created)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.NoError(t, s.Upsert(Summary{ID: tid(1), Path: r.Path(), Cwd: "/w", CreatedAt: created.Unix(),
		Source: "vscode", ModelProvider: "openai", Preview: "from engine"}))
	page, _, err = s.List(ListQuery{})
	require.NoError(t, err)
	require.Equal(t, []string{tid(1)}, ids(page))
	require.Equal(t, "from engine", page[0].Preview)
	require.Error(t, s.Upsert(Summary{ID: tid(2)}), "no path")
	require.Error(t, s.Upsert(Summary{ID: tid(2), Path: filepath.Join(home, "nope.jsonl")}))

	// The upserted entry is reused by the next Open (file unchanged), so the engine's preview survives.
	s2, err := Open(home)
	require.NoError(t, err)
	sum, err := s2.Get(tid(1))
	require.NoError(t, err)
	require.Equal(t, "from engine", sum.Preview)

	sum, err = s2.Reindex(r.Path())
	require.NoError(t, err)
	require.Equal(t, "", sum.Preview, "reindex reads the file, which has no user message")
	_, err = s2.Reindex(filepath.Join(home, "x.jsonl"))
	require.Error(t, err)
}

func TestThreadIDFromFileName(t *testing.T) {
	id, ok := threadIDFromFileName("rollout-2026-11-21T22-50-22-01a2004d-b416-75e3-a72e-15286b4b81f7.jsonl")
	require.True(t, ok)
	require.Equal(t, "01a2004d-b416-75e3-a72e-15286b4b81f7", id)
	for _, bad := range []string{"rollout-2026.jsonl", "x.jsonl", "rollout-2026-11-21T22-50-22-a*b.jsonl",
		"rollout-2026-11-21T22-50-22-abc.json"} {
		_, ok := threadIDFromFileName(bad)
		require.False(t, ok, bad)
	}
	require.True(t, strings.HasPrefix(RolloutFileName("x", time.Now()), "rollout-"))
}

func TestReadThreadAppliesName(t *testing.T) {
	home := t.TempDir()
	makeThread(t, home, tid(1), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), nil, "q")
	s, err := Open(home)
	require.NoError(t, err)
	require.NoError(t, s.SetName(tid(1), "named"))
	th, err := s.ReadThread(tid(1))
	require.NoError(t, err)
	require.Equal(t, "named", th.Name)
	require.Len(t, th.Turns, 1)
	_, err = s.ReadThread(tid(2))
	require.ErrorIs(t, err, ErrNotFound)
}

func TestQuickScanSeesRemovalsAndMoves(t *testing.T) {
	home := t.TempDir()
	base := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	p1 := makeThread(t, home, tid(1), base, nil, "one")
	p2 := makeThread(t, home, tid(2), base.Add(time.Minute), nil, "two")
	makeThread(t, home, tid(3), base.Add(2*time.Minute), nil, "three")
	s, err := Open(home)
	require.NoError(t, err)
	old := refreshInterval
	refreshInterval = 0
	t.Cleanup(func() { refreshInterval = old })

	require.NoError(t, os.Remove(p1))
	require.NoError(t, os.MkdirAll(filepath.Join(home, "archived_sessions"), 0o755))
	require.NoError(t, os.Rename(p2, filepath.Join(home, "archived_sessions", filepath.Base(p2))))
	// Directory mtimes have a coarse granularity on some filesystems; make the change visible.
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(filepath.Dir(p1), later, later))

	page, _, err := s.List(ListQuery{})
	require.NoError(t, err)
	require.Equal(t, []string{tid(3)}, ids(page))
	page, _, err = s.List(ListQuery{Archived: true})
	require.NoError(t, err)
	require.Equal(t, []string{tid(2)}, ids(page))
}

func TestStoreConcurrentUse(t *testing.T) {
	home := t.TempDir()
	base := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	paths := make([]string, 10)
	for i := range paths {
		paths[i] = makeThread(t, home, tid(i), base.Add(time.Duration(i)*time.Minute), nil, fmt.Sprint("q", i))
	}
	s, err := Open(home)
	require.NoError(t, err)
	done := make(chan struct{})
	errs := make(chan error, 40)
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 10; i++ {
				if _, _, err := s.List(ListQuery{Limit: 3}); err != nil {
					errs <- err
				}
				if err := s.SetName(tid(i), fmt.Sprint("n", g)); err != nil {
					errs <- err
				}
				if _, err := s.Reindex(paths[i]); err != nil {
					errs <- err
				}
			}
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	page, _, err := s.List(ListQuery{Limit: 100})
	require.NoError(t, err)
	require.Len(t, page, 10)
}

func TestTouch(t *testing.T) {
	home := t.TempDir()
	created := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	r, err := Create(home, SessionMeta{ID: tid(1), Cwd: "/w", Source: StringSource("vscode"), ModelProvider: "openai",
		HistoryMode: HistoryModePaginated}, created)
	require.NoError(t, err)
	s, err := Open(home)
	require.NoError(t, err)
	// The start-up reconcile stats the file once: were that before a Chtimes below and its write after the
	// Touch that follows, the row would hold the older mtime until the next sweep.
	require.NoError(t, s.WaitReconciled(context.Background()))
	sum, err := s.Get(tid(1))
	require.NoError(t, err)
	require.Empty(t, sum.Preview)

	require.NoError(t, r.AppendEvent(ItemCompleted{TurnID: "t", Item: UserMessageItem{ID: "u", Content: []any{NewTextContent("first words")}}}))
	require.NoError(t, r.Close())
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(r.Path(), later, later))
	sum, err = s.Touch(tid(1))
	require.NoError(t, err)
	require.Equal(t, "first words", sum.Preview)
	require.Equal(t, later.Unix(), sum.UpdatedAt)

	evenLater := later.Add(time.Hour)
	require.NoError(t, os.Chtimes(r.Path(), evenLater, evenLater))
	sum, err = s.Touch(tid(1))
	require.NoError(t, err)
	require.Equal(t, evenLater.Unix(), sum.UpdatedAt)
	page, _, err := s.List(ListQuery{SortKey: SortUpdatedAt})
	require.NoError(t, err)
	require.Equal(t, evenLater.Unix(), page[0].UpdatedAt)

	_, err = s.Touch(tid(7))
	require.ErrorIs(t, err, ErrNotFound)
}

// An imported session's turns are older than its thread: the index keeps its last turn's end as the recency
// (from the rollout, so a rebuilt index has it too) until a turn of its own ends; other threads follow their
// updated time.
func TestImportedRecency(t *testing.T) {
	home := t.TempDir()
	created := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	start, end := created.Add(-48*time.Hour).Unix(), created.Add(-47*time.Hour).Unix()
	r, err := Create(home, SessionMeta{ID: tid(1), Cwd: "/w", Source: StringSource("vscode"), ModelProvider: "openai", HistoryMode: "legacy"}, created)
	require.NoError(t, err)
	require.NoError(t, r.AppendEvent(TaskStarted{TurnID: "external-import-turn-1", StartedAt: start}))
	require.NoError(t, r.AppendEvent(ItemCompleted{TurnID: "external-import-turn-1", Item: UserMessageItem{ID: "u", Content: []any{NewTextContent("q")}}}))
	require.NoError(t, r.AppendEvent(TaskComplete{TurnID: "external-import-turn-1", StartedAt: start, CompletedAt: end}))
	require.NoError(t, r.Close())
	makeThread(t, home, tid(2), created, nil, "own")

	m, err := ReadMeta(r.Path())
	require.NoError(t, err)
	require.Equal(t, [2]int64{start, end}, [2]int64{m.FirstTurnStartedAt, m.LastTurnCompletedAt})
	require.Equal(t, end, m.ImportedRecency(created.Unix()))
	require.Zero(t, m.ImportedRecency(start), "turns that do not predate the thread")

	th, err := ReadFile(r.Path())
	require.NoError(t, err)
	first, last, ok := ImportedSpan(created.Unix(), th.Turns)
	require.True(t, ok)
	require.Equal(t, [2]int64{start, end}, [2]int64{first, last})
	_, _, ok = ImportedSpan(start, th.Turns)
	require.False(t, ok)

	s := openStore(t, home)
	sum, err := s.Get(tid(1))
	require.NoError(t, err)
	require.Equal(t, end, sum.RecencyAt)
	require.Equal(t, created.Unix(), sum.CreatedAt)
	own, err := s.Get(tid(2))
	require.NoError(t, err)
	require.Zero(t, own.RecencyAt)

	sum, err = s.Touch(tid(1))
	require.NoError(t, err)
	require.Zero(t, sum.RecencyAt, "a turn ended since")
	sum, err = s.Get(tid(1))
	require.NoError(t, err)
	require.Zero(t, sum.RecencyAt)
}

// An index built from the rollouts lists a fork and a fork of a fork under the root's first message (what the
// reference shows for its forks), a fork with nothing inherited under its own.
func TestIndexRebuildForkPreview(t *testing.T) {
	home := t.TempDir()
	rootID := tid(41)
	root := writeTwoTurns(t, home, rootID)
	fk := forkOf(t, home, rootID, root, tid(42), "fork q", t0.Add(time.Second))
	forkOf(t, home, tid(42), fk, tid(43), "fork2 q", t0.Add(2*time.Second))
	emptyID := tid(44)
	r, err := Create(home, testMeta(emptyID), t0)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	forkOf(t, home, emptyID, r.Path(), tid(45), "own q", t0.Add(3*time.Second))

	s, err := Open(home)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.WaitReconciled(context.Background()))
	page, _, err := s.List(ListQuery{})
	require.NoError(t, err)
	got := map[string]string{}
	for _, sum := range page {
		got[sum.ID] = sum.Preview
	}
	require.Equal(t, map[string]string{rootID: "hi there", tid(42): "hi there", tid(43): "hi there", tid(45): "own q"}, got)
}

// TestIndexBuildReadsAForkParentOnce: a build indexing many forks of one thread reads the parent's rollout
// once for the forks' preview (and once for its own row), not once per fork. (One CPU, so one build worker:
// workers that miss the cache at the same moment each read the parent.)
func TestIndexBuildReadsAForkParentOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	home := t.TempDir()
	rootID := tid(51)
	root := writeTwoTurns(t, home, rootID)
	const forks = 6
	for i := range forks {
		forkOf(t, home, rootID, root, tid(52+i), "fork q", t0.Add(time.Duration(i+1)*time.Second))
	}
	var mu sync.Mutex
	reads := 0
	openMetaFile = func(path string) (io.ReadCloser, error) {
		if path == root {
			mu.Lock()
			reads++
			mu.Unlock()
		}
		return OpenRolloutFile(path)
	}
	t.Cleanup(func() { openMetaFile = OpenRolloutFile })

	s, err := Open(home)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.WaitReconciled(context.Background()))
	mu.Lock()
	built := reads
	mu.Unlock()
	require.Equal(t, 2, built, "the root is read for its own row and once for its forks")
	page, _, err := s.List(ListQuery{})
	require.NoError(t, err)
	require.Len(t, page, forks+1)
	for _, sum := range page {
		require.Equal(t, "hi there", sum.Preview, sum.ID) // the forks' preview is still the root's
	}
}

// TestOpenAppliesNamesWrittenMeanwhile: a name another program appended to session_index.jsonl since the
// index was last written is searchable as soon as Open returns (exec's one thread/list of `resume NAME` or
// `fork NAME` comes right after it, before the background reconcile).
func TestOpenAppliesNamesWrittenMeanwhile(t *testing.T) {
	home := t.TempDir()
	makeThread(t, home, tid(1), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), nil, "q")
	s, err := Open(home)
	require.NoError(t, err)
	require.NoError(t, s.WaitReconciled(context.Background()))
	require.NoError(t, s.Close())
	line := `{"id":"` + tid(1) + `","thread_name":"Named elsewhere","updated_at":"2026-06-01T00:00:00Z"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(home, SessionIndexFileName), []byte(line), 0o644))

	s, err = Open(home)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	page, _, err := s.List(ListQuery{SearchTerm: "named elsewhere"})
	require.NoError(t, err)
	require.Equal(t, []string{tid(1)}, ids(page))
}

// TestArchiveTakesLocksInReconcileOrder: Archive takes the store's lock before the index's transaction,
// in the order reconcile does (it held the transaction, then waited for the store's lock, while a
// background reconcile held that lock and waited for the transaction: thread/archive right after a
// server's start hung for good).
func TestArchiveTakesLocksInReconcileOrder(t *testing.T) {
	home := t.TempDir()
	p := makeThread(t, home, tid(1), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), nil, "q")
	s, err := Open(home)
	require.NoError(t, err)
	s.mu.Lock() // as reconcile: the store's lock first, then a transaction
	archived := make(chan error, 1)
	go func() { archived <- s.Archive(tid(1)) }()
	require.Eventually(t, func() bool { _, err := os.Stat(p); return errors.Is(err, os.ErrNotExist) },
		time.Minute, time.Millisecond, "the archive never moved the file")
	tx := make(chan error, 1)
	go func() { tx <- s.ix.Tx(s.ctx, func(*threadindex.Tx) error { return nil }) }()
	select {
	case err := <-tx:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("deadlock: the archive holds the index's transaction while it waits for the store's lock")
	}
	s.mu.Unlock()
	require.NoError(t, <-archived)
	require.NoError(t, s.Close()) // not deferred: after a deadlock it would hang the test binary
}
