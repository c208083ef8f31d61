package applypatch

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseAllOperations(t *testing.T) {
	in := "*** Begin Patch\n" +
		"*** Add File: path/to/new.txt\n+line one\n+line two\n" +
		"*** Delete File: old.txt\n" +
		"*** Update File: src/file.py\n*** Move to: src/renamed.py\n@@ def f():\n ctx\n-old\n+new\n@@\n-tail\n+TAIL\n*** End of File\n" +
		"*** End Patch"
	p, err := Parse(in)
	require.NoError(t, err)
	require.Equal(t, []Hunk{
		{Kind: KindAdd, Path: "path/to/new.txt", Contents: "line one\nline two\n", Line: 2},
		{Kind: KindDelete, Path: "old.txt", Line: 5},
		{Kind: KindUpdate, Path: "src/file.py", MovePath: "src/renamed.py", Line: 6, Chunks: []Chunk{
			{Context: "def f():", OldLines: []string{"ctx", "old"}, NewLines: []string{"ctx", "new"}},
			{OldLines: []string{"tail"}, NewLines: []string{"TAIL"}, EndOfFile: true},
		}},
	}, p.Hunks)
}

func TestParseTolerance(t *testing.T) {
	want := []Hunk{{Kind: KindAdd, Path: "a.txt", Contents: "x\n", Line: 2}}
	for name, in := range map[string]string{
		"surrounding whitespace":    "  \n *** Begin Patch \n*** Add File: a.txt\n+x\n *** End Patch  \n\n",
		"crlf":                      "*** Begin Patch\r\n*** Add File: a.txt\r\n+x\r\n*** End Patch\r\n",
		"heredoc quoted":            "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\nEOF\n",
		"heredoc bare":              "<<EOF\n*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\nEOF",
		"heredoc double quoted":     "<<\"PATCH\"\n*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\nPATCH",
		"header padded with spaces": "*** Begin Patch\n  *** Add File:   a.txt  \n+x\n*** End Patch",
	} {
		t.Run(name, func(t *testing.T) {
			p, err := Parse(in)
			require.NoError(t, err)
			require.Equal(t, want, p.Hunks)
		})
	}
}

func TestParseUpdateWithoutLeadingMarkerAndBlankContext(t *testing.T) {
	p, err := Parse("*** Begin Patch\n*** Update File: f\n a\n\n-b\n+c\n\n@@\n-d\n+e\n*** End Patch")
	require.NoError(t, err)
	require.Len(t, p.Hunks, 1)
	require.Equal(t, []Chunk{
		{OldLines: []string{"a", "", "b"}, NewLines: []string{"a", "", "c"}},
		{OldLines: []string{"d"}, NewLines: []string{"e"}},
	}, p.Hunks[0].Chunks)
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, in, msg string
		line          int
	}{
		{"empty input", "", "invalid patch: The last line of the patch must be '*** End Patch'", 0},
		{"missing begin", "*** Add File: x.txt\n+a\n*** End Patch", "invalid patch: The first line of the patch must be '*** Begin Patch'", 0},
		{"missing end", "*** Begin Patch\n*** Add File: x.txt\n+a", "invalid patch: The last line of the patch must be '*** End Patch'", 0},
		{"only begin", "*** Begin Patch", "invalid patch: The last line of the patch must be '*** End Patch'", 0},
		{"heredoc without closing marker", "apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch", "invalid patch: The first line of the patch must be '*** Begin Patch'", 0},
		{"bad header", "*** Begin Patch\n*** Frob File: x\n*** End Patch",
			"invalid hunk at line 2, '*** Frob File: x' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", 2},
		{"header without path", "*** Begin Patch\n*** Add File: \n+a\n*** End Patch",
			"invalid hunk at line 2, '*** Add File:' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", 2},
		{"stray line between hunks", "*** Begin Patch\n*** Delete File: a\nhello\n*** End Patch",
			"invalid hunk at line 3, 'hello' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", 3},
		{"empty update", "*** Begin Patch\n*** Update File: ctx.py\n*** End Patch", "invalid hunk at line 2, Update file hunk for path 'ctx.py' is empty", 2},
		{"unexpected first line", "*** Begin Patch\n*** Update File: ctx.py\nbogus line\n*** End Patch",
			"invalid hunk at line 3, Unexpected line found in update hunk: 'bogus line'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)", 3},
		{"stray line after chunk", "*** Begin Patch\n*** Update File: ctx.py\n@@\n def a():\n-    return 1\n+    return 7\nstray\n*** End Patch",
			"invalid hunk at line 7, Expected update hunk to start with a @@ context marker, got: 'stray'", 7},
		{"header without lines", "*** Begin Patch\n*** Update File: f\n@@\n*** End Patch", "invalid hunk at line 3, Update hunk does not contain any lines", 3},
		{"header followed by header", "*** Begin Patch\n*** Update File: f\n@@ a\n@@ b\n-x\n*** End Patch", "invalid hunk at line 3, Update hunk does not contain any lines", 3},
		{"eof marker without lines", "*** Begin Patch\n*** Update File: f\n@@\n*** End of File\n*** End Patch", "invalid hunk at line 4, Update hunk does not contain any lines", 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in)
			require.Error(t, err)
			require.Equal(t, tc.msg, err.Error())
			var pe *ParseError
			require.True(t, errors.As(err, &pe))
			require.Equal(t, tc.line, pe.Line)
		})
	}
}

func TestParseEmptyPatch(t *testing.T) {
	_, err := Parse("*** Begin Patch\n*** End Patch")
	require.ErrorIs(t, err, ErrEmptyPatch)
	require.Equal(t, "patch rejected: empty patch", VerificationFailedOutput(err))
}

func TestParseEmptyAddFile(t *testing.T) {
	p, err := Parse("*** Begin Patch\n*** Add File: empty.txt\n*** End Patch")
	require.NoError(t, err)
	require.Equal(t, []Hunk{{Kind: KindAdd, Path: "empty.txt", Line: 2}}, p.Hunks)
}
