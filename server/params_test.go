package server_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
	"appserver/internal/mockmodel"
)

// toolNames lists the names (or types, for hosted tools) of a model request's tools.
func toolNames(body map[string]any) []string {
	names := []string{}
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		m := t.(map[string]any)
		if n, ok := m["name"].(string); ok {
			names = append(names, n)
		} else {
			names = append(names, m["type"].(string))
		}
	}
	return names
}

func okReply(text string) mockmodel.Response {
	return mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message(text, 1)}}
}

func TestOutputSchemaAppliesToItsTurnOnly(t *testing.T) {
	mm := mockmodel.New(t)
	mm.Enqueue(okReply(`{"title":"Hi"}`), okReply("plain"))
	c := apptest.Start(t, apptest.Options{Model: mm})
	c.Initialize(false)
	tid := c.StartThread(nil)
	schema := map[string]any{
		"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}},
		"required": []string{"title"}, "additionalProperties": false,
	}
	c.Result("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "title please"}}, "outputSchema": schema}, nil)
	c.WaitTurnCompleted()
	c.StartTurn(tid, "again")
	c.WaitTurnCompleted()

	reqs := mm.ResponseRequests()
	require.Len(t, reqs, 2)
	format := reqs[0].Body["text"].(map[string]any)["format"].(map[string]any)
	require.Equal(t, "json_schema", format["type"])
	require.Equal(t, true, format["strict"])
	require.Equal(t, "codex_output_schema", format["name"])
	want, _ := json.Marshal(schema)
	got, _ := json.Marshal(format["schema"])
	require.JSONEq(t, string(want), string(got))
	require.NotContains(t, reqs[1].Body, "text", "the schema applies to its own turn only")
}
