package execcli_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/mockmodel"
)

// TestExecThreadSource: exec records thread source "user" for the sessions it starts and forks, or the value
// of --thread-source, in the rollout's session_meta, as codex-cli 0.169.0's exec does.
func TestExecThreadSource(t *testing.T) {
	e := newEnv(t, "")
	for i := 0; i < 4; i++ {
		e.mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("ok", 1)}})
	}
	first := e.run("", "--json", "--skip-git-repo-check", "hi")
	require.Equal(t, 0, first.code, first.stderr)
	id := threadID(t, first.lines(t)[0])
	require.Equal(t, "user", sessionMeta(t, e.home, id)["thread_source"])

	named := e.run("", "--json", "--skip-git-repo-check", "--thread-source", "mysrc", "hi")
	require.Equal(t, 0, named.code, named.stderr)
	require.Equal(t, "mysrc", sessionMeta(t, e.home, threadID(t, named.lines(t)[0]))["thread_source"])

	fork := e.run("", "--json", "--skip-git-repo-check", "fork", id, "forked")
	require.Equal(t, 0, fork.code, fork.stderr)
	require.Equal(t, "user", sessionMeta(t, e.home, threadID(t, fork.lines(t)[0]))["thread_source"])

	fork = e.run("", "--json", "--skip-git-repo-check", "--thread-source", "other", "fork", id, "forked")
	require.Equal(t, 0, fork.code, fork.stderr)
	require.Equal(t, "other", sessionMeta(t, e.home, threadID(t, fork.lines(t)[0]))["thread_source"])
}
