package filesearch

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/testfs"
)

func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(root, p)
		if body == "<dir>" {
			require.NoError(t, os.MkdirAll(full, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(body), 0o644))
	}
}

func walkAll(t *testing.T, roots ...string) []string {
	t.Helper()
	var mu sync.Mutex
	var out []string
	require.NoError(t, Walk(context.Background(), roots, func(b []Entry) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range b {
			s := e.Path
			if e.IsDir {
				s += "/"
			}
			if len(roots) > 1 {
				s = filepath.Base(roots[e.Root]) + ":" + s
			}
			out = append(out, s)
		}
	}))
	sort.Strings(out)
	return out
}

// The same layout was checked against the reference: .gitignore rules (negation, anchoring, directory
// patterns, nested files, info/exclude) only apply inside a repository, .ignore everywhere, hidden
// entries are listed, and a .gitignore above the repository root is ignored.
func TestWalkIgnoreRules(t *testing.T) {
	base := testfs.OutsideRepo(t)
	writeTree(t, base, map[string]string{
		".gitignore":             "zzpar\n",
		"nogit/.gitignore":       "zzgi*\n",
		"nogit/.ignore":          "zzig*\n",
		"nogit/zzgi1":            "",
		"nogit/zzig1":            "",
		"nogit/zzok1":            "",
		"repo/.git/info/exclude": "zzex\n",
		"repo/.gitignore":        "# comment\nzzgi*\n!zzgikeep\n/zzroot\nzzdir/\n",
		"repo/.ignore":           "zzig*\n",
		"repo/sub/.gitignore":    "zzsub*\n",
		"repo/zzgi1":             "",
		"repo/zzgikeep":          "",
		"repo/zzroot":            "",
		"repo/sub/zzroot":        "",
		"repo/zzex":              "",
		"repo/sub/zzsub1":        "",
		"repo/sub/deep/zzsub2":   "",
		"repo/zzig1":             "",
		"repo/zzdir/zza":         "",
		"repo/sub/zzdir/zzb":     "",
		"repo/keep/zzpar":        "",
		"repo/.hidden/h":         "",
	})
	got := walkAll(t, filepath.Join(base, "nogit"))
	require.Equal(t, []string{".gitignore", ".ignore", "zzgi1", "zzok1"}, got)

	got = walkAll(t, filepath.Join(base, "repo"))
	for _, want := range []string{"zzgikeep", "sub/zzroot", "keep/zzpar", ".hidden/h", ".git/", "sub/deep/"} {
		require.Contains(t, got, want)
	}
	for _, gone := range []string{"zzgi1", "zzroot", "zzex", "sub/zzsub1", "sub/deep/zzsub2", "zzig1", "zzdir/", "zzdir/zza", "sub/zzdir/", "sub/zzdir/zzb"} {
		require.NotContains(t, got, gone)
	}

	// a root inside the repository still obeys the repository's files above it
	got = walkAll(t, filepath.Join(base, "repo", "sub"))
	require.Contains(t, got, "zzroot")
	require.NotContains(t, got, "zzdir/")
	require.NotContains(t, got, "zzsub1")
}

func TestWalkNestedRootsReportDeepest(t *testing.T) {
	base := t.TempDir()
	writeTree(t, base, map[string]string{"top/a.txt": "", "top/inner/b.txt": ""})
	top, inner := filepath.Join(base, "top"), filepath.Join(base, "top", "inner")
	got := walkAll(t, top, inner)
	// entries under the inner root come from both walks, reported against the inner root each time
	require.Equal(t, []string{"inner:b.txt", "inner:b.txt", "top:a.txt", "top:inner/"}, got)
}

func TestWalkMissingRootAndCancel(t *testing.T) {
	require.Empty(t, walkAll(t, filepath.Join(t.TempDir(), "nope")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	base := t.TempDir()
	writeTree(t, base, map[string]string{"a/b/c": ""})
	require.ErrorIs(t, Walk(ctx, []string{base}, func([]Entry) {}), context.Canceled)
	ms, err := Search(ctx, []string{base}, "c", 10)
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, ms)
}

func TestWalkSymlinkLoop(t *testing.T) {
	base := t.TempDir()
	writeTree(t, base, map[string]string{"d/f": ""})
	require.NoError(t, os.Symlink(filepath.Join(base, "d"), filepath.Join(base, "d", "loop")))
	require.NoError(t, os.Symlink(filepath.Join(base, "d"), filepath.Join(base, "link")))
	got := walkAll(t, base)
	require.Equal(t, []string{"d/", "d/f", "link/", "link/f"}, got)
}

func TestSessionReportsInterimAndFinal(t *testing.T) {
	base := t.TempDir()
	writeTree(t, base, map[string]string{"src/main.go": "", "docs/readme.md": ""})
	updates := make(chan Update, 16)
	s := StartSession(context.Background(), []string{base}, 50, func(u Update) { updates <- u })
	defer s.Close()
	// the walk's completion is reported for the empty query
	require.Equal(t, Update{Query: ""}, <-updates)
	require.Equal(t, Update{Query: "", Complete: true}, <-updates)
	s.SetQuery("main")
	u := <-updates
	require.Equal(t, "main", u.Query)
	require.Len(t, u.Matches, 1)
	require.Equal(t, "src/main.go", u.Matches[0].Path)
	require.Equal(t, Update{Query: "main", Complete: true}, <-updates)
	s.Close()
	s.Close()
}
