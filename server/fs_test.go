package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	protocol "appserver/protocol/v2"
)

// Expected answers and error texts are the reference's on the same operations.
func TestFSMethods(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	dir := t.TempDir()
	a := filepath.Join(dir, "d", "a.txt")
	require.NoError(t, os.MkdirAll(filepath.Dir(a), 0o755))
	require.NoError(t, os.WriteFile(a, []byte("hello\n"), 0o644))
	require.NoError(t, os.Symlink(a, filepath.Join(dir, "link")))
	ok := func(method string, params map[string]any) json.RawMessage {
		t.Helper()
		m := c.Request(method, params)
		require.Nil(t, m.Error, "%s: %s", method, m.Raw)
		return m.Result
	}

	require.JSONEq(t, `{"dataBase64":"aGVsbG8K"}`, string(ok("fs/readFile", map[string]any{"path": a})))
	requireError(t, c.Request("fs/readFile", map[string]any{"path": filepath.Join(dir, "nope")}), -32603, "No such file or directory (os error 2)")
	requireError(t, c.Request("fs/readFile", map[string]any{"path": "relative/x"}), -32600, "Invalid request: AbsolutePathBuf deserialized without a base path")
	requireError(t, c.Request("fs/readFile", map[string]any{"path": filepath.Join(dir, "d")}), -32600, "path `"+filepath.Join(dir, "d")+"` is not a file")

	b := filepath.Join(dir, "d", "b.txt")
	require.JSONEq(t, `{}`, string(ok("fs/writeFile", map[string]any{"path": b, "dataBase64": "aGk="})))
	got, err := os.ReadFile(b)
	require.NoError(t, err)
	require.Equal(t, "hi", string(got))
	requireError(t, c.Request("fs/writeFile", map[string]any{"path": filepath.Join(dir, "nodir", "b"), "dataBase64": "aGk="}), -32603, "No such file or directory (os error 2)")
	requireError(t, c.Request("fs/writeFile", map[string]any{"path": b, "dataBase64": "!!!"}), -32600, "fs/writeFile requires valid base64 dataBase64: Invalid symbol 33, offset 0.")
	requireError(t, c.Request("fs/writeFile", map[string]any{"path": dir, "dataBase64": ""}), -32603, "Is a directory (os error 21)")

	e := filepath.Join(dir, "e", "f")
	requireError(t, c.Request("fs/createDirectory", map[string]any{"path": e, "recursive": false}), -32603, "No such file or directory (os error 2)")
	ok("fs/createDirectory", map[string]any{"path": e, "recursive": true})
	ok("fs/createDirectory", map[string]any{"path": e, "recursive": nil})
	requireError(t, c.Request("fs/createDirectory", map[string]any{"path": e, "recursive": false}), -32603, "File exists (os error 17)")
	// a file in the way is "File exists" whether recursive or not (Rust's create_dir_all; scenario fs_methods)
	requireError(t, c.Request("fs/createDirectory", map[string]any{"path": a}), -32603, "File exists (os error 17)")
	requireError(t, c.Request("fs/createDirectory", map[string]any{"path": filepath.Join(a, "sub")}), -32603, "Not a directory (os error 20)")

	var md protocol.FsGetMetadataResponse
	c.Result("fs/getMetadata", map[string]any{"path": filepath.Join(dir, "link")}, &md)
	require.True(t, md.IsFile)
	require.True(t, md.IsSymlink)
	require.False(t, md.IsDirectory)
	require.NotZero(t, md.ModifiedAtMs)
	requireError(t, c.Request("fs/getMetadata", map[string]any{"path": filepath.Join(dir, "nope")}), -32603, "No such file or directory (os error 2)")

	var rd protocol.FsReadDirectoryResponse
	c.Result("fs/readDirectory", map[string]any{"path": dir}, &rd)
	require.ElementsMatch(t, []protocol.FsReadDirectoryEntry{
		{FileName: "d", IsDirectory: true}, {FileName: "e", IsDirectory: true}, {FileName: "link", IsFile: true},
	}, rd.Entries)
	requireError(t, c.Request("fs/readDirectory", map[string]any{"path": a}), -32603, "Not a directory (os error 20)")

	d2 := filepath.Join(dir, "d2")
	requireError(t, c.Request("fs/copy", map[string]any{"sourcePath": filepath.Join(dir, "d"), "destinationPath": d2}), -32600,
		"fs/copy requires recursive: true when sourcePath is a directory")
	requireError(t, c.Request("fs/copy", map[string]any{"sourcePath": filepath.Join(dir, "d"), "destinationPath": filepath.Join(dir, "d", "sub"), "recursive": true}), -32600,
		"fs/copy cannot copy a directory to itself or one of its descendants")
	ok("fs/copy", map[string]any{"sourcePath": filepath.Join(dir, "d"), "destinationPath": d2, "recursive": true})
	got, err = os.ReadFile(filepath.Join(d2, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(got))
	ok("fs/copy", map[string]any{"sourcePath": filepath.Join(dir, "link"), "destinationPath": filepath.Join(dir, "link2")})
	target, err := os.Readlink(filepath.Join(dir, "link2"))
	require.NoError(t, err)
	require.Equal(t, a, target, "a symbolic link is copied as a link")
	requireError(t, c.Request("fs/copy", map[string]any{"sourcePath": filepath.Join(dir, "nope"), "destinationPath": d2}), -32603, "No such file or directory (os error 2)")

	requireError(t, c.Request("fs/remove", map[string]any{"path": d2, "recursive": false}), -32603, "Directory not empty (os error 39)")
	ok("fs/remove", map[string]any{"path": d2})
	_, err = os.Stat(d2)
	require.True(t, os.IsNotExist(err))
	ok("fs/remove", map[string]any{"path": d2})
	requireError(t, c.Request("fs/remove", map[string]any{"path": d2, "force": false}), -32603, "No such file or directory (os error 2)")
}

func TestFSWatch(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	dir := t.TempDir()
	require.JSONEq(t, `{"path":"`+dir+`"}`, string(c.Request("fs/watch", map[string]any{"path": dir, "watchId": "w1"}).Result))
	requireError(t, c.Request("fs/watch", map[string]any{"path": dir, "watchId": "w1"}), -32600, "watchId already exists: w1")
	missing := filepath.Join(dir, "later")
	require.JSONEq(t, `{"path":"`+missing+`"}`, string(c.Request("fs/watch", map[string]any{"path": missing, "watchId": "w2"}).Result))

	f := filepath.Join(dir, "new.txt")
	require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
	m := c.WaitNotification("fs/changed", nil)
	require.JSONEq(t, `{"watchId":"w1","changedPaths":["`+f+`"]}`, string(m.Params))

	require.JSONEq(t, `{}`, string(c.Request("fs/unwatch", map[string]any{"watchId": "w1"}).Result))
	require.JSONEq(t, `{}`, string(c.Request("fs/unwatch", map[string]any{"watchId": "w1"}).Result))
	require.NoError(t, os.WriteFile(missing, []byte("x"), 0o644))
	m = c.WaitNotification("fs/changed", nil)
	require.JSONEq(t, `{"watchId":"w2","changedPaths":["`+missing+`"]}`, string(m.Params), "after unwatch only w2 reports")
}
