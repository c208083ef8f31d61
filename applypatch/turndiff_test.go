package applypatch

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func applyText(t *testing.T, td *TurnDiff, root, text string) {
	t.Helper()
	pl := planText(t, root, text)
	td.Track(pl)
	require.NoError(t, pl.Apply())
}

func TestTurnDiffAcrossPatches(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"f.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "keep.txt": "k\n"})
	td := NewTurnDiff(root)
	d, err := td.Diff()
	require.NoError(t, err)
	require.Empty(t, d)

	applyText(t, td, root, "*** Begin Patch\n*** Update File: f.txt\n-1\n+one\n*** End Patch")
	applyText(t, td, root, "*** Begin Patch\n*** Update File: f.txt\n-10\n+ten\n*** Add File: tmp.txt\n+t\n*** End Patch")
	applyText(t, td, root, "*** Begin Patch\n*** Delete File: tmp.txt\n*** Update File: f.txt\n*** Move to: g/f.txt\n-5\n+five\n*** End Patch")
	applyText(t, td, root, "*** Begin Patch\n*** Update File: g/f.txt\n-2\n+two\n*** End Patch")
	d, err = td.Diff()
	require.NoError(t, err)
	require.Equal(t, "diff --git a/f.txt b/g/f.txt\n"+
		"index "+blobOID("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")+".."+blobOID("one\ntwo\n3\n4\nfive\n6\n7\n8\n9\nten\n")+"\n"+
		"--- a/f.txt\n+++ b/g/f.txt\n"+
		"@@ -1,10 +1,10 @@\n-1\n-2\n+one\n+two\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n-10\n+ten\n", d)
}

func TestTurnDiffAddDeleteAndRevert(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "gone.sh": "#!/bin/sh\n"})
	require.NoError(t, os.Chmod(filepath.Join(root, "gone.sh"), 0o755))
	td := NewTurnDiff(root)
	applyText(t, td, root, "*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n*** Add File: n/new.txt\n+x\n*** Delete File: gone.sh\n*** End Patch")
	applyText(t, td, root, "*** Begin Patch\n*** Update File: a.txt\n-b\n+a\n*** End Patch")
	d, err := td.Diff()
	require.NoError(t, err)
	require.Equal(t, "diff --git a/gone.sh b/gone.sh\ndeleted file mode 100755\n"+
		"index "+blobOID("#!/bin/sh\n")+".."+zeroOID+"\n--- a/gone.sh\n+++ /dev/null\n@@ -1 +0,0 @@\n-#!/bin/sh\n"+
		"diff --git a/n/new.txt b/n/new.txt\nnew file mode 100644\n"+
		"index "+zeroOID+".."+blobOID("x\n")+"\n--- /dev/null\n+++ b/n/new.txt\n@@ -0,0 +1 @@\n+x\n", d,
		"a.txt was changed back to its baseline and is omitted")

	// A file added and deleted within the turn disappears from the diff.
	applyText(t, td, root, "*** Begin Patch\n*** Delete File: n/new.txt\n*** End Patch")
	d, err = td.Diff()
	require.NoError(t, err)
	require.NotContains(t, d, "new.txt")
}

func TestTurnDiffOutsideCwdAndNoNewline(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	abs := filepath.Join(other, "x.txt")
	writeTree(t, other, map[string]string{"x.txt": "a\nb"})
	td := NewTurnDiff(root)
	applyText(t, td, root, "*** Begin Patch\n*** Update File: "+abs+"\n a\n-b\n+c\n*** End Patch")
	d, err := td.Diff()
	require.NoError(t, err)
	require.Equal(t, "diff --git a/"+abs+" b/"+abs+"\nindex "+blobOID("a\nb")+".."+blobOID("a\nc\n")+"\n"+
		"--- a/"+abs+"\n+++ b/"+abs+"\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n", d)
}

func TestBlobOID(t *testing.T) {
	// Known git object ids (git hash-object).
	require.Equal(t, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", blobOID(""))
	require.Equal(t, "587be6b4c3f93f93c489c0111bba5596147a26cb", blobOID("x\n"))
}

func TestUnifiedHunksFormat(t *testing.T) {
	cases := []struct {
		name, old, new string
		ctx            int
		want           string
	}{
		{"identical", "a\n", "a\n", 3, ""},
		{"from empty", "", "a\nb\n", 3, "@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"to empty", "a\n", "", 3, "@@ -1 +0,0 @@\n-a\n"},
		{"separate hunks", "1\n2\n3\n4\n5\n6\n7\n8\n", "x\n2\n3\n4\n5\n6\n7\ny\n", 1,
			"@@ -1,2 +1,2 @@\n-1\n+x\n 2\n@@ -7,2 +7,2 @@\n 7\n-8\n+y\n"},
		{"merged hunks", "1\n2\n3\n4\n", "x\n2\n3\ny\n", 1, "@@ -1,4 +1,4 @@\n-1\n+x\n 2\n 3\n-4\n+y\n"},
		{"insertion without context", "a\nb\n", "a\nx\nb\n", 0, "@@ -1,0 +2 @@\n+x\n"},
		{"both without newline", "a\nb", "a\nc", 3, "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, unifiedHunks(tc.old, tc.new, tc.ctx))
		})
	}
}

// TestDiffLinesRandom checks that edit scripts reproduce both sides and are
// minimal (compared with a dynamic-programming LCS).
func TestDiffLinesRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	gen := func() []string {
		n := rng.Intn(12)
		out := make([]string, n)
		for i := range out {
			out[i] = string(rune('a' + rng.Intn(3)))
		}
		return out
	}
	for iter := 0; iter < 2000; iter++ {
		a, b := gen(), gen()
		es := diffLines(a, b)
		var gotA, gotB []string
		changes := 0
		for _, e := range es {
			switch e.kind {
			case opEqual:
				require.Equal(t, a[e.a], b[e.b])
				gotA, gotB = append(gotA, a[e.a]), append(gotB, b[e.b])
			case opDel:
				gotA = append(gotA, a[e.a])
				changes++
			case opIns:
				gotB = append(gotB, b[e.b])
				changes++
			}
		}
		require.Equal(t, strings.Join(a, ","), strings.Join(gotA, ","))
		require.Equal(t, strings.Join(b, ","), strings.Join(gotB, ","))
		require.Equal(t, len(a)+len(b)-2*lcs(a, b), changes, "a=%v b=%v", a, b)
	}
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

func TestDiffLinesHugeRewriteFallsBack(t *testing.T) {
	var a, b []string
	for i := 0; i < 3000; i++ {
		a = append(a, "a"+strings.Repeat("x", i%7)+string(rune('0'+i%10)))
		b = append(b, "b"+string(rune('0'+i%10)))
	}
	es := diffLines(a, b)
	require.Len(t, es, 6000)
}
