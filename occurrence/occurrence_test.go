package occurrence

import (
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

// u16 slices s by UTF-16 code units, as a client does with snippetMatchRange.
func u16(s string, start, end int) string {
	return string(utf16.Decode(utf16.Encode([]rune(s))[start:end]))
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"line1\nline2   needle\n\nline3\ttab": "line1 line2 needle line3 tab",
		"   needle   ":                        "needle",
		" \n a\u00a0\u2003needle\r\n":         "a needle",
		"":                                    "",
	} {
		require.Equal(t, want, NewText(in).String(), "%q", in)
	}
}

// The cases below are what the reference (codex-cli 0.169.0) answers for the same texts and terms.
func TestFind(t *testing.T) {
	for _, tc := range []struct {
		text, term string
		want       []Match
	}{
		{"find the needle please, NEEDLE", "needle", []Match{{9, 15}, {24, 30}}},
		{"aaaa ß Maß", "aa", []Match{{0, 2}, {2, 4}}},  // no overlap
		{"aaaa ß Maß", "s", []Match{{5, 6}, {9, 10}}},  // inside a folding: the whole character, once
		{"aaaa ß Maß", "ss", []Match{{5, 6}, {9, 10}}}, // full case folding
		{"aaaa ß Maß", "MASS", []Match{{7, 10}}},
		{"aaaa ß Maß", "a s", []Match{{3, 6}}},
		{"école ÉCOLE Straße STRASSE", "straße", []Match{{12, 18}, {19, 26}}},
		{"école ÉCOLE Straße STRASSE", "ÉCOLE", []Match{{0, 5}, {6, 11}}},
		{"line1\nline2   needle", "  needle", nil}, // the term is not normalized; the text is
		{"line1\nline2   needle", "line2 needle", []Match{{6, 18}}},
		{"first needlesecond needle", "needle second", nil},
		{"abc", "", nil},
		{"abc", "zzz", nil},
	} {
		require.Equal(t, tc.want, NewText(tc.text).Find(tc.term), "%q in %q", tc.term, tc.text)
	}
}

func TestSnippet(t *testing.T) {
	long := "Agent says needle twice: needle. " + strings.Repeat("alpha ", 30) + "Needle in the middle " + strings.Repeat("omega ", 30)
	for _, tc := range []struct {
		name, text, term string
		k                int // which match
		want             string
		start, end       int
	}{
		{"short text whole", "find the needle please, NEEDLE", "needle", 1, "find the needle please, NEEDLE", 24, 30},
		{"start of text", long, "needle", 0,
			"Agent says needle twice: needle. alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha al ...", 11, 17},
		{"middle", long, "Needle in", 0,
			"...  alpha alpha alpha alpha alpha alpha alpha alpha Needle in the middle omega omega omega omega omega omega omega omega omega omega omega omega omega omega  ...", 53, 62},
		{"exactly 49 before and 96 after", strings.Repeat("a", 49) + "needle" + strings.Repeat("b", 96), "needle", 0,
			strings.Repeat("a", 49) + "needle" + strings.Repeat("b", 96), 49, 55},
		{"one more each side", strings.Repeat("a", 50) + "needle" + strings.Repeat("b", 97), "needle", 0,
			"... " + strings.Repeat("a", 49) + "needle" + strings.Repeat("b", 96) + " ...", 53, 59},
		{"characters, not bytes", strings.Repeat("é", 100) + "needle" + strings.Repeat("é", 100), "needle", 0,
			"... " + strings.Repeat("é", 49) + "needle" + strings.Repeat("é", 96) + " ...", 53, 59},
		{"range in UTF-16 units", strings.Repeat("😀", 100) + "needle" + strings.Repeat("😀", 100), "needle", 0,
			"... " + strings.Repeat("😀", 49) + "needle" + strings.Repeat("😀", 96) + " ...", 102, 108},
		{"folded match keeps the original", "Maß", "mass", 0, "Maß", 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := NewText(tc.text)
			ms := tx.Find(tc.term)
			require.Greater(t, len(ms), tc.k)
			sn, s, e := tx.Snippet(ms[tc.k])
			require.Equal(t, tc.want, sn)
			require.Equal(t, []int{tc.start, tc.end}, []int{s, e})
			require.True(t, strings.EqualFold(tc.term, u16(sn, s, e)) || tc.term == "mass", "the range covers the match: %q", u16(sn, s, e))
		})
	}
}

