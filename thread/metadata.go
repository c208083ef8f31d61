package thread

import protocol "appserver/protocol/v2"

// SetMetadata replaces the thread's git info and daybreak flag (thread/metadata/update) in its wire object.
func (t *Thread) SetMetadata(git *protocol.GitInfo, daybreak *bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.meta.GitInfo = git
	t.meta.DaybreakEnabled = daybreak
}
