package threadindex

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMembersFilterAndRecency(t *testing.T) {
	ix, _, err := OpenOrRebuild(filepath.Join(t.TempDir(), "ix.sqlite"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ix.Close() })
	ctx := context.Background()
	require.NoError(t, ix.Tx(ctx, func(tx *Tx) error {
		for i := 0; i < 5; i++ {
			r := row(i)
			r.Archived = i == 4
			if i == 2 {
				r.RecencyMs = 42 // an imported session's
			}
			if err := tx.Put(r); err != nil {
				return err
			}
		}
		return nil
	}))
	ids := func(rows []Row) []string {
		out := []string{}
		for _, r := range rows {
			out = append(out, r.ID)
		}
		return out
	}
	rows, err := ix.List(ctx, Query{Members: &Members{IDs: []string{"id-0001", "id-0003", "nope"}}})
	require.NoError(t, err)
	require.Equal(t, []string{"id-0003", "id-0001"}, ids(rows))
	rows, err = ix.List(ctx, Query{Members: &Members{IDs: []string{"id-0001", "id-0003"}, Outside: true}})
	require.NoError(t, err)
	require.Equal(t, []string{"id-0002", "id-0000"}, ids(rows))
	rows, err = ix.List(ctx, Query{Members: &Members{}})
	require.NoError(t, err)
	require.Empty(t, rows, "an empty member set keeps nothing")
	rows, err = ix.List(ctx, Query{Members: &Members{Outside: true}})
	require.NoError(t, err)
	require.Len(t, rows, 4, "leaving out nobody keeps every unarchived thread")

	rec, err := ix.Recency(ctx, []string{"id-0001", "id-0002", "id-0004", "nope"})
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"id-0001": 999, "id-0002": 42}, rec, "archived and unknown threads have no recency")
	got, err := ix.Row(ctx, "id-0002")
	require.NoError(t, err)
	require.Equal(t, int64(42), got.RecencyMs)
	rec, err = ix.Recency(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, rec)
}

func TestDomainMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFile)
	st, err := OpenState(path)
	require.NoError(t, err)
	ctx := context.Background()
	steps := []string{"CREATE TABLE d_a (x INTEGER)"}
	require.NoError(t, st.Migrate(ctx, "d", steps))
	require.NoError(t, st.Migrate(ctx, "d", steps), "applied steps are not applied again")
	steps = append(steps, "INSERT INTO d_a VALUES (7)")
	require.NoError(t, st.Migrate(ctx, "d", steps))
	var x int
	require.NoError(t, st.DB().QueryRow("SELECT x FROM d_a").Scan(&x))
	require.Equal(t, 7, x)
	require.NoError(t, st.Close())

	st, err = OpenState(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.ErrorContains(t, st.Migrate(ctx, "d", steps[:1]), "newer than this server's")
	require.Error(t, st.Migrate(ctx, "e", []string{"NOT SQL"}))
	var n int
	require.NoError(t, st.DB().QueryRow("SELECT count(*) FROM domain_versions WHERE domain = 'e'").Scan(&n))
	require.Zero(t, n, "a failed migration leaves no trace")
}
