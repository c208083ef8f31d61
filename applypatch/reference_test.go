package applypatch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeTree creates files (relative path -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// readTree returns every regular file under dir (relative slash path -> content).
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(data)
		return nil
	}))
	return out
}

// TestReferenceSession replays the patches of a reference session and compares
// the fileChange changes, the turn diffs and the model outputs byte for byte.
func TestReferenceSession(t *testing.T) {
	root := t.TempDir()
	var a strings.Builder
	for i := 1; i <= 12; i++ {
		a.WriteString("l" + strconv.Itoa(i) + "\n")
	}
	writeTree(t, root, map[string]string{"a.txt": a.String(), "m.txt": "x\n", "d.txt": "gone\nbye\n", "crlf.txt": "a\r\nb\r\nc\r\n"})
	sub := func(s string) string { return strings.ReplaceAll(s, "ROOT", root) }

	patches := []string{
		"*** Begin Patch\n*** Add File: hello.txt\n+hi\n+there\n*** Update File: a.txt\n@@\n l2\n-l3\n+L3\n l4\n@@\n l9\n-l10\n+L10\n*** Update File: m.txt\n*** Move to: sub/n.txt\n@@\n-x\n+y\n*** Delete File: d.txt\n*** Update File: crlf.txt\n@@\n-b\n+B\n*** End Patch",
		"*** Begin Patch\n*** Update File: a.txt\n@@\n l5\n-l6\n+L6\n*** Add File: hello.txt\n+again\n*** End Patch",
		"*** Begin Patch\n*** Update File: a.txt\n@@\n nothere\n-zzz\n+y\n*** End Patch",
		"*** Begin Patch\n*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch",
		"*** Begin Patch\n*** Frob File: x\n*** End Patch",
		"*** Begin Patch\n*** Add File: hello.txt\n+third\n*** End Patch",
	}
	// Which golden change list / turn diff each successful patch produces.
	changeIdx := map[int]int{0: 0, 1: 1, 5: 2}
	diffIdx := map[int]int{0: 0, 1: 1, 5: 2}

	td := NewTurnDiff(root)
	for i, text := range patches {
		var output string
		p, err := Parse(text)
		var pl *Plan
		if err == nil {
			pl, err = p.Plan(root)
		}
		if err != nil {
			output = VerificationFailedOutput(err)
		} else {
			got, jerr := json.Marshal(pl.Changes())
			require.NoError(t, jerr)
			require.JSONEq(t, sub(refChanges[changeIdx[i]]), string(got), "changes of patch %d", i)
			td.Track(pl)
			require.NoError(t, pl.Apply())
			output = SuccessOutput(pl, 0)
			diff, derr := td.Diff()
			require.NoError(t, derr)
			require.Equal(t, refTurnDiffs[diffIdx[i]], diff, "turn diff after patch %d", i)
		}
		require.Equal(t, sub(refOutputs[i]), output, "output of patch %d", i)
	}
	require.Equal(t, map[string]string{
		"a.txt":     strings.NewReplacer("l3\n", "L3\n", "l6\n", "L6\n", "l10\n", "L10\n").Replace(a.String()),
		"crlf.txt":  "a\r\nB\r\nc\r\n",
		"hello.txt": "third\n",
		"sub/n.txt": "y\n",
	}, readTree(t, root))
}

// TestReferenceSessionEdgeCases replays a second reference session: heredoc and
// whitespace tolerance, missing final newlines, pure additions, context headers,
// end-of-file anchors, fuzzy matches and the reference's error texts.
func TestReferenceSessionEdgeCases(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, refSession2Files)
	sub := func(s string) string { return strings.ReplaceAll(s, "ROOT", root) }
	for i, tc := range refSession2 {
		var output string
		p, err := Parse(tc.patch)
		var pl *Plan
		if err == nil {
			pl, err = p.Plan(root)
		}
		if err != nil {
			output = VerificationFailedOutput(err)
			require.Empty(t, tc.changes, "patch %d should have succeeded: %v", i, err)
		} else {
			got, jerr := json.Marshal(pl.Changes())
			require.NoError(t, jerr)
			require.JSONEq(t, sub(tc.changes), string(got), "changes of patch %d", i)
			require.NoError(t, pl.Apply())
			output = SuccessOutput(pl, 0)
		}
		require.Equal(t, sub(tc.output), output, "output of patch %d", i)
	}
	got := readTree(t, root)
	require.Equal(t, "p\nQ\n", got["nonl.txt"])
	require.Equal(t, "p\nq\nappended\n", got["nonl2.txt"])
	require.Equal(t, "def a():\n    return 9\n\ndef b():\n    return 2\n", got["ctx.py"])
	require.Equal(t, "z\ny\nZ\n", got["eof.txt"])
	require.Equal(t, "A\nb\nB\n", got["multi.txt"])
	require.Equal(t, "fixed\n", got["uni.txt"])
	require.Equal(t, "bar\n", got["ws2.txt"])
	require.Equal(t, "", got["empty.txt"])
	require.NotContains(t, got, "ok1.txt", "a patch failing in its second file must not create the first")
}
