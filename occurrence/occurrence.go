// Package occurrence finds a search term in a thread's messages (thread/searchOccurrences): every
// case-insensitive match in user and agent messages, oldest first, each with a display snippet around it.
package occurrence

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	protocol "appserver/protocol/v2"
)

// Paging and snippet sizes, as the reference's.
const (
	DefaultLimit = 50  // occurrences per page without a limit
	MaxLimit     = 250 // a larger limit is cut to this
	// ContextBefore and ContextAfter are the characters a snippet keeps before and after the match.
	ContextBefore = 49
	ContextAfter  = 96
	// Ellipsis marks a snippet that starts after the text's start or ends before its end.
	Ellipsis = "..."
)

// ErrBadCursor reports a cursor that is malformed or belongs to another thread or search term.
var ErrBadCursor = errors.New("invalid cursor")

// Limit returns the page size for a requested limit: DefaultLimit when absent, then clamped to 1..MaxLimit.
func Limit(requested *uint32) int {
	if requested == nil {
		return DefaultLimit
	}
	return min(max(int(*requested), 1), MaxLimit)
}

// Position is where a page starts: an item's index among all the thread's items (turns in order, items in
// turn order) and an occurrence's index within that item's text.
type Position struct {
	Item       int
	Occurrence int
}

// cursorBody is the cursor's JSON, shaped like the reference's (the server puts the item's rollout ordinal
// in Item, as the reference does).
type cursorBody struct {
	ThreadID   string `json:"threadId"`
	SearchTerm string `json:"searchTerm"`
	Item       *int   `json:"nextRolloutOrdinal"`
	Occurrence *int   `json:"nextOccurrenceIndex"`
}

// EncodeCursor returns the cursor of a page starting at p.
func EncodeCursor(threadID, term string, p Position) string {
	b, _ := json.Marshal(cursorBody{ThreadID: threadID, SearchTerm: term, Item: &p.Item, Occurrence: &p.Occurrence})
	return string(b)
}

// DecodeCursor reads a cursor made by EncodeCursor for the same thread and term.
func DecodeCursor(raw, threadID, term string) (Position, error) {
	var c cursorBody
	if err := json.Unmarshal([]byte(raw), &c); err != nil || c.ThreadID != threadID || c.SearchTerm != term ||
		c.Item == nil || c.Occurrence == nil || *c.Item < 0 || *c.Occurrence < 0 {
		return Position{}, ErrBadCursor
	}
	return Position{Item: *c.Item, Occurrence: *c.Occurrence}, nil
}

// Hit is one occurrence.
type Hit struct {
	TurnIndex int // the turn's index in the thread, oldest first
	TurnID    string
	ItemID    string
	Snippet   string
	// Start and End delimit the match in Snippet, in UTF-16 code units (what the reference reports).
	Start, End int
}

// Search returns up to limit occurrences of term at or after from, in thread order, and the position of the
// next occurrence when there is one more.
func Search(turns []protocol.Turn, term string, from Position, limit int) (hits []Hit, next *Position) {
	folded := foldString(term)
	if folded == "" || limit <= 0 {
		return nil, nil
	}
	item := 0
	for ti, tu := range turns {
		for _, it := range tu.Items {
			pos := item
			item++
			if pos < from.Item {
				continue
			}
			id, text, ok := searchable(it)
			if !ok {
				continue
			}
			t := NewText(text)
			matches := t.find(folded)
			first := 0
			if pos == from.Item {
				first = from.Occurrence
			}
			for k := first; k < len(matches); k++ {
				if len(hits) == limit {
					return hits, &Position{Item: pos, Occurrence: k}
				}
				sn, s, e := t.Snippet(matches[k])
				hits = append(hits, Hit{TurnIndex: ti, TurnID: tu.ID, ItemID: id, Snippet: sn, Start: s, End: e})
			}
		}
	}
	return hits, nil
}

// searchable returns the id and text of an item that is searched: a user message (its text parts joined)
// or an agent message.
func searchable(it protocol.ThreadItem) (id, text string, ok bool) {
	switch v := it.Value.(type) {
	case protocol.ThreadItemUserMessage:
		var b strings.Builder
		for _, in := range v.Content {
			if t, ok := in.Value.(protocol.UserInputText); ok {
				b.WriteString(t.Text)
			}
		}
		return v.ID, b.String(), true
	case protocol.ThreadItemAgentMessage:
		return v.ID, v.Text, true
	}
	return "", "", false
}

// Text is a message prepared for searching: whitespace runs collapsed to one space and the ends trimmed
// (what snippets show), and its case-folded form with each character's offset into it.
type Text struct {
	runes  []rune
	folded string
	starts []int // starts[i]: offset in folded of runes[i]; starts[len(runes)] == len(folded)
}

// NewText prepares s for searching.
func NewText(s string) *Text {
	t := &Text{runes: []rune(strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " "))}
	var b strings.Builder
	t.starts = make([]int, 0, len(t.runes)+1)
	for _, r := range t.runes {
		t.starts = append(t.starts, b.Len())
		if r < utf8.RuneSelf {
			b.WriteByte(byte(unicode.ToLower(r)))
			continue
		}
		if f, ok := foldRune(r); ok {
			b.WriteString(f)
		} else {
			b.WriteRune(r)
		}
	}
	t.starts = append(t.starts, b.Len())
	t.folded = b.String()
	return t
}

// String returns the normalized text.
func (t *Text) String() string { return string(t.runes) }

// Match is one occurrence in a Text: [Start, End) in characters of the normalized text.
type Match struct{ Start, End int }

// Find returns the occurrences of term, case-insensitively and without overlap, in order.
func (t *Text) Find(term string) []Match { return t.find(foldString(term)) }

// find searches an already folded term. A match that starts or ends inside a character's folding (the "s"
// of "ß") covers that whole character, and the search goes on after it.
func (t *Text) find(folded string) []Match {
	if folded == "" {
		return nil
	}
	var out []Match
	n := len(t.runes)
	for pos := 0; pos < len(t.folded); {
		k := strings.Index(t.folded[pos:], folded)
		if k < 0 {
			break
		}
		fs, fe := pos+k, pos+k+len(folded)
		s := sort.Search(n+1, func(i int) bool { return t.starts[i] > fs }) - 1
		e := sort.Search(n+1, func(i int) bool { return t.starts[i] >= fe })
		out = append(out, Match{Start: s, End: e})
		pos = t.starts[e]
	}
	return out
}

// Snippet returns the text around m (ContextBefore characters before it, ContextAfter after, Ellipsis where
// the text goes on) and the match's range in the snippet in UTF-16 code units.
func (t *Text) Snippet(m Match) (snippet string, start, end int) {
	from, to := max(m.Start-ContextBefore, 0), min(m.End+ContextAfter, len(t.runes))
	var b strings.Builder
	if from > 0 {
		b.WriteString(Ellipsis + " ")
		start = len(Ellipsis) + 1
	}
	b.WriteString(string(t.runes[from:to]))
	if to < len(t.runes) {
		b.WriteString(" " + Ellipsis)
	}
	start += utf16Len(t.runes[from:m.Start])
	return b.String(), start, start + utf16Len(t.runes[m.Start:m.End])
}

func utf16Len(rs []rune) int {
	n := 0
	for _, r := range rs {
		n += utf16.RuneLen(r)
	}
	return n
}
