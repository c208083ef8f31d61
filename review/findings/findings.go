// Package findings is a review's result as the reference structures it (findings with title, body,
// confidence, priority and code location; an overall verdict): parsed from the reviewer's answer and
// rendered as the text a review turn reports.
package findings

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Output is the reviewer's answer, as the reference records it (`review_output`).
type Output struct {
	Findings               []Finding `json:"findings"`
	OverallCorrectness     string    `json:"overall_correctness"`
	OverallExplanation     string    `json:"overall_explanation"`
	OverallConfidenceScore float64   `json:"overall_confidence_score"`
}

// Finding is one problem the reviewer reports.
type Finding struct {
	Title           string       `json:"title"`
	Body            string       `json:"body"`
	ConfidenceScore float64      `json:"confidence_score"`
	Priority        *int         `json:"priority,omitempty"`
	CodeLocation    CodeLocation `json:"code_location"`
}

// CodeLocation points at the lines a finding is about.
type CodeLocation struct {
	AbsoluteFilePath string    `json:"absolute_file_path"`
	LineRange        LineRange `json:"line_range"`
}

// LineRange is an inclusive range of 1-based lines.
type LineRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Parse reads the reviewer's answer: the whole text as JSON, else the outermost {...} inside it (code
// fences or prose around it), else the text itself as the overall explanation with no findings.
func Parse(text string) Output {
	text = strings.TrimSpace(text)
	if out, ok := decode(text); ok {
		return out
	}
	if i, j := strings.Index(text, "{"), strings.LastIndex(text, "}"); i >= 0 && j > i {
		if out, ok := decode(text[i : j+1]); ok {
			return out
		}
	}
	return Output{Findings: []Finding{}, OverallExplanation: text}
}

func decode(s string) (Output, bool) {
	var probe map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &probe) != nil {
		return Output{}, false
	}
	if _, ok := probe["findings"]; !ok {
		if _, ok := probe["overall_explanation"]; !ok {
			return Output{}, false
		}
	}
	var out Output
	if json.Unmarshal([]byte(s), &out) != nil {
		return Output{}, false
	}
	if out.Findings == nil {
		out.Findings = []Finding{}
	}
	return out, true
}

// Render is the text a review turn shows and hands to the thread: the explanation, then the findings
// as a list ("title — path:start-end" and the indented body).
func Render(out Output) string {
	var parts []string
	if e := strings.TrimSpace(out.OverallExplanation); e != "" {
		parts = append(parts, e)
	}
	if len(out.Findings) > 0 {
		head := "Review comment:"
		if len(out.Findings) > 1 {
			head = "Full review comments:"
		}
		var b strings.Builder
		b.WriteString(head + "\n")
		for i, f := range out.Findings {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "\n- %s — %s:%d-%d", f.Title, f.CodeLocation.AbsoluteFilePath, f.CodeLocation.LineRange.Start, f.CodeLocation.LineRange.End)
			for _, line := range strings.Split(strings.TrimSpace(f.Body), "\n") {
				b.WriteString("\n  " + line)
			}
		}
		parts = append(parts, b.String())
	}
	if len(parts) == 0 {
		return "Reviewer failed to output a response."
	}
	return strings.Join(parts, "\n\n")
}
