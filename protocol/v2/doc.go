// Package protocol holds every wire type and method name of the Codex app-server protocol v2 (as of
// codex-cli 0.169.0). Almost everything is generated from the stripped JSON Schema copy in the
// repository's /schema directory by internal/gen (`go generate ./protocol/...`); it has no behaviour.
//
// # Files
//
//   - types_gen.go: one Go type per schema definition of the v2 bundle, plus the server→client request
//     types of the "all" bundle (CommandExecutionRequestApprovalParams, ReviewDecision, ...) and
//     InitializeResponse. The method unions ClientRequest, ServerRequest, ServerNotification and
//     ClientNotification are not types: methods_gen.go describes them.
//   - methods_gen.go: method-name constants and the MethodSpec tables.
//   - unions.go: hand-written unions the generator cannot express (RequestId, StringOrList,
//     FunctionCallOutputBody). helpers.go: the marshalling helpers generated code calls.
//   - decode.go: Decode, which adds the reference's "missing field `x`" check to json.Unmarshal.
//
// # Naming
//
// Type names are the schema definition names verbatim (ThreadStartParams, ThreadId, JSONRPCErrorError).
// Field names, enum constants, variant structs and method constants are the PascalCase of the JSON name:
// the name is split into words at non-alphanumeric runes and lower→upper case changes, each word is
// capitalised, and the words id, url, json, http, uri and api are written ID, URL, JSON, HTTP, URI, API
// ("threadId" → ThreadID, "httpStatusCode" → HTTPStatusCode, "text_elements" → TextElements). "Mcp" is not
// an initialism ("mcpServer" → McpServer). A leading digit gets a "V" prefix.
//
// Enum constants are <Type><Value>, e.g. SandboxMode "read-only" →
// SandboxModeReadOnly. Method constants are a prefix plus the PascalCase of the method name:
//
//	Method<Name>         client requests        MethodThreadStart = "thread/start"
//	ServerRequest<Name>  server requests        ServerRequestItemCommandExecutionRequestApproval = "item/commandExecution/requestApproval"
//	Notify<Name>         server notifications   NotifyThreadStarted = "thread/started"
//	ClientNotify<Name>   client notifications   ClientNotifyInitialized = "initialized"
//
// # Null versus absent
//
// A property whose schema allows null is a pointer (or a nil-able slice, map or json.RawMessage) without
// omitempty, so nil marshals as null, as the reference does. An optional property that does not allow null
// is a pointer/slice/map with omitzero (absent when nil; an empty non-nil list is written as []). A
// required non-null property is a plain value;
// note that a required slice left nil marshals as null, so initialise required lists (e.g. `turns: []`).
// Exceptions observed in the golden transcripts, where the reference omits unset nullable fields, are listed
// in the generator (omitNulls: CommandExecutionRequestApprovalParams, Tool); their nullable fields use
// omitzero. An object whose schema allows additional properties (Config, AnalyticsConfig) keeps unknown
// members in an Extra map that is written back when marshalling.
// Integer formats map to sized Go integers (uint32 → uint32, uint → uint64), so out-of-range or non-integer
// values fail to decode with an error naming the Go type.
//
// # Unions
//
// A tagged union (oneOf of objects discriminated by a single-valued property such as "type", "method",
// "mode", "kind" or "handlerType") becomes a wrapper struct holding the variant in Value, a marker
// interface <Union>Variant, and one struct per variant named <Union><PascalCase(tag)> whose fields leave
// the tag out; the variant's MarshalJSON writes the tag itself, so a variant marshals correctly both inside
// the wrapper and on its own. UnmarshalJSON stores the variant by value (not a pointer); an unknown tag
// fails with serde's wording "unknown variant `x`, expected one of `a`, `b`".
//
//	item := protocol.ThreadItem{Value: protocol.ThreadItemAgentMessage{ID: "msg_1", Text: "hi"}}
//	var in protocol.UserInput
//	_ = json.Unmarshal(raw, &in)
//	switch v := in.Value.(type) {
//	case protocol.UserInputText:
//		_ = v.Text
//	}
//
// A string-or-object union ("accept" | {"acceptWithExecpolicyAmendment":{...}}) is a struct with Name for
// the plain string forms (untyped constants <Union><Value>) and one pointer field per object form; exactly
// one is set; when the schema adds a catch-all branch (CodexErrorInfo), unknown strings are kept in Name
// and unknown objects in Other. A union of only string enums is a plain string enum. An untagged union
// of objects is one struct whose properties not shared by every shape are optional. The remaining unions
// (McpElicitation*Schema, ThreadItemsListCursor) and schemas that accept any value are json.RawMessage.
package protocol

//go:generate go run ./internal/gen -schema ../../schema -out .
