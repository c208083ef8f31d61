package thread

import (
	"appserver/rollout"
)

// HistoryOrdinals maps a thread's turns and items to the rollout ordinals of the records that opened them
// (task_started) and first produced them (item_completed), the positions the reference's history cursors
// carry (rolloutOrdinal). Turns and items not written yet have none.
type HistoryOrdinals struct {
	turns              map[string]int64
	items              map[itemKey]int64
	lastTurn, lastItem int64 // -1 when none
}

// Last returns the ordinals of the newest turn and item written (-1 when none).
func (h HistoryOrdinals) Last() (turn, item int64) {
	if h.turns == nil {
		return -1, -1
	}
	return h.lastTurn, h.lastItem
}

type itemKey struct{ turn, item string }

// Turn returns the ordinal of a turn.
func (h HistoryOrdinals) Turn(turnID string) (int64, bool) {
	o, ok := h.turns[turnID]
	return o, ok
}

// Item returns the ordinal of an item of a turn.
func (h HistoryOrdinals) Item(turnID, itemID string) (int64, bool) {
	o, ok := h.items[itemKey{turnID, itemID}]
	return o, ok
}

// HistoryOrdinals reads the ordinals of a thread's history from its rollout (a loaded thread's pending
// records are written first); a thread without a readable rollout has none.
func (m *Manager) HistoryOrdinals(id string) HistoryOrdinals {
	var rt *rollout.Thread
	if t, ok := m.Get(id); ok {
		t.mu.Lock()
		if raw, pending := t.attached[storedTurnsKey{}].([]rollout.Turn); pending && len(t.turns) == 0 && t.active == nil {
			// nothing since the load: the turns read then carry their ordinals (a resume answers without
			// reading the file again)
			t.mu.Unlock()
			return ordinalsOf(raw)
		}
		rec := t.recorder
		t.mu.Unlock()
		if rec == nil {
			return HistoryOrdinals{}
		}
		_ = rec.Flush()
		th, err := rollout.ReadFile(rec.Path())
		if err != nil {
			return HistoryOrdinals{}
		}
		rt = th
	} else {
		st, err := m.Store()
		if err != nil {
			return HistoryOrdinals{}
		}
		if rt, err = st.ReadThread(id); err != nil {
			return HistoryOrdinals{}
		}
	}
	return ordinalsOf(rt.Turns)
}

func ordinalsOf(turns []rollout.Turn) HistoryOrdinals {
	h := HistoryOrdinals{turns: make(map[string]int64, len(turns)), items: map[itemKey]int64{}, lastTurn: -1, lastItem: -1}
	for _, tu := range turns {
		h.turns[tu.ID] = tu.Ordinal
		h.lastTurn = max(h.lastTurn, tu.Ordinal)
		for _, o := range tu.ItemOrdinals {
			h.lastItem = max(h.lastItem, o)
		}
		for j, it := range tu.Items {
			id, _ := it["id"].(string)
			if id == "" || j >= len(tu.ItemOrdinals) {
				continue
			}
			h.items[itemKey{tu.ID, id}] = tu.ItemOrdinals[j]
		}
	}
	return h
}
