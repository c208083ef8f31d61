package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

func TestDecodeParamsWording(t *testing.T) {
	spec, ok := protocol.LookupClientRequest(protocol.MethodInitialize)
	require.True(t, ok)
	for raw, want := range map[string]string{
		"":                          "missing field `params`",
		`[]`:                        "invalid type: sequence, expected struct InitializeParams",
		`{}`:                        "missing field `clientInfo`",
		`{"clientInfo":{"name":1}}`: "invalid type: integer `1`, expected a string",
	} {
		var in json.RawMessage
		if raw != "" {
			in = json.RawMessage(raw)
		}
		_, err := protocol.DecodeParams(spec, in, nil)
		var pe *protocol.ParamsError
		require.ErrorAs(t, err, &pe, raw)
		require.Equal(t, want, pe.Error(), raw)
	}
	p, err := protocol.DecodeParams(spec, json.RawMessage(`{"clientInfo":{"name":"n","version":"1"}}`), nil)
	require.NoError(t, err)
	require.Equal(t, "n", p.(*protocol.InitializeParams).ClientInfo.Name)
}

// TestDecodeParamsNullForNonNullable pins serde's refusal (seen on the reference, 0.169.0) of null for an
// optional member the schema does not let be null, while a nullable one takes it.
func TestDecodeParamsNullForNonNullable(t *testing.T) {
	for _, tc := range []struct {
		method, raw, want string // want "": accepted
	}{
		{protocol.MethodThreadFork, `{"threadId":"x","ephemeral":null}`, "invalid type: null, expected a boolean"},
		{protocol.MethodThreadFork, `{"threadId":"x","excludeTurns":null}`, "invalid type: null, expected a boolean"},
		{protocol.MethodThreadResume, `{"threadId":"x","excludeTurns":null}`, "invalid type: null, expected a boolean"},
		{protocol.MethodThreadList, `{"useStateDbOnly":null}`, "invalid type: null, expected a boolean"},
		{protocol.MethodThreadStart, `{"experimentalRawEvents":null}`, "invalid type: null, expected a boolean"},
		{protocol.MethodSkillsList, `{"cwds":null}`, "invalid type: null, expected a sequence"},
		{protocol.MethodThreadFork, `{"threadId":"x","model":null,"lastTurnId":null}`, ""},
		{protocol.MethodThreadStart, `{"ephemeral":null,"model":null}`, ""},
		{protocol.MethodThreadList, `{"useStateDbOnly":false,"note":"null"}`, ""},
	} {
		spec, ok := protocol.LookupClientRequest(tc.method)
		require.True(t, ok, tc.method)
		_, err := protocol.DecodeParams(spec, json.RawMessage(tc.raw), nil)
		if tc.want == "" {
			require.NoError(t, err, tc.raw)
			continue
		}
		var pe *protocol.ParamsError
		require.ErrorAs(t, err, &pe, tc.raw)
		require.Equal(t, tc.want, pe.Error(), tc.raw)
	}
}

// TestDecodeParamsNamesTheValue pins serde's wording of a wrongly typed member, as the reference (0.169.0)
// answers: the value is named with its literal, the member is not.
func TestDecodeParamsNamesTheValue(t *testing.T) {
	for _, tc := range []struct{ method, raw, want string }{
		{protocol.MethodThreadList, `{"limit":"x"}`, `invalid type: string "x", expected u32`},
		{protocol.MethodThreadList, `{"limit": -1}`, "invalid value: integer `-1`, expected u32"},
		{protocol.MethodThreadList, `{"limit":1.5}`, "invalid type: floating point `1.5`, expected u32"},
		{protocol.MethodThreadList, `{"archived":"yes"}`, `invalid type: string "yes", expected a boolean`},
		{protocol.MethodThreadList, `{"sourceKinds":"x"}`, `invalid type: string "x", expected a sequence`},
		{protocol.MethodThreadStart, `{"model":true}`, "invalid type: boolean `true`, expected a string"},
		{protocol.MethodThreadStart, `{"model":{"a":1}}`, "invalid type: map, expected a string"},
		{protocol.MethodThreadStart, `{"cwd":5}`, "invalid type: integer `5`, expected a string"},
		{protocol.MethodThreadStart, `{"model":"a\"b","cwd":["q"]}`, "invalid type: sequence, expected a string"},
		{protocol.MethodThreadList, `{"cwd":null,"limit":"q\"z"}`, `invalid type: string "q\"z", expected u32`},
	} {
		spec, ok := protocol.LookupClientRequest(tc.method)
		require.True(t, ok, tc.method)
		_, err := protocol.DecodeParams(spec, json.RawMessage(tc.raw), nil)
		var pe *protocol.ParamsError
		require.ErrorAs(t, err, &pe, tc.raw)
		require.Equal(t, tc.want, pe.Error(), tc.raw)
	}
}

