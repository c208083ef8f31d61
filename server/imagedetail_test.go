package server_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// TestInputImageDetailPerModel pins the detail the reference (0.169.0) sends on input images, compared on the
// Python mock: a model outside the catalogue gets "high" for an unset detail and "high" for "original", keeps
// "high" and "auto", and has a "low" image replaced by a note; gpt-5.5 (supports_image_detail_original) gets
// "original" whatever was asked; gpt-6-sol (Responses lite) gets no detail at all. A local image is read and
// sent between `<image name=[Image #n] path=…>` and `</image>` (n counts the message's images); one that
// cannot be read or is not an image is told in a note. view_image's output follows the same rule.
func TestInputImageDetailPerModel(t *testing.T) {
	const lowNote = "image content omitted because detail 'low' is not supported; use 'high', 'original', or 'auto'"
	for _, tc := range []struct {
		model string
		// details of the five url images (unset, low, high, original, auto), the local image's and view_image's;
		// "-" = no detail member, "note" = the low note instead of the image.
		url         [5]string
		local, view string
	}{
		{"mock-model", [5]string{"high", "note", "high", "high", "auto"}, "note", "high"},
		{"gpt-5.5", [5]string{"original", "original", "original", "original", "original"}, "original", "original"},
		{"gpt-6-sol", [5]string{"-", "-", "-", "-", "-"}, "-", "-"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			mm := mockmodel.New(t)
			mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{
				mockmodel.FunctionCall("view_image", "v1", map[string]any{"path": "pic.png"})}}, okReply("done"))
			c := apptest.Start(t, apptest.Options{Model: mm, ModelID: tc.model})
			pic := filepath.Join(c.Work, "pic.png")
			require.NoError(t, os.WriteFile(pic, onePixelPNG, 0o644))
			notes := filepath.Join(c.Work, "notes.txt")
			require.NoError(t, os.WriteFile(notes, []byte("hello\n"), 0o644))
			missing := filepath.Join(c.Work, "missing.png")
			c.Initialize(true)
			tid := c.StartThread(nil)
			url := "data:image/png;base64,AAAA"
			var input []any
			for _, d := range []string{"", "low", "high", "original", "auto"} {
				in := map[string]any{"type": "image", "url": url}
				if d != "" {
					in["detail"] = d
				}
				input = append(input, in)
			}
			input = append(input,
				map[string]any{"type": "localImage", "path": pic, "detail": "low"},
				map[string]any{"type": "localImage", "path": missing},
				map[string]any{"type": "localImage", "path": notes},
				map[string]any{"type": "text", "text": "look"})
			c.Result("turn/start", map[string]any{"threadId": tid, "input": input}, nil)
			c.WaitTurnCompleted()

			image := func(imageURL, detail string) map[string]any {
				switch detail {
				case "note":
					return map[string]any{"type": "input_text", "text": lowNote}
				case "-":
					return map[string]any{"type": "input_image", "image_url": imageURL}
				}
				return map[string]any{"type": "input_image", "image_url": imageURL, "detail": detail}
			}
			text := func(s string) map[string]any { return map[string]any{"type": "input_text", "text": s} }
			picURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(onePixelPNG)
			var want []any
			for _, d := range tc.url {
				want = append(want, image(url, d))
			}
			want = append(want,
				text(`<image name=[Image #6] path="`+pic+`">`), image(picURL, tc.local), text("</image>"),
				text("Codex could not read the local image at `"+missing+"`: No such file or directory (os error 2)"),
				text(`<image name=[Image #8] path="`+notes+`">`), text("image content omitted because it could not be processed"), text("</image>"),
				text("look"))
			reqs := mm.ResponseRequests()
			require.Len(t, reqs, 2)
			var user map[string]any
			for _, it := range reqs[1].Body["input"].([]any) {
				if m := it.(map[string]any); m["role"] == "user" {
					if cs := m["content"].([]any); strings.Contains(toJSON(t, cs), "look") {
						user = m
					}
				}
			}
			require.NotNil(t, user)
			require.Equal(t, want, user["content"])
			require.Equal(t, []any{image(picURL, tc.view)}, fnOutput(t, reqs[1].Body, "v1"))
		})
	}
}
