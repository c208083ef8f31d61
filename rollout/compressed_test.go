package rollout

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	zstParent = "01a20b96-a3bb-78d1-8772-d736e5b6abcf"
	zstChild  = "01a20b96-a865-71b3-9936-d33b0bbbd56c"
)

// compressedHome lays out the reference's compressed fixture under a CODEX_HOME (plain=true: decompressed
// copies instead) and returns the home and the day directory.
func compressedHome(t *testing.T, plain bool) (home, day string) {
	t.Helper()
	home = t.TempDir()
	day = filepath.Join(home, "sessions", "2026", "11", "24")
	require.NoError(t, os.MkdirAll(day, 0o755))
	ents, err := os.ReadDir("testdata/compressed")
	require.NoError(t, err)
	for _, e := range ents {
		if !IsCompressed(e.Name()) {
			continue
		}
		src := filepath.Join("testdata/compressed", e.Name())
		dst := filepath.Join(day, e.Name())
		var data []byte
		if plain {
			r, err := OpenRolloutFile(src)
			require.NoError(t, err)
			data, err = io.ReadAll(r)
			require.NoError(t, err)
			require.NoError(t, r.Close())
			dst = PlainPath(dst)
		} else {
			data, err = os.ReadFile(src)
			require.NoError(t, err)
		}
		require.NoError(t, os.WriteFile(dst, data, 0o644))
	}
	return home, day
}

func rolloutIn(t *testing.T, dir, id string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "rollout-*-"+id+".jsonl*"))
	require.NoError(t, err)
	require.Len(t, m, 1)
	return m[0]
}

// TestReadCompressed reads the reference's .jsonl.zst rollouts (a fork whose parent is compressed too) and gets
// what their plain copies give.
func TestReadCompressed(t *testing.T) {
	_, zday := compressedHome(t, false)
	_, pday := compressedHome(t, true)
	for _, id := range []string{zstParent, zstChild} {
		zp, pp := rolloutIn(t, zday, id), rolloutIn(t, pday, id)
		require.True(t, IsCompressed(zp))
		zt, err := ReadFile(zp)
		require.NoError(t, err)
		pt, err := ReadFile(pp)
		require.NoError(t, err)
		require.Equal(t, zp, zt.Path)
		zt.Path = pt.Path
		require.Equal(t, pt, zt)

		zm, err := ReadMeta(zp)
		require.NoError(t, err)
		pm, err := ReadMeta(pp)
		require.NoError(t, err)
		zm.Path = pm.Path
		require.Equal(t, pm, zm)
	}
	child, err := ReadFile(rolloutIn(t, zday, zstChild))
	require.NoError(t, err)
	require.Len(t, child.Turns, 3, "the parent's two turns, then the fork's own")
	require.Equal(t, zstParent, child.Meta.ForkedFromID)

	// A fork's base is measured in the parent's plain bytes.
	zb, err := ForkBase(rolloutIn(t, zday, zstParent), zstParent, "")
	require.NoError(t, err)
	pb, err := ForkBase(rolloutIn(t, pday, zstParent), zstParent, "")
	require.NoError(t, err)
	require.Equal(t, pb, zb)
	require.EqualValues(t, 40798, zb.EndByteOffset)
}

// TestStoreListsCompressed indexes compressed rollouts (a full build and a lookup by id) and prefers a plain
// rollout over a compressed copy of the same thread.
func TestStoreListsCompressed(t *testing.T) {
	home, day := compressedHome(t, false)
	s, err := Open(home)
	require.NoError(t, err)
	require.NoError(t, s.WaitReconciled(t.Context()))
	page, _, err := s.List(ListQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, page, 2)
	for _, sum := range page {
		require.True(t, IsCompressed(sum.Path), sum.Path)
		require.NotEmpty(t, sum.Preview)
	}
	p, err := s.Locate(zstChild)
	require.NoError(t, err)
	require.Equal(t, rolloutIn(t, day, zstChild), p)
	th, err := s.ReadThread(zstChild)
	require.NoError(t, err)
	require.Len(t, th.Turns, 3)
	require.NoError(t, s.Close())

	// Materialized as the reference does on resume: the plain file replaces the compressed one.
	zp := rolloutIn(t, day, zstParent)
	plain, err := Materialize(zp)
	require.NoError(t, err)
	require.Equal(t, PlainPath(zp), plain)
	require.NoFileExists(t, zp)
	pth, err := ReadFile(plain)
	require.NoError(t, err)
	require.Len(t, pth.Turns, 2)
	again, err := Materialize(plain)
	require.NoError(t, err)
	require.Equal(t, plain, again)

	// A compressed copy left beside a plain rollout is ignored; a fresh index finds the plain one.
	raw, err := os.ReadFile(filepath.Join("testdata/compressed", filepath.Base(zp)))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(zp, raw, 0o644))
	require.NoError(t, os.Remove(filepath.Join(home, IndexFileName)))
	s, err = Open(home)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.WaitReconciled(t.Context()))
	sum, err := s.Get(zstParent)
	require.NoError(t, err)
	require.Equal(t, plain, sum.Path)
	p, err = s.Locate(zstParent)
	require.NoError(t, err)
	require.Equal(t, plain, p)
}
