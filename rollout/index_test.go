package rollout

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/threadindex"
)

func openStore(t *testing.T, home string) *Store {
	t.Helper()
	s, err := Open(home)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.WaitReconciled(context.Background()))
	return s
}

func TestIndexRebuiltWhenCorruptOrMissing(t *testing.T) {
	home := t.TempDir()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 5; i++ {
		makeThread(t, home, tid(i), base.Add(time.Duration(i)*time.Hour), nil, "q")
	}
	s := openStore(t, home)
	require.NoError(t, s.SetName(tid(2), "kept name"))
	require.NoError(t, s.Close())

	for _, damage := range []func(p string){
		func(p string) {
			require.NoError(t, os.WriteFile(p, []byte("SQLite format 3\x00 but then garbage"), 0o644))
		},
		func(p string) { require.NoError(t, os.Remove(p)) },
		func(p string) {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, b[:len(b)/3], 0o644))
		},
	} {
		p := filepath.Join(home, IndexFileName)
		_ = os.Remove(p + "-wal")
		_ = os.Remove(p + "-shm")
		damage(p)
		s, err := Open(home)
		require.NoError(t, err)
		page, _, err := s.List(ListQuery{}) // waits for the rebuild
		require.NoError(t, err)
		require.Equal(t, []string{tid(4), tid(3), tid(2), tid(1), tid(0)}, ids(page))
		require.Equal(t, "kept name", page[2].Name, "names come back from session_index.jsonl")
		require.NoError(t, s.Close())
	}
}

func TestIndexReconcilesExternalAppend(t *testing.T) {
	home := t.TempDir()
	base := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	p1 := makeThread(t, home, tid(1), base, nil, "first")
	makeThread(t, home, tid(2), base.Add(time.Hour), nil, "second")
	s := openStore(t, home)
	page, _, err := s.List(ListQuery{SortKey: SortUpdatedAt})
	require.NoError(t, err)
	require.Equal(t, []string{tid(2), tid(1)}, ids(page))

	// Another writer (the reference resuming the thread) appends to the oldest rollout in place: the
	// directory's mtime does not change, only the file's.
	r, err := OpenAppend(p1)
	require.NoError(t, err)
	require.NoError(t, r.AppendEvent(ThreadNameUpdated{ThreadID: tid(1), ThreadName: "renamed elsewhere"}))
	require.NoError(t, r.Close())
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(p1, later, later))

	require.NoError(t, s.Reconcile())
	page, _, err = s.List(ListQuery{SortKey: SortUpdatedAt})
	require.NoError(t, err)
	require.Equal(t, []string{tid(1), tid(2)}, ids(page))
	require.Equal(t, "renamed elsewhere", page[0].Name)
	require.Equal(t, later.UnixMilli(), page[0].UpdatedAtMs)

	// The background sweep does the same without being asked.
	old := sweepInterval
	sweepInterval = 0
	t.Cleanup(func() { sweepInterval = old })
	r, err = OpenAppend(p1)
	require.NoError(t, err)
	require.NoError(t, r.AppendEvent(ThreadNameUpdated{ThreadID: tid(1), ThreadName: "again"}))
	require.NoError(t, r.Close())
	require.Eventually(t, func() bool {
		page, _, err := s.List(ListQuery{SearchTerm: "again"})
		return err == nil && len(page) == 1
	}, 30*time.Second, 20*time.Millisecond)
}

func TestIndexSurvivesCrashDuringBuild(t *testing.T) {
	home := t.TempDir()
	base := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 20; i++ {
		makeThread(t, home, tid(i), base.Add(time.Duration(i)*time.Minute), nil, "q")
	}
	// A build cut off before it finished leaves some rows and no completion mark: the next Open builds again
	// before answering.
	s, err := Open(home)
	require.NoError(t, err)
	require.NoError(t, s.WaitReconciled(context.Background()))
	require.NoError(t, s.ix.Set(context.Background(), "complete", "0"))
	require.NoError(t, s.ix.Tx(context.Background(), func(tx *threadindex.Tx) error {
		return tx.Exec("DELETE FROM threads WHERE id > ?", tid(5))
	}))
	require.NoError(t, s.Close())
	s2 := openStore(t, home)
	page, _, err := s2.List(ListQuery{Limit: 100})
	require.NoError(t, err)
	require.Len(t, page, 20)
}

// While a thread is read (Busy), background index reads wait, up to maxForegroundYield at a time, and go on
// once it is done.
func TestYieldGivesWayToBusy(t *testing.T) {
	s := &Store{ctx: context.Background()}
	s.yield() // nothing in progress: returns at once (a hang here fails the test by its timeout)

	done := s.Busy()
	t0 := time.Now()
	s.yield()
	require.GreaterOrEqual(t, time.Since(t0), maxForegroundYield, "yield returned while a thread was read")

	returned := make(chan struct{})
	go func() { s.yield(); close(returned) }()
	done()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("yield still waiting after the read was done")
	}
}