func userMsg(id string, parts ...string) protocol.ThreadItem {
	var in []protocol.UserInput
	for _, p := range parts {
		in = append(in, protocol.UserInput{Value: protocol.UserInputText{Text: p}})
	}
	return protocol.ThreadItem{Value: protocol.ThreadItemUserMessage{ID: id, Content: in}}
}

func agentMsg(id, text string) protocol.ThreadItem {
	return protocol.ThreadItem{Value: protocol.ThreadItemAgentMessage{ID: id, Text: text}}
}

func TestSearchPages(t *testing.T) {
	turns := []protocol.Turn{
		{ID: "t1", Items: []protocol.ThreadItem{
			userMsg("u1", "first needle", "second needle"), // parts are joined as they are
			{Value: protocol.ThreadItemReasoning{ID: "r1", Summary: []string{"needle"}}},
			agentMsg("a1", "needle one"),
		}},
		{ID: "t2", Items: []protocol.ThreadItem{
			userMsg("u2", "no match"),
			agentMsg("a2", "Needle NEEDLE"),
		}},
	}
	type got struct {
		item, turn string
		ti, s, e   int
	}
	collect := func(hs []Hit) []got {
		var out []got
		for _, h := range hs {
			out = append(out, got{h.ItemID, h.TurnID, h.TurnIndex, h.Start, h.End})
		}
		return out
	}
	all := []got{{"u1", "t1", 0, 6, 12}, {"u1", "t1", 0, 19, 25}, {"a1", "t1", 0, 0, 6}, {"a2", "t2", 1, 0, 6}, {"a2", "t2", 1, 7, 13}}

	hits, next := Search(turns, "NEEDLE", Position{}, 50)
	require.Equal(t, all, collect(hits), "user and agent messages only, oldest first")
	require.Nil(t, next)
	require.Equal(t, "first needlesecond needle", hits[0].Snippet)

	hits, next = Search(turns, "needle", Position{}, 5)
	require.Len(t, hits, 5)
	require.Nil(t, next, "no next page when the page ends with the last occurrence")

	// Page by two: the cursor points at the next occurrence (its item and index in the item).
	var paged []Hit
	pos := Position{}
	for i := 0; ; i++ {
		require.Less(t, i, 5)
		hits, next := Search(turns, "needle", pos, 2)
		paged = append(paged, hits...)
		if next == nil {
			break
		}
		pos = *next
	}
	require.Equal(t, all, collect(paged))

	hits, next = Search(turns, "needle", Position{}, 1)
	require.Len(t, hits, 1)
	require.Equal(t, &Position{Item: 0, Occurrence: 1}, next)
	hits, next = Search(turns, "needle", Position{}, 2)
	require.Equal(t, &Position{Item: 2, Occurrence: 0}, next, "the reasoning item in between is skipped")
	_ = hits

	hits, next = Search(turns, "needle", Position{Item: 99}, 10)
	require.Empty(t, hits, "past the end")
	require.Nil(t, next)
	hits, _ = Search(turns, "needle", Position{Item: 0, Occurrence: 7}, 10)
	require.Equal(t, all[2:], collect(hits), "an occurrence index past the item's matches moves on")
}

func TestCursorAndLimit(t *testing.T) {
	c := EncodeCursor("th", "needle", Position{Item: 15, Occurrence: 2})
	require.JSONEq(t, `{"threadId":"th","searchTerm":"needle","nextRolloutOrdinal":15,"nextOccurrenceIndex":2}`, c)
	p, err := DecodeCursor(c, "th", "needle")
	require.NoError(t, err)
	require.Equal(t, Position{Item: 15, Occurrence: 2}, p)
	for _, bad := range []struct{ raw, thread, term string }{
		{c, "other", "needle"},
		{c, "th", "Needle"},
		{"", "th", "needle"},
		{"bogus", "th", "needle"},
		{`{"threadId":"th","searchTerm":"needle","nextRolloutOrdinal":-1,"nextOccurrenceIndex":0}`, "th", "needle"},
		{`{"threadId":"th","searchTerm":"needle","nextRolloutOrdinal":1}`, "th", "needle"},
	} {
		_, err := DecodeCursor(bad.raw, bad.thread, bad.term)
		require.ErrorIs(t, err, ErrBadCursor, "%q", bad.raw)
	}

	u := func(v uint32) *uint32 { return &v }
	require.Equal(t, 50, Limit(nil))
	require.Equal(t, 1, Limit(u(0)))
	require.Equal(t, 7, Limit(u(7)))
	require.Equal(t, 250, Limit(u(1000)))
}