// TestDecodeParamsSerdeWording pins the reference's (0.169.0) words for wrongly typed members, each case
// seen on it with the same params: a string enum is an externally tagged enum ("string or map"), a path
// member wants a "path string", a union names its kind, and with several bad members the first one in the
// object's order is reported (serde meets them in that order), a relative AbsolutePathBuf included.
func TestDecodeParamsSerdeWording(t *testing.T) {
	for _, tc := range []struct{ method, raw, want string }{
		// String enums, alone, optional, in a nested struct.
		{protocol.MethodThreadList, `{"sortKey":5}`, "invalid type: integer `5`, expected string or map"},
		{protocol.MethodThreadList, `{"sortDirection":true}`, "invalid type: boolean `true`, expected string or map"},
		{protocol.MethodThreadStart, `{"personality":[1]}`, "invalid type: sequence, expected string or map"},
		{protocol.MethodThreadMemoryModeSet, `{"threadId":"x","mode":5}`, "invalid type: integer `5`, expected string or map"},
		{protocol.MethodThreadResume, `{"threadId":"x","initialTurnsPage":{"sortDirection":5}}`, "invalid type: integer `5`, expected string or map"},
		// Unions with string forms and object forms (externally tagged).
		{protocol.MethodThreadStart, `{"approvalPolicy":5}`, "invalid type: integer `5`, expected string or map"},
		{protocol.MethodThreadStart, `{"approvalPolicy":true}`, "invalid type: boolean `true`, expected string or map"},
		{protocol.MethodThreadStart, `{"multiAgentMode":[1]}`, "invalid type: sequence, expected string or map"},
		// Internally tagged unions.
		{protocol.MethodTurnStart, `{"threadId":"x","input":["x"]}`, "invalid type: string \"x\", expected internally tagged enum UserInput"},
		{protocol.MethodTurnStart, `{"threadId":"x","input":[],"sandboxPolicy":5}`, "invalid type: integer `5`, expected internally tagged enum SandboxPolicyDeserialize"},
		{protocol.MethodReviewStart, `{"threadId":"x","target":5}`, "invalid type: integer `5`, expected internally tagged enum ReviewTarget"},
		// Untagged unions.
		{protocol.MethodThreadList, `{"cwd":5}`, "data did not match any variant of untagged enum ThreadListCwdFilter"},
		{protocol.MethodThreadList, `{"cwd":{"a":1}}`, "data did not match any variant of untagged enum ThreadListCwdFilter"},
		{protocol.MethodThreadList, `{"cwd":[5]}`, "data did not match any variant of untagged enum ThreadListCwdFilter"},
		{protocol.MethodThreadSampleCancel, `{"requestId":true}`, "data did not match any variant of untagged enum RequestId"},
		{protocol.MethodThreadItemsList, `{"threadId":"x","cursor":5}`, "data did not match any variant of untagged enum ThreadItemsListCursor"},
		{protocol.MethodThreadItemsList, `{"threadId":"x","cursor":[1]}`, "data did not match any variant of untagged enum ThreadItemsListCursor"},
		// Paths: AbsolutePathBuf and PathBuf members, alone and in lists; the list itself wants a sequence.
		{protocol.MethodFsReadFile, `{"path":5}`, "invalid type: integer `5`, expected path string"},
		{protocol.MethodThreadResume, `{"threadId":"x","path":true}`, "invalid type: boolean `true`, expected path string"},
		{protocol.MethodTurnStart, `{"threadId":"x","input":[],"cwd":5}`, "invalid type: integer `5`, expected path string"},
		{protocol.MethodSkillsList, `{"cwds":[5]}`, "invalid type: integer `5`, expected path string"},
		{protocol.MethodSkillsList, `{"cwds":5}`, "invalid type: integer `5`, expected a sequence"},
		{protocol.MethodSkillsExtraRootsSet, `{"extraRoots":[true]}`, "invalid type: boolean `true`, expected path string"},
		{protocol.MethodSkillsExtraRootsSet, `{"extraRoots":"x"}`, "invalid type: string \"x\", expected a sequence"},
		{protocol.MethodCommandExec, `{"command":["x"],"outputBytesCap":"x"}`, "invalid type: string \"x\", expected usize"},
		// Relative AbsolutePathBuf, at any depth, "~" included.
		{protocol.MethodThreadStart, `{"runtimeWorkspaceRoots":["/tmp","rel"]}`, "AbsolutePathBuf deserialized without a base path"},
		{protocol.MethodFsGetMetadata, `{"path":"~"}`, "AbsolutePathBuf deserialized without a base path"},
		{protocol.MethodPluginList, `{"cwds":["rel"]}`, "AbsolutePathBuf deserialized without a base path"},
		{protocol.MethodProjectCreate, `{"name":"x","roots":[{"path":"rel"}]}`, "AbsolutePathBuf deserialized without a base path"},
		// Two bad members: the first in the object's order.
		{protocol.MethodThreadList, `{"sortKey":5,"limit":"x"}`, "invalid type: integer `5`, expected string or map"},
		{protocol.MethodThreadList, `{"limit":"x","sortKey":5}`, "invalid type: string \"x\", expected u32"},
		{protocol.MethodThreadList, `{"cwd":5,"archived":"x"}`, "data did not match any variant of untagged enum ThreadListCwdFilter"},
		{protocol.MethodThreadList, `{"archived":"x","cwd":5}`, "invalid type: string \"x\", expected a boolean"},
		{protocol.MethodThreadStart, `{"approvalPolicy":5,"model":5}`, "invalid type: integer `5`, expected string or map"},
		{protocol.MethodThreadStart, `{"model":5,"approvalPolicy":5}`, "invalid type: integer `5`, expected a string"},
		{protocol.MethodTurnStart, `{"threadId":"x","input":[],"model":5,"sandboxPolicy":5}`, "invalid type: integer `5`, expected a string"},
		{protocol.MethodTurnStart, `{"model":5,"threadId":"x","input":[5]}`, "invalid type: integer `5`, expected a string"},
		{protocol.MethodFsCopy, `{"sourcePath":"rel","destinationPath":5}`, "AbsolutePathBuf deserialized without a base path"},
		{protocol.MethodFsCopy, `{"destinationPath":5,"sourcePath":"rel"}`, "invalid type: integer `5`, expected path string"},
		{protocol.MethodFsCopy, `{"recursive":"x","destinationPath":"/a","sourcePath":"rel"}`, "invalid type: string \"x\", expected a boolean"},
		{protocol.MethodThreadStart, `{"runtimeWorkspaceRoots":["/tmp","rel"],"model":5}`, "AbsolutePathBuf deserialized without a base path"},
		{protocol.MethodThreadStart, `{"model":5,"runtimeWorkspaceRoots":["/tmp","rel"]}`, "invalid type: integer `5`, expected a string"},
		{protocol.MethodThreadStart, `{"runtimeWorkspaceRoots":["rel",5]}`, "AbsolutePathBuf deserialized without a base path"},
		{protocol.MethodThreadFork, `{"model":5,"threadId":"x","ephemeral":null}`, "invalid type: integer `5`, expected a string"},
		{protocol.MethodThreadList, `{"sortKey":"bogus","limit":-1}`, "unknown variant `bogus`, expected one of `created_at`, `updated_at`, `recency_at`, `section_position`"},
		{protocol.MethodThreadList, `{"limit":-1,"sortKey":"bogus"}`, "invalid value: integer `-1`, expected u32"},
		{protocol.MethodThreadList, `{"sortDirection":"up","limit":"x"}`, "unknown variant `up`, expected `asc` or `desc`"},
	} {
		spec, ok := protocol.LookupClientRequest(tc.method)
		require.True(t, ok, tc.method)
		_, err := protocol.DecodeParams(spec, json.RawMessage(tc.raw), nil)
		var pe *protocol.ParamsError
		require.ErrorAs(t, err, &pe, tc.method+" "+tc.raw)
		require.Equal(t, tc.want, pe.Error(), tc.method+" "+tc.raw)
	}
}

