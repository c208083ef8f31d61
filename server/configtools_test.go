package server_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/apptest"
)

// config/read reports tools.web_search as the reference types it (an untagged boolean-or-table input):
// a boolean reads as null, a table as its known fields (unset ones null, others dropped), other tools.*
// keys are left out, and a value of another shape fails the read naming tools.web_search.
func TestConfigReadToolsWebSearch(t *testing.T) {
	cases := []struct{ name, file, tools, err string }{
		{"unset", "[tools]\n", `{"web_search":null}`, ""},
		{"true", "[tools]\nweb_search = true\nview_image = true\n", `{"web_search":null}`, ""},
		{"false", "[tools]\nweb_search = false\n", `{"web_search":null}`, ""},
		{"empty table", "[tools]\nweb_search = {}\n", `{"web_search":{"context_size":null,"allowed_domains":null,"location":null}}`, ""},
		{"table", "[tools]\nweb_search = { context_size = \"low\", allowed_domains = [\"a.com\"], bogus = 1, location = { city = \"X\", other = 2 } }\n",
			`{"web_search":{"context_size":"low","allowed_domains":["a.com"],"location":{"country":null,"region":null,"city":"X","timezone":null}}}`, ""},
		{"string", "[tools]\nweb_search = \"live\"\n", "", "untagged"},
		{"bad context size", "[tools]\nweb_search = { context_size = \"huge\" }\n", "", "untagged"},
		{"bad domains", "[tools]\nweb_search = { allowed_domains = \"a\" }\n", "", "untagged"},
		{"bad location", "[tools]\nweb_search = { location = { city = 1 } }\n", "", "untagged"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := apptest.Start(t, apptest.Options{Config: tc.file, InvalidConfig: tc.err != ""})
			c.Initialize(false)
			m := c.Request("config/read", map[string]any{})
			if tc.err != "" {
				requireError(t, m, -32603, "invalid configuration: data did not match any variant of untagged enum WebSearchToolConfigInput\nin `tools.web_search`\n")
				return
			}
			require.Nil(t, m.Error, string(m.Raw))
			var read struct {
				Config map[string]json.RawMessage `json:"config"`
			}
			require.NoError(t, json.Unmarshal(m.Result, &read))
			require.JSONEq(t, tc.tools, string(read.Config["tools"]))
		})
	}
	// written with config/value/write, as the reference's clients do
	c := apptest.Start(t, apptest.Options{})
	c.Initialize(false)
	c.Result("config/value/write", map[string]any{"keyPath": "tools", "value": map[string]any{"web_search": true}, "mergeStrategy": "upsert"}, nil)
	var read struct {
		Config map[string]json.RawMessage `json:"config"`
	}
	c.Result("config/read", map[string]any{}, &read)
	require.JSONEq(t, `{"web_search":null}`, string(read.Config["tools"]))
}
