package schemaexport

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoSchema is the project's description-stripped copy of the reference schema.
const repoSchema = "../schema"

// TestJSONSchemaMatchesRepoSchema: every file of schema/ that the reference's --experimental output
// contains is written byte for byte; stable-only.v2 equals the stable tree's v2 bundle.
func TestJSONSchemaMatchesRepoSchema(t *testing.T) {
	exp, err := Files(true)
	require.NoError(t, err)
	stable, err := Files(false)
	require.NoError(t, err)
	n := 0
	err = filepath.WalkDir(repoSchema, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(repoSchema, p)
		rel = filepath.ToSlash(rel)
		want, err := os.ReadFile(p)
		require.NoError(t, err)
		got, ok := exp[rel]
		if rel == "stable-only.v2.schemas.json" {
			got, ok = stable["codex_app_server_protocol.v2.schemas.json"]
		}
		require.True(t, ok, "%s is written", rel)
		require.Equal(t, string(want), string(got), rel)
		n++
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 10, n)
	require.Len(t, exp, 479, "file count of `codex app-server generate-json-schema --experimental`")
	require.Len(t, stable, 329, "file count of `codex app-server generate-json-schema`")
}

// TestJSONSchemaFileForFileWithReference runs the reference binary, when installed, and compares its
// output (descriptions stripped) with ours for both variants.
func TestJSONSchemaFileForFileWithReference(t *testing.T) {
	ref := os.Getenv("APPSERVER_REFERENCE_BIN")
	if ref == "" {
		home, _ := os.UserHomeDir()
		ref = filepath.Join(home, ".cache", "appserver-reference", "bin", "codex")
	}
	if _, err := os.Stat(ref); err != nil {
		t.Skipf("reference binary not installed (%s): skipping the live comparison", ref)
	}
	for _, experimental := range []bool{false, true} {
		dir := t.TempDir()
		args := []string{"app-server", "generate-json-schema", "--out", dir}
		if experimental {
			args = append(args, "--experimental")
		}
		cmd := exec.Command(ref, args...)
		cmd.Env = append(os.Environ(), "CODEX_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		ours, err := Files(experimental)
		require.NoError(t, err)
		seen := 0
		err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			got, ok := ours[filepath.ToSlash(rel)]
			require.True(t, ok, "we write %s", rel)
			raw, err := os.ReadFile(p)
			require.NoError(t, err)
			want, err := StripDescriptions(raw)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), rel)
			seen++
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, len(ours), seen, "no extra files")
	}
}

func TestWriteJSONSchema(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteJSONSchema(dir, false))
	_, err := os.Stat(filepath.Join(dir, "v1", "InitializeParams.json"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "v2", "ThreadStartParams.json"))
	require.NoError(t, err)
	// Stable output leaves experimental methods out.
	_, err = os.Stat(filepath.Join(dir, "v2", "ThreadIncrementElicitationParams.json"))
	require.True(t, os.IsNotExist(err))
	require.Error(t, WriteJSONSchema(filepath.Join(dir, "v1", "InitializeParams.json", "x"), false), "unwritable output fails")
}

func TestTypeScriptCompiles(t *testing.T) {
	for _, experimental := range []bool{false, true} {
		files, err := TypeScript(experimental)
		require.NoError(t, err)
		require.Contains(t, string(files["v2/ThreadUnsubscribeResponse.ts"]), "export type ThreadUnsubscribeResponse = { status: ThreadUnsubscribeStatus };")
		require.Contains(t, string(files["index.ts"]), `export * as v2 from "./v2";`)
		if experimental {
			require.Contains(t, files, "v2/ThreadIncrementElicitationParams.ts")
		} else {
			require.NotContains(t, files, "v2/ThreadIncrementElicitationParams.ts")
		}
	}
	tsc, err := exec.LookPath("tsc")
	if err != nil {
		t.Skip("tsc not found on PATH (npm install -g typescript): skipping the compile check")
	}
	for _, experimental := range []bool{false, true} {
		dir := t.TempDir()
		require.NoError(t, WriteTypeScript(dir, experimental, ""))
		cfg := `{"compilerOptions":{"strict":true,"noEmit":true,"target":"es2020","module":"esnext","moduleResolution":"bundler","skipLibCheck":true},"include":["**/*.ts"]}`
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tsconfig.json"), []byte(cfg), 0o644))
		out, err := exec.Command(tsc, "-p", dir).CombinedOutput()
		require.NoError(t, err, "tsc: %s", out)
		// The check can fail: a broken module is reported.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.ts"), []byte("export type Broken = Missing;\n"), 0o644))
		out, err = exec.Command(tsc, "-p", dir).CombinedOutput()
		require.Error(t, err)
		require.True(t, strings.Contains(string(out), "Missing"), "%s", out)
	}
}
