package model

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// referenceBody is what MarshalBody produced before the history was spliced in: encoding/json all the way.
func referenceBody(r *Request) ([]byte, error) {
	b := body{
		Model: r.Model, Instructions: r.Instructions, Stream: true, ServiceTier: r.ServiceTier,
		Input: r.Input, ToolChoice: r.ToolChoice, ParallelToolCalls: r.ParallelToolCalls,
		Reasoning: r.Reasoning, Include: r.Include, PromptCacheKey: r.PromptCacheKey, Text: r.Text,
		ClientMetadata: r.ClientMetadata,
	}
	if b.Input == nil {
		b.Input = []json.RawMessage{}
	}
	tools := r.Tools
	if tools == nil {
		tools = []json.RawMessage{}
	}
	if !r.NoTools {
		b.Tools = &tools
	}
	if b.ToolChoice == "" {
		b.ToolChoice = "auto"
	}
	if b.Include == nil {
		b.Include = []string{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func TestMarshalBodyMatchesEncodingJSON(t *testing.T) {
	items := []string{
		`{}`, `[]`, `{"a":[1,-2.5e+3,0,0.1,1E9,true,false,null,"x"]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"<b>&\u2028 \"q\" \\ \/ \n é ` + "\u2028" + `"}]}`,
		`{"s":"\uD83D\uDE00","n":{"m":{}}}`,
		`"str"`, `12`, `null`,
		// Not compact or not valid: encoding/json decides (compacts or fails).
		`{ "a": 1 }`, "{\n\"a\":[1, 2]}", `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":"\x"}`, `{"a":"\u12"}`,
		"{\"a\":\"\x01\"}", `{"a":1`, `{"a":1}}`, `{"a":tru}`, `{"a"}`, `{,}`, `[1,]`, ``, `{"a":1} `,
	}
	for _, it := range items {
		for _, hist := range [][]json.RawMessage{
			{json.RawMessage(it)},
			{json.RawMessage(`{"type":"message"}`), json.RawMessage(it), json.RawMessage(`[1]`)},
		} {
			r := &Request{Model: `m,"input":[],"tools":[]`, Instructions: `i "input":[],"tools":[]`, ServiceTier: `p "input":[],"tools":[]`, Input: hist, Tools: hist,
				Reasoning: json.RawMessage(`{"effort":"low"}`), PromptCacheKey: "k", ClientMetadata: map[string]string{"a": "b"}}
			want, wantErr := referenceBody(r)
			got, err := r.MarshalBody()
			if wantErr != nil {
				require.Error(t, err, "item %q", it)
				continue
			}
			require.NoError(t, err, "item %q", it)
			require.Equal(t, string(want), string(got), "item %q", it)
		}
	}
	for _, tc := range []struct{ input, tools []json.RawMessage }{
		{nil, []json.RawMessage{json.RawMessage(`{"type":"function"}`)}},
		{[]json.RawMessage{json.RawMessage(`{"a":1}`)}, nil},
		{[]json.RawMessage{json.RawMessage(`{"a":1}`)}, []json.RawMessage{json.RawMessage(`{ "b":2}`)}},
		{[]json.RawMessage{json.RawMessage(`{"a": 1}`)}, []json.RawMessage{json.RawMessage(`{"b":2}`)}},
		{[]json.RawMessage{nil}, nil},
	} {
		for _, noTools := range []bool{false, true} {
			r := &Request{Model: "m", Input: tc.input, Tools: tc.tools, NoTools: noTools, Text: json.RawMessage(`{"verbosity":"low"}`)}
			want, err := referenceBody(r)
			require.NoError(t, err)
			got, err := r.MarshalBody()
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
			require.Equal(t, !noTools, bytes.Contains(got, []byte(`"tools":`)))
		}
	}
	deep := bytes.Repeat([]byte("["), 2000)
	deep = append(deep, bytes.Repeat([]byte("]"), 2000)...)
	require.False(t, compactValid(deep), "beyond the depth limit encoding/json decides")
	require.True(t, compactValid([]byte(`{"a":[{"b":"c"}]}`)))
}

func BenchmarkMarshalBody(b *testing.B) {
	var hist []json.RawMessage
	for i := 0; i < 200; i++ {
		hist = append(hist, json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"hello there, this is a message"}]}`),
			json.RawMessage(`{"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":"ok","annotations":[]}]}`))
	}
	r := &Request{Model: "gpt", Input: hist}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := r.MarshalBody(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalBodyEncodingJSON(b *testing.B) {
	var hist []json.RawMessage
	for i := 0; i < 200; i++ {
		hist = append(hist, json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"hello there, this is a message"}]}`),
			json.RawMessage(`{"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":"ok","annotations":[]}]}`))
	}
	r := &Request{Model: "gpt", Input: hist}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := referenceBody(r); err != nil {
			b.Fatal(err)
		}
	}
}

// TestServiceTierField: like the reference, service_tier follows stream and is absent at standard speed.
func TestServiceTierField(t *testing.T) {
	r := &Request{Model: "m", ServiceTier: "priority", Input: []json.RawMessage{json.RawMessage(`{"a":1}`)}}
	got, err := r.MarshalBody()
	require.NoError(t, err)
	require.Contains(t, string(got), `"stream":true,"service_tier":"priority","input":[{"a":1}]`)
	r.ServiceTier = ""
	got, err = r.MarshalBody()
	require.NoError(t, err)
	require.NotContains(t, string(got), "service_tier")
}
