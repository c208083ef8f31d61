package applypatch

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func planText(t *testing.T, root, text string) *Plan {
	t.Helper()
	p, err := Parse(text)
	require.NoError(t, err)
	pl, err := p.Plan(root)
	require.NoError(t, err)
	return pl
}

func TestApplyAddUpdateDeleteMove(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"u.txt": "one\ntwo\nthree\n", "del.txt": "bye\n", "src/old.py": "def f():\n    return 1\n", "exists.txt": "old\n"})
	require.NoError(t, os.Chmod(filepath.Join(root, "src/old.py"), 0o755))
	pl := planText(t, root, "*** Begin Patch\n"+
		"*** Add File: deep/new/file.txt\n+hello\n"+
		"*** Add File: exists.txt\n+overwritten\n"+
		"*** Update File: u.txt\n@@\n one\n-two\n+TWO\n three\n"+
		"*** Delete File: del.txt\n"+
		"*** Update File: src/old.py\n*** Move to: lib/new.py\n@@ def f():\n-    return 1\n+    return 2\n"+
		"*** End Patch")
	require.Equal(t, []string{
		filepath.Join(root, "deep/new/file.txt"), filepath.Join(root, "del.txt"), filepath.Join(root, "exists.txt"),
		filepath.Join(root, "lib/new.py"), filepath.Join(root, "src/old.py"), filepath.Join(root, "u.txt"),
	}, pl.AffectedPaths())
	require.NoError(t, pl.Apply())
	require.Equal(t, map[string]string{
		"deep/new/file.txt": "hello\n",
		"exists.txt":        "overwritten\n",
		"u.txt":             "one\nTWO\nthree\n",
		"lib/new.py":        "def f():\n    return 2\n",
	}, readTree(t, root))
	fi, err := os.Stat(filepath.Join(root, "lib/new.py"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "a moved file is a new file")
	require.Equal(t, "Success. Updated the following files:\nA deep/new/file.txt\nA exists.txt\nM u.txt\nM lib/new.py\nD del.txt\n", SuccessText(pl))
}

func TestApplyKeepsMode(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"run.sh": "echo a\n"})
	require.NoError(t, os.Chmod(filepath.Join(root, "run.sh"), 0o755))
	require.NoError(t, planText(t, root, "*** Begin Patch\n*** Update File: run.sh\n-echo a\n+echo b\n*** End Patch").Apply())
	fi, err := os.Stat(filepath.Join(root, "run.sh"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
}

func TestApplyAbsolutePaths(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	abs := filepath.Join(other, "x.txt")
	pl := planText(t, root, "*** Begin Patch\n*** Add File: "+abs+"\n+x\n*** End Patch")
	require.Equal(t, []string{abs}, pl.AffectedPaths())
	require.NoError(t, pl.Apply())
	require.Equal(t, map[string]string{"x.txt": "x\n"}, readTree(t, other))
}

func TestApplyParentIsRegularFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "fileparent": "f"})
	pl := planText(t, root, "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Add File: sub/deep/x.txt\n+deep\n*** Add File: fileparent/x.txt\n+x\n*** End Patch")
	before := readTree(t, root)
	err := pl.Apply()
	require.Error(t, err)
	var ae *ApplyError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "Failed to write file "+filepath.Join(root, "fileparent/x.txt"), err.Error())
	require.Equal(t, before, readTree(t, root))
	_, statErr := os.Stat(filepath.Join(root, "sub"))
	require.ErrorIs(t, statErr, os.ErrNotExist, "directories created for the patch are removed on failure")
	require.Equal(t, "Exit code: 1\nWall time: 0.3 seconds\nOutput:\nFailed to write file "+filepath.Join(root, "fileparent/x.txt")+"\n",
		ApplyFailedOutput(err, 300*time.Millisecond))
}

// TestApplyRollbackAtEveryRename makes each rename of Apply fail in turn and
// checks that the tree is left exactly as it was, without temporary files.
func TestApplyRollbackAtEveryRename(t *testing.T) {
	files := map[string]string{"a.txt": "a\n", "b.txt": "b\n", "d.txt": "d\r\n"}
	patch := "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Delete File: b.txt\n*** Add File: new/dir/c.txt\n+c\n*** Update File: d.txt\n-d\n+D\n*** End Patch"

	// Count the renames of a successful run first.
	root := t.TempDir()
	writeTree(t, root, files)
	calls := 0
	rename = func(from, to string) error { calls++; return os.Rename(from, to) }
	t.Cleanup(func() { rename = os.Rename })
	require.NoError(t, planText(t, root, patch).Apply())
	require.Equal(t, map[string]string{"a.txt": "A\n", "new/dir/c.txt": "c\n", "d.txt": "D\r\n"}, readTree(t, root))
	require.Equal(t, 6, calls)

	injected := errors.New("injected rename failure")
	for failAt := 1; failAt <= calls; failAt++ {
		root := t.TempDir()
		writeTree(t, root, files)
		pl := planText(t, root, patch)
		n := 0
		rename = func(from, to string) error {
			n++
			if n == failAt {
				return injected
			}
			return os.Rename(from, to)
		}
		err := pl.Apply()
		require.ErrorIs(t, err, injected, "fail at rename %d", failAt)
		require.Equal(t, files, readTree(t, root), "fail at rename %d", failAt)
		_, statErr := os.Stat(filepath.Join(root, "new"))
		require.ErrorIs(t, statErr, os.ErrNotExist)
	}
}

func TestApplyStale(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	pl := planText(t, root, "*** Begin Patch\n*** Add File: c.txt\n+c\n*** Update File: a.txt\n-a\n+A\n*** End Patch")
	writeTree(t, root, map[string]string{"a.txt": "changed\n"})
	require.ErrorIs(t, pl.Apply(), ErrStale)
	require.Equal(t, map[string]string{"a.txt": "changed\n", "b.txt": "b\n"}, readTree(t, root))
}

func TestApplyTwiceIsStale(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n"})
	pl := planText(t, root, "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** End Patch")
	require.NoError(t, pl.Apply())
	require.ErrorIs(t, pl.Apply(), ErrStale)
	require.Equal(t, map[string]string{"a.txt": "A\n"}, readTree(t, root))
}
