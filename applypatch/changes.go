package applypatch

import (
	"encoding/json"
	"sort"
)

// updateDiffContext is the number of context lines in a fileChange item's update diff.
const updateDiffContext = 1

// Change is one entry of a fileChange item's `changes` (FileUpdateChange). It
// marshals to the wire shape {path, kind:{type, move_path?}, diff}.
type Change struct {
	Path     string  // absolute path
	Kind     Kind    // add, delete or update
	MovePath *string // update only: absolute destination, nil when not moved
	// UnifiedDiff is the wire `diff`: the new content for add, the removed
	// content for delete, and @@ hunks (1 line of context) for update, followed
	// by "\n\nMoved to: <dest>" for a move.
	UnifiedDiff string
}

type wireKind struct {
	Type     Kind     `json:"type"`
	MovePath **string `json:"move_path,omitempty"`
}

// MarshalJSON renders the FileUpdateChange wire object; update kinds always carry move_path (null when not moved).
func (c Change) MarshalJSON() ([]byte, error) {
	k := wireKind{Type: c.Kind}
	if c.Kind == KindUpdate {
		k.MovePath = &c.MovePath
	}
	return json.Marshal(struct {
		Path string   `json:"path"`
		Kind wireKind `json:"kind"`
		Diff string   `json:"diff"`
	}{c.Path, k, c.UnifiedDiff})
}

// Changes returns the fileChange item's changes, one per hunk, sorted by path as the reference does.
func (pl *Plan) Changes() []Change {
	out := make([]Change, 0, len(pl.Files))
	for _, f := range pl.Files {
		c := Change{Path: f.Path, Kind: f.Kind}
		switch f.Kind {
		case KindAdd:
			c.UnifiedDiff = f.NewContent
		case KindDelete:
			c.UnifiedDiff = f.OldContent
		case KindUpdate:
			c.UnifiedDiff = unifiedHunks(f.OldContent, f.NewContent, updateDiffContext)
			if f.MovePath != "" {
				mp := f.MovePath
				c.MovePath = &mp
				c.UnifiedDiff += "\n\nMoved to: " + mp
			}
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
