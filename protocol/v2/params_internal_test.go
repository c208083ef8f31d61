package protocol

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorthScanning pins when DecodeParams re-scans decoded params for serde's in-order errors: only when the
// decoded value shows something the scan can find, so a plain request (a large pasted turn/start) is not
// tokenized twice.
func TestWorthScanning(t *testing.T) {
	for _, tc := range []struct {
		method, raw string
		want        bool
	}{
		{MethodTurnStart, `{"threadId":"t","cwd":"rel","input":[{"type":"text","text":"null \"null\"","text_elements":[]}]}`, false},
		{MethodTurnStart, `{"threadId":"t","runtimeWorkspaceRoots":["/a","/b"],"input":[]}`, false},
		{MethodTurnStart, `{"threadId":"t","runtimeWorkspaceRoots":["/a","b"],"input":[]}`, true},
		{MethodThreadStart, `{"model":"null"}`, false},
		{MethodThreadStart, `{"experimentalRawEvents":false,"model":null}`, true}, // other non-nullable members are zero
		{MethodThreadStart, `{"experimentalRawEvents":null}`, true},
		{MethodSkillsList, `{"cwds":[]}`, false},
		{MethodSkillsList, `{"cwds":null}`, true},
		{MethodProjectCreate, `{"name":"x","roots":[{"path":"/abs"}]}`, false},
		{MethodProjectCreate, `{"name":"x","roots":[{"path":"rel"}]}`, true},
		{MethodFsGetMetadata, `{"path":"/x"}`, false},
		{MethodFsGetMetadata, `{"path":"~"}`, true},
		{MethodThreadItemsList, `{"threadId":"t","cursor":"c"}`, false},
		{MethodThreadItemsList, `{"threadId":"t","cursor":5}`, true},
	} {
		spec, ok := LookupClientRequest(tc.method)
		require.True(t, ok, tc.method)
		p := spec.NewParams()
		require.NoError(t, json.Unmarshal([]byte(tc.raw), p), tc.raw)
		typ := reflect.TypeOf(p).Elem()
		require.Equal(t, tc.want, worthScanning(typ, nonNullableOf(typ), []byte(tc.raw), p), tc.raw)
	}
}
