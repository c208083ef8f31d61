package schematest_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/schematest"
)

type entry struct {
	Dir   string          `json:"dir"`
	Event string          `json:"event"`
	Msg   json.RawMessage `json:"msg"`
	Line  string          `json:"line"`
}

// transcript is one golden transcript: its lines plus the id → method trackers built while reading it.
type transcript struct {
	entries []entry
}

func readTranscript(t *testing.T, path string) transcript {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var tr transcript
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e entry
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		tr.entries = append(tr.entries, e)
	}
	require.NoError(t, sc.Err())
	return tr
}

func validator(t *testing.T) *schematest.Validator {
	t.Helper()
	v, err := schematest.Default()
	require.NoError(t, err)
	return v
}

// TestGoldenTranscriptsValidate checks every message of the reference transcripts, both directions.
func TestGoldenTranscriptsValidate(t *testing.T) {
	v := validator(t)
	files, err := filepath.Glob("testdata/*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	checked := 0
	for _, file := range files {
		client, server := schematest.NewTracker(), schematest.NewTracker()
		for i, e := range readTranscript(t, file).entries {
			where := fmt.Sprintf("%s:%d", filepath.Base(file), i+1)
			switch e.Dir {
			case "meta":
				if e.Event == "server_start" {
					client, server = schematest.NewTracker(), schematest.NewTracker()
				}
			case "send_raw":
				client.Sent([]byte(e.Line))
			case "send":
				client.Sent(e.Msg)
				if strings.Contains(string(e.Msg), `"no/such/`) || invalidClientMessages[where] {
					continue
				}
				require.NoError(t, v.ClientMessage(e.Msg, server.MethodOf), where)
				checked++
			case "recv":
				server.Sent(e.Msg)
				require.NoError(t, v.ServerMessage(e.Msg, client.MethodOf), where)
				schematest.ValidateServerMessage(t, e.Msg, client.MethodOf)
				checked++
			}
		}
	}
	require.Greater(t, checked, 100)
}

// invalidClientMessages are deliberately malformed requests of the handshake scenario.
var invalidClientMessages = map[string]bool{
	"handshake.jsonl:46": true, // thread/list {"limit":"ten"}
	"handshake.jsonl:49": true, // thread/list params "oops"
	"handshake.jsonl:52": true, // turn/start without threadId
}

// TestInvalidClientMessagesRejected proves the client-side check catches the handshake's bad requests.
func TestInvalidClientMessagesRejected(t *testing.T) {
	v := validator(t)
	entries := readTranscript(t, "testdata/handshake.jsonl").entries
	for where := range invalidClientMessages {
		var ln int
		_, err := fmt.Sscanf(where, "handshake.jsonl:%d", &ln)
		require.NoError(t, err)
		require.Error(t, v.ClientMessage(entries[ln-1].Msg, nil), where)
	}
}

const (
	threadStartReq = `{"id":1,"method":"thread/start","params":{}}`
	turnStarted    = `{"method":"turn/started","params":{"threadId":"t1","turn":{"id":"u1","items":[],` +
		`"itemsView":"notLoaded","status":"inProgress","error":null,"startedAt":1,"completedAt":null,` +
		`"durationMs":null}},"emittedAtMs":1795300111546}`
	itemCompleted = `{"method":"item/completed","params":{"threadId":"t1","turnId":"u1","completedAtMs":5,` +
		`"item":{"type":"agentMessage","id":"m1","text":"hi","phase":null,"memoryCitation":null}}}`
	approvalReq = `{"id":0,"method":"item/commandExecution/requestApproval","params":{"threadId":"t1",` +
		`"turnId":"u1","itemId":"c1","startedAtMs":1,"availableDecisions":["accept",` +
		`{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["echo"]}}]}}`
	errorResp = `{"id":3,"error":{"code":-32600,"message":"Not initialized"}}`
)

// threadStartResult returns the thread/start result of the golden transcript.
func threadStartResult(t *testing.T) string {
	t.Helper()
	for _, e := range readTranscript(t, "testdata/thread_start_simple_turn.jsonl").entries {
		if e.Dir == "recv" && strings.Contains(string(e.Msg), `"result":{"thread"`) {
			return string(e.Msg)
		}
	}
	t.Fatal("no thread/start response in transcript")
	return ""
}

func TestServerMessageGoodAndMutated(t *testing.T) {
	v := validator(t)
	tr := schematest.NewTracker()
	tr.Sent([]byte(threadStartReq))
	startResp := threadStartResult(t)

	tests := []struct {
		name    string
		msg     string
		wantErr string // "" = valid
	}{
		{"thread/start response", startResp, ""},
		{"turn/started", turnStarted, ""},
		{"item/completed", itemCompleted, ""},
		{"server request", approvalReq, ""},
		{"error response", errorResp, ""},
		{"string id error", `{"id":"x","error":{"code":1,"message":"m","data":{"a":1}}}`, ""},

		{"wrong enum in tagged union", strings.Replace(startResp, `"type":"readOnly"`, `"type":"readOnlyX"`, 1),
			"at '/result/sandbox/type': value matches no variant of the union; want one of 'dangerFullAccess', 'readOnly'"},
		{"wrong enum value", strings.Replace(startResp, `"approvalsReviewer":"user"`, `"approvalsReviewer":"nobody"`, 1),
			"/result/approvalsReviewer"},
		{"missing required field", strings.Replace(startResp, `"preview":"",`, ``, 1), "preview"},
		{"wrong type", strings.Replace(startResp, `"ephemeral":false`, `"ephemeral":"no"`, 1),
			"/result/thread/ephemeral"},
		{"wrong integer format", strings.Replace(turnStarted, `"startedAt":1`, `"startedAt":1.5`, 1),
			"/params/turn/startedAt"},
		{"variant field wrong type", strings.Replace(itemCompleted, `"text":"hi"`, `"text":7`, 1),
			"/params/item/text"},
		{"unknown item type", strings.Replace(itemCompleted, `"agentMessage"`, `"bogusItem"`, 1), "/params/item"},
		{"notification missing params field", strings.Replace(turnStarted, `"threadId":"t1",`, ``, 1), "threadId"},
		{"bad emittedAtMs", strings.Replace(turnStarted, `1795300111546`, `"soon"`, 1), "emittedAtMs"},
		{"unknown notification", `{"method":"thread/exploded","params":{}}`, "not in ServerNotification"},
		{"unknown server request", `{"id":1,"method":"item/frobnicate","params":{}}`, "not in ServerRequest"},
		{"bad decision", strings.Replace(approvalReq, `"accept",`, `"acceptAll",`, 1),
			"at '/params/availableDecisions/0': value matches no variant of the union; want one of 'accept', 'acceptForSession'"},
		{"bad decision object", strings.Replace(approvalReq, `"execpolicy_amendment":["echo"]`, `"execpolicy_amendment":"echo"`, 1),
			"at '/params/availableDecisions/1/acceptWithExecpolicyAmendment/execpolicy_amendment': got string, want array"},
		{"response of another method", `{"id":1,"result":{"data":[],"nextCursor":null}}`, "thread/start"},
		{"error without code", `{"id":3,"error":{"message":"x"}}`, "code"},
		{"result and error", `{"id":3,"result":{},"error":{"code":1,"message":"x"}}`, "exactly one"},
		{"bad id", `{"id":1.5,"error":{"code":1,"message":"x"}}`, "RequestId"},
		{"unknown id", `{"id":99,"result":{}}`, "no matching client request"},
		{"not an object", `[1,2]`, "not a JSON object"},
		{"not JSON", `{"id":`, "not JSON"},
		{"neither", `{"foo":1}`, "neither"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := v.ServerMessage([]byte(tc.msg), tr.MethodOf)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			t.Log(err)
			require.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestDefinitionAndResponseTypes(t *testing.T) {
	v := validator(t)
	require.Equal(t, "ThreadStartResponse", v.ResponseType("thread/start"))
	require.Equal(t, "McpServerRefreshResponse", v.ResponseType("config/mcpServer/reload"))
	require.Equal(t, "ConfigWriteResponse", v.ResponseType("config/value/write"))
	require.Equal(t, "CommandExecutionRequestApprovalResponse",
		v.ServerRequestResponseType("item/commandExecution/requestApproval"))
	require.Empty(t, v.ResponseType("no/such"))

	require.NoError(t, v.Definition("UserInput", []byte(`{"type":"text","text":"hi"}`)))
	err := v.Definition("UserInput", []byte(`{"type":"text","text":3}`))
	require.ErrorContains(t, err, "/text")
	require.NoError(t, v.Definition("CommandExecutionRequestApprovalResponse", []byte(`{"decision":"accept"}`)))
	require.Error(t, v.Definition("CommandExecutionRequestApprovalResponse", []byte(`{"decision":"yes"}`)))
	require.ErrorContains(t, v.Definition("ThreadListParams", []byte(`{"limit":4294967296}`)), "uint32")
	require.ErrorContains(t, v.Definition("NoSuchType", []byte(`{}`)), "no definition")
}

func TestTrackerIDs(t *testing.T) {
	tr := schematest.NewTracker()
	tr.Sent([]byte(`{"id":7,"method":"a"}`))
	tr.Sent([]byte(`{"id":"7","method":"b"}`))
	tr.Sent([]byte(`{"method":"notification"}`))
	tr.Sent([]byte(`not json`))
	require.Equal(t, "a", tr.MethodOf(json.Number("7")))
	require.Equal(t, "a", tr.MethodOf(float64(7)))
	require.Equal(t, "b", tr.MethodOf("7"))
	require.Empty(t, tr.MethodOf(8))
}

func TestSchemaDirAndNew(t *testing.T) {
	dir, err := schematest.SchemaDir()
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(dir, "ServerNotification.json"))
	_, err = schematest.New(t.TempDir())
	require.Error(t, err, "an empty directory has no schemas")
}
