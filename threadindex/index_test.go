package threadindex

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func row(i int) *Row {
	return &Row{ID: fmt.Sprintf("id-%04d", i), Rel: fmt.Sprintf("sessions/r-%04d.jsonl", i), Size: 10, ModNs: int64(i) * 1e6,
		CreatedMs: int64(i) * 1000, UpdatedMs: int64(1000 - i), Cwd: "/w", Preview: fmt.Sprint("Question ", i),
		ModelProvider: "openai", Source: "vscode", SourceKind: "vscode"}
}

func TestPutListAndCursors(t *testing.T) {
	ix, fresh, err := OpenOrRebuild(filepath.Join(t.TempDir(), "ix.sqlite"))
	require.NoError(t, err)
	require.True(t, fresh)
	t.Cleanup(func() { _ = ix.Close() })
	ctx := context.Background()
	require.NoError(t, ix.Tx(ctx, func(tx *Tx) error {
		for i := 0; i < 10; i++ {
			if err := tx.Put(row(i)); err != nil {
				return err
			}
		}
		return tx.SetName("id-0003", "Named ÄB")
	}))
	rows, err := ix.List(ctx, Query{Limit: 3})
	require.NoError(t, err)
	require.Len(t, rows, 4, "limit+1 rows tell a next page exists")
	require.Equal(t, "id-0009", rows[0].ID)
	rows, err = ix.List(ctx, Query{Limit: 3, T: 7000, AfterID: "id-0007"})
	require.NoError(t, err)
	require.Equal(t, "id-0006", rows[0].ID)
	rows, err = ix.List(ctx, Query{Limit: 3, ByUpdated: true, Asc: true})
	require.NoError(t, err)
	require.Equal(t, "id-0009", rows[0].ID)
	rows, err = ix.List(ctx, Query{SearchTerm: "named äb"})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, "Named ÄB", rows[0].Name)
	rows, err = ix.List(ctx, Query{SearchTerm: "question 5", SourceKinds: []string{"cli"}})
	require.NoError(t, err)
	require.Empty(t, rows)
	_, err = ix.Row(ctx, "nope")
	require.ErrorIs(t, err, ErrNoRow)
}

func TestCorruptOrForeignFileIsReplaced(t *testing.T) {
	for name, content := range map[string][]byte{
		"garbage":       []byte("this is not a database\n"),
		"truncated":     nil, // filled below from a real database cut in half
		"foreign_table": nil,
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "ix.sqlite")
			switch name {
			case "truncated":
				ix, _, err := OpenOrRebuild(p)
				require.NoError(t, err)
				require.NoError(t, ix.Tx(context.Background(), func(tx *Tx) error {
					for i := 0; i < 2000; i++ {
						if err := tx.Put(row(i)); err != nil {
							return err
						}
					}
					return nil
				}))
				_, err = ix.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
				require.NoError(t, err)
				require.NoError(t, ix.Close())
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				content = b[:len(b)/2]
			case "foreign_table":
				db, err := Open(p + ".other")
				require.NoError(t, err)
				_, err = db.db.Exec("PRAGMA user_version = 99")
				require.NoError(t, err)
				require.NoError(t, db.Close())
				b, err := os.ReadFile(p + ".other")
				require.NoError(t, err)
				content = b
			}
			require.NoError(t, os.WriteFile(p, content, 0o644))
			ix, fresh, err := OpenOrRebuild(p)
			require.NoError(t, err)
			defer ix.Close()
			require.True(t, fresh, "a replaced index must be rebuilt by its owner")
			n, err := ix.Count(context.Background())
			require.NoError(t, err)
			require.Zero(t, n)
		})
	}
}

// TestCrashMidWrite kills a process in the middle of a write transaction: the index reopens intact, with every
// committed row and none of the uncommitted ones.
func TestCrashMidWrite(t *testing.T) {
	if p := os.Getenv("THREADINDEX_CRASH_DB"); p != "" {
		crashWriter(p)
		return
	}
	p := filepath.Join(t.TempDir(), "ix.sqlite")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashMidWrite$")
	cmd.Env = append(os.Environ(), "THREADINDEX_CRASH_DB="+p)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.Equal(t, syscall.SIGKILL, ws.Signal(), "%s", out)

	ix, fresh, err := OpenOrRebuild(p)
	require.NoError(t, err)
	defer ix.Close()
	require.False(t, fresh, "the committed state survives")
	n, err := ix.Count(context.Background())
	require.NoError(t, err)
	require.Equal(t, 100, n, "committed rows kept, the torn transaction rolled back")
	_, err = ix.Row(context.Background(), "id-0150")
	require.ErrorIs(t, err, ErrNoRow)
}

func crashWriter(p string) {
	ix, _, err := OpenOrRebuild(p)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := ix.Tx(ctx, func(tx *Tx) error {
		for i := 0; i < 100; i++ {
			if err := tx.Put(row(i)); err != nil {
				return err
			}
		}
		return tx.Set("complete", "1")
	}); err != nil {
		panic(err)
	}
	_ = ix.Tx(ctx, func(tx *Tx) error {
		for i := 100; i < 5000; i++ {
			if err := tx.Put(row(i)); err != nil {
				return err
			}
			if i == 4000 {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
		return nil
	})
	select {} // SIGKILL is on its way
}
