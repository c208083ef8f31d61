package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/rollout"
)

const pinned = "01984de2-8f74-7c91-a3b2-5c5e937cf318"

func TestThreadSections(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	id := func(i int) string { return fmt.Sprintf("01f10000-0000-7000-8000-%012d", i) }
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= 3; i++ {
		storedThread(t, home, id(i), "mock", rollout.StringSource("vscode"), base.Add(time.Duration(i)*time.Hour), fmt.Sprint("q", i))
	}
	c := apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)

	type section struct {
		ID         string          `json:"id"`
		Name       string          `json:"name"`
		Appearance *map[string]any `json:"appearance"`
	}
	var secs struct {
		Data       []section `json:"data"`
		NextCursor *string   `json:"nextCursor"`
	}
	c.Result("threadSection/list", map[string]any{}, &secs)
	require.Equal(t, []section{{ID: pinned, Name: "Pinned"}}, secs.Data, "the built-in section")

	var created struct{ Section section }
	c.Result("threadSection/create", map[string]any{"name": "Work", "appearance": map[string]any{"color": "red"}}, &created)
	require.Equal(t, "Work", created.Section.Name)
	require.Equal(t, "red", (*created.Section.Appearance)["color"])
	c.Result("threadSection/list", map[string]any{"limit": 1}, &secs)
	require.Len(t, secs.Data, 1)
	require.Equal(t, pinned, *secs.NextCursor)
	c.Result("threadSection/list", map[string]any{"cursor": pinned}, &secs)
	require.Equal(t, created.Section.ID, secs.Data[0].ID)

	var updated struct{ Section section }
	c.Result("threadSection/update", map[string]any{"sectionId": created.Section.ID, "name": "Work 2"}, &updated)
	require.NotNil(t, updated.Section.Appearance, "omitted appearance is kept")
	c.Result("threadSection/update", map[string]any{"sectionId": created.Section.ID, "name": "Work 3", "appearance": nil}, &updated)
	require.Nil(t, updated.Section.Appearance, "null clears it")

	c.Result("thread/section/move", map[string]any{"threadId": id(1), "sectionId": pinned}, nil)
	n := c.WaitNotification("thread/section/changed", threadIDIs(id(1)))
	require.Contains(t, string(n.Params), pinned)
	c.Result("thread/section/move", map[string]any{"threadId": id(2), "sectionId": pinned}, nil)
	c.Result("thread/section/move", map[string]any{"threadId": id(3), "sectionId": pinned, "beforeThreadId": id(1)}, nil)

	list := func(params map[string]any) []string {
		var r struct {
			Data []struct {
				ID      string   `json:"id"`
				Section *section `json:"section"`
			} `json:"data"`
		}
		c.Result("thread/list", params, &r)
		out := []string{}
		for _, th := range r.Data {
			require.NotNil(t, th.Section)
			out = append(out, th.ID)
		}
		return out
	}
	require.Equal(t, []string{id(3), id(1), id(2)}, list(map[string]any{"sortKey": "section_position", "sectionId": pinned}))
	require.Equal(t, []string{id(2), id(1)}, list(map[string]any{"sortKey": "section_position", "sectionId": pinned, "sortDirection": "desc", "limit": 2}))
	c.Result("thread/section/move", map[string]any{"threadId": id(1), "sectionId": nil}, nil)
	require.Equal(t, []string{id(3), id(2)}, list(map[string]any{"sectionId": pinned}))

	var read struct {
		Thread struct {
			Section          *section `json:"section"`
			SectionEnteredAt *int64   `json:"sectionEnteredAt"`
		} `json:"thread"`
	}
	c.Result("thread/read", map[string]any{"threadId": id(3)}, &read)
	require.Equal(t, pinned, read.Thread.Section.ID)
	require.NotNil(t, read.Thread.SectionEnteredAt)

	c.Result("threadSection/delete", map[string]any{"sectionId": created.Section.ID}, nil)
	for _, bad := range []struct {
		method string
		params map[string]any
		code   int
		msg    string
	}{
		{"threadSection/create", map[string]any{"name": ""}, -32602, "section name must not be empty"},
		{"threadSection/update", map[string]any{"sectionId": pinned, "name": "x"}, -32602, "the built-in pinned section cannot be renamed"},
		{"threadSection/delete", map[string]any{"sectionId": pinned}, -32602, "the built-in pinned section cannot be deleted"},
		{"threadSection/delete", map[string]any{"sectionId": created.Section.ID}, -32602, "thread section not found: " + created.Section.ID},
		{"threadSection/update", map[string]any{"sectionId": "nope", "name": "x"}, -32602, "thread section not found: nope"},
		{"thread/section/move", map[string]any{"threadId": id(1), "sectionId": "nope"}, -32600, "section nope does not exist"},
		{"thread/section/move", map[string]any{"threadId": id(1), "sectionId": pinned, "beforeThreadId": id(9)}, -32600,
			fmt.Sprintf("before thread %s is not in section %s", id(9), pinned)},
		{"thread/section/move", map[string]any{"threadId": id(9), "sectionId": pinned}, -32600, "thread not found: " + id(9)},
		{"thread/list", map[string]any{"sortKey": "section_position"}, -32600, "section-position sorting requires a section filter"},
	} {
		m := c.Request(bad.method, bad.params)
		require.NotNil(t, m.Error, "%s %v", bad.method, bad.params)
		require.Equal(t, bad.code, m.Error.Code, "%s %v", bad.method, bad.params)
		require.Equal(t, bad.msg, m.Error.Message)
	}
}

