package applypatch

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func planErr(t *testing.T, root, text string) error {
	t.Helper()
	p, err := Parse(text)
	require.NoError(t, err)
	_, err = p.Plan(root)
	require.Error(t, err)
	return err
}

func newContent(t *testing.T, root, text string) string {
	t.Helper()
	pl := planText(t, root, text)
	require.Len(t, pl.Files, 1)
	return pl.Files[0].NewContent
}

func TestPlanMatching(t *testing.T) {
	cases := []struct {
		name, file, patch, want string
	}{
		{"context header narrows the search",
			"def a():\n    return 1\n\ndef b():\n    return 1\n",
			"@@ def b():\n-    return 1\n+    return 2",
			"def a():\n    return 1\n\ndef b():\n    return 2\n"},
		{"without header the first occurrence matches",
			"def a():\n    return 1\n\ndef b():\n    return 1\n",
			"@@\n-    return 1\n+    return 2",
			"def a():\n    return 2\n\ndef b():\n    return 1\n"},
		{"chunks apply in order after each other",
			"x\nx\nx\n",
			"@@\n-x\n+1\n@@\n-x\n+2",
			"1\n2\nx\n"},
		{"end of file anchors at the last occurrence",
			"z\ny\nz\n",
			"@@\n-z\n+Z\n*** End of File",
			"z\ny\nZ\n"},
		{"trailing whitespace is ignored",
			"foo   \nbar\n",
			"@@\n-foo\n+FOO\n bar",
			"FOO\nbar\n"},
		{"surrounding whitespace is ignored last",
			"\tfoo\n",
			"@@\n-  foo  \n+foo",
			"foo\n"},
		{"typographic punctuation matches ASCII",
			"say \u201chi\u201d \u2014 ok\n",
			"@@\n-say \"hi\" - ok\n+done",
			"done\n"},
		{"exact match is preferred over a fuzzy one earlier",
			"a \nb\na\nc\n",
			"@@\n-a\n+A",
			"a \nb\nA\nc\n"},
		{"pure addition appends at the end",
			"a\nb\n",
			"@@\n+c",
			"a\nb\nc\n"},
		{"trailing blank context line may stand for the end of file",
			"a\nb\n",
			"@@\n a\n-b\n+B\n",
			"a\nB\n"},
		{"missing final newline is added",
			"a\nb",
			"@@\n-b\n+c",
			"a\nc\n"},
		{"crlf file gets crlf lines",
			"one\r\ntwo\r\n",
			"@@\n one\n+inserted\n-two\n+TWO",
			"one\r\ninserted\r\nTWO\r\n"},
		{"deleting every line leaves an empty file",
			"a\n",
			"@@\n-a",
			""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, map[string]string{"f": tc.file})
			got := newContent(t, root, "*** Begin Patch\n*** Update File: f\n"+tc.patch+"\n*** End Patch")
			require.Equal(t, tc.want, got)
		})
	}
}

func TestPlanErrors(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\nb\n", "dir/x": "x\n", "eof.txt": "z\ny\n"})
	abs := func(p string) string { return filepath.Join(root, p) }
	cases := []struct {
		name, patch, msg string
		notExist         bool
	}{
		{"unmatched hunk names file and lines", "*** Update File: a.txt\n@@\n a\n-nope\n+x",
			"Failed to find expected lines in " + abs("a.txt") + ":\na\nnope", false},
		{"unmatched hunk in the second file", "*** Add File: new.txt\n+n\n*** Update File: a.txt\n@@\n-zzz\n+y",
			"Failed to find expected lines in " + abs("a.txt") + ":\nzzz", false},
		{"second chunk cannot match before the first", "*** Update File: a.txt\n@@\n-b\n+B\n@@\n-a\n+A",
			"Failed to find expected lines in " + abs("a.txt") + ":\na", false},
		{"end of file anchor not at the end", "*** Update File: eof.txt\n@@\n-z\n+Z\n*** End of File",
			"Failed to find expected lines in " + abs("eof.txt") + ":\nz", false},
		{"unknown context header", "*** Update File: a.txt\n@@ def zzz():\n-a\n+b",
			"Failed to find context 'def zzz():' in " + abs("a.txt"), false},
		{"update of a missing file", "*** Update File: missing.txt\n@@\n-a\n+b",
			"Failed to read file to update " + abs("missing.txt") + ": No such file or directory (os error 2)", true},
		{"delete of a missing file", "*** Delete File: nosuch.txt",
			"Failed to read " + abs("nosuch.txt") + ": No such file or directory (os error 2)", true},
		{"update of a directory", "*** Update File: dir\n@@\n-a\n+b",
			"Failed to read file to update " + abs("dir") + ": Is a directory (os error 21)", false},
		{"update after delete in the same patch", "*** Delete File: a.txt\n*** Update File: a.txt\n@@\n-a\n+b",
			"Failed to read file to update " + abs("a.txt") + ": No such file or directory (os error 2)", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := readTree(t, root)
			err := planErr(t, root, "*** Begin Patch\n"+tc.patch+"\n*** End Patch")
			require.Equal(t, tc.msg, err.Error())
			var pe *PlanError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tc.notExist, errorsIsNotExist(err))
			require.Equal(t, before, readTree(t, root), "planning never touches the disk")
			require.Equal(t, "apply_patch verification failed: "+tc.msg, VerificationFailedOutput(err))
		})
	}
}

func errorsIsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func TestPlanSequentialHunksOnOneFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n"})
	pl := planText(t, root, "*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n*** Update File: a.txt\n-b\n+c\n*** Add File: n.txt\n+1\n*** Update File: n.txt\n-1\n+2\n*** End Patch")
	require.Len(t, pl.Files, 4)
	require.Equal(t, "b\n", pl.Files[1].OldContent)
	require.NoError(t, pl.Apply())
	require.Equal(t, map[string]string{"a.txt": "c\n", "n.txt": "2\n"}, readTree(t, root))
}

func TestPlanMoveOntoExistingFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"src.txt": "s\n", "dst.txt": "old\n"})
	pl := planText(t, root, "*** Begin Patch\n*** Update File: src.txt\n*** Move to: dst.txt\n-s\n+S\n*** End Patch")
	require.NoError(t, pl.Apply())
	require.Equal(t, map[string]string{"dst.txt": "S\n"}, readTree(t, root))
	require.Equal(t, "Success. Updated the following files:\nM dst.txt\n", SuccessText(pl))
	ch := pl.Changes()
	require.Len(t, ch, 1)
	require.Equal(t, filepath.Join(root, "src.txt"), ch[0].Path)
	require.NotNil(t, ch[0].MovePath)
	require.Equal(t, filepath.Join(root, "dst.txt"), *ch[0].MovePath)
	require.Equal(t, "@@ -1 +1 @@\n-s\n+S\n\n\nMoved to: "+filepath.Join(root, "dst.txt"), ch[0].UnifiedDiff)
}
