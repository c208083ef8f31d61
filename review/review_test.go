package review

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

func TestResolve(t *testing.T) {
	ctx := context.Background()
	title := "Fix it"
	for _, tc := range []struct {
		name   string
		target protocol.ReviewTargetVariant
		hint   string
		err    bool
	}{
		{"uncommitted", protocol.ReviewTargetUncommittedChanges{}, "current changes", false},
		{"base branch", protocol.ReviewTargetBaseBranch{Branch: "main"}, "changes against 'main'", false},
		{"commit", protocol.ReviewTargetCommit{Sha: "0123456789abcdef"}, "commit 0123456", false},
		{"commit with title", protocol.ReviewTargetCommit{Sha: "0123456789abcdef", Title: &title}, "commit 0123456: Fix it", false},
		{"custom", protocol.ReviewTargetCustom{Instructions: "  check the locking  "}, "check the locking", false},
		{"empty branch", protocol.ReviewTargetBaseBranch{Branch: " "}, "", true},
		{"empty sha", protocol.ReviewTargetCommit{}, "", true},
		{"empty instructions", protocol.ReviewTargetCustom{}, "", true},
		{"no target", nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Resolve(ctx, t.TempDir(), protocol.ReviewTarget{Value: tc.target})
			if tc.err {
				require.ErrorIs(t, err, ErrEmpty)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.hint, r.Hint)
			require.NotEmpty(t, r.Prompt)
		})
	}
}
