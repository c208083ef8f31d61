package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// ForkBase computes the session_meta.history_base of a fork of the rollout at path, as the reference records
// forks: the new file references the parent's first bytes instead of copying them. With beforeTurnID == "" the
// whole parent is kept (a torn last line excluded); otherwise the fork ends just before the task_started record
// of that turn. threadID is the parent's id.
func ForkBase(path, threadID, beforeTurnID string) (HistoryBase, error) {
	f, err := OpenRolloutFile(path)
	if err != nil {
		return HistoryBase{}, fmt.Errorf("rollout: fork: %w", err)
	}
	defer f.Close()
	hb := HistoryBase{ThreadID: threadID}
	lr := newLineReader(f)
	defer lr.release()
	var lines int64
	for {
		start := lr.off
		ln, truncated, complete, err := lr.next(4 << 10)
		if err == io.EOF {
			break
		}
		if err != nil {
			return HistoryBase{}, fmt.Errorf("rollout: fork: %w", err)
		}
		if !complete && (truncated || !json.Valid(ln)) {
			break // torn last line: not part of the fork
		}
		if beforeTurnID != "" && !truncated && bytes.Contains(ln, []byte(`"task_started"`)) {
			if rec, err := decodeLine(ln); err == nil && rec.Type == TypeEventMsg {
				var ev eventHead
				if json.Unmarshal(rec.Payload, &ev) == nil && ev.Type == "task_started" && ev.TurnID == beforeTurnID {
					hb.EndByteOffset = start
					hb.EndOrdinalExclusive = max(hb.EndOrdinalExclusive, lines)
					return hb, nil
				}
			}
		}
		hb.EndByteOffset = lr.off
		if len(bytes.TrimSpace(ln)) == 0 {
			continue
		}
		lines++
		if o, ok := prefixOrdinal(ln); ok && o+1 > hb.EndOrdinalExclusive {
			hb.EndOrdinalExclusive = o + 1
		}
	}
	if beforeTurnID != "" {
		return HistoryBase{}, fmt.Errorf("rollout: fork: turn %q not found", beforeTurnID)
	}
	hb.EndOrdinalExclusive = max(hb.EndOrdinalExclusive, lines)
	return hb, nil
}
