package thread

import (
	"encoding/json"

	protocol "appserver/protocol/v2"
)

// SetMetadata replaces the thread's git info and daybreak flag (thread/metadata/update) in its wire object.
func (t *Thread) SetMetadata(git *protocol.GitInfo, daybreak *bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.meta.GitInfo = git
	t.meta.DaybreakEnabled = daybreak
}

// SetProject sets the thread's project (nil: none) in its wire object.
func (t *Thread) SetProject(id *string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.meta.ProjectID = id
}

// InjectItems appends raw Responses items to the thread's model history (and its rollout) without starting a
// turn (thread/inject_items); the next turn sends them to the model.
func (t *Thread) InjectItems(items []json.RawMessage) { t.appendHistory(items...) }
