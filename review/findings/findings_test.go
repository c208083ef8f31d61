package findings

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	full := `{"findings":[{"title":"[P1] Bad thing","body":"It breaks.","confidence_score":0.8,"priority":1,"code_location":{"absolute_file_path":"/w/a.go","line_range":{"start":2,"end":3}}}],"overall_correctness":"patch is incorrect","overall_explanation":"One bug.","overall_confidence_score":0.7}`
	one := 1
	want := Output{
		Findings: []Finding{{Title: "[P1] Bad thing", Body: "It breaks.", ConfidenceScore: 0.8, Priority: &one,
			CodeLocation: CodeLocation{AbsoluteFilePath: "/w/a.go", LineRange: LineRange{Start: 2, End: 3}}}},
		OverallCorrectness: "patch is incorrect", OverallExplanation: "One bug.", OverallConfidenceScore: 0.7,
	}
	for _, tc := range []struct {
		name, in string
		want     Output
	}{
		{"plain JSON", full, want},
		{"fenced", "```json\n" + full + "\n```", want},
		{"prose around", "Here is my review:\n" + full + "\nThanks.", want},
		{"no findings", `{"findings":[],"overall_correctness":"patch is correct","overall_explanation":"Fine.","overall_confidence_score":0.9}`,
			Output{Findings: []Finding{}, OverallCorrectness: "patch is correct", OverallExplanation: "Fine.", OverallConfidenceScore: 0.9}},
		{"findings missing", `{"overall_explanation":"Only words."}`, Output{Findings: []Finding{}, OverallExplanation: "Only words."}},
		{"not JSON", "Looks good to me.", Output{Findings: []Finding{}, OverallExplanation: "Looks good to me."}},
		{"unrelated JSON", `{"answer":42}`, Output{Findings: []Finding{}, OverallExplanation: `{"answer":42}`}},
		{"broken JSON", `{"findings":[{"title":`, Output{Findings: []Finding{}, OverallExplanation: `{"findings":[{"title":`}},
		{"empty", "", Output{Findings: []Finding{}}},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, Parse(tc.in)) })
	}
}

func TestRender(t *testing.T) {
	f := func(title, path string, a, b int, body string) Finding {
		return Finding{Title: title, Body: body, CodeLocation: CodeLocation{AbsoluteFilePath: path, LineRange: LineRange{Start: a, End: b}}}
	}
	require.Equal(t, "One bug.\n\nReview comment:\n\n- [P1] Bad thing — /w/a.txt:2-2\n  It breaks.",
		Render(Output{OverallExplanation: "One bug.", Findings: []Finding{f("[P1] Bad thing", "/w/a.txt", 2, 2, "It breaks.")}}))
	require.Equal(t, "Two.\n\nFull review comments:\n\n- A — /a:1-2\n  x\n  y\n\n- B — /b:3-3\n  z",
		Render(Output{OverallExplanation: "Two.", Findings: []Finding{f("A", "/a", 1, 2, "x\ny"), f("B", "/b", 3, 3, "z")}}))
	require.Equal(t, "Fine.", Render(Output{OverallExplanation: "Fine."}))
	require.Equal(t, "Reviewer failed to output a response.", Render(Output{}))
}
