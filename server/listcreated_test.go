package server_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
)

// Under sortKey created_at, thread/list orders and pages by the time in the rollout's file name (whole
// seconds), ties by id, as the reference does, while createdAt and the backwards cursor stay session_meta's
// time; a bare time cursor selects strictly beyond it. (Seen on the reference with the same files.)
func TestThreadListCreatedAtByFileName(t *testing.T) {
	c := apptest.Start(t, apptest.Options{})
	day := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	names := map[string]string{}
	for _, th := range []struct {
		name, id        string
		fileSec, metaMs int
	}{
		{"A", "01a20f64-0000-7000-8000-00000000000a", 0, 5500},
		{"B", "01a20f64-0000-7000-8000-00000000000b", 2, 1200},
		{"C", "01a20f64-0000-7000-8000-00000000000c", 2, 3000},
		{"D", "01a20f64-0000-7000-8000-000000000001", 2, 100},
		{"E", "01a20f64-0000-7000-8000-00000000000e", 3, 2000},
	} {
		names[th.id] = th.name
		p := writeRollout(t, c.Home, th.id, day.Add(time.Duration(th.metaMs)*time.Millisecond), "first "+th.name)
		named := filepath.Join(filepath.Dir(p), "rollout-"+day.Add(time.Duration(th.fileSec)*time.Second).Format("2006-01-02T15-04-05")+"-"+th.id+".jsonl")
		require.NoError(t, os.Rename(p, named))
	}
	c.Initialize(false)
	type page struct{ ids, next, back string }
	list := func(params map[string]any) page {
		var res struct {
			Data []struct {
				ID        string `json:"id"`
				CreatedAt int64  `json:"createdAt"`
			} `json:"data"`
			NextCursor      *string `json:"nextCursor"`
			BackwardsCursor *string `json:"backwardsCursor"`
		}
		params["sortKey"] = "created_at"
		c.Result("thread/list", params, &res)
		var p page
		for _, th := range res.Data {
			p.ids += names[th.ID]
		}
		if res.NextCursor != nil {
			p.next = *res.NextCursor
		}
		if res.BackwardsCursor != nil {
			p.back = *res.BackwardsCursor
		}
		return p
	}
	for dir, want := range map[string][]page{
		"desc": {{"EC", "2026-11-24T10:00:02Z|01a20f64-0000-7000-8000-00000000000c", "2026-11-24T10:00:01.999Z"},
			{"BD", "2026-11-24T10:00:02Z|01a20f64-0000-7000-8000-000000000001", "2026-11-24T10:00:01.199Z"},
			{"A", "", "2026-11-24T10:00:05.499Z"}},
		"asc": {{"AD", "2026-11-24T10:00:02Z|01a20f64-0000-7000-8000-000000000001", "2026-11-24T10:00:05.501Z"},
			{"BC", "2026-11-24T10:00:02Z|01a20f64-0000-7000-8000-00000000000c", "2026-11-24T10:00:01.201Z"},
			{"E", "", "2026-11-24T10:00:02.001Z"}},
	} {
		var got []page
		cursor := ""
		for i := 0; i < len(want); i++ {
			params := map[string]any{"limit": 2, "sortDirection": dir}
			if cursor != "" {
				params["cursor"] = cursor
			}
			p := list(params)
			got = append(got, p)
			cursor = p.next
		}
		require.Equal(t, want, got, dir)
	}
	for _, tc := range []struct{ cursor, dir, want string }{
		{"2026-11-24T10:00:02Z|01a20f64-0000-7000-8000-00000000000b", "desc", "DA"},
		{"2026-11-24T10:00:02Z|01a20f64-0000-7000-8000-00000000000b", "asc", "CE"},
		{"2026-11-24T10:00:02Z", "desc", "A"},
		{"2026-11-24T10:00:02Z", "asc", "E"},
		{"2026-11-24T10:00:01.999Z", "asc", "DBCE"},
		{"2026-11-24T10:00:02.500Z|01a20f64-0000-7000-8000-00000000000b", "desc", "CBDA"},
	} {
		p := list(map[string]any{"limit": 5, "sortDirection": tc.dir, "cursor": tc.cursor})
		require.Equal(t, tc.want, p.ids, "%s %s", tc.dir, tc.cursor)
	}
}
