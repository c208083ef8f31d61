package thread

import protocol "appserver/protocol/v2"

// Timeline lays turns out as timeline entries in history order: each turn's start, its items, and its
// completion once it has finished. Positions count entries from 1.
func Timeline(turns []protocol.Turn) []protocol.ThreadTimelineEntry {
	var out []protocol.ThreadTimelineEntry
	pos := uint64(0)
	next := func() uint64 { pos++; return pos }
	for _, tn := range turns {
		out = append(out, protocol.ThreadTimelineEntry{Value: protocol.ThreadTimelineEntryTurnStarted{
			Position: next(), TurnID: tn.ID, StartedAt: tn.StartedAt}})
		for _, it := range tn.Items {
			out = append(out, protocol.ThreadTimelineEntry{Value: protocol.ThreadTimelineEntryItem{
				Position: next(), TurnID: tn.ID, Item: it}})
		}
		if tn.Status == protocol.TurnStatusInProgress {
			continue
		}
		out = append(out, protocol.ThreadTimelineEntry{Value: protocol.ThreadTimelineEntryTurnCompleted{
			Position: next(), TurnID: tn.ID, Status: tn.Status, Error: tn.Error,
			StartedAt: tn.StartedAt, CompletedAt: tn.CompletedAt, DurationMs: tn.DurationMs}})
	}
	return out
}

// TimelinePage returns the newest limit entries before position before (0: from the end; limit 0: all
// of them), oldest first, and the position to pass as before for the next, older page (0 when none).
func TimelinePage(entries []protocol.ThreadTimelineEntry, before uint64, limit int) ([]protocol.ThreadTimelineEntry, uint64) {
	end := len(entries)
	if before > 0 {
		end = 0
		for i, e := range entries {
			if entryPosition(e) < before {
				end = i + 1
			}
		}
	}
	start := 0
	if limit > 0 && end-limit > 0 {
		start = end - limit
	}
	page := entries[start:end]
	if start == 0 || len(page) == 0 {
		return page, 0
	}
	return page, entryPosition(page[0])
}

func entryPosition(e protocol.ThreadTimelineEntry) uint64 {
	switch v := e.Value.(type) {
	case protocol.ThreadTimelineEntryTurnStarted:
		return v.Position
	case protocol.ThreadTimelineEntryItem:
		return v.Position
	case protocol.ThreadTimelineEntryTurnCompleted:
		return v.Position
	case protocol.ThreadTimelineEntryRealtime:
		return v.Position
	}
	return 0
}
