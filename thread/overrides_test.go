package thread

import (
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

// Empty overrides (a turn/start without settings) change nothing; any field set still applies.
func TestApplyOverridesEmptyAndSet(t *testing.T) {
	th := &Thread{ID: "t", settings: Settings{Model: "m"}}
	th.ApplyOverrides(TurnOverrides{})
	require.Equal(t, "m", th.Settings().Model)
	th.ApplyOverrides(TurnOverrides{DisabledPluginIDs: []string{}})
	require.Equal(t, []string{}, th.Settings().DisabledPluginIDs, "an empty, non-nil list is an override")
	effort := protocol.ReasoningEffort("high")
	th.ApplyOverrides(TurnOverrides{Effort: &effort})
	require.Equal(t, &effort, th.Settings().Effort)
}

// BenchmarkApplyNoOverrides is what a turn/start without settings overrides costs the thread.
func BenchmarkApplyNoOverrides(b *testing.B) {
	th := &Thread{ID: "t", settings: Settings{Model: "m", Cwd: "/w"}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		th.ApplyOverrides(TurnOverrides{})
	}
}
