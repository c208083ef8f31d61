package applypatch

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSuccessOutput(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"src/x.py": "a\n", "old.txt": "o\n"})
	pl := planText(t, root, "*** Begin Patch\n*** Delete File: old.txt\n*** Update File: src/x.py\n-a\n+b\n*** Add File: hello.txt\n+hi\n*** End Patch")
	require.Equal(t, "Success. Updated the following files:\nA hello.txt\nM src/x.py\nD old.txt\n", SuccessText(pl))
	require.Equal(t, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA hello.txt\nM src/x.py\nD old.txt\n",
		SuccessOutput(pl, 20*time.Millisecond))
}

func TestFormatWallTime(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", 40 * time.Millisecond: "0", 300 * time.Millisecond: "0.3", 1260 * time.Millisecond: "1.3", 12 * time.Second: "12",
	} {
		require.Equal(t, want, FormatWallTime(d), d.String())
	}
}

func TestFailureOutputs(t *testing.T) {
	require.Equal(t, "patch rejected by user", RejectedOutput)
	require.Equal(t, "apply_patch verification failed: boom", VerificationFailedOutput(errors.New("boom")))
	require.Equal(t, "patch rejected: empty patch", VerificationFailedOutput(ErrEmptyPatch))
	require.Equal(t, "Exit code: 1\nWall time: 0 seconds\nOutput:\nFailed to write file /x\n",
		ApplyFailedOutput(&ApplyError{Msg: "Failed to write file /x"}, 0))
}

func TestChangeJSON(t *testing.T) {
	mp := "/w/b"
	for _, tc := range []struct {
		c    Change
		want string
	}{
		{Change{Path: "/w/a", Kind: KindAdd, UnifiedDiff: "x\n"}, `{"path":"/w/a","kind":{"type":"add"},"diff":"x\n"}`},
		{Change{Path: "/w/a", Kind: KindDelete, UnifiedDiff: "x\n"}, `{"path":"/w/a","kind":{"type":"delete"},"diff":"x\n"}`},
		{Change{Path: "/w/a", Kind: KindUpdate, UnifiedDiff: "@@"}, `{"path":"/w/a","kind":{"type":"update","move_path":null},"diff":"@@"}`},
		{Change{Path: "/w/a", Kind: KindUpdate, MovePath: &mp, UnifiedDiff: "@@"}, `{"path":"/w/a","kind":{"type":"update","move_path":"/w/b"},"diff":"@@"}`},
	} {
		got, err := json.Marshal(tc.c)
		require.NoError(t, err)
		require.JSONEq(t, tc.want, string(got))
	}
}

func TestToolSpec(t *testing.T) {
	var spec struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		Description string `json:"description"`
		Format      struct {
			Type       string `json:"type"`
			Syntax     string `json:"syntax"`
			Definition string `json:"definition"`
		} `json:"format"`
	}
	raw := ToolSpec()
	require.NoError(t, json.Unmarshal(raw, &spec))
	require.Equal(t, "custom", spec.Type)
	require.Equal(t, "apply_patch", spec.Name)
	require.NotEmpty(t, spec.Description)
	require.Equal(t, "grammar", spec.Format.Type)
	require.Equal(t, "lark", spec.Format.Syntax)
	for _, lit := range []string{`"*** Begin Patch"`, `"*** End Patch"`, `"*** Add File: "`, `"*** Delete File: "`, `"*** Update File: "`, `"*** Move to: "`, `"*** End of File"`, `"@@"`} {
		require.Contains(t, spec.Format.Definition, lit)
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	require.Len(t, m, 4, "no fields beyond type, name, description, format")
}