// TestThreadSectionsSurviveIndexRebuild: sections and their members are kept in the durable state database too,
// so an index rebuilt from the rollouts (here: deleted) gets them back with their order.
func TestThreadSectionsSurviveIndexRebuild(t *testing.T) {
	home := filepath.Join(t.TempDir(), "codex_home")
	id := func(i int) string { return fmt.Sprintf("01f10000-0000-7000-8000-%012d", i) }
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= 3; i++ {
		storedThread(t, home, id(i), "mock", rollout.StringSource("vscode"), base.Add(time.Duration(i)*time.Hour), fmt.Sprint("q", i))
	}
	c := apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	var created struct {
		Section struct {
			ID string `json:"id"`
		} `json:"section"`
	}
	c.Result("threadSection/create", map[string]any{"name": "Work", "appearance": map[string]any{"color": "red"}}, &created)
	work := created.Section.ID
	c.Result("threadSection/create", map[string]any{"name": "Gone"}, &created)
	c.Result("threadSection/delete", map[string]any{"sectionId": created.Section.ID}, nil)
	c.Result("thread/section/move", map[string]any{"threadId": id(1), "sectionId": work}, nil)
	c.Result("thread/section/move", map[string]any{"threadId": id(2), "sectionId": work, "beforeThreadId": id(1)}, nil)
	c.Result("thread/section/move", map[string]any{"threadId": id(3), "sectionId": pinned}, nil)
	c.Result("threadSection/update", map[string]any{"sectionId": work, "name": "Work 2"}, nil)
	c.Close()

	for _, suffix := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(filepath.Join(home, rollout.IndexFileName+suffix))
	}
	c = apptest.Start(t, apptest.Options{Home: home})
	c.Initialize(true)
	var secs struct {
		Data []struct {
			ID         string         `json:"id"`
			Name       string         `json:"name"`
			Appearance map[string]any `json:"appearance"`
		} `json:"data"`
	}
	c.Result("threadSection/list", map[string]any{}, &secs)
	require.Len(t, secs.Data, 2)
	require.Equal(t, pinned, secs.Data[0].ID)
	require.Equal(t, work, secs.Data[1].ID)
	require.Equal(t, "Work 2", secs.Data[1].Name)
	require.Equal(t, "red", secs.Data[1].Appearance["color"])
	list := func(section string) []string {
		var r struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		c.Result("thread/list", map[string]any{"sortKey": "section_position", "sectionId": section}, &r)
		out := []string{}
		for _, th := range r.Data {
			out = append(out, th.ID)
		}
		return out
	}
	require.Equal(t, []string{id(2), id(1)}, list(work))
	require.Equal(t, []string{id(3)}, list(pinned))
}
