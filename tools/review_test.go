package tools

import (
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
	"appserver/thread"
)

func TestForReviewer(t *testing.T) {
	exec, patch := &execSet{}, &patchSet{}
	sets := []thread.ToolSet{exec, goalSet{}, patch, webSearchSet{}, viewImageSet{}, userInputSet{},
		dynamicSet{specs: []protocol.DynamicToolSpec{{}}}}
	require.Equal(t, []thread.ToolSet{exec, patch, viewImageSet{}, userInputSet{}}, ForReviewer(sets))
	require.Empty(t, ForReviewer(nil))
}
