package model_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/model"
)

// LookupModel returns each catalogue entry as Catalog does, and what a caller changes in it stays its own.
func TestLookupModelReturnsOwnCopies(t *testing.T) {
	for _, want := range model.Catalog() {
		got, ok := model.LookupModel(want.ID)
		require.True(t, ok, want.ID)
		require.Equal(t, want, got)
		require.Equal(t, want.ContextWindow, model.ContextWindow(want.ID))

		got.SupportedReasoningEfforts[0].Description = "changed"
		got.InputModalities[0] = "changed"
		if got.Upgrade != nil {
			*got.Upgrade = "changed"
			got.UpgradeInfo.Model = "changed"
		}
		if got.MultiAgentVersion != nil {
			*got.MultiAgentVersion = "changed"
		}
		again, _ := model.LookupModel(want.ID)
		require.Equal(t, want, again, "a caller's change leaked into the catalogue")
	}
	_, ok := model.LookupModel("no-such-model")
	require.False(t, ok)
	require.Equal(t, model.DefaultContextWindow, model.ContextWindow("no-such-model"))
}