// TestDecodeParamsArrayForStruct: an array given for a struct member is read as the struct's fields in
// the reference's declaration order (serde's visit_seq), with its wording (each seen on codex-cli 0.169.0):
// too short, too long, an element of the wrong type; a well-formed one is accepted.
func TestDecodeParamsArrayForStruct(t *testing.T) {
	spec, ok := protocol.LookupClientRequest(protocol.MethodInitialize)
	require.True(t, ok)
	for raw, want := range map[string]string{
		`{"clientInfo":[]}`:                                "invalid length 0, expected struct ClientInfo with 3 elements",
		`{"clientInfo":["a"]}`:                             "invalid length 1, expected struct ClientInfo with 3 elements",
		`{"clientInfo":[1]}`:                               "invalid type: integer `1`, expected a string",
		`{"clientInfo":["a","b"]}`:                         "invalid length 2, expected struct ClientInfo with 3 elements",
		`{"clientInfo":["a","b","c","d"]}`:                 "invalid length 4, expected 3 elements in sequence",
		`{"clientInfo":["a",null,"c"],"capabilities":[]}`:  "invalid length 5, expected struct InitializeCapabilities with 7 elements",
		`{"clientInfo":["a",null,"c"],"capabilities":[1]}`: "invalid type: integer `1`, expected a boolean",
		`{"clientInfo":["a",null,"c"],"capabilities":[true,true,true,true,true,null]}`:       "invalid length 6, expected struct InitializeCapabilities with 7 elements",
		`{"clientInfo":["a",null,"c"],"capabilities":[true,true,true,true,true,["x"],{},1]}`: "invalid length 8, expected 7 elements in sequence",
	} {
		_, err := protocol.DecodeParams(spec, json.RawMessage(raw), nil)
		var pe *protocol.ParamsError
		require.ErrorAs(t, err, &pe, raw)
		require.Equal(t, want, pe.Error(), raw)
	}
	p, err := protocol.DecodeParams(spec, json.RawMessage(`{"clientInfo":["n",null,"1"],"capabilities":[false,false,true,false,false,null,null]}`), nil)
	require.NoError(t, err)
	ip := p.(*protocol.InitializeParams)
	require.Equal(t, protocol.ClientInfo{Name: "n", Version: "1"}, ip.ClientInfo)
	require.True(t, *ip.Capabilities.ExperimentalAPI) // the third field declared
}

