package configedit

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

const sample = `# top comment
model = "a"   # trailing comment
approval_policy="never"

# providers
[model_providers.mock]
name = "Mock"  # keep me
wire_api = "responses"

[tools]
x = { y = 1 }
`

func TestApply(t *testing.T) {
	tests := []struct {
		name  string
		edits []Edit
		want  string
	}{
		{"replace scalar keeps trailing comment", []Edit{{Path: []string{"model"}, Value: "b"}},
			strings.Replace(sample, `model = "a"   #`, `model = "b"   #`, 1)},
		{"new root key after the last root key", []Edit{{Path: []string{"sandbox_mode"}, Value: "read-only"}},
			strings.Replace(sample, "approval_policy=\"never\"\n", "approval_policy=\"never\"\nsandbox_mode = \"read-only\"\n", 1)},
		{"new key in an existing table", []Edit{{Path: []string{"model_providers", "mock", "request_max_retries"}, Value: float64(0)}},
			strings.Replace(sample, "wire_api = \"responses\"\n", "wire_api = \"responses\"\nrequest_max_retries = 0\n", 1)},
		{"new table at the end", []Edit{{Path: []string{"features", "foo"}, Value: true}},
			sample + "\n[features]\nfoo = true\n"},
		{"table value becomes sections", []Edit{{Path: []string{"tui"}, Value: map[string]any{"a": float64(1), "b": map[string]any{"c": "d"}}, Strategy: Replace}},
			sample + "\n[tui]\na = 1\n\n[tui.b]\nc = \"d\"\n"},
		{"delete key", []Edit{{Path: []string{"model"}, Value: nil}},
			strings.Replace(sample, "model = \"a\"   # trailing comment\n", "", 1)},
		{"delete table", []Edit{{Path: []string{"tools"}, Value: nil}},
			strings.Replace(sample, "\n[tools]\nx = { y = 1 }\n", "", 1)},
		{"inside an inline table", []Edit{{Path: []string{"tools", "x", "z"}, Value: "w"}},
			strings.Replace(sample, "x = { y = 1 }", "x = { y = 1, z = \"w\" }", 1)},
		{"delete a missing key is a no-op", []Edit{{Path: []string{"nope", "x"}, Value: nil}}, sample},
		{"upsert merges", []Edit{{Path: []string{"model_providers", "mock"}, Value: map[string]any{"name": "M2"}, Strategy: Upsert}},
			strings.Replace(sample, `name = "Mock"  # keep me`, `name = "M2"  # keep me`, 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Apply([]byte(sample), tc.edits)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}

func TestApplyErrors(t *testing.T) {
	_, err := Apply([]byte(sample), []Edit{{Path: []string{"model", "x"}, Value: float64(5)}})
	require.ErrorIs(t, err, ErrNonTableParent)
	_, err = Apply([]byte(sample), []Edit{{Path: nil, Value: float64(5)}})
	require.EqualError(t, err, "keyPath must not be empty")
	_, err = SplitKeyPath("")
	require.EqualError(t, err, "keyPath must not be empty")
	parts, err := SplitKeyPath(`projects."/a.b".trust_level`)
	require.NoError(t, err)
	require.Equal(t, []string{"projects", "/a.b", "trust_level"}, parts)
}

func testFile(t *testing.T) *File {
	path := filepath.Join(t.TempDir(), "config.toml")
	require.NoError(t, os.WriteFile(path, []byte(sample), 0o640))
	return &File{Path: path, Version: func(b []byte) (string, error) { return string(rune('a' + len(b)%26)), nil }}
}

func TestWriteVersionAndAtomicity(t *testing.T) {
	f := testFile(t)
	v0, err := f.Version([]byte(sample))
	require.NoError(t, err)
	_, err = f.Write("stale", []Edit{{Path: []string{"model"}, Value: "b"}})
	var we *Error
	require.ErrorAs(t, err, &we)
	require.Equal(t, CodeVersionConflict, we.Code)
	v1, err := f.Write(v0, []Edit{{Path: []string{"model"}, Value: "bb"}})
	require.NoError(t, err)
	require.NotEqual(t, v0, v1)
	st, err := os.Stat(f.Path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), st.Mode().Perm(), "mode kept")
	entries, err := os.ReadDir(filepath.Dir(f.Path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")
}

// Concurrent writers that read the same version: exactly one wins, the others get the conflict.
func TestConcurrentWritersConflict(t *testing.T) {
	f := testFile(t)
	f.Version = func(b []byte) (string, error) { return string(b), nil }
	v0 := sample
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.Write(v0, []Edit{{Path: []string{"model"}, Value: strings.Repeat("x", i+1)}})
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
			continue
		}
		var we *Error
		require.ErrorAs(t, err, &we)
		require.Equal(t, CodeVersionConflict, we.Code)
	}
	require.Equal(t, 1, wins)
}

func TestValidateRefuses(t *testing.T) {
	f := testFile(t)
	f.Validate = func([]byte) error { return os.ErrInvalid }
	_, err := f.Write("", []Edit{{Path: []string{"model"}, Value: "z"}})
	var we *Error
	require.ErrorAs(t, err, &we)
	require.Equal(t, CodeValidation, we.Code)
	got, err := os.ReadFile(f.Path)
	require.NoError(t, err)
	require.Equal(t, sample, string(got), "file untouched")
}

func TestUpsertArrayTable(t *testing.T) {
	path := []string{"skills", "config"}
	out, err := UpsertArrayTable([]byte(sample), path, "name", "baz", []Field{{"name", "baz"}, {"enabled", false}})
	require.NoError(t, err)
	require.Equal(t, sample+"\n[[skills.config]]\nname = \"baz\"\nenabled = false\n", string(out))
	out, err = UpsertArrayTable(out, path, "path", "/p/SKILL.md", []Field{{"path", "/p/SKILL.md"}, {"enabled", false}})
	require.NoError(t, err)
	out, err = UpsertArrayTable(out, path, "name", "baz", []Field{{"name", "baz"}, {"enabled", true}})
	require.NoError(t, err)
	require.Equal(t, sample+"\n[[skills.config]]\nname = \"baz\"\nenabled = true\n\n[[skills.config]]\npath = \"/p/SKILL.md\"\nenabled = false\n", string(out))
}

func TestRemoveSectionTakesItsSeparator(t *testing.T) {
	in := "a = 1\n\n[x]\nb = 2\n\n# about y\n[y]\nc = 3\n"
	out, err := Apply([]byte(in), []Edit{{Path: []string{"x"}}})
	require.NoError(t, err)
	require.Equal(t, "a = 1\n\n# about y\n[y]\nc = 3\n", string(out))
	out, err = Apply([]byte(in), []Edit{{Path: []string{"y"}}})
	require.NoError(t, err)
	require.Equal(t, "a = 1\n\n[x]\nb = 2\n\n# about y\n", string(out), "comments stay")
}
