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

func searchTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range []string{"src/app/main.go", "src/app/domain.go", "docs/MAIN.md", "build/main.o", "README.md"} {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, nil, 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(root, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, ".gitignore"), []byte("build/\n"), 0o644))
	return root
}

func TestFuzzyFileSearch(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	root := searchTree(t)
	var resp protocol.FuzzyFileSearchResponse
	c.Result("fuzzyFileSearch", map[string]any{"query": "main", "roots": []string{root}, "cancellationToken": nil}, &resp)
	require.Equal(t, []protocol.FuzzyFileSearchResult{
		{Root: root, Path: "docs/MAIN.md", FileName: "MAIN.md", MatchType: "file", Score: 65645, Indices: []uint32{5, 6, 7, 8}},
		{Root: root, Path: "src/app/main.go", FileName: "main.go", MatchType: "file", Score: 65645, Indices: []uint32{8, 9, 10, 11}},
		{Root: root, Path: "src/app/domain.go", FileName: "domain.go", MatchType: "file", Score: 65612, Indices: []uint32{10, 11, 12, 13}},
	}, resp.Files, "ignored build/ stays out; file-name matches rank by score then path")

	c.Result("fuzzyFileSearch", map[string]any{"query": "app", "roots": []string{root}}, &resp)
	require.Equal(t, "src/app", resp.Files[0].Path)
	require.Equal(t, protocol.FuzzyFileSearchMatchTypeDirectory, resp.Files[0].MatchType)
	require.Equal(t, uint32(131156), resp.Files[0].Score)

	for _, p := range []map[string]any{
		{"query": "", "roots": []string{root}},
		{"query": "main", "roots": []string{}},
		{"query": "main", "roots": []string{filepath.Join(root, "missing")}},
	} {
		m := c.Request("fuzzyFileSearch", p)
		require.Nil(t, m.Error)
		require.JSONEq(t, `{"files":[]}`, string(m.Result))
	}
	requireError(t, c.Request("fuzzyFileSearch", map[string]any{"roots": []string{root}}), -32600, "Invalid request: missing field `query`")
}

func TestFuzzyFileSearchSession(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(true)
	root := searchTree(t)
	is := func(id string) func(json.RawMessage) bool {
		return func(p json.RawMessage) bool {
			var v struct{ SessionID string }
			_ = json.Unmarshal(p, &v)
			return v.SessionID == id
		}
	}
	require.JSONEq(t, `{}`, string(c.Request("fuzzyFileSearch/sessionStart", map[string]any{"sessionId": "s1", "roots": []string{root}}).Result))
	m := c.WaitNotification("fuzzyFileSearch/sessionUpdated", is("s1"))
	require.JSONEq(t, `{"sessionId":"s1","query":"","files":[]}`, string(m.Params))
	c.WaitNotification("fuzzyFileSearch/sessionCompleted", is("s1"))

	require.JSONEq(t, `{}`, string(c.Request("fuzzyFileSearch/sessionUpdate", map[string]any{"sessionId": "s1", "query": "main"}).Result))
	m = c.WaitNotification("fuzzyFileSearch/sessionUpdated", is("s1"))
	var up protocol.FuzzyFileSearchSessionUpdatedNotification
	require.NoError(t, json.Unmarshal(m.Params, &up))
	require.Equal(t, "main", up.Query)
	require.Len(t, up.Files, 3)
	require.Equal(t, "docs/MAIN.md", up.Files[0].Path)
	c.WaitNotification("fuzzyFileSearch/sessionCompleted", is("s1"))

	requireError(t, c.Request("fuzzyFileSearch/sessionUpdate", map[string]any{"sessionId": "nope", "query": "x"}), -32600, "fuzzy file search session not found: nope")
	requireError(t, c.Request("fuzzyFileSearch/sessionStart", map[string]any{"sessionId": "s2", "roots": []string{}}), -32603,
		"failed to start fuzzy file search session: at least one search directory is required")
	require.JSONEq(t, `{}`, string(c.Request("fuzzyFileSearch/sessionStop", map[string]any{"sessionId": "s1"}).Result))
	require.JSONEq(t, `{}`, string(c.Request("fuzzyFileSearch/sessionStop", map[string]any{"sessionId": "s1"}).Result))
	requireError(t, c.Request("fuzzyFileSearch/sessionUpdate", map[string]any{"sessionId": "s1", "query": "x"}), -32600, "fuzzy file search session not found: s1")
}

func TestFuzzyFileSearchSessionNeedsExperimental(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	requireError(t, c.Request("fuzzyFileSearch/sessionStart", map[string]any{"sessionId": "s", "roots": []string{"/"}}), -32600,
		"fuzzyFileSearch/sessionStart requires experimentalApi capability")
}
