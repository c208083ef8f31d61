package rollout

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The reference records review items in its core form; thread/read shows them as the turn did.
func TestConvertReviewItems(t *testing.T) {
	require.Equal(t, map[string]any{"type": "enteredReviewMode", "id": "e1", "review": "current changes"},
		convertCoreItem([]byte(`{"type":"EnteredReviewMode","id":"e1","target":{"type":"uncommittedChanges"},"user_facing_hint":"current changes"}`)))
	require.Equal(t, map[string]any{"type": "exitedReviewMode", "id": "x1",
		"review": "add is broken.\n\nReview comment:\n\n- [P1] add subtracts — /w/calc.py:2-2\n  add returns a - b."},
		convertCoreItem([]byte(`{"type":"ExitedReviewMode","id":"x1","review_output":{"findings":[{"title":"[P1] add subtracts","body":"add returns a - b.","confidence_score":0.9,"priority":1,"code_location":{"absolute_file_path":"/w/calc.py","line_range":{"start":2,"end":2}}}],"overall_correctness":"patch is incorrect","overall_explanation":"add is broken.","overall_confidence_score":0.8}}`)))
	require.Equal(t, map[string]any{"type": "exitedReviewMode", "id": "x2", "review": "Reviewer failed to output a response."},
		convertCoreItem([]byte(`{"type":"ExitedReviewMode","id":"x2","review_output":null}`)))
}
