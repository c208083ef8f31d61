package tools

import (
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
	"appserver/thread"
	"appserver/toolsearch"
)

func TestForReviewer(t *testing.T) {
	exec, patch := &execSet{}, &patchSet{}
	sets := []thread.ToolSet{exec, goalSet{}, patch, webSearchSet{}, viewImageSet{}, userInputSet{},
		dynamicSet{specs: []protocol.DynamicToolSpec{{}}}}
	require.Equal(t, []thread.ToolSet{exec, patch, viewImageSet{}, userInputSet{}}, ForReviewer(sets))
	require.Empty(t, ForReviewer(nil))

	// The reviewer's tool_search finds nothing: the dynamic tools it would find are not the reviewer's.
	found, _ := deferredDynamic([]protocol.DynamicToolSpec{{Value: protocol.DynamicToolSpecNamespace{Name: "ns", Tools: []protocol.DynamicToolNamespaceTool{
		{Value: protocol.DynamicToolNamespaceToolFunction{Name: "f", Description: "find things", DeferLoading: ptr(true)}}}}}})
	search := searchSet{offer: true, index: toolsearch.New(found)}
	require.Len(t, search.index.Search("find", 8), 1)
	kept := ForReviewer([]thread.ToolSet{search})
	require.Len(t, kept, 1)
	require.Empty(t, kept[0].(searchSet).index.Search("find", 8))
	require.Len(t, kept[0].Specs(), 1, "tool_search stays offered")
}