// TestDecodeParamsSerdeReadings pins, as codex-cli 0.169.0 answers them (found by a sweep of wrong-typed
// params over sampled methods): null for a required member, an object for a string enum (serde's
// externally tagged variant) and a PathBuf list's items.
func TestDecodeParamsSerdeReadings(t *testing.T) {
	for _, tc := range []struct {
		method, raw, want string // want "": accepted
	}{
		{protocol.MethodFuzzyFileSearch, `{"query":null,"roots":[]}`, "invalid type: null, expected a string"},
		{protocol.MethodFuzzyFileSearch, `{"query":"x","roots":null}`, "invalid type: null, expected a sequence"},
		{protocol.MethodCommandExec, `{"command":null}`, "invalid type: null, expected a sequence"},
		{protocol.MethodConfigValueWrite, `{"keyPath":"x","mergeStrategy":null,"value":null}`, "invalid type: null, expected string or map"},
		{protocol.MethodThreadNameSet, `{"name":"x","threadId":null}`, "invalid type: null, expected a string"},
		{protocol.MethodThreadList, `{"sourceKinds":[{"x":1}]}`, "unknown variant `x`, expected one of `cli`, `vscode`, `exec`, `appServer`, `subAgent`, `subAgentReview`, `subAgentCompact`, `subAgentThreadSpawn`, `subAgentOther`, `unknown`"},
		{protocol.MethodThreadList, `{"sourceKinds":[{"cli":1}]}`, "invalid type: integer `1`, expected unit"},
		{protocol.MethodThreadList, `{"sourceKinds":[{}]}`, "invalid value: map, expected map with a single key"},
		{protocol.MethodThreadList, `{"sortDirection":{"asc":[]}}`, "invalid type: sequence, expected unit"},
		{protocol.MethodThreadList, `{"sortDirection":{"x":1}}`, "unknown variant `x`, expected `asc` or `desc`"},
		{protocol.MethodThreadList, `{"sourceKinds":[{"cli":null}],"sortDirection":{"asc":{}}}`, ""},
		{protocol.MethodExternalAgentConfigDetect, `{"cwds":[{"x":1}]}`, "invalid type: map, expected path string"},
		{protocol.MethodFeedbackUpload, `{"classification":"x","extraLogFiles":[1]}`, "invalid type: integer `1`, expected path string"},
		// null for a required AbsolutePathBuf is a type error before it is a path.
		{protocol.MethodFsWriteFile, `{"dataBase64":"x","path":null}`, "invalid type: null, expected path string"},
		// A nested object's missing member, in document order and the reference's declaration order.
		{protocol.MethodThreadStart, `{"environments":[{"x":1},5]}`, "missing field `environmentId`"},
		{protocol.MethodThreadStart, `{"environments":[{}]}`, "missing field `environmentId`"},
		{protocol.MethodProjectUpdate, `{"projectId":"x","roots":[{"x":1},5]}`, "missing field `path`"},
		{protocol.MethodThreadStart, `{"selectedCapabilityRoots":[{"x":1},5]}`, "missing field `id`"},
		// A struct whose fields all default may be given a short array.
		{protocol.MethodThreadMetadataUpdate, `{"threadId":"x","gitInfo":[]}`, ""},
		{protocol.MethodThreadMetadataUpdate, `{"threadId":"x","gitInfo":["a"]}`, ""},
		{protocol.MethodThreadMetadataUpdate, `{"threadId":"x","gitInfo":[1]}`, "invalid type: integer `1`, expected a string"},
		{protocol.MethodThreadMetadataUpdate, `{"threadId":"x","gitInfo":["a","b","c","d"]}`, "invalid length 4, expected 3 elements in sequence"},
		// The top level's missing members in declaration order too.
		{protocol.MethodFsWriteFile, `{}`, "missing field `path`"},
	} {
		spec, ok := protocol.LookupClientRequest(tc.method)
		require.True(t, ok, tc.method)
		p, err := protocol.DecodeParams(spec, json.RawMessage(tc.raw), nil)
		if tc.want == "" {
			require.NoError(t, err, tc.raw)
			if lp, ok := p.(*protocol.ThreadListParams); ok {
				require.Equal(t, protocol.SortDirection("asc"), *lp.SortDirection)
			}
			continue
		}
		var pe *protocol.ParamsError
		require.ErrorAs(t, err, &pe, tc.raw)
		require.Equal(t, tc.want, pe.Error(), tc.raw)
	}
}

// TestDecodeParamsModeKindAliases: the reference takes the legacy collaboration mode names as `default` and
// lists them in its unknown-variant error (codex-cli 0.169.0, thread/settings/update).
func TestDecodeParamsModeKindAliases(t *testing.T) {
	spec, ok := protocol.LookupClientRequest(protocol.MethodThreadSettingsUpdate)
	require.True(t, ok)
	for _, alias := range []string{"code", "custom", "execute", "pair_programming"} {
		p, err := protocol.DecodeParams(spec, json.RawMessage(`{"threadId":"x","collaborationMode":{"mode":"`+alias+`","settings":{"model":"m"}}}`), nil)
		require.NoError(t, err, alias)
		require.Equal(t, protocol.ModeKindDefault, p.(*protocol.ThreadSettingsUpdateParams).CollaborationMode.Mode, alias)
	}
	_, err := protocol.DecodeParams(spec, json.RawMessage(`{"threadId":"x","collaborationMode":{"mode":"bogus","settings":{"model":"m"}}}`), nil)
	var pe *protocol.ParamsError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "unknown variant `bogus`, expected one of `plan`, `code`, `custom`, `default`, `execute`, `pair_programming`", pe.Error())
}
