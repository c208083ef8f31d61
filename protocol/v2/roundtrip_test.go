package protocol_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

// roundTripExceptions lists messages ("<file>:<line>") that deliberately do not re-encode byte-for-byte
// equal (modulo key order), with the reason.
var roundTripExceptions = map[string]string{}

// invalidInputs are client messages the conformance driver sends on purpose to provoke an error; decoding
// them with protocol.Decode must fail with the given text.
var invalidInputs = map[string]string{
	"handshake.jsonl:46": "cannot unmarshal string",  // thread/list {"limit":"ten"}
	"handshake.jsonl:49": "cannot unmarshal string",  // thread/list params "oops"
	"handshake.jsonl:52": "missing field `threadId`", // turn/start {"input":[]}
}

type transcriptEntry struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
	// Event is set on meta entries.
	Event string `json:"event"`
	// Line is the verbatim line of a send_raw entry.
	Line string `json:"line"`
}

type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// roundTrip decodes raw into a fresh value from newValue and re-encodes it; the JSON must be equal.
// With lenientNulls, a key that is null in the re-encoding and absent from raw is ignored: clients (the
// conformance driver) omit nullable fields that the Go types, following the reference's output style,
// always write as null.
func roundTrip(t *testing.T, newValue func() any, raw json.RawMessage, lenientNulls bool) {
	t.Helper()
	v := newValue()
	require.NoError(t, protocol.Decode(raw, v), "decode into %T", v)
	out, err := json.Marshal(v)
	require.NoError(t, err, "encode %T", v)
	if lenientNulls {
		var want, got any
		require.NoError(t, json.Unmarshal(raw, &want))
		require.NoError(t, json.Unmarshal(out, &got))
		dropAddedNulls(want, got)
		out, err = json.Marshal(got)
		require.NoError(t, err)
	}
	require.JSONEq(t, string(raw), string(out), "%T did not round-trip", v)
}

// dropAddedNulls deletes, recursively, the null members of got that want does not have.
func dropAddedNulls(want, got any) {
	switch g := got.(type) {
	case map[string]any:
		w, _ := want.(map[string]any)
		for k, gv := range g {
			wv, ok := w[k]
			if !ok && gv == nil {
				delete(g, k)
				continue
			}
			dropAddedNulls(wv, gv)
		}
	case []any:
		w, _ := want.([]any)
		for i := range g {
			if i < len(w) {
				dropAddedNulls(w[i], g[i])
			}
		}
	}
}

func TestTranscriptsRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	checked := 0
	for _, file := range files {
		f, err := os.Open(file)
		require.NoError(t, err)
		clientReqs := map[string]string{} // id → method, client → server
		serverReqs := map[string]string{} // id → method, server → client
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for ln := 1; sc.Scan(); ln++ {
			var e transcriptEntry
			require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
			if e.Dir == "meta" && e.Event == "server_start" {
				clientReqs, serverReqs = map[string]string{}, map[string]string{}
			}
			if e.Dir == "send_raw" {
				var m wireMessage
				if json.Unmarshal([]byte(e.Line), &m) == nil && m.ID != nil && m.Method != "" {
					clientReqs[string(m.ID)] = m.Method // raw lines that parse as requests get answers
				}
				continue
			}
			if e.Dir != "send" && e.Dir != "recv" {
				continue
			}
			var m wireMessage
			require.NoError(t, json.Unmarshal(e.Msg, &m))
			where := fmt.Sprintf("%s:%d", filepath.Base(file), ln)
			var spec *protocol.MethodSpec
			var raw json.RawMessage
			var newValue func() any
			switch {
			case m.Method != "" && m.ID != nil && e.Dir == "send":
				clientReqs[string(m.ID)] = m.Method
				s, ok := protocol.LookupClientRequest(m.Method)
				if !ok {
					require.Equal(t, "no/such/method", m.Method, "%s: unknown client request", where)
					continue // deliberately unknown: the reference answers with an error
				}
				spec, raw, newValue = s, m.Params, s.NewParams
			case m.Method != "" && m.ID != nil:
				serverReqs[string(m.ID)] = m.Method
				s, ok := protocol.LookupServerRequest(m.Method)
				require.True(t, ok, "%s: unknown server request %s", where, m.Method)
				spec, raw, newValue = s, m.Params, s.NewParams
			case m.Method != "" && e.Dir == "recv":
				s, ok := protocol.LookupServerNotification(m.Method)
				require.True(t, ok, "%s: unknown notification %s", where, m.Method)
				spec, raw, newValue = s, m.Params, s.NewParams
			case m.Method != "":
				continue // client notification "initialized": no params
			case m.Result != nil:
				table := clientReqs
				lookup := protocol.LookupClientRequest
				if e.Dir == "send" {
					table, lookup = serverReqs, protocol.LookupServerRequest
				}
				method, ok := table[string(m.ID)]
				require.True(t, ok, "%s: response to unknown id %s", where, m.ID)
				s, _ := lookup(method)
				spec, raw, newValue = s, m.Result, s.NewResult
			case m.Error != nil:
				spec, raw, newValue = &protocol.MethodSpec{Name: "error"}, m.Error,
					func() any { return new(protocol.JSONRPCErrorError) }
			default:
				t.Fatalf("%s: unclassified message %s", where, e.Msg)
			}
			if raw == nil || newValue == nil {
				require.Nil(t, newValue, "%s: %s has params type %s but none were sent", where, spec.Name, spec.ParamsType)
				continue
			}
			if wantErr, ok := invalidInputs[where]; ok {
				err := protocol.Decode(raw, newValue())
				require.ErrorContains(t, err, wantErr, "%s: %s", where, raw)
				checked++
				continue
			}
			if reason, ok := roundTripExceptions[where]; ok {
				t.Logf("%s: skipped (%s)", where, reason)
				continue
			}
			lenient := e.Dir == "send"
			t.Run(where+" "+spec.Name, func(t *testing.T) { roundTrip(t, newValue, raw, lenient) })
			checked++
		}
		require.NoError(t, sc.Err())
		require.NoError(t, f.Close())
	}
	t.Logf("%d messages round-tripped", checked)
	require.Greater(t, checked, 300, "too few messages checked")
}
